#ifndef LHT_CPREFETCH_H
#define LHT_CPREFETCH_H
// Swift has no prefetch: the planner asks for the memory of the occurrence it decides next while it
// decides this one (its rows are a million apart, so each was a cache miss).
static inline void lht_prefetch(const void *address) { __builtin_prefetch(address); }
#endif
