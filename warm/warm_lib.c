/* warm/warm_lib.c — libnsbox_warm.so: nsbox's C inside the zygote.
 *
 * The zygote (warm/zygote.py, a CPython started exactly as a cold job's
 * interpreter is) loads this library as the extension module
 * _nsbox_warm (_imp.create_dynamic: no ctypes, libffi or struct in the
 * zygote, so none in any job's address space or sys.modules; #28) and
 * calls its serve(3, start), with the GIL held, once. It returns in the
 * zygote only: when the control socket closes and every job it started has
 * ended (0), or on a broken start (-1, the reason on stderr). In a job it
 * never returns: warm_job_start (warm_job.c) calls zygote.py's start with
 * the job's argv and runs the generator it returns; no ctypes call is made
 * in a job.
 *
 * For each JOB record: decode the spec (warm_spec.h), then CPython's fork
 * protocol around a clone3 into fresh user, mount, pid, ipc, uts and cgroup
 * namespaces: PyOS_BeforeFork in the zygote, PyOS_AfterFork_Parent after
 * it, PyOS_AfterFork_Child only in the job (PID 2, forked by the job's init,
 * which never runs Python). The job's init runs child_warm_job_init_steps;
 * the job runs child_program_steps there, unchanged. The zygote reads
 * nothing of the job: the spec memfd and the job's fds pass through it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "supervisor/child.h"
#include "supervisor/wire.h"
#include "util/readfile.h"
#include "util/sys.h"
#include "supervisor/warm_spec.h"
#include "warm/warm_job.h"

/* The symbols Python looks up: the module's init (the interpreter's
 * import), and serve's C entry. */
int nsbox_warm_serve(int ctl, void *start, void *zygote_dicts);
void *PyInit__nsbox_warm(void);

/* The zygote's own argv (/proc/self/cmdline), read once: a job whose
 * interpreter part differs cannot be this zygote's. */
static char py_comm[16];       /* the interpreter's own process name */
static uint64_t preload_mapped; /* address space the zygote's preloads mapped (serve's 3rd argument) */
static char *self_cmdline;
static size_t self_cmdline_len;

static void read_self_cmdline(void)
{
        struct nsb_error e;

        if (read_file("/proc/self/cmdline", 1u << 16, &self_cmdline, &self_cmdline_len, &e) < 0)
                self_cmdline = NULL;   /* then no job matches: each is refused, never run elsewhere */
}

/* argv[0..script) equals the zygote's interpreter part. */
static bool same_interpreter(const struct warm_job *j)
{
        size_t off = 0;

        for (size_t i = 0; i < j->script; i++) {
                size_t n = strlen(j->argv[i]) + 1;
                if (!self_cmdline || off + n > self_cmdline_len || memcmp(self_cmdline + off, j->argv[i], n) != 0)
                        return false;
                off += n;
        }
        return true;
}

/* FD_CGROUP: cgroup v2, the job's cgroup directory (O_PATH), when its
 * supervisor made it inside this generation's (wire.h, JOB); optional. */
enum { FD_SOCK, FD_STDIN, FD_STDOUT, FD_STDERR, FD_SPEC, N_JOB_FDS, FD_CGROUP = N_JOB_FDS };

struct pyfork {
        void (*before)(void);
        void (*after_parent)(void);
        void (*after_child)(void);
};

static int pyfork_resolve(struct pyfork *p)
{
        /* The python3 binary exports them (ctypes.pythonapi relies on it). */
        p->before = (void (*)(void)) dlsym(RTLD_DEFAULT, "PyOS_BeforeFork");
        p->after_parent = (void (*)(void)) dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Parent");
        p->after_child = (void (*)(void)) dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Child");
        return p->before && p->after_parent && p->after_child ? 0 : -1;
}

