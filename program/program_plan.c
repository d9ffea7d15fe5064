/* program/program_plan.c — the python program's request (program.h). Pure. */
#include "program/program.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/policy.h"
#include "path/path.h"
#include "util/cleanup.h"
#include "util/portable.h"
#include "util/sha256.h"

/* What comes after the interpreter's own arguments: the program, then its
 * arguments. */
static int program_words(const struct prog_source *src, const char *path, char ***ret, size_t *ret_n)
{
        char **tail = calloc(2 + src->n_args, sizeof *tail);
        size_t n = 0;

        if (!tail)
                return -ENOMEM;
        if (src->kind == PROG_CODE) {
                tail[n++] = "-c";
                tail[n++] = (char *) src->data;
        } else {
                tail[n++] = (char *) path;
        }
        for (size_t i = 0; i < src->n_args; i++)
                tail[n++] = src->args[i];
        *ret = tail;
        *ret_n = n;
        return 0;
}

int prog_build(const struct nsb_config *cfg, const struct prog_source *src, struct prog *ret, struct nsb_error *e)
{
        AUTOFREE char **tail = NULL;
        size_t n_tail = 0, argc = 0;

        memset(ret, 0, sizeof *ret);
        if (src->kind == PROG_FILE && nsb_asprintf(&ret->path, "/program/%s", src->name) < 0)
                goto oom;
        if (program_words(src, src->kind == PROG_PATH ? src->name : src->script ? src->script : ret->path, &tail,
                          &n_tail) < 0 ||
            cfg_python_argv(cfg, tail, n_tail, &ret->argv, &argc) < 0)
                goto oom;
        ret->req = (struct sbx_request) {
                .cfg = cfg,
                .argv = ret->argv,
                .argc = argc,
                .python = true,
                .program_name = src->kind == PROG_FILE ? src->name : NULL,
                .program_data = src->kind == PROG_FILE ? src->data : NULL,
                .program_len = src->kind == PROG_FILE ? src->len : 0,
                /* A workspace script runs from its folder; its bytes are
                 * still placed at /program/NAME: what program_sha256 is of,
                 * and what covers a warm zygote's own /program in a job. */
                .script = src->kind == PROG_FILE ? src->script : NULL,
                .workdir = src->workdir,
                .stdin_data = src->stdin_data,
                .stdin_len = src->stdin_data ? src->stdin_len : 0,
                .channel_fd = -1,
                .cancel_fd = -1,
        };
        /* A case or job without stdin of its own reads --stdin FILE (NULL:
         * sbx_run opens it anew), else an empty one: never a terminal, and
         * never nsbox's own stdin, which feeds one run at most. */
        if (src->stdin_mode == PROG_STDIN_PER_RUN && !src->stdin_data && !cfg->stdin_path)
                ret->req.stdin_data = "";
        if (src->kind != PROG_PATH) {
                sha256_hex(src->data, src->len, ret->sha256);
                ret->req.program_sha256 = ret->sha256;
        }
        return 0;
oom:
        prog_free(ret);
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
}

void prog_free(struct prog *p)
{
        free(p->argv);
        free(p->path);
        p->argv = NULL;
        p->path = NULL;
}

/* @path's part below @root ("" for @root itself), or NULL when it is not
 * below it. */
static const char *below(const char *path, const char *root)
{
        size_t n = strlen(root);

        if (!path_under(path, root))
                return NULL;
        if (strcmp(root, "/") == 0)
                return path + 1;
        return path[n] == '/' ? path + n + 1 : path + n;
}

int prog_place_plan(const char *ws, const char *dir, const char *file, const char *cwd, struct prog_place *ret)
{
        const char *rel = below(file, ws), *cwd_rel = cwd ? below(cwd, ws) : NULL;

        memset(ret, 0, sizeof *ret);
        if (!below(dir, ws))
                return 0;
        /* Named in the workspace, it must be the workspace's: a link there
         * that leads out would have nsbox (perhaps root) read, hash and run
         * a file the workspace's owner may not even read. */
        if (!rel || !rel[0])
                return -EXDEV;
        /* The real file, as the sandbox holds it: an absolute link in the
         * workspace names a host path that does not exist inside, and
         * sys.path[0] is the real folder either way (CPython's realpath). */
        if (nsb_asprintf(&ret->script, "/workspace/%s", rel) < 0 ||
            nsb_asprintf(&ret->workdir, "/workspace%s%s", cwd_rel && cwd_rel[0] ? "/" : "",
                         cwd_rel ? cwd_rel : "") < 0) {
                prog_place_free(ret);
                return -ENOMEM;
        }
        return 0;
}

void prog_place_free(struct prog_place *p)
{
        free(p->script);
        free(p->workdir);
        p->script = NULL;
        p->workdir = NULL;
}
