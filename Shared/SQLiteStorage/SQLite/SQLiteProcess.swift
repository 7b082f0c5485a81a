import CSQLite

/// SQLite's settings for the whole process, made once before its first connection.
public enum SQLiteProcess {
    /// SQLite counts the memory it allocates unless told not to, and the count sits behind one mutex
    /// for the whole process: the planner's loop and its decisions' thread, each with a connection of
    /// its own, waited for each other on it in a burst of decisions, the core idle meanwhile
    /// (docs/decisions/0016-planner-deciding-loop.md). Nothing here reads the count.
    /// False if a connection was opened first, in which case SQLite keeps counting.
    public static let configured: Bool = lht_sqlite3_disable_memory_status() == SQLITE_OK
}