static void send_record(int sock, enum wire_kind kind, const struct nsb_error *err, const int *fds, size_t n_fds,
                        bool born_in_cgroup)
{
        struct wire_msg m;

        memset(&m, 0, sizeof m);
        m.version = WIRE_VERSION;
        m.kind = kind;
        m.born_in_cgroup = born_in_cgroup;
        if (err)
                m.error = *err;
        ledger_init(&m.ledger);
        if (n_fds)
                (void) wire_send_fds(sock, &m, fds, n_fds);
        else
                while (send(sock, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == EINTR)
                        ;
}

/* The job's init: never returns unless it is the job itself. @born: cloned
 * into the job's v2 cgroup, whose namespace the kernel rooted there. */
static void job_init(struct warm_job *j, const int *fds, size_t n_fds, int ctl, bool born)
{
        const struct cg_ops *ops = cg_ops_for((enum cg_backend) j->lim.backend);
        struct cg_run run;
        struct child_ctx c;
        struct nsb_error e;

        cg_run_init(&run);
        run.backend = (enum cg_backend) j->lim.backend;
        j->cg_spec.as_inherited = preload_mapped;
        c = (struct child_ctx){
                .sock = fds[FD_SOCK],
                .stdio = { fds[FD_STDIN], fds[FD_STDOUT], fds[FD_STDERR] },
                .channel_fd = -1,
                .cfg = &j->cfg,
                .mounts = &j->plan,
                .slot_fds = NULL,
                .filter = &j->filter,
                .landlock = &j->landlock,
                .cg_ops = ops,
                .cg_run = &run,
                .cg_spec = &j->cg_spec,
                .rlimit_cpu = j->lim.rlimit_cpu != 0,
                /* born in its cgroup: nothing to join, and no second
                 * cgroup namespace to make (init_cgroup_v1) */
                .cg_join_late = j->lim.join_late != 0 && !born,
                .fail_stage = j->lim.fail_stage,
                .warm = true,
                .ucounts = j->lim.ucounts,
                .ucount_dirfd = -1,
        };
        ledger_init(&c.ledger);
        /* ps and perf tell the zygote and the job's init from Python */
        (void) prctl(PR_SET_NAME, "nsbox-job-init");
        close(fds[FD_SPEC]);
        if (n_fds > FD_CGROUP)
                close(fds[FD_CGROUP]);   /* no cgroup fd reaches the job */
        close(ctl);   /* only the zygote takes jobs */
        nsb_error_clear(&e);
        if (child_run_steps(&c, child_warm_job_init_steps, child_warm_job_init_n_steps, &e) < 0)
                child_fail_exit(&c, &e);
        if (!c.warm_job)
                _exit(0);
        (void) prctl(PR_SET_NAME, py_comm);   /* the job: the interpreter's name, as a cold job's */
}

/* Never returns in the job (warm_job_start); in the zygote, returns with
 * the job handed over (or refused with an ERROR record on its socket). */
/* clone3 as @args says, into the cgroup @cg_fd when it is not -1: the job's
 * init is then born there, never outside its limits, and no job pays a
 * cgroup.procs write (#28). The kernel checks the caller's (our) right to
 * it: write access to cgroup.procs of the job's cgroup and of the common
 * ancestor, and, with nsdelegate, both cgroups inside our cgroup namespace
 * (kernel/cgroup/cgroup.c, cgroup_css_set_fork). Refused for any reason
 * (EPERM, EACCES, ENOENT, EBUSY, EINVAL, an older kernel), the clone is
 * made as before and the init joins by fd: *ret_born says which happened. */
static pid_t clone_job_init(struct clone_args *args, int cg_fd, bool *ret_born)
{
        pid_t pid;

        *ret_born = false;
        if (cg_fd >= 0) {
                args->flags |= CLONE_INTO_CGROUP;
                args->cgroup = (uint64_t) cg_fd;
                pid = sys_clone3(args);
                if (pid >= 0) {
                        *ret_born = true;
                        return pid;
                }
                args->flags &= ~(uint64_t) CLONE_INTO_CGROUP;
                args->cgroup = 0;
        }
        return sys_clone3(args);
}

static void start_job(const struct pyfork *py, void *start, const int *fds, size_t n_fds, int ctl)
{
        struct warm_job j;
        struct nsb_error e;
        struct clone_args args;
        struct stat st;
        void *map = MAP_FAILED;
        int pidfd = -1;
        bool born;
        pid_t pid;

        nsb_error_clear(&e);
        if (fstat(fds[FD_SPEC], &st) < 0 || st.st_size <= 0 ||
            (map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fds[FD_SPEC], 0)) == MAP_FAILED) {
                nsb_fail(&e, NSB_STAGE_CLONE, errno ? errno : EPROTO, "the zygote cannot read the job spec");
                send_record(fds[FD_SOCK], WIRE_ERROR, &e, NULL, 0, false);
                return;
        }
        if (warm_spec_decode(map, (size_t) st.st_size, &j, &e) < 0) {
                munmap(map, (size_t) st.st_size);
                send_record(fds[FD_SOCK], WIRE_ERROR, &e, NULL, 0, false);
                return;
        }
        if (!same_interpreter(&j)) {
                nsb_fail(&e, NSB_STAGE_CLONE, EINVAL,
                         "the job's interpreter or its arguments differ from the zygote's (%s ...)", j.argv[0]);
                send_record(fds[FD_SOCK], WIRE_ERROR, &e, NULL, 0, false);
                warm_job_free(&j);
                munmap(map, (size_t) st.st_size);
                return;
        }
        memset(&args, 0, sizeof args);
        args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                     CLONE_PIDFD;
        args.pidfd = (uint64_t) (uintptr_t) &pidfd;
        args.exit_signal = SIGCHLD;
        py->before();
        pid = clone_job_init(&args, n_fds > FD_CGROUP ? fds[FD_CGROUP] : -1, &born);
        if (pid == 0) {
                job_init(&j, fds, n_fds, ctl, born);
                /* the job: Python's state is the zygote's at PyOS_BeforeFork */
                py->after_child();
                warm_job_start(start, j.argv + j.script, (int) (j.argc - j.script));
        }
        py->after_parent();
        if (pid < 0) {
                nsb_fail(&e, NSB_STAGE_CLONE, errno,
                         "the zygote's clone (new user, mount, pid, ipc, uts and cgroup namespaces)");
                send_record(fds[FD_SOCK], WIRE_ERROR, &e, NULL, 0, false);
        } else {
                send_record(fds[FD_SOCK], WIRE_SPAWNED, NULL, &pidfd, 1, born);
                close(pidfd);
        }
        warm_job_free(&j);
        munmap(map, (size_t) st.st_size);
}

