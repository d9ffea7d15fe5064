/* supervisor/sandbox.h — run one program in a fresh sandbox and observe it.
 *
 * Owns: the whole life of one run: plans (mounts, ids, filter), the cgroup,
 * clone3 into new namespaces, the in-sandbox init, the supervision loop (wall
 * and CPU deadlines, output capture, cancellation) and the final result.
 * The caller owns the configuration; sbx_run never prints and never exits.
 * Only one run at a time per process unless the caller gives each its own
 * struct sbx_request (a caller may run several at once, one request each).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cgroup/cgroup.h"
#include "config/config.h"
#include "profile/profile.h"
#include "result/result.h"

/* Where the zygote's sandbox mounts the directory of libnsbox_warm.so
 * (the runner_dir of an SBX_ZYGOTE request): in /program, which every
 * job's own /program covers, so no job sees it. */
#define WARM_ZYGOTE_CODE_DIR "/program/.nsbox-warm"

/* How the run's process tree starts (docs/warm-start.md). */
enum sbx_start {
        SBX_COLD = 0,           /* clone3 into fresh namespaces, exec the command */
        SBX_ZYGOTE,             /* a cold sandbox whose program is warm/zygote.py: the zygote
                                   (warm/warm_pool.h starts it; its control socket is channel_fd) */
        SBX_WARM,               /* a python job forked by the zygote behind warm_ctl */
};

struct mnt_file;

struct sbx_request {
        const struct nsb_config *cfg;        /* limits, mounts, network, isolation, env */
        char *const *argv;                   /* exact argv inside the sandbox; argv[0] absolute
                                                or resolved against the sandbox PATH */
        size_t argc;
        bool python;                         /* mount the python profile (interpreter closure) */
        const struct host_set *python_host;  /* that closure, already resolved by the caller for
                                                cfg->interpreter (once for many runs); NULL =
                                                resolve it now */
        const char *program_name;            /* file placed read-only at /program/NAME; NULL = none */
        const char *program_data;            /* its bytes (already read by the caller, hashed) */
        size_t program_len;
        const char *script;                  /* the program's path in argv when it is not
                                                /program/NAME (a script in the workspace) */
        const char *workdir;                 /* strict: the working directory, a path below
                                                /workspace (program/program.h); NULL = /workspace */
        const char *program_sha256;          /* hex SHA-256 of the program (program/program.h):
                                                the result's program_sha256; NULL = none */
        const char *stdin_data;              /* when non-NULL: the program's stdin bytes */
        size_t stdin_len;
        bool relay;                          /* also copy the (bounded) streams to our stdout/stderr */
        const char *runner_dir;              /* host dir bound read-only at /nsbox, or NULL */
        int channel_fd;                      /* write end given to the program as fd 3 (a
                                                results channel); <= 2 means none */
        bool give_channel;                   /* sbx_run closes the caller's channel_fd once the init
                                                holds it: the program's end of the channel is then
                                                the only one, and its peer sees it go */
        unsigned serial;                     /* distinguishes concurrent runs of one process */
        int cancel_fd;                       /* readable = cancel the run (e.g. a signalfd for
                                                SIGINT/SIGTERM); -1 = none */
        enum sbx_start start;
        int warm_ctl;                        /* SBX_WARM: the zygote's control socket */
        const char *warm_cgroup;             /* SBX_WARM: the name of the zygote generation's run
                                                cgroup (warm_pool.cgroup): on cgroup v2 the job's
                                                goes inside it, when it is ready, and the zygote
                                                clones the job's init straight into it; NULL = no */
        const char *warm_lib;                /* SBX_ZYGOTE: libnsbox_warm.so's host path (mounted
                                                read-only with its library closure) */
        const struct mnt_file *files;        /* strict: placed in the fresh /workspace before the
                                                program starts (a batch job's "files"), cold or warm */
        size_t n_files;
        const char *const *fetch;            /* strict: read back from /workspace after the run (no
                                                symbolic link followed, no FIFO or device opened,
                                                bounded: supervisor/fetch_plan.h) into the result's
                                                "files"/"files_refused" */
        size_t n_fetch;
};

/* Before a process forks workers that each run sandboxes (a batch, say): get the
 * cgroup they will all use, once (cgroup/cgroup.h, cg_obtain: our own,
 * --cgroup-parent, or a delegated systemd scope, then our leaf in it), so
 * no worker asks systemd itself. sbx_run does the same and finds it done.
 * -errno (stage cgroup) when --cgroup-parent is refused. */
int sbx_obtain_cgroup(const struct nsb_config *cfg, struct cg_obtained *ret, struct nsb_error *e);

/* Runs the request and fills @ret (always: on a sandbox failure ret->status is
 * RUN_ERROR with the stage). Returns 0, or -errno when even that failed. */
int sbx_run(const struct sbx_request *req, struct run_result *ret);
