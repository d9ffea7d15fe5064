/* seccomp/filter_plan.c — the policy table and its pure expansion. See filter_internal.h.
 *
 * Pure: this file allocates memory and makes no syscalls. Each rule names the
 * threat it closes; docs/seccomp.md is the prose version of this table.
 *
 * The filter is a deny list on top of the other layers: capabilities are
 * already empty and Landlock is already on when it loads, so many of these
 * doors are closed twice. The filter matters for the doors that need no
 * privilege (ptrace of a sibling, unshare(CLONE_NEWUSER), io_uring, bpf,
 * TIOCSTI, socket families) and as the layer that still holds if a kernel bug
 * makes a capability check pass.
 */
#include "seccomp/filter_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/seccomp.h>

#include "util/cleanup.h"

/* One rule: WHEN selects the isolation it belongs to, KIND/ARGNO/V its argument test. */
#define RULE(name, act, when, kind, argno, v, threat) { name, act, when, { kind, argno, v, NULL, 0, 0, 0 }, threat }
#define ALWAYS(name, act, threat) RULE(name, act, FILTER_ALWAYS, FILTER_COND_NONE, 0, 0, threat)
#define IF_FLAG(name, act, argno, flag, threat) RULE(name, act, FILTER_ALWAYS, FILTER_COND_FLAG, argno, flag, threat)
#define IF_EQ32(name, act, argno, v, threat) RULE(name, act, FILTER_ALWAYS, FILTER_COND_EQ32, argno, v, threat)
#define REDUCED(name, act, threat) RULE(name, act, FILTER_REDUCED, FILTER_COND_NONE, 0, 0, threat)
#define RLIMIT_MEM(name, act, threat) RULE(name, act, FILTER_RLIMIT_MEMORY, FILTER_COND_NONE, 0, 0, threat)
#define REDUCED_EQ32(name, act, argno, v, threat) RULE(name, act, FILTER_REDUCED, FILTER_COND_EQ32, argno, v, threat)
#define REDUCED_GT(name, act, argno, v, threat) RULE(name, act, FILTER_REDUCED, FILTER_COND_GT, argno, v, threat)
/* The init's pid (FILTER_INIT_PID), or its process group (the init leads its
 * own session, so its group is 1 too), in argument ARGNO: refused. */
#define NAMES_INIT(name, argno, threat) \
        RULE(name, FILTER_EPERM, FILTER_ALWAYS, FILTER_COND_EQ32, argno, FILTER_INIT_PID, threat)
/* A CPU clock id of a process other than the caller in argument ARGNO: refused. */
#define OTHERS_CLOCK(name, argno, threat) \
        RULE(name, FILTER_EPERM, FILTER_ALWAYS, FILTER_COND_OTHERS_CLOCK, argno, 0, threat)
/* (ARGNO & 0xffffffff) == V and ARGNO2 > V2 (all 64 bits): refused. */
#define IF_EQ32_GT(name, act, argno, v, argno2, v2, threat) \
        { name, act, FILTER_ALWAYS, { FILTER_COND_EQ32_GT, argno, v, NULL, 0, argno2, v2 }, threat }
#define UNLESS_IN(name, act, when, argno, set, threat) \
        { name, act, when, { FILTER_COND_NOT_IN32, argno, 0, set, ARRAY_SIZE(set), 0, 0 }, threat }

/* Sorted and unique: filter_not_in32() walks the gaps between them. */
static const uint32_t families_unix[] = { AF_UNIX };
static const uint32_t families_unix_inet[] = { AF_UNIX, AF_INET, AF_INET6 };
static const uint32_t personalities_ok[] = { PER_LINUX, 0xffffffffu /* query */ };

