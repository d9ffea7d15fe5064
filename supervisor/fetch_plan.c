/* supervisor/fetch_plan.c — see fetch_plan.h. Pure. */
#include "supervisor/fetch_plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

const char *fetch_refusal(int err)
{
        switch (err) {
        case ELOOP:
                return "a symbolic link: not followed";
        case EINVAL:
                return "not a regular file (a FIFO, device, socket or directory): not opened";
        case EFBIG:
                return "larger than the bound (8 MiB a file, 16 MiB in all)";
        case ENOENT:
                return "no such file";
        case ENOTDIR:
                return "a component of its name is not a directory";
        case EACCES:
                return "not readable";
        case EXDEV:
                return "outside the workspace";
        default:
                return strerror(err);
        }
}

int fetch_render(const char *buf, size_t len, char *const *names, size_t n, json_t *result, struct nsb_error *e)
{
        json_t *files = json_object(), *refused = json_object();
        size_t off = 0, total = 0;
        int r = 0;

        if (!files || !refused)
                r = nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "out of memory");
        for (size_t i = 0; r == 0 && i < n; i++) {
                struct fetch_head h;
                char *b64;

                if (len - off < sizeof h) {
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, EPROTO, "the fetched files' record %zu is cut", i);
                        break;
                }
                memcpy(&h, buf + off, sizeof h);
                off += sizeof h;
                if (h.err) {
                        json_object_set_new(refused, names[i], json_string(fetch_refusal((int) h.err)));
                        continue;
                }
                if (h.len > FETCH_FILE_MAX || h.len > len - off || (total += h.len) > FETCH_TOTAL_MAX) {
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, EPROTO, "the fetched file '%.64s' is past its record or the bounds",
                                     names[i]);
                        break;
                }
                if (!(b64 = b64_encode(buf + off, (size_t) h.len)) ||
                    json_object_set_new(files, names[i], json_string(b64)) < 0)
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "out of memory");
                free(b64);
                off += (size_t) h.len;
        }
        if (r == 0 && off != len)
                r = nsb_fail(e, NSB_STAGE_OUTPUT, EPROTO, "the fetched files' records have %zu bytes too many", len - off);
        if (r == 0) {
                json_object_set(result, "files", files);
                if (json_object_size(refused))
                        json_object_set(result, "files_refused", refused);
        }
        json_decref(files);
        json_decref(refused);
        return r;
}

const char *fetch_unread_reason(const struct run_result *r)
{
        if (r->status == RUN_CANCELLED || r->status == RUN_ERROR ||
            (r->status == RUN_LIMIT && (r->limit == LIMIT_WALL_TIME || r->limit == LIMIT_CPU_TIME)))
                return NULL;   /* the init was stopped with the job: neither key (contract.md) */
        if (r->limits_hit & (1u << LIMIT_MEMORY))
                return "not read back: the job's memory limit was reached (the workspace's files count against it, "
                       "and so does reading them back)";
        return "not read back: the job's init sent none";
}

int fetch_render_unread(char *const *names, size_t n, const char *why, json_t *result)
{
        json_t *files = json_object(), *refused = json_object();
        int r = files && refused ? 0 : -ENOMEM;

        for (size_t i = 0; r == 0 && i < n; i++)
                if (json_object_set_new(refused, names[i], json_string(why)) < 0)
                        r = -ENOMEM;
        if (r == 0 && (json_object_set(result, "files", files) < 0 || json_object_set(result, "files_refused", refused) < 0))
                r = -ENOMEM;
        json_decref(files);
        json_decref(refused);
        return r;
}
