// swift-tools-version:6.0
import PackageDescription

// Layering, bottom up: libzmq (system library) → ZeroMQ (safe wrapper) → ZoneRules (tzdata) → LHTSchema (wire values)
// → Storage (the log and tables; its backends SQLiteStorage and PostgresStorage) → ServiceHost (flags, api loop) → one library per service → one thin executable each.
// Pure decision modules (ReminderPlanning, StreakRules, NotificationRendering) know no sockets or files.
let package = Package(
    name: "LeanHealthTimer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "session-logger", targets: ["SessionLoggerMain"]),
        .executable(name: "reminder-planner", targets: ["ReminderPlannerMain"]),
        .executable(name: "notifier", targets: ["NotifierMain"]),
        .executable(name: "noalc-streak", targets: ["NoAlcStreakMain"]),
        .executable(name: "http-gateway", targets: ["HTTPGatewayMain"]),
        .executable(name: "lht", targets: ["LHTCommand"]),
        .executable(name: "bench", targets: ["Bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // Operations: the Prometheus registry behind swift-metrics, and the /metrics HTTP server.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
        // The HTTP gateway (docs/decisions/0040): HTTP/1.1 with streaming bodies and TLS, on swift-nio.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CZeroMQ", path: "Shared/CZeroMQ", pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ"], path: "Shared/ZeroMQ", exclude: ["README.md"]),
        .systemLibrary(
            name: "CLibPQ", path: "Shared/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CZstd", path: "Shared/CZstd", pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Shared/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPrefetch", path: "Shared/CPrefetch"),
        .systemLibrary(name: "CCRC32C", path: "Shared/CCRC32C"),
        // Zone rules from the system's tzdata (TZif files, their POSIX footers, the watch for updates).
        .target(name: "ZoneRules", dependencies: [.product(name: "Logging", package: "swift-log")], path: "Shared/ZoneRules", exclude: ["README.md"]),
        .target(name: "LHTSchema", dependencies: ["ZoneRules"], path: "Shared/Schema", exclude: ["PROTOCOL.md", "SEMANTICS.md", "README.md"]),
        .target(name: "LHTClient", dependencies: ["ZeroMQ", "LHTSchema"], path: "Shared/Client", exclude: ["README.md"]),
        // Child processes by posix_spawn and waitpid, for `lht subscribe --exec` and the tests.
        .target(name: "Spawn", path: "Shared/Spawn", exclude: ["README.md"]),
        // CurveZMQ certificates, the key directory and the ZAP handler a service starts before binding.
        .target(
            name: "LHTSecurity",
            dependencies: ["ZeroMQ", "LHTSchema", .product(name: "Logging", package: "swift-log")],
            path: "Shared/Security", exclude: ["README.md"]),
        // A service's storage in the terms both backends keep (docs/storage.md): the Store, its
        // transactions, layouts and migrations, SQL values and rows. What services import.
        .target(
            name: "Storage",
            dependencies: ["ZeroMQ", "LHTSchema", "CSQLite", .product(name: "Logging", package: "swift-log")],
            path: "Shared/Storage", exclude: ["README.md"]),
        // The embedded backend: SQLite files through GRDB, the event file, projections, group-commit syncs.
        .target(
            name: "SQLiteStorage",
            dependencies: [
                "Storage", "ZeroMQ", "LHTSchema", "CZstd", "CSQLite", "CCRC32C",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Shared/SQLiteStorage", exclude: ["README.md"]),
        // The shared backend: a libpq driver, the log whose per-service row orders the commits of all
        // instances, and PostgresStore with its partition leases.
        .target(
            name: "PostgresStorage",
            dependencies: ["Storage", "CLibPQ", "LHTSchema", .product(name: "Logging", package: "swift-log")],
            path: "Shared/PostgresStorage", exclude: ["README.md"]),
        .target(
            name: "ServiceHost",
            dependencies: [
                "ZeroMQ", "LHTSchema", "LHTClient", "LHTSecurity", "Storage", "SQLiteStorage", "PostgresStorage",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "FlyingFox", package: "FlyingFox"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Shared/ServiceHost", exclude: ["README.md"]),

        // Pure decision cores.
        .target(name: "ReminderPlanning", dependencies: ["LHTSchema", "ZoneRules"], path: "Services/ReminderPlanner/Planning"),
        .target(name: "StreakRules", dependencies: ["LHTSchema"], path: "Services/NoAlcStreak/Rules"),
        .target(name: "NotificationRendering", dependencies: ["LHTSchema"], path: "Services/Notifier/Rendering"),

        // Services: a library each (the app, which tests build in-process too) and a thin executable.
        .target(name: "SessionLogger", dependencies: ["ServiceHost", "Storage"], path: "Services/SessionLogger/App"),
        .executableTarget(name: "SessionLoggerMain", dependencies: ["SessionLogger"], path: "Services/SessionLogger/Main"),
        .target(
            name: "ReminderPlanner",
            dependencies: ["ServiceHost", "Storage", "ReminderPlanning", "ZoneRules", "CPrefetch", .product(name: "HeapModule", package: "swift-collections")],
            path: "Services/ReminderPlanner/App"),
        .executableTarget(name: "ReminderPlannerMain", dependencies: ["ReminderPlanner"], path: "Services/ReminderPlanner/Main"),
        .target(name: "Notifier", dependencies: ["ServiceHost", "Storage", "NotificationRendering"], path: "Services/Notifier/App"),
        .executableTarget(name: "NotifierMain", dependencies: ["Notifier"], path: "Services/Notifier/Main"),
        .target(name: "NoAlcStreak", dependencies: ["ServiceHost", "Storage", "StreakRules", "ZoneRules"], path: "Services/NoAlcStreak/App"),
        .executableTarget(name: "NoAlcStreakMain", dependencies: ["NoAlcStreak"], path: "Services/NoAlcStreak/Main"),
        // HTTP for clients without ZeroMQ: ops forwarded as their caller, events as SSE, the web app's files.
        .target(
            name: "HTTPGateway",
            dependencies: ["LHTClient", "LHTSchema", "LHTSecurity", "ServiceHost", "ZeroMQ",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdTLS", package: "hummingbird"),
                           .product(name: "HummingbirdCore", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "CoreMetrics", package: "swift-metrics"),
                           .product(name: "Logging", package: "swift-log")],
            path: "Services/HTTPGateway/App"),
        .executableTarget(name: "HTTPGatewayMain", dependencies: ["HTTPGateway"], path: "Services/HTTPGateway/Main"),
        .executableTarget(
            name: "LHTCommand",
            dependencies: ["LHTClient", "LHTSecurity", "Spawn", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Services/LHT", exclude: ["README.md"]),

        // Benchmarks are an executable, not tests: `swift run -c release bench <name>`.
        .executableTarget(
            name: "Bench",
            dependencies: ["ZeroMQ", "ServiceHost", "Storage", "LHTSchema", "LHTClient", "LHTSecurity", "SessionLogger", "ReminderPlanner", "ReminderPlanning", "ZoneRules", "NoAlcStreak", "StreakRules",
                           "TestSupport", "SQLiteStorage", "PostgresStorage", "Spawn", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/Benchmarks", exclude: ["c", "python", "wrk", "README.md"]),

        // Shared test support: the in-process service harness, typed test clients, temp directories, a host's SQLite file.
        .target(
            name: "TestSupport",
            dependencies: ["ZeroMQ", "LHTSchema", "LHTClient", "ServiceHost", "Spawn", "SQLiteStorage", "PostgresStorage",
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"),
        // The in-process rig: every service library built from its flags on a thread of its own, in one test's scratch directory.
        .target(
            name: "ServiceTestSupport",
            dependencies: ["TestSupport", "SessionLogger", "ReminderPlanner", "Notifier", "NoAlcStreak", "ServiceHost", "LHTClient", "LHTSchema",
                           "ZeroMQ", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/ServiceTestSupport"),

        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ"]),
        .testTarget(name: "SpawnTests", dependencies: ["Spawn", "TestSupport"]),
        .testTarget(name: "ZoneRulesTests", dependencies: ["ZoneRules", "LHTSchema", "TestSupport"], exclude: ["Reference"]),
        .testTarget(name: "LHTSchemaTests", dependencies: ["LHTSchema", "ZoneRules", "TestSupport"]),
        .testTarget(name: "LHTSecurityTests", dependencies: ["LHTSecurity", "ZeroMQ", "LHTSchema", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "LHTSchema", "TestSupport"]),
        .testTarget(name: "SQLiteStorageTests", dependencies: ["SQLiteStorage", "Storage", "CZstd", "LHTSchema", "ZeroMQ", "TestSupport",
                                                             .product(name: "GRDB", package: "GRDB.swift")]),
        // Starts a real PostgreSQL server of its own (deploy/install-prerequisites --postgres).
        .testTarget(name: "PostgresStorageTests", dependencies: ["PostgresStorage", "Storage", "LHTSchema", "ZeroMQ", "TestSupport",
                                                               .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ServiceHostTests", dependencies: ["ServiceHost", "Storage", "SQLiteStorage", "LHTSchema", "LHTClient", "ZeroMQ", "TestSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ReminderPlanningTests", dependencies: ["ReminderPlanning", "LHTSchema", "ZoneRules"]),
        // The planner's library without its sockets: its scheduler, stored rules and tables on both backends, and a planner
        // driven through `host.process` (beside an in-process session logger, its upstream) for its schedule, loading and batches.
        .testTarget(name: "ReminderPlannerTests", dependencies: ["ReminderPlanner", "ReminderPlanning", "ServiceHost", "Storage", "SQLiteStorage", "PostgresStorage",
                                                               "LHTSchema", "TestSupport", "ServiceTestSupport", "LHTClient",
                                                               .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "StreakRulesTests", dependencies: ["StreakRules", "LHTSchema", "TestSupport"]),
        .testTarget(name: "NotificationRenderingTests", dependencies: ["NotificationRendering", "LHTSchema"]),
        .testTarget(name: "SessionLoggerTests", dependencies: ["SessionLogger", "LHTSchema", "TestSupport"]),
        .testTarget(name: "NotifierTests", dependencies: ["Notifier", "ServiceHost", "LHTClient", "TestSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // The client against stand-in instances over real TCP.
        .testTarget(name: "LHTClientTests", dependencies: ["LHTClient", "LHTSchema", "ZeroMQ", "TestSupport"]),
        // Every service library in-process, over real sockets, with typed calls (LHTClient and the catalog).
        .testTarget(
            name: "ServiceTests",
            dependencies: ["TestSupport", "ServiceTestSupport", "SessionLogger", "ReminderPlanner", "Notifier", "NoAlcStreak", "LHTSecurity",
                           "ServiceHost", "Storage", "SQLiteStorage", "LHTClient", "LHTSchema", "ZoneRules", "ZeroMQ",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           // To damage a stopped service's SQLite file on purpose.
                           .product(name: "GRDB", package: "GRDB.swift")]),
        // Starts the built executables as real processes; depends on them only through the build
        // (Storage for `Ownership.partition(of:)`: which of the 64 partitions a user is in).
        .testTarget(name: "HTTPGatewayTests", dependencies: ["HTTPGateway", "LHTClient", "LHTSecurity", "LHTSchema", "ServiceHost", "TestSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .testTarget(name: "SystemTests", dependencies: ["ZeroMQ", "LHTSchema", "LHTClient", "LHTSecurity", "TestSupport", "PostgresStorage", "Storage"]),
    ]
)