static const struct filter_rule rules[] = {
        /* --- other processes' memory ------------------------------------------------ */
        ALWAYS("ptrace", FILTER_EPERM,
               "attaches to a sibling or the init: reads its memory, hijacks its execution"),
        ALWAYS("process_vm_readv", FILTER_EPERM,
               "reads another process's memory without ptrace-attaching"),
        ALWAYS("process_vm_writev", FILTER_EPERM,
               "writes another process's memory without ptrace-attaching"),
        ALWAYS("pidfd_getfd", FILTER_EPERM,
               "steals a file descriptor from another process (ptrace-mode access)"),

        /* --- the init: no syscall may name it ------------------------------------------ */
        /* The init (PID 1 of the program's pid namespace, cold and warm)
         * reaps the program and reports its status, and it has the
         * program's uid, so every check that only compares uids passes:
         * prlimit64 lowered or read its limits (found by the red team, issue
         * #27). setpriority, sched_* and ioprio_set were refused only because
         * the init holds capabilities the program lacks (commoncap's
         * cap_safe_nice), a fact of the init's set-up, not a rule. The rule
         * is one for the whole class: a syscall argument that names a
         * process, a process group or a user is refused when it can name the
         * init — pid 1, process group 1, any user (every process of the uid
         * in the pid namespace is the init's uid, and who 0 is the caller's
         * uid) — reads as well as writes, so no case is left to judge.
         * Matched on the low 32 bits: the kernel reads pid_t as int, so
         * 0x100000001 is pid 1 (FILTER_COND_EQ32). The ptrace-mode calls
         * (ptrace, process_vm_*, pidfd_getfd) are refused above for every
         * pid; process_madvise, process_mrelease and waitid(P_PIDFD) take a
         * pidfd, and the init's is refused at pidfd_open (a /proc/1 fd is a
         * pidfd only to pidfd_send_signal: Landlock's signal scope and the
         * pid-namespace init's signal rules refuse that). docs/seccomp.md. */
        NAMES_INIT("prlimit64", 0,
                   "lowers the init's RLIMIT_NOFILE/AS/CPU/FSIZE/NPROC (or reads them): the init that reports the result"),
        NAMES_INIT("setpriority", 1, "renices the init (PRIO_PROCESS 1) or its process group (PRIO_PGRP 1)"),
        NAMES_INIT("getpriority", 1, "reads the nice value of the init (PRIO_PROCESS 1) or its group (PRIO_PGRP 1)"),
        IF_EQ32("setpriority", FILTER_EPERM, 0, PRIO_USER,
                "PRIO_USER renices every process of a uid in the pid namespace: the init has the program's"),
        IF_EQ32("getpriority", FILTER_EPERM, 0, PRIO_USER,
                "PRIO_USER reads the nice values of every process of a uid, the init's included"),
        NAMES_INIT("ioprio_set", 1, "the init's I/O priority (IOPRIO_WHO_PROCESS 1) or its group's (IOPRIO_WHO_PGRP 1)"),
        NAMES_INIT("ioprio_get", 1, "reads the init's I/O priority or its group's"),
        IF_EQ32("ioprio_set", FILTER_EPERM, 0, 3 /* IOPRIO_WHO_USER */,
                "IOPRIO_WHO_USER sets the I/O priority of every process of a uid, the init's included"),
        IF_EQ32("ioprio_get", FILTER_EPERM, 0, 3 /* IOPRIO_WHO_USER */,
                "IOPRIO_WHO_USER reads the I/O priority of every process of a uid, the init's included"),
        NAMES_INIT("sched_setaffinity", 0, "pins the init to one CPU"),
        NAMES_INIT("sched_getaffinity", 0, "reads the init's CPUs"),
        NAMES_INIT("sched_setscheduler", 0, "SCHED_IDLE for the init: it reports last, if ever, under load"),
        NAMES_INIT("sched_getscheduler", 0, "reads the init's scheduling policy"),
        NAMES_INIT("sched_setparam", 0, "the init's scheduling priority"),
        NAMES_INIT("sched_getparam", 0, "reads the init's scheduling priority"),
        NAMES_INIT("sched_setattr", 0, "the init's policy, nice value and utilisation clamps"),
        NAMES_INIT("sched_getattr", 0, "reads the init's scheduling attributes"),
        NAMES_INIT("sched_rr_get_interval", 0, "reads the init's round-robin quantum"),
        NAMES_INIT("migrate_pages", 0, "moves the init's pages between NUMA nodes (ptrace-mode check: a second lock)"),
        NAMES_INIT("move_pages", 0, "moves or reads the placement of the init's pages (ptrace-mode check: a second lock)"),
        NAMES_INIT("get_robust_list", 0, "reads the init's robust futex list head, an address (ptrace-mode check)"),
        NAMES_INIT("kcmp", 0, "compares the init's descriptors and memory with ours (ptrace-mode check)"),
        NAMES_INIT("kcmp", 1, "compares the init's descriptors and memory with ours (ptrace-mode check)"),
        NAMES_INIT("pidfd_open", 0,
                   "a pidfd of the init: process_madvise, process_mrelease, pidfd_send_signal aim through it"),
        NAMES_INIT("kill", 0, "signals the init (a second lock: Landlock's signal scope, the pid-namespace init rules)"),
        NAMES_INIT("tkill", 0, "signals the init's thread (a second lock, as kill)"),
        NAMES_INIT("tgkill", 0, "signals the init's thread group (a second lock, as kill)"),
        NAMES_INIT("tgkill", 1, "signals the init's thread (a second lock, as kill)"),
        NAMES_INIT("rt_sigqueueinfo", 0, "queues a signal with forged siginfo to the init (a second lock, as kill)"),
        NAMES_INIT("rt_tgsigqueueinfo", 0, "queues a signal with forged siginfo to the init (a second lock, as kill)"),
        NAMES_INIT("rt_tgsigqueueinfo", 1, "queues a signal with forged siginfo to the init (a second lock, as kill)"),
        NAMES_INIT("setpgid", 0, "moves the init to another group (the kernel refuses: not our child)"),
        NAMES_INIT("setpgid", 1, "joins the init's process group, which PRIO_PGRP and kill(-pgid) then name"),
        NAMES_INIT("getpgid", 0, "reads the init's process group"),
        NAMES_INIT("getsid", 0, "reads the init's session"),
        /* prctl's one option that names another process: its pid is arg 2,
         * its option arg 0, a pair one single-comparison rule cannot tell;
         * core scheduling is nothing a sandboxed program needs. */
        IF_EQ32("prctl", FILTER_EPERM, 0, 62 /* PR_SCHED_CORE */,
                "PR_SCHED_CORE shares or takes a core-scheduling cookie with another pid, the init's too"),
        /* A CPU clock id names a process too: ((~pid) << 3) | kind, and the
         * kernel checks nothing for the process clock of a pid it can see
         * (posix-cpu-timers.c, pid_for_clock). The reviewer's program read the
         * init's CPU time to the nanosecond (strict), and under reduced
         * isolation, with no pid namespace, that of a root-owned host process
         * (nsbox's own too): a timing side channel on every process it can
         * name. clock_nanosleep and timer_create on that clock wake the
         * caller when the other process has spent so much CPU. Refused for
         * every pid but 0 (the caller: CLOCK_PROCESS_CPUTIME_ID is 2, and
         * clock_getcpuclockid(0) gives -6); thread clocks (bit 2) stay, the
         * kernel confines them to the caller's thread group
         * (pthread_getcpuclockid, Python's time.pthread_getcpuclockid). EPERM
         * is what POSIX gives clock_getcpuclockid for a process whose clock
         * the caller may not read (glibc passes it through); the kernel
         * would say EINVAL for a pid that does not exist. clock_settime and
         * clock_adjtime are refused whole (the host clock, below). */
        OTHERS_CLOCK("clock_gettime", 0, "reads another process's CPU time (the init's; a host process's in reduced)"),
        OTHERS_CLOCK("clock_getres", 0, "probes whether a pid exists through its CPU clock"),
        OTHERS_CLOCK("clock_nanosleep", 0, "sleeps until another process (the init) has spent so much CPU"),
        OTHERS_CLOCK("timer_create", 0, "a timer that fires when another process (the init) has spent so much CPU"),

        /* --- the mount table ----------------------------------------------------------- */
        ALWAYS("mount", FILTER_EPERM, "remounts the read-only root writable, or mounts over our binds"),
        ALWAYS("umount2", FILTER_EPERM, "uncovers what a mount hides (the old root, masked paths)"),
        ALWAYS("move_mount", FILTER_EPERM, "attaches a detached mount tree (new mount API)"),
        ALWAYS("open_tree", FILTER_EPERM, "clones a mount tree into a detached fd (new mount API)"),
        ALWAYS("fsopen", FILTER_EPERM, "creates a filesystem context (new mount API)"),
        ALWAYS("fsconfig", FILTER_EPERM, "configures a filesystem context (new mount API)"),
        ALWAYS("fsmount", FILTER_EPERM, "turns a filesystem context into a mount (new mount API)"),
        ALWAYS("fspick", FILTER_EPERM, "reopens an existing mount for reconfiguration (new mount API)"),
        ALWAYS("mount_setattr", FILTER_EPERM, "clears MNT_READONLY/nosuid/nodev on a mount tree"),
        ALWAYS("pivot_root", FILTER_EPERM, "swaps the root mount again"),
        ALWAYS("chroot", FILTER_EPERM, "classic chroot escapes with a held directory fd"),

        /* --- namespaces: new ones are a fresh full capability set ---------------------- */
        ALWAYS("unshare", FILTER_EPERM,
               "a new user namespace hands back every capability and the kernel attack surface behind them"),
        ALWAYS("setns", FILTER_EPERM, "joins another namespace through an inherited or /proc fd"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWUSER, "clone(CLONE_NEWUSER): the unshare threat by another name"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWNS, "clone(CLONE_NEWNS): a private mount table to rearrange"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWPID, "clone(CLONE_NEWPID): hides processes from the supervisor's view"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWNET, "clone(CLONE_NEWNET): a network stack to configure"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWUTS, "clone(CLONE_NEWUTS): namespace creation surface"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWIPC, "clone(CLONE_NEWIPC): namespace creation surface"),
        IF_FLAG("clone", FILTER_EPERM, 0, CLONE_NEWCGROUP, "clone(CLONE_NEWCGROUP): namespace creation surface"),
        ALWAYS("clone3", FILTER_ENOSYS,
               "clone3 takes its flags in memory, which seccomp cannot read; ENOSYS makes libc fall back to clone"),

        /* --- per-user kernel budgets the host user shares ----------------------------- */
        /* Pipe pages are counted per host uid (user_struct), not per user
         * namespace: a pipe grown to 1 MiB takes 256 of the uid's 16384
         * (fs.pipe-user-pages-soft). The reviewer's two warm jobs shared
         * them (40 pipes of 1 MiB in one left the other 24 of 64), and past
         * the budget every new pipe of the uid, the caller's own processes'
         * too, gets 2 pages. Growing a pipe past the default 16 pages is
         * refused; shrinking one (the capture pipe included: only the
         * program's own output slows) and the default stay. The kernel reads
         * the size as unsigned int: the 64-bit test also refuses a small
         * size with high bits set, which no libc passes. */
        IF_EQ32_GT("fcntl", FILTER_EPERM, 1, 1031 /* F_SETPIPE_SZ */, 2, FILTER_PIPE_DEFAULT_BYTES,
                   "grows a pipe past 16 pages out of the uid's host-wide pipe budget (fs.pipe-user-pages-soft)"),

        /* --- kernel keyrings: not namespaced ------------------------------------------ */
        ALWAYS("keyctl", FILTER_EPERM, "reads or links keys of the host user's keyrings"),
        ALWAYS("add_key", FILTER_EPERM, "adds keys to kernel keyrings shared with the host"),
        ALWAYS("request_key", FILTER_EPERM, "asks the host's key upcall to run"),

        /* --- large, bug-prone kernel surfaces (ENOSYS: programs treat them as absent) --- */
        ALWAYS("bpf", FILTER_ENOSYS, "loads programs into the kernel's BPF verifier and JIT"),
        ALWAYS("perf_event_open", FILTER_ENOSYS, "perf events: side channels and a long CVE history"),
        ALWAYS("userfaultfd", FILTER_ENOSYS, "stalls kernel copies at will, the usual race-widening exploit tool"),
        ALWAYS("io_uring_setup", FILTER_ENOSYS, "io_uring runs syscalls outside this filter's view"),
        ALWAYS("io_uring_enter", FILTER_ENOSYS, "io_uring runs syscalls outside this filter's view"),
        ALWAYS("io_uring_register", FILTER_ENOSYS, "io_uring runs syscalls outside this filter's view"),
#if defined(__x86_64__)
        ALWAYS("modify_ldt", FILTER_ENOSYS,
               "16-bit segments and the espfix/LDT paths behind them: a CVE history and no use in a Python program"),
#endif

        /* --- per-user kernel counters the host user shares (ENOSYS: treated as absent) ---- */
        /* Instances are counted per user up the user-namespace chain, so the
         * sandbox's count is the caller's (root's, for a root caller): 128
         * instances taken for the run left the user's editors, tail -f and
         * services with EMFILE until it ended. */
        ALWAYS("inotify_init", FILTER_ENOSYS, "takes the caller's inotify instances (128 per user), host-wide"),
        ALWAYS("inotify_init1", FILTER_ENOSYS, "takes the caller's inotify instances (128 per user), host-wide"),
        ALWAYS("fanotify_init", FILTER_ENOSYS, "takes the caller's fanotify groups (128 per user), host-wide"),
        /* Linux AIO: every io_setup(nr) takes nr of fs.aio-max-nr (65536), ONE
         * budget for the whole host, counted by no user, namespace, rlimit or
         * cgroup. The reviewer's job took all 65536 with one call (the host's
         * databases and qemu then get EAGAIN for the run), and each refused
         * size tells how much the others hold: a warm job read 65536 - 12345
         * after a concurrent job's io_setup(12345). The whole family, as for
         * io_uring and with its errno: ENOSYS makes libaio users fall back to
         * threads (glibc's POSIX aio_* never uses these). */
        ALWAYS("io_setup", FILTER_ENOSYS, "takes fs.aio-max-nr, one host-wide budget, and measures others' use"),
        ALWAYS("io_destroy", FILTER_ENOSYS, "Linux AIO: the io_setup family (fs.aio-max-nr, host-wide)"),
        ALWAYS("io_submit", FILTER_ENOSYS, "Linux AIO: the io_setup family (fs.aio-max-nr, host-wide)"),
        ALWAYS("io_cancel", FILTER_ENOSYS, "Linux AIO: the io_setup family (fs.aio-max-nr, host-wide)"),
        ALWAYS("io_getevents", FILTER_ENOSYS, "Linux AIO: the io_setup family (fs.aio-max-nr, host-wide)"),
        ALWAYS("io_pgetevents", FILTER_ENOSYS, "Linux AIO: the io_setup family (fs.aio-max-nr, host-wide)"),
        /* Huge pages come from the host's pool (vm.nr_hugepages), which no
         * memory cgroup charges and no rlimit bounds (the hugetlb controller
         * is not enabled by nsbox): a root caller's sandbox got memfds of it
         * (cgroup v1 backend). Refused by flag in every mode; transparent
         * huge pages (madvise MADV_HUGEPAGE) are ordinary memory and stay.
         * EPERM: what the kernel itself answers a process outside
         * vm.hugetlb_shm_group for SHM_HUGETLB, and what the rlimit backend's
         * memfd_create/shmget rules answer; callers of huge pages fall back
         * to normal pages on any error (EINVAL would read as "no hugetlbfs in
         * this kernel", and would hide the filter behind the kernel's own
         * answer to bad flags). */
        IF_FLAG("memfd_create", FILTER_EPERM, 1, 0x0004 /* MFD_HUGETLB */,
                "MFD_HUGETLB takes the host's huge-page pool, which the memory limits do not charge"),
        IF_FLAG("mmap", FILTER_EPERM, 3, 0x40000 /* MAP_HUGETLB */,
                "MAP_HUGETLB takes the host's huge-page pool, which the memory limits do not charge"),
        IF_FLAG("shmget", FILTER_EPERM, 2, 04000 /* SHM_HUGETLB */,
                "SHM_HUGETLB takes the host's huge-page pool, which the memory limits do not charge"),

        /* --- the machine itself ------------------------------------------------------- */
        ALWAYS("kexec_load", FILTER_EPERM, "replaces the running kernel"),
        ALWAYS("kexec_file_load", FILTER_EPERM, "replaces the running kernel"),
        ALWAYS("init_module", FILTER_EPERM, "loads kernel code"),
        ALWAYS("finit_module", FILTER_EPERM, "loads kernel code"),
        ALWAYS("delete_module", FILTER_EPERM, "unloads kernel code"),
        ALWAYS("reboot", FILTER_EPERM, "reboots the host (or the pid namespace)"),
        ALWAYS("swapon", FILTER_EPERM, "changes host swap"),
        ALWAYS("swapoff", FILTER_EPERM, "changes host swap"),
        ALWAYS("acct", FILTER_EPERM, "switches host process accounting"),
        ALWAYS("quotactl", FILTER_EPERM, "changes or reads host disk quotas"),
        ALWAYS("quotactl_fd", FILTER_EPERM, "changes or reads host disk quotas"),
        ALWAYS("syslog", FILTER_EPERM, "reads the host kernel log (addresses, other tenants' messages)"),

        /* --- file handles bypass the mount tree ---------------------------------------- */
        ALWAYS("open_by_handle_at", FILTER_EPERM,
               "opens any inode of a filesystem by handle, outside our mounts (the 'shocker' escape)"),
        ALWAYS("name_to_handle_at", FILTER_EPERM, "mints the handles open_by_handle_at consumes"),

        /* --- execution domain --------------------------------------------------------- */
        UNLESS_IN("personality", FILTER_EPERM, FILTER_ALWAYS, 0, personalities_ok,
                  "READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO weaken the next exec"),

        /* --- the host clock ------------------------------------------------------------ */
        ALWAYS("settimeofday", FILTER_EPERM, "sets the host clock"),
        ALWAYS("clock_settime", FILTER_EPERM, "sets the host clock"),
        ALWAYS("clock_adjtime", FILTER_EPERM, "slews the host clock"),
        ALWAYS("adjtimex", FILTER_EPERM, "slews the host clock"),

        /* --- set-user/group-ID files (the mode is a 32-bit umode_t: match its bits) ------ */
        /* A root caller's sandbox writes the workspace as the workspace's owner
         * (idmapped mount): without these, it could leave a setuid-root copy of
         * an interpreter on the host, where the workspace is not nosuid, for any
         * local user to run. mkdir/mkdirat drop S_ISUID/S_ISGID themselves. */
        IF_FLAG("chmod", FILTER_EPERM, 1, S_ISUID, "sets the setuid bit: a host-executable file running as the workspace owner"),
        IF_FLAG("chmod", FILTER_EPERM, 1, S_ISGID, "sets the setgid bit: a host-executable file running with the owner's group"),
        IF_FLAG("fchmod", FILTER_EPERM, 1, S_ISUID, "sets the setuid bit: a host-executable file running as the workspace owner"),
        IF_FLAG("fchmod", FILTER_EPERM, 1, S_ISGID, "sets the setgid bit: a host-executable file running with the owner's group"),
        IF_FLAG("fchmodat", FILTER_EPERM, 2, S_ISUID, "sets the setuid bit: a host-executable file running as the workspace owner"),
        IF_FLAG("fchmodat", FILTER_EPERM, 2, S_ISGID, "sets the setgid bit: a host-executable file running with the owner's group"),
        IF_FLAG("fchmodat2", FILTER_EPERM, 2, S_ISUID, "sets the setuid bit: a host-executable file running as the workspace owner"),
        IF_FLAG("fchmodat2", FILTER_EPERM, 2, S_ISGID, "sets the setgid bit: a host-executable file running with the owner's group"),
        IF_FLAG("open", FILTER_EPERM, 2, S_ISUID, "creates a file already setuid (O_CREAT with S_ISUID in the mode)"),
        IF_FLAG("open", FILTER_EPERM, 2, S_ISGID, "creates a file already setgid (O_CREAT with S_ISGID in the mode)"),
        IF_FLAG("openat", FILTER_EPERM, 3, S_ISUID, "creates a file already setuid (O_CREAT with S_ISUID in the mode)"),
        IF_FLAG("openat", FILTER_EPERM, 3, S_ISGID, "creates a file already setgid (O_CREAT with S_ISGID in the mode)"),
        IF_FLAG("creat", FILTER_EPERM, 1, S_ISUID, "creates a file already setuid"),
        IF_FLAG("creat", FILTER_EPERM, 1, S_ISGID, "creates a file already setgid"),
        IF_FLAG("mknod", FILTER_EPERM, 1, S_ISUID, "creates a regular file already setuid (mknod S_IFREG)"),
        IF_FLAG("mknod", FILTER_EPERM, 1, S_ISGID, "creates a regular file already setgid (mknod S_IFREG)"),
        IF_FLAG("mknodat", FILTER_EPERM, 2, S_ISUID, "creates a regular file already setuid (mknod S_IFREG)"),
        IF_FLAG("mknodat", FILTER_EPERM, 2, S_ISGID, "creates a regular file already setgid (mknod S_IFREG)"),
        /* --- whiteouts: the one device node the kernel lets anyone make -------------------- */
        /* A whiteout (char 0:0) needs no CAP_MKNOD since Linux 5.8: without
         * these, a program leaves device nodes in a host workspace, where an
         * overlayfs layer would read them as deletions. S_IFCHR's bit is also
         * in S_IFBLK (and S_IFLNK, which mknod refuses): no capability here
         * could make those anyway. */
        IF_FLAG("mknod", FILTER_EPERM, 1, S_IFCHR, "creates a whiteout (char 0:0): a device node left in a host workspace"),
        IF_FLAG("mknodat", FILTER_EPERM, 2, S_IFCHR, "creates a whiteout (char 0:0): a device node left in a host workspace"),
        IF_FLAG("renameat2", FILTER_EPERM, 4, RENAME_WHITEOUT,
                "RENAME_WHITEOUT leaves a whiteout (char 0:0) where the file was"),
        ALWAYS("openat2", FILTER_ENOSYS,
               "openat2 takes its mode in memory, which seccomp cannot read (a setuid file); ENOSYS: libc uses openat"),

        /* --- terminals (the kernel reads the request as unsigned int: match 32 bits) ---- */
        IF_EQ32("ioctl", FILTER_EPERM, 1, TIOCSTI,
                "TIOCSTI pushes keystrokes into an inherited terminal: commands run outside the sandbox"),
        IF_EQ32("ioctl", FILTER_EPERM, 1, TIOCLINUX,
                "TIOCLINUX pastes the console selection: the same injection on a virtual console"),
        /* The sandbox has ptys of its own (/dev/pts, a new devpts): a pty is
         * a tty on which any line discipline may be set without privilege. */
        IF_EQ32("ioctl", FILTER_EPERM, 1, TIOCSETD,
                "TIOCSETD attaches a line discipline (n_gsm, n_hdlc, slcan, ...) to the sandbox's own pty: "
                "rarely used kernel code with a use-after-free history (CVE-2017-2636, CVE-2023-6546), some "
                "loaded as modules on demand"),
        IF_EQ32("ioctl", FILTER_EPERM, 1, TIOCCONS,
                "TIOCCONS redirects the host's console output to a tty of the sandbox"),

        /* --- socket families (the kernel reads the family as int: higher bits denied) --- */
        UNLESS_IN("socket", FILTER_EAFNOSUPPORT, FILTER_NO_INET, 0, families_unix,
                  "netlink, packet, vsock, ... reach kernel subsystems; no IP without --network loopback"),
        UNLESS_IN("socket", FILTER_EAFNOSUPPORT, FILTER_INET, 0, families_unix_inet,
                  "netlink, packet, vsock, ... reach kernel subsystems; IP only for --network loopback"),
        UNLESS_IN("socketpair", FILTER_EAFNOSUPPORT, FILTER_ALWAYS, 0, families_unix,
                  "socketpair is only meaningful for AF_UNIX; other families are kernel surface"),

        /* --- memory bounded by RLIMIT_AS only (no cgroup): pages that stay allocated
         * after the last munmap are charged to no address space, so nothing would bound
         * them but the host's RAM. (A cgroup charges them like any other page.) -------- */
        RLIMIT_MEM("memfd_create", FILTER_EPERM,
                   "rlimit backend: a memfd's pages outlive every mapping, bounded only by host RAM"),
        RLIMIT_MEM("shmget", FILTER_EPERM,
                   "rlimit backend: System V segments outlive every mapping, bounded only by host RAM"),

        /* --- reduced isolation only: the program shares the host's namespaces ----------- */
        REDUCED_EQ32("socket", FILTER_EAFNOSUPPORT, 0, AF_UNIX,
                     "no network namespace: a unix socket reaches the host's (D-Bus, container runtimes); "
                     "socketpair stays"),
        REDUCED("setsid", FILTER_EPERM,
                "no pid namespace: the process group is what nsbox kills, so nobody may leave it"),
        REDUCED("setpgid", FILTER_EPERM,
                "no pid namespace: the process group is what nsbox kills, so nobody may leave it"),
        REDUCED_GT("prlimit64", FILTER_EPERM, 0, 0,
                   "no pid namespace: lowering another process's limits (the supervisor's) by pid"),
        REDUCED("shmget", FILTER_EPERM, "no IPC namespace: the host user's System V shared memory"),
        REDUCED("shmat", FILTER_EPERM, "no IPC namespace: the host user's System V shared memory"),
        REDUCED("shmctl", FILTER_EPERM, "no IPC namespace: the host user's System V shared memory"),
        REDUCED("semget", FILTER_EPERM, "no IPC namespace: the host user's System V semaphores"),
        REDUCED("semctl", FILTER_EPERM, "no IPC namespace: the host user's System V semaphores"),
        REDUCED("semop", FILTER_EPERM, "no IPC namespace: the host user's System V semaphores"),
        REDUCED("semtimedop", FILTER_EPERM, "no IPC namespace: the host user's System V semaphores"),
        REDUCED("msgget", FILTER_EPERM, "no IPC namespace: the host user's System V message queues"),
        REDUCED("msgsnd", FILTER_EPERM, "no IPC namespace: the host user's System V message queues"),
        REDUCED("msgrcv", FILTER_EPERM, "no IPC namespace: the host user's System V message queues"),
        REDUCED("msgctl", FILTER_EPERM, "no IPC namespace: the host user's System V message queues"),
        REDUCED("mq_open", FILTER_EPERM, "no IPC namespace: the host user's POSIX message queues"),
        REDUCED("mq_unlink", FILTER_EPERM, "no IPC namespace: the host user's POSIX message queues"),
        /* Landlock (ABI <= 7) does not handle metadata changes: without a mount
         * namespace every host file of the user is in reach by path. The fd
         * forms (fchmod, fchown, futimens, fsetxattr) stay: an fd needs an
         * open Landlock allowed. */
        REDUCED("chmod", FILTER_EPERM, "no mount namespace: chmod of any host file the user owns (~/.ssh 0777)"),
        REDUCED("fchmodat", FILTER_EPERM, "no mount namespace: chmod of any host file the user owns"),
        REDUCED("fchmodat2", FILTER_EPERM, "no mount namespace: chmod of any host file the user owns"),
        REDUCED("chown", FILTER_EPERM, "no mount namespace: chown of any host file the user owns"),
        REDUCED("lchown", FILTER_EPERM, "no mount namespace: chown of any host file the user owns"),
        REDUCED("fchownat", FILTER_EPERM, "no mount namespace: chown of any host file the user owns"),
        REDUCED("utime", FILTER_EPERM, "no mount namespace: timestamps of any host file the user owns"),
        REDUCED("utimes", FILTER_EPERM, "no mount namespace: timestamps of any host file the user owns"),
        REDUCED("futimesat", FILTER_EPERM, "no mount namespace: timestamps of any host file the user owns"),
        REDUCED_GT("utimensat", FILTER_EPERM, 1, 0,
                   "no mount namespace: timestamps by path (a NULL path is futimens, on an open fd)"),
        /* Landlock (ABI <= 7) does not check watches either: a watch on any
         * directory the user can read names every file touched in it, live
         * (~/.ssh, the user's editor's files), which no stat could guess. */
        REDUCED("inotify_add_watch", FILTER_EPERM,
                "no mount namespace: watches any host directory of the user, naming each file touched in it"),
        REDUCED("fanotify_mark", FILTER_EPERM,
                "no mount namespace: watches any host file or directory of the user, live"),
        REDUCED("setxattr", FILTER_EPERM, "no mount namespace: extended attributes of any host file the user owns"),
        REDUCED("lsetxattr", FILTER_EPERM, "no mount namespace: extended attributes of any host file the user owns"),
        REDUCED("removexattr", FILTER_EPERM, "no mount namespace: extended attributes of any host file the user owns"),
        REDUCED("lremovexattr", FILTER_EPERM, "no mount namespace: extended attributes of any host file the user owns"),
        REDUCED("setxattrat:463", FILTER_EPERM, "no mount namespace: extended attributes of any host file the user owns"),
        REDUCED("removexattrat:466", FILTER_EPERM, "no mount namespace: extended attributes of any host file the user owns"),
        /* Scheduling of other processes of the user (nsbox itself, the user's
         * shells): pid/who 0 is the caller, anything else is refused. */
        REDUCED_GT("sched_setaffinity", FILTER_EPERM, 0, 0, "no pid namespace: pinning another process of the user"),
        REDUCED_GT("sched_setscheduler", FILTER_EPERM, 0, 0, "no pid namespace: SCHED_IDLE for another process"),
        REDUCED_GT("sched_setparam", FILTER_EPERM, 0, 0, "no pid namespace: another process's priority"),
        REDUCED_GT("sched_setattr", FILTER_EPERM, 0, 0, "no pid namespace: another process's scheduling"),
        REDUCED_GT("setpriority", FILTER_EPERM, 1, 0, "no pid namespace: renicing the user's other processes"),
        REDUCED_GT("ioprio_set", FILTER_EPERM, 1, 0, "no pid namespace: the I/O priority of the user's other processes"),
        /* Memory and descriptors of another process, by pid or pidfd: each
         * makes a ptrace-mode check, which Landlock refuses for a process
         * outside the domain (nsbox, the user's shells); reduced isolation
         * also runs where there is no Landlock, and then only this holds.
         * process_madvise takes a pidfd (pidfd_open stays: asyncio's child
         * watcher needs it for its own children), so it is refused whole. */
        REDUCED_GT("migrate_pages", FILTER_EPERM, 0, 0, "no pid namespace: moves nsbox's pages between NUMA nodes"),
        REDUCED_GT("move_pages", FILTER_EPERM, 0, 0, "no pid namespace: moves or reads the placement of nsbox's pages"),
        REDUCED_GT("get_robust_list", FILTER_EPERM, 0, 0, "no pid namespace: reads an address of nsbox's (its robust list)"),
        REDUCED_GT("kcmp", FILTER_EPERM, 0, 0, "no pid namespace: compares nsbox's descriptors and memory with ours"),
        REDUCED_GT("kcmp", FILTER_EPERM, 1, 0, "no pid namespace: compares nsbox's descriptors and memory with ours"),
        REDUCED("process_madvise", FILTER_EPERM,
                "no pid namespace: pages nsbox's memory out (MADV_PAGEOUT) through a pidfd of it"),
        /* (PRIO_USER and IOPRIO_WHO_USER, whose who 0 is the caller's uid and
         * reaches every process of the user, are refused in every mode: see
         * the init's rules.) */
};

