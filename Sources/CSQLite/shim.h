#include <sqlite3.h>

/// Turns SQLite's memory statistics on or off (SQLITE_CONFIG_MEMSTATUS); only before SQLite is
/// initialized, else SQLITE_MISUSE. A function of its own because sqlite3_config is variadic,
/// which Swift cannot call.
static inline int lanchat_sqlite3_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}
