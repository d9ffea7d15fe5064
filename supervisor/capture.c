/* supervisor/capture.c — see capture.h. Pure. */
#include "supervisor/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

long capture_feed(struct run_stream *st, uint64_t limit, const char *buf, size_t n)
{
        size_t keep = 0;

        if (st->kept < limit) {
                uint64_t room = limit - st->kept;
                char *nt;
                keep = n < room ? n : (size_t) room;
                nt = realloc(st->text, st->kept + keep + 1);
                if (!nt)
                        return -ENOMEM;
                st->text = nt;
                memcpy(st->text + st->kept, buf, keep);
                st->kept += keep;
                st->text[st->kept] = '\0';
        }
        st->bytes += n;
        st->truncated = st->bytes > st->kept;
        if (n >= RUN_TAIL_MAX) {
                memcpy(st->tail, buf + n - RUN_TAIL_MAX, RUN_TAIL_MAX);
                st->tail_len = RUN_TAIL_MAX;
        } else {
                size_t drop = st->tail_len + n > RUN_TAIL_MAX ? st->tail_len + n - RUN_TAIL_MAX : 0;
                memmove(st->tail, st->tail + drop, st->tail_len - drop);
                st->tail_len -= drop;
                memcpy(st->tail + st->tail_len, buf, n);
                st->tail_len += n;
        }
        return (long) keep;
}

bool capture_over_limit(uint64_t written, uint64_t limit)
{
        return limit <= UINT64_MAX / 4 && written > 4 * limit;
}