const struct filter_rule *filter_rules(size_t *ret_n)
{
        *ret_n = ARRAY_SIZE(rules);
        return rules;
}

int filter_action_errno(enum filter_action a)
{
        switch (a) {
        case FILTER_EPERM:
                return EPERM;
        case FILTER_ENOSYS:
                return ENOSYS;
        case FILTER_EAFNOSUPPORT:
                return EAFNOSUPPORT;
        case FILTER_KILL:
                break;
        }
        return 0;
}

/* Cover [lo, hi] (inclusive, 32-bit) with aligned power-of-two blocks, each a
 * single masked-equality test — the way a CIDR range splits into prefixes. */
static size_t cover_range(unsigned arg, uint64_t lo, uint64_t hi, struct filter_cmp *out, size_t cap, size_t n)
{
        while (lo <= hi) {
                uint64_t size = 1;

                while (lo % (size * 2) == 0 && lo + size * 2 - 1 <= hi)
                        size *= 2;
                if (n < cap)
                        out[n] = (struct filter_cmp) { .arg = arg, .op = FILTER_CMP_MASKED_EQ,
                                                       .mask = ~(size - 1) & 0xffffffffu, .datum = lo };
                n++;
                lo += size;
        }
        return n;
}

size_t filter_not_in32(unsigned arg, const uint32_t *set, size_t n_set, struct filter_cmp *out, size_t cap)
{
        uint64_t next = 0;      /* the lowest value not yet covered or allowed */
        size_t n = 0;

        for (size_t i = 0; i < n_set; i++) {
                if (set[i] > next)
                        n = cover_range(arg, next, (uint64_t) set[i] - 1, out, cap, n);
                next = (uint64_t) set[i] + 1;
        }
        /* The tail, and every value with any of the upper 32 bits set. The
         * kernel truncates those to int (socket family) or unsigned int
         * (personality), so 0x100000002 would reach it as AF_INET: deny them
         * all, which is stricter than the kernel and never legitimate. */
        if (n < cap)
                out[n] = (struct filter_cmp) { .arg = arg, .op = FILTER_CMP_GT, .datum = next - 1 };
        return n + 1;
}

