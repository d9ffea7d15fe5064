/* supervisor/capture.h — bounded capture of one output stream. Pure.
 * Keeps the first `limit` bytes, the last RUN_TAIL_MAX bytes, and counts all,
 * so nsbox's memory stays bounded however much the program prints. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result/result.h"

/* Account @n bytes of @buf. Returns how many leading bytes of @buf were kept
 * in st->text (the part a relay may copy on), or -ENOMEM. */
long capture_feed(struct run_stream *st, uint64_t limit, const char *buf, size_t n);

/* Has the program written more than 4x @limit in all (@written: both
 * streams), the point where the output limit stops it? Without overflow:
 * 4x a limit above UINT64_MAX/4 is more than can ever be written. */
bool capture_over_limit(uint64_t written, uint64_t limit);