int nsbox_warm_serve(int ctl, void *start, void *zygote_dicts)
{
        struct pyfork py;
        struct sigaction sa;

        if (pyfork_resolve(&py) < 0 || warm_job_resolve(zygote_dicts) < 0) {
                fprintf(stderr, "nsbox warm: this interpreter does not export the C API a warm job needs"
                                " (PyOS_BeforeFork/AfterFork, PyRun_FileExFlags, thread states, ...)\n");
                return -1;
        }
        /* The kernel reaps the job inits: a job's supervisor waits on its
         * pidfd, and no zombie holds a job's cgroup. */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sa.sa_flags = SA_NOCLDWAIT;
        if (sigaction(SIGCHLD, &sa, NULL) < 0) {
                fprintf(stderr, "nsbox warm: SIGCHLD: %s\n", strerror(errno));
                return -1;
        }
        /* What C's stdio holds now (an extension's printf at a preload's
         * import) out to the zygote's own streams: every job's exit flushes
         * C's stdio (warm_job.c), over the job's fds 1 and 2. */
        (void) fflush(NULL);
        read_self_cmdline();
        (void) prctl(PR_GET_NAME, py_comm);
        (void) prctl(PR_SET_NAME, "nsbox-zygote");
        send_record(ctl, WIRE_HELLO, NULL, NULL, 0, false);
        for (;;) {
                struct wire_msg m;
                int fds[WIRE_MAX_FDS];
                size_t n_fds = 0;
                ssize_t n = wire_recv_fds(ctl, &m, fds, WIRE_MAX_FDS, &n_fds);

                if (n == 0)
                        break;   /* the batch is over, or this generation retired */
                if (n < 0 && n != -EPROTO) {
                        fprintf(stderr, "nsbox warm: control socket: %s\n", strerror((int) -n));
                        break;
                }
                if (n == (ssize_t) sizeof m && m.version == WIRE_VERSION && m.kind == WIRE_JOB &&
                    (n_fds == N_JOB_FDS || n_fds == N_JOB_FDS + 1))
                        start_job(&py, start, fds, n_fds, ctl);
                for (size_t i = 0; i < n_fds; i++)
                        close(fds[i]);
        }
        /* Jobs still running die with this process (their inits' parent-death
         * signal): wait for them; with SIGCHLD ignored, wait() returns
         * ECHILD once every child has ended. */
        while (wait(NULL) >= 0 || errno == EINTR)
                ;
        return 0;
}