static bool rule_applies(const struct filter_rule *r, const struct filter_spec *spec)
{
        switch (r->when) {
        case FILTER_ALWAYS:
                return true;
        case FILTER_NO_INET:
                return !spec->allow_inet;
        case FILTER_INET:
                return spec->allow_inet;
        case FILTER_REDUCED:
                return spec->reduced;
        case FILTER_RLIMIT_MEMORY:
                return spec->rlimit_memory;
        }
        return true;    /* an unknown selector errs towards denying */
}

static int check_rule(const struct filter_rule *r, struct nsb_error *e)
{
        if (!r->syscall || !r->syscall[0])
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "rule without a syscall name");
        if (!r->threat || !r->threat[0])
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "rule '%s' names no threat", r->syscall);
        if (r->cond.arg > 5)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "rule '%s': argument %u out of range",
                                r->syscall, r->cond.arg);
        if (r->cond.kind == FILTER_COND_EQ32_GT && (r->cond.arg2 > 5 || r->cond.arg2 == r->cond.arg))
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "rule '%s': second argument %u out of range or "
                                "the first", r->syscall, r->cond.arg2);
        if (r->cond.kind == FILTER_COND_FLAG && r->cond.value == 0)
                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "rule '%s': empty flag", r->syscall);
        if (r->cond.kind == FILTER_COND_NOT_IN32) {
                if (r->cond.n_set == 0)
                        return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "rule '%s': empty allowed set",
                                        r->syscall);
                for (size_t i = 1; i < r->cond.n_set; i++)
                        if (r->cond.set[i] <= r->cond.set[i - 1])
                                return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL,
                                                "rule '%s': allowed set not sorted and unique", r->syscall);
        }
        return 0;
}

