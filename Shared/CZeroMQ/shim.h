#ifndef LHT_CZEROMQ_SHIM_H
#define LHT_CZEROMQ_SHIM_H
#include <zmq.h>
#include <errno.h>
#include <sys/eventfd.h>
#endif
