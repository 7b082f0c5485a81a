#ifndef LHT_CZSTD_SHIM_H
#define LHT_CZSTD_SHIM_H
// Debian's libzstd-dev; only the stable API (no ZSTD_STATIC_LINKING_ONLY).
#include <zstd.h>
#endif