static size_t rule_entries(const struct filter_rule *r, struct filter_entry *out, size_t cap)
{
        struct filter_entry base = { .syscall = r->syscall, .action = r->action };
        const unsigned a = r->cond.arg;

        switch (r->cond.kind) {
        case FILTER_COND_NONE:
                if (cap > 0)
                        out[0] = base;
                return 1;
        case FILTER_COND_FLAG:
                /* Mask only low bits: the kernel ignores clone's upper 32 bits. */
                base.has_cmp = true;
                base.cmp = (struct filter_cmp) { a, FILTER_CMP_MASKED_EQ, r->cond.value, r->cond.value };
                if (cap > 0)
                        out[0] = base;
                return 1;
        case FILTER_COND_EQ32:
                base.has_cmp = true;
                base.cmp = (struct filter_cmp) { a, FILTER_CMP_MASKED_EQ, 0xffffffffu, r->cond.value };
                if (cap > 0)
                        out[0] = base;
                return 1;
        case FILTER_COND_GT:
                base.has_cmp = true;
                base.cmp = (struct filter_cmp) { .arg = a, .op = FILTER_CMP_GT, .datum = r->cond.value };
                if (cap > 0)
                        out[0] = base;
                return 1;
        case FILTER_COND_EQ32_GT:
                base.has_cmp = base.has_cmp2 = true;
                base.cmp = (struct filter_cmp) { a, FILTER_CMP_MASKED_EQ, 0xffffffffu, r->cond.value };
                base.cmp2 = (struct filter_cmp) { .arg = r->cond.arg2, .op = FILTER_CMP_GT, .datum = r->cond.value2 };
                if (cap > 0)
                        out[0] = base;
                return 1;
        case FILTER_COND_OTHERS_CLOCK: {
                /* Negative, bit 2 clear, and one of the pid's bits 3-30 clear
                 * (all of 3-31 set is pid 0): one entry per bit, a union. */
                size_t n = 0;

                for (unsigned bit = FILTER_CLOCK_PID_SHIFT; bit < 31; bit++, n++)
                        if (n < cap) {
                                out[n] = base;
                                out[n].has_cmp = true;
                                out[n].cmp = (struct filter_cmp) {
                                        a, FILTER_CMP_MASKED_EQ,
                                        FILTER_CLOCK_NEGATIVE | FILTER_CLOCK_PERTHREAD | (1u << bit),
                                        FILTER_CLOCK_NEGATIVE };
                        }
                return n;
        }
        case FILTER_COND_NOT_IN32: {
                /* Personality's allowed set {0, 0xffffffff} needs 63 entries. */
                struct filter_cmp cmps[80];
                size_t n = filter_not_in32(a, r->cond.set, r->cond.n_set, cmps, ARRAY_SIZE(cmps));

                if (n > ARRAY_SIZE(cmps))
                        return SIZE_MAX;
                for (size_t i = 0; i < n && i < cap; i++) {
                        out[i] = base;
                        out[i].has_cmp = true;
                        out[i].cmp = cmps[i];
                }
                return n;
        }
        }
        return SIZE_MAX;
}

