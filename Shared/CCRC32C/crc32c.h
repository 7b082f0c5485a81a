#ifndef LHT_CCRC32C_H
#define LHT_CCRC32C_H
// CRC-32C by the processor's own instruction (SSE 4.2's crc32), which Swift cannot emit: many times
// faster than slicing by 8 (docs/decisions/0011), and a start after a crash checks every record of
// the log. Elsewhere, and on a processor without it, `lht_crc32c_hardware` is 0 and
// Storage uses its tables.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

static inline int lht_crc32c_hardware(void) {
    unsigned int eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
}

// The register before the customary inversions: `crc` in, and out, as the tables keep it.
__attribute__((target("sse4.2")))
static inline uint32_t lht_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *next = (const unsigned char *)bytes;
    uint64_t wide = crc;
    for (; count >= 8; count -= 8, next += 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        wide = __builtin_ia32_crc32di(wide, word);
    }
    uint32_t narrow = (uint32_t)wide;
    for (; count > 0; count--, next++) narrow = __builtin_ia32_crc32qi(narrow, *next);
    return narrow;
}
#else
static inline int lht_crc32c_hardware(void) { return 0; }
static inline uint32_t lht_crc32c_update(uint32_t crc, const void *bytes, size_t count) { return crc; }
#endif

#endif
