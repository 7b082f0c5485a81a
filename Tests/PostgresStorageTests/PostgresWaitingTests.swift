import Foundation
import PostgresStorage
import Testing
import TestSupport

/// `PostgresConnection.waitForServer`, against a real PostgreSQL: a statement that waits for a
/// row lock another session holds is waited for through it, so its thread does other work
/// meanwhile, and ends with the statement's own result once the lock is free.
@Suite(.serialized) struct PostgresWaitingTests {
    @Test func aStatementWaitingForARowLockIsWaitedForOutsideLibpq() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let holder = try postgres.connect(), waiter = try postgres.connect()
        try holder.execute("CREATE TABLE head (id int PRIMARY KEY, n bigint NOT NULL)")
        try holder.execute("INSERT INTO head VALUES (1, 0)")
        var handedOver = 0, turnsWhileWaiting = 0
        waiter.waitForServer = { isAnswered in
            handedOver += 1
            // The other work the owner does meanwhile; the holder lets go after a few turns of it.
            while !isAnswered() {
                turnsWhileWaiting += 1
                if turnsWhileWaiting == 20 { _ = try? holder.execute("COMMIT") }
                Thread.sleep(forTimeInterval: 0.005)  // one turn of a loop that answers health while it waits
            }
        }
        #expect(try waiter.execute("SELECT n FROM head WHERE id = 1").first?.int64(0) == 0)

        try holder.execute("BEGIN")
        try holder.execute("UPDATE head SET n = 7 WHERE id = 1")
        let transaction = try waiter.begin()
        let locked = try transaction.execute("SELECT n FROM head WHERE id = 1 FOR UPDATE")
        #expect(locked.first?.int64(0) == 7, "the locked row as the holder committed it")
        try transaction.commit()
        #expect(handedOver >= 1)
        #expect(turnsWhileWaiting >= 20, "the thread did no other work while the lock was held")
    }

    /// A session ended while its statement is waited for: the statement fails as a lost connection.
    @Test func aConnectionLostWhileWaitedForFailsTheStatement() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let holder = try postgres.connect(), waiter = try postgres.connect(), admin = try postgres.connect()
        try holder.execute("CREATE TABLE head (id int PRIMARY KEY)")
        try holder.execute("INSERT INTO head VALUES (1)")
        try holder.execute("BEGIN")
        try holder.execute("SELECT id FROM head FOR UPDATE")
        let pid = waiter.backendPID
        waiter.waitForServer = { isAnswered in
            var terminated = false
            while !isAnswered() {
                if !terminated { terminated = (try? admin.execute("SELECT pg_terminate_backend(\(pid))")) != nil }
                Thread.sleep(forTimeInterval: 0.005)  // one turn of a loop that answers health while it waits
            }
        }
        let error = #expect(throws: PostgresError.self) { try waiter.execute("SELECT id FROM head FOR UPDATE") }
        #expect(error?.kind == .connection)
        try holder.execute("ROLLBACK")
    }
}