int filter_plan_build(const struct filter_rule *rules_in, size_t n_rules, const struct filter_spec *spec,
                      struct filter_plan *ret, struct nsb_error *e)
{
        AUTOFREE struct filter_entry *entries = NULL;
        size_t total = 0, n = 0;

        *ret = (struct filter_plan) { 0 };
        for (size_t i = 0; i < n_rules; i++) {
                int r = check_rule(&rules_in[i], e);
                size_t k;

                if (r < 0)
                        return nsb_error_prefix(e, "seccomp rule %zu", i);
                if (!rule_applies(&rules_in[i], spec))
                        continue;
                k = rule_entries(&rules_in[i], NULL, 0);
                if (k == SIZE_MAX)
                        return nsb_fail(e, NSB_STAGE_SECCOMP, EINVAL, "seccomp rule %zu (%s): condition too large",
                                        i, rules_in[i].syscall);
                total += k;
        }
        entries = calloc(total ? total : 1, sizeof *entries);
        if (!entries)
                return nsb_fail(e, NSB_STAGE_SECCOMP, ENOMEM, "seccomp plan of %zu entries", total);
        for (size_t i = 0; i < n_rules; i++)
                if (rule_applies(&rules_in[i], spec))
                        n += rule_entries(&rules_in[i], entries + n, total - n);
        ret->entries = move_ptr(&entries);
        ret->n_entries = n;
        return 0;
}

