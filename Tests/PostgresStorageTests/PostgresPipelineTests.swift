import Foundation
import PostgresStorage
import Testing
import TestSupport

/// Statements queued in libpq's pipeline (`PostgresConnection.enqueue`), against a real PostgreSQL:
/// they go out together with the next statement whose result is read, in order; a failure among
/// them fails the transaction as a failed statement did before, with its SQLSTATE, and nothing of
/// it is visible; a connection lost meanwhile is a connection error. `sendQueued` sends them ahead
/// of that read.
@Suite(.serialized) struct PostgresPipelineTests {
    /// A server of the test's own with a table `item (n PRIMARY KEY, position)`.
    static func serverWithTable() throws -> (TestPostgres, PostgresConnection) {
        let postgres = try TestPostgres()
        let connection = try postgres.connect()
        try connection.execute("CREATE TABLE item (n bigint PRIMARY KEY, position bigserial, note text)")
        return (postgres, connection)
    }

    static func committedItems(_ postgres: TestPostgres) throws -> [Int64] {
        try postgres.connect().execute("SELECT n FROM item ORDER BY position").compactMap { $0.int64(0) }
    }

    @Test func queuedStatementsGoOutInOrderInOneRoundTripWithTheNextRead() throws {
        let (postgres, connection) = try Self.serverWithTable()
        defer { postgres.stop() }
        let before = connection.roundTrips
        let transaction = try connection.begin()
        for n in 1...10 { try transaction.enqueue("INSERT INTO item (n) VALUES ($1)", [.integer(Int64(n))]) }
        // Queued after the insert it changes: it finds the row only if the order was kept.
        try transaction.enqueue("UPDATE item SET note = 'seen' WHERE n = 7")
        #expect(connection.roundTrips == before)
        let inside = try transaction.execute("SELECT n, note FROM item ORDER BY position")
        #expect(connection.roundTrips == before + 1)
        #expect(inside.compactMap { $0.int64(0) } == Array(1...10))
        #expect(inside.filter { $0.text(1) == "seen" }.compactMap { $0.int64(0) } == [7])
        // Not visible to others before COMMIT, which takes the queued statements with it.
        try transaction.enqueue("INSERT INTO item (n) VALUES (11)")
        #expect(try Self.committedItems(postgres).isEmpty)
        try transaction.commit()
        #expect(connection.roundTrips == before + 2)
        #expect(try Self.committedItems(postgres) == Array(1...11))

        // More than a pipeline holds is read back on the way, and still in order.
        let many = try connection.begin()
        for n in 12...1_000 { try many.enqueue("INSERT INTO item (n) VALUES ($1)", [.integer(Int64(n))]) }
        try many.commit()
        #expect(try Self.committedItems(postgres) == Array(1...1_000))

        // With the pipeline off, each statement is a round trip of its own.
        connection.pipelines = false
        let alone = connection.roundTrips
        try connection.transaction { transaction in
            for n in 1_001...1_003 { try transaction.enqueue("INSERT INTO item (n) VALUES ($1)", [.integer(Int64(n))]) }
        }
        #expect(connection.roundTrips == alone + 5)
    }

