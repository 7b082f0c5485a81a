// swift-tools-version:6.0
import PackageDescription

// Layering, bottom up: libzmq (system library) → ZeroMQ (safe wrapper) → LHTSchema (wire values)
// → ServiceHost (flags, api loop, event log) → one library per service → one thin executable each.
// Pure decision modules (ReminderPlanning, StreakRules, NotificationRendering) know no sockets or files.
let package = Package(
    name: "LeanHealthTimer",
    platforms: [.macOS(.v14)],
    products: [
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CZeroMQ", path: "Shared/CZeroMQ", pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ"], path: "Shared/ZeroMQ"),
        .target(name: "LHTSchema", path: "Shared/Schema", exclude: ["PROTOCOL.md"]),

        // Pure decision cores.

        // Services: a library each (the app, built by a function tests call) and a thin executable.


        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ"]),
    ]
)