void filter_plan_free(struct filter_plan *p)
{
        if (!p)
                return;
        free(p->entries);
        p->entries = NULL;
        p->n_entries = 0;
}

size_t filter_prologue(uint32_t native_audit_arch, struct sock_filter *out, size_t cap)
{
#if defined(__x86_64__)
        const size_t n = 8;
#else
        const size_t n = 7;
#endif
        /* Jump targets, by index; classic BPF jumps only forward, so the two
         * returns sit at the end and "pass" is the first instruction after us. */
        const size_t at_enosys = n - 2, at_kill = n - 1, at_pass = n;
        struct sock_filter p[FILTER_PROLOGUE_MAX];
        size_t i = 0;

#define OFF(target) ((unsigned char) ((target) - i - 1))
        p[i] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        i++;
        /* A foreign ABI (i386 through int 0x80 on x86_64) has its own syscall
         * numbers, so a deny list written for ours means nothing there: kill. */
        p[i] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, native_audit_arch, 0, OFF(at_kill));
        i++;
        p[i] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        i++;
        /* nr == -1 is how a tracer skips a syscall; the kernel answers ENOSYS
         * itself. Let it through untouched, as libseccomp does. */
        p[i] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, OFF(at_pass), 0);
        i++;
#if defined(__x86_64__)
        /* x32 shares AUDIT_ARCH_X86_64 and marks its syscalls with bit 30;
         * the arch check above cannot see it. Kill, whether or not this kernel
         * has CONFIG_X86_X32_ABI. */
        p[i] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */,
                                             OFF(at_kill), 0);
        i++;
#endif
        /* Newer than this policy: a deny list cannot know what those doors do. */
        p[i] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, FILTER_NEWEST_REVIEWED_NR,
                                             OFF(at_enosys), OFF(at_pass));
        i++;
#undef OFF
        p[i++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
        p[i++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);

        if (out && cap >= n)
                memcpy(out, p, n * sizeof *p);
        return n;
}

struct filter_spec filter_variant_spec(int v)
{
        return (struct filter_spec){ .allow_inet = v % 3 == 1, .reduced = v % 3 == 2, .rlimit_memory = v >= 3 };
}

int filter_variant_of(const struct filter_spec *spec)
{
        if (spec->n_extra_deny > 0 || (spec->reduced && spec->allow_inet))
                return -1;
        return (spec->reduced ? 2 : spec->allow_inet ? 1 : 0) + (spec->rlimit_memory ? 3 : 0);
}