    @Test func whatIsSentAtOnceRunsOnTheServerBeforeAnythingIsReadBack() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let connection = try postgres.connect(), other = try postgres.connect()
        // Tried and let go at once by the other session: false while the first holds the lock.
        func heldByTheFirst() throws -> Bool { try other.execute("SELECT pg_try_advisory_xact_lock(42)").first?.text(0) == "f" }
        let before = connection.roundTrips
        let transaction = try connection.begin()
        try transaction.enqueue("SELECT pg_advisory_xact_lock(42)")
        // Queued only, it waits in this process for the next read.
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try !heldByTheFirst())
        try connection.sendQueued()
        let deadline = Date().addingTimeInterval(10)
        while try !heldByTheFirst(), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(try heldByTheFirst())
        #expect(connection.roundTrips == before)
        // Read back as before, with the COMMIT, which lets the lock go.
        try transaction.commit()
        #expect(connection.roundTrips == before + 1)
        #expect(try !heldByTheFirst())
    }

    @Test func aQueuedReadIsAnsweredInTheRoundTripOfTheStatementsAroundIt() throws {
        let (postgres, connection) = try Self.serverWithTable()
        defer { postgres.stop() }
        try connection.execute("INSERT INTO item (n) VALUES (1)")
        let before = connection.roundTrips
        var seen: [Int64]?, changed: Int?, afterFailure = false
        try connection.transaction { _ in
            try connection.enqueue("INSERT INTO item (n) VALUES (2), (3) ON CONFLICT DO NOTHING") { _, count in changed = count }
            // Queued after the insert: it sees its rows.
            try connection.enqueue("SELECT n FROM item ORDER BY n") { rows, _ in seen = rows.compactMap { $0.int64(0) } }
            #expect(seen == nil && changed == nil)
            try connection.flush()
        }
        #expect(seen == [1, 2, 3] && changed == 2)
        #expect(connection.roundTrips == before + 2)

        // A read queued after a failed statement is skipped, and not answered.
        #expect {
            try connection.transaction { _ in
                try connection.enqueue("INSERT INTO item (n) VALUES (1)")
                try connection.enqueue("SELECT 1") { _, _ in afterFailure = true }
                try connection.flush()
            }
        } throws: { ($0 as? PostgresError)?.kind == .statement(sqlState: "23505") }
        #expect(!afterFailure)

        // With the pipeline off, it is answered at once.
        connection.pipelines = false
        var count: Int64?
        try connection.enqueue("SELECT count(*) FROM item") { rows, _ in count = rows.first?.int64(0) }
        #expect(count == 3)
    }

    @Test func aStatementWithParametersIsPreparedOnceAndOneWhoseParseWasSkippedIsNot() throws {
        let (postgres, connection) = try Self.serverWithTable()
        defer { postgres.stop() }
        func preparedCount() throws -> Int64? { try connection.execute("SELECT count(*) FROM pg_prepared_statements").first?.int64(0) }
        try connection.execute("INSERT INTO item (n) VALUES (1)")
        // Its Parse is queued after a failing statement, so the server skips it.
        #expect {
            try connection.transaction { transaction in
                try transaction.enqueue("INSERT INTO item (n) VALUES (1)")
                try transaction.enqueue("UPDATE item SET note = $1 WHERE n = $2", [.text("skipped"), .integer(1)])
                try connection.flush()
            }
        } throws: { ($0 as? PostgresError)?.kind == .statement(sqlState: "23505") }
        #expect(try preparedCount() == 0)
        // Sent again, it is prepared now, and run from its name after.
        for note in ["once", "twice"] {
            try connection.transaction { try $0.enqueue("UPDATE item SET note = $1 WHERE n = $2", [.text(note), .integer(1)]) }
        }
        #expect(try preparedCount() == 1)
        #expect(try connection.execute("SELECT note FROM item WHERE n = 1").first?.text(0) == "twice")
    }

    @Test func aFailureInTheMiddleOfABatchRollsTheWholeTransactionBack() throws {
        let (postgres, connection) = try Self.serverWithTable()
        defer { postgres.stop() }
        try connection.execute("INSERT INTO item (n) VALUES (2)")

        // A unique violation between two good inserts, found at COMMIT.
        let transaction = try connection.begin()
        for n: Int64 in [1, 2, 3] { try transaction.enqueue("INSERT INTO item (n) VALUES ($1)", [.integer(n)]) }
        #expect {
            try transaction.commit()
        } throws: { ($0 as? PostgresError)?.kind == .statement(sqlState: "23505") }
        #expect(try Self.committedItems(postgres) == [2])

        // Found by a read: the read did not run, and the transaction can only roll back.
        #expect {
            try connection.transaction { transaction in
                try transaction.enqueue("INSERT INTO item (n) VALUES (4)")
                try transaction.enqueue("INSERT INTO item (n) VALUES (2)")
                try transaction.enqueue("INSERT INTO item (n) VALUES (5)")
                _ = try transaction.execute("SELECT count(*) FROM item")
                Issue.record("the read ran after a failed statement")
            }
        } throws: { ($0 as? PostgresError)?.kind == .statement(sqlState: "23505") }
        // A ROLLBACK after a failure that is still queued rolls back too.
        let abandoned = try connection.begin()
        try abandoned.enqueue("INSERT INTO item (n) VALUES (2)")
        try abandoned.rollback()
        #expect(try Self.committedItems(postgres) == [2])

        // A lock wait that times out in the middle: its SQLSTATE, nothing of the batch stored.
        let holder = try postgres.connect()
        let held = try holder.begin()
        try held.execute("SELECT n FROM item WHERE n = 2 FOR UPDATE")
        try connection.execute("SET lock_timeout = '200ms'")
        #expect {
            try connection.transaction { transaction in
                try transaction.enqueue("INSERT INTO item (n) VALUES (6)")
                try transaction.enqueue("UPDATE item SET note = 'waited' WHERE n = 2")
                try transaction.enqueue("INSERT INTO item (n) VALUES (7)")
            }
        } throws: { ($0 as? PostgresError)?.kind == .statement(sqlState: "55P03") }
        try held.rollback()
        #expect(try Self.committedItems(postgres) == [2])

        // The connection goes on as before.
        try connection.transaction { try $0.enqueue("INSERT INTO item (n) VALUES (8)") }
        #expect(try Self.committedItems(postgres) == [2, 8])
    }

    @Test func aConnectionKilledWithStatementsQueuedIsAConnectionError() throws {
        let (postgres, connection) = try Self.serverWithTable()
        defer { postgres.stop() }
        let admin = try postgres.connect()
        let transaction = try connection.begin()
        try transaction.enqueue("INSERT INTO item (n) VALUES (1)")
        _ = try transaction.execute("SELECT 1")
        for n: Int64 in 2...5 { try transaction.enqueue("INSERT INTO item (n) VALUES ($1)", [.integer(n)]) }
        let pid = Int64(connection.backendPID)
        #expect(try admin.execute("SELECT pg_terminate_backend($1, 10000)", [.integer(pid)]).first?.text(0) == "t")
        #expect {
            try transaction.commit()
        } throws: { ($0 as? PostgresError)?.kind == .connection }
        #expect(try Self.committedItems(postgres).isEmpty)
    }
}