/* ---- the extension module _nsbox_warm ------------------------------------
 * Built without Python's headers, as warm_job.c: the module's structures
 * are the stable ABI's (PyModuleDef, PyMethodDef, a non-debug PyObject
 * head), laid out here; its functions are looked up in the interpreter. */

struct py_head {
        ssize_t refcnt;
        void *type;
};

struct py_method_def {
        const char *name;
        void *(*meth)(void *self, void *args);
        int flags;
        const char *doc;
};

struct py_module_def {
        struct py_head head;            /* PyModuleDef_Base: PyObject_HEAD, m_init, m_index, m_copy */
        void *(*m_init)(void);
        ssize_t m_index;
        void *m_copy;
        const char *name;
        const char *doc;
        ssize_t size;
        struct py_method_def *methods;
        void *slots, *traverse, *clear, *free;
};

#define PY_METH_VARARGS 0x0001
#define PY_ABI_VERSION 3                /* PYTHON_ABI_VERSION: accepted by every CPython 3 */

/* serve(ctl, start[, preload_mapped[, zygote_dicts]]): nsbox_warm_serve's
 * status, in the zygote only. */
static void *py_serve(void *self, void *args)
{
        int (*parse)(void *, const char *, ...);
        void *(*from_long)(long);
        void *p = dlsym(RTLD_DEFAULT, "PyArg_ParseTuple"), *q = dlsym(RTLD_DEFAULT, "PyLong_FromLong");
        void *start = NULL, *dicts = NULL;
        int ctl = -1;

        (void) self;
        memcpy(&parse, &p, sizeof p);   /* a data pointer into a function pointer, as dlsym(3) shows */
        memcpy(&from_long, &q, sizeof q);
        unsigned long long mapped = 0;

        if (!parse || !from_long || !parse(args, "iO|KO", &ctl, &start, &mapped, &dicts))
                return NULL;   /* PyArg_ParseTuple set the error (the lookups cannot fail in CPython) */
        preload_mapped = mapped;
        return from_long(nsbox_warm_serve(ctl, start, dicts));
}

static struct py_method_def warm_methods[] = {
        { "serve", py_serve, PY_METH_VARARGS,
          "serve(ctl, start[, preload_mapped[, zygote_dicts]]): fork one job per JOB record on ctl" },
        { NULL, NULL, 0, NULL },
};

static struct py_module_def warm_module = {
        .head = { 1, NULL },
        .name = "_nsbox_warm",
        .doc = "nsbox's warm-start zygote (warm/warm_lib.c)",
        .size = -1,
        .methods = warm_methods,
};

void *PyInit__nsbox_warm(void)
{
        void *(*create)(struct py_module_def *, int);
        void *p = dlsym(RTLD_DEFAULT, "PyModule_Create2");

        memcpy(&create, &p, sizeof p);
        return create ? create(&warm_module, PY_ABI_VERSION) : NULL;
}
