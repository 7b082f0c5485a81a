#ifndef LHT_CLIBPQ_SHIM_H
#define LHT_CLIBPQ_SHIM_H
// Debian's libpq-dev puts the header in /usr/include/postgresql; pkg-config libpq adds that directory.
#include <libpq-fe.h>
#endif
