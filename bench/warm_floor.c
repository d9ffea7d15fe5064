/* bench/warm_floor.c — the least a warm job in fresh namespaces can cost.
 *
 *   warm_floor N MODE CODE        (WARM_FLOOR_PRELOAD=MODULE: imported once first)
 *
 * Starts one CPython (embedded, isolated, like `python3 -I -B`), then runs
 * CODE N times, one job after another, each in a process forked from that
 * ready interpreter:
 *
 *   fork  the job is a plain fork() of the interpreter: no namespaces. What
 *         a pre-forking runner without isolation pays.
 *   ns    what every warm nsbox job gets from the kernel: clone3 into new
 *         user, mount, pid, ipc, uts and cgroup namespaces (no network
 *         namespace: warm jobs share an empty one); that child (PID 1 there)
 *         maps its ids and forks the job (PID 2), waits for it and exits.
 *   nsx   as ns, but PID 1 owns no copy of the interpreter: cloned with
 *         CLONE_VM|CLONE_VFORK (it runs in the interpreter's memory while
 *         the interpreter waits), it maps its ids, forks the job (a copy of
 *         the interpreter, as in ns), then execs $WARM_FLOOR_REAPER
 *         (bench/floor_reaper.c: no C library, 2 pages), which releases the
 *         interpreter and reaps. Measures #28's "one address space per job"
 *         candidate: no second copy of the page tables, made and torn down.
 *
 * Nothing else: no mounts, limits, cgroups, filters, Landlock, pipes,
 * supervision or finalisation (the job flushes stdout and _exits). It is not
 * a sandbox; bench/warm.sh prints it beside nsbox's warm jobs as the floor
 * under any design that gives each job fresh namespaces and a fork of a
 * ready interpreter. Prints one line: wall and CPU (user+system of this
 * process and every descendant, all waited for) per job, in ms.
 */
#define _GNU_SOURCE
#include <Python.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double cpu_ms(int who)
{
        struct rusage ru;

        getrusage(who, &ru);
        return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text)) {
                perror(path);
                _exit(125);
        }
        close(fd);
}

static _Noreturn void run_job(const char *code)
{
        PyOS_AfterFork_Child();
        if (PyRun_SimpleString(code) != 0)
                _exit(1);
        PyRun_SimpleString("import sys; sys.stdout.flush(); sys.stderr.flush()");
        _exit(0);
}

static int wait_for(pid_t pid)
{
        int status;

        while (waitpid(pid, &status, 0) < 0)
                ;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* PID 1 of the job's namespaces: its own id maps, then the job as PID 2. */
static _Noreturn void job_init(const char *code, uid_t uid, gid_t gid)
{
        char map[64];
        pid_t job;

        snprintf(map, sizeof map, "0 %u 1", (unsigned) uid);
        write_file("/proc/self/uid_map", map);
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", (unsigned) gid);
        write_file("/proc/self/gid_map", map);
        job = fork();
        if (job < 0)
                _exit(125);
        if (job == 0)
                run_job(code);
        _exit(wait_for(job));
}

/* nsx: what the init that shares the interpreter's memory needs, set
 * before the clone (it has no arguments of its own), and its stack. */
static struct {
        const char *code, *reaper;
        uid_t uid;
        gid_t gid;
} nsx;
static char nsx_stack[1 << 16] __attribute__((aligned(16)));

/* PID 1, in the interpreter's memory until the exec: nothing here may
 * allocate or leave state the interpreter would see when it resumes. */
static int job_init_shared(void *unused)
{
        char map[64];
        char *argv[] = { "floor_reaper", NULL }, *envp[] = { NULL };
        pid_t job;

        (void) unused;
        snprintf(map, sizeof map, "0 %u 1", (unsigned) nsx.uid);
        write_file("/proc/self/uid_map", map);
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", (unsigned) nsx.gid);
        write_file("/proc/self/gid_map", map);
        job = fork();
        if (job < 0)
                _exit(125);
        if (job == 0)
                run_job(nsx.code);
        execve(nsx.reaper, argv, envp);
        _exit(126);
}

static pid_t start_job_shared(const char *code, uid_t uid, gid_t gid)
{
        pid_t pid;

        nsx.code = code;
        nsx.uid = uid;
        nsx.gid = gid;
        PyOS_BeforeFork();
        pid = clone(job_init_shared, nsx_stack + sizeof nsx_stack,
                    CLONE_VM | CLONE_VFORK | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
                            CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD,
                    NULL);
        PyOS_AfterFork_Parent();
        return pid;
}

static pid_t start_job(bool ns, const char *code, uid_t uid, gid_t gid)
{
        struct clone_args args = {
                .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP,
                .exit_signal = SIGCHLD,
        };
        pid_t pid;

        PyOS_BeforeFork();
        pid = ns ? (pid_t) syscall(SYS_clone3, &args, sizeof args) : fork();
        if (pid == 0) {
                if (ns)
                        job_init(code, uid, gid);
                run_job(code);
        }
        PyOS_AfterFork_Parent();
        return pid;
}

int main(int argc, char **argv)
{
        PyConfig config;
        const char *preload = getenv("WARM_FLOOR_PRELOAD");
        double t0, c0;
        long n;
        bool ns, shared;

        if (argc != 4 || (strcmp(argv[2], "fork") != 0 && strcmp(argv[2], "ns") != 0 && strcmp(argv[2], "nsx") != 0) ||
            (n = atol(argv[1])) < 1) {
                fprintf(stderr, "usage: warm_floor N fork|ns|nsx CODE\n");
                return 125;
        }
        ns = strcmp(argv[2], "ns") == 0;
        shared = strcmp(argv[2], "nsx") == 0;
        nsx.reaper = getenv("WARM_FLOOR_REAPER");
        if (shared && !nsx.reaper) {
                fprintf(stderr, "warm_floor: nsx needs WARM_FLOOR_REAPER (bench/floor_reaper.c, built)\n");
                return 125;
        }
        PyConfig_InitIsolatedConfig(&config);
        config.write_bytecode = 0;
        if (PyStatus_Exception(Py_InitializeFromConfig(&config))) {
                fprintf(stderr, "warm_floor: the interpreter did not start\n");
                return 125;
        }
        PyConfig_Clear(&config);
        if (preload && preload[0] && !PyImport_ImportModule(preload)) {
                PyErr_Print();
                return 125;
        }
        /* As nsbox's zygote does last before serving: nothing of the
         * interpreter's start-up is collected (or its pages copied) by a job. */
        PyRun_SimpleString("import gc; gc.collect(); gc.freeze()");
        t0 = now_ms();
        c0 = cpu_ms(RUSAGE_SELF) + cpu_ms(RUSAGE_CHILDREN);
        for (long i = 0; i < n; i++) {
                pid_t pid = shared ? start_job_shared(argv[3], geteuid(), getegid())
                                   : start_job(ns, argv[3], geteuid(), getegid());
                int rc;

                if (pid < 0) {
                        perror("warm_floor: clone3/fork");
                        return 125;
                }
                if ((rc = wait_for(pid)) != 0) {
                        fprintf(stderr, "warm_floor: job %ld ended %d\n", i, rc);
                        return 1;
                }
        }
        fprintf(stderr, "warm_floor %s: %ld jobs, wall %.3f ms/job, cpu %.3f ms/job\n", argv[2], n,
                (now_ms() - t0) / (double) n, (cpu_ms(RUSAGE_SELF) + cpu_ms(RUSAGE_CHILDREN) - c0) / (double) n);
        return 0;
}
