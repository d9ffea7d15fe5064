/* util/rlimit.h — lowering a resource limit for good. */
#pragma once

#include <stdint.h>

#include "util/error.h"

/* Lowers @resource's hard limit to @value when it is higher (never raises
 * it: that needs CAP_SYS_RESOURCE in the init namespace, and a lower
 * inherited limit is the stricter one) and sets soft = hard, so the process
 * cannot raise it back. @name ("RLIMIT_NPROC") is for the error. */
int rlimit_lower(int resource, const char *name, uint64_t value, struct nsb_error *e);
