#ifndef LHT_CSQLITE_SHIM_H
#define LHT_CSQLITE_SHIM_H
// Debian's libsqlite3-dev, the library GRDB links. `sqlite3_config` is variadic, which Swift cannot
// call: these wrap the calls the storage makes.
#include <sqlite3.h>

// Stops SQLite counting the memory it allocates (on by default): the count sits behind one mutex for
// the whole process, which every allocation of every connection takes. SQLITE_MISUSE once SQLite is
// initialized (a connection was opened first).
static inline int lht_sqlite3_disable_memory_status(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
#endif
