/* supervisor/stdin_pump.c — see stdin_pump.h. Syscall layer. */
#include "supervisor/stdin_pump.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/policy.h"
#include "config/stdin_plan.h"
#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/sys.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U   /* Linux 6.3 */
#endif

/* ---- the sealed copy ------------------------------------------------------ */

static int new_memfd(void)
{
        /* Non-executable and sealed so (F_SEAL_EXEC): the input is data. */
        int fd = memfd_create("nsbox-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);

        if (fd < 0 && errno == EINVAL)   /* before 6.3: no such flag; the mode below has no exec bits */
                fd = memfd_create("nsbox-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        /* Mode 0444: no write bits, so an open of /proc/self/fd/0 for
         * writing is refused — while the mode holds. It does not bind an
         * owner: the memfd is the supervisor's uid's, which for an
         * unprivileged caller is the sandbox's mapped uid, so the program
         * can fchmod it 0666 and then reopen it read-write. What keeps its
         * contents are the seals (seal_readonly: F_SEAL_WRITE, SHRINK, GROW,
         * SEAL): every write, truncate or writable mmap of it is EPERM. The
         * mode only spares a root caller's run that reopen (root's memfd,
         * unmapped inside, cannot be chmod-ed there). */
        if (fd >= 0 && fchmod(fd, 0444) < 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

/* Seal *fd's contents for good, rewind it, and replace it with a read-only
 * descriptor of it: the program can neither change its input nor try. */
static int seal_readonly(int *fd, const char *what, struct nsb_error *e)
{
        char p[64];
        int ro;

        if (fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: seal its copy", what);
        snprintf(p, sizeof p, "/proc/self/fd/%d", *fd);
        ro = open(p, O_RDONLY | O_CLOEXEC);
        if (ro < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: reopen its copy read-only", what);
        close(*fd);
        *fd = ro;
        return 0;
}

int stdin_memfd(const char *data, size_t len, int *ret_fd, struct nsb_error *e)
{
        AUTOCLOSE int fd = new_memfd();
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "memfd for stdin");
        if ((r = write_all(fd, data, len)) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, -r, "write stdin");
        if ((r = seal_readonly(&fd, "stdin", e)) < 0)
                return r;
        *ret_fd = fd;
        fd = -1;
        return 0;
}

/* @src's bytes from @at to its end (pread: @src's offset stays) into a
 * sealed memfd. -EFBIG, with @e untouched, when they are more than
 * STDIN_COPY_MAX (the file grew since its fstat): the caller streams it. */
static int copy_file(int src, off_t at, const char *what, int *ret_fd, uint64_t *ret_len, struct nsb_error *e)
{
        AUTOCLOSE int fd = new_memfd();
        char buf[65536];
        uint64_t done = 0;
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: memfd for its copy", what);
        for (;;) {
                ssize_t n = pread(src, buf, sizeof buf, at + (off_t) done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: read", what);
                if (n == 0)
                        break;
                if (done + (uint64_t) n > STDIN_COPY_MAX)
                        return -EFBIG;
                if ((r = write_all(fd, buf, (size_t) n)) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, -r, "%s: copy", what);
                done += (uint64_t) n;
        }
        if ((r = seal_readonly(&fd, what, e)) < 0)
                return r;
        *ret_fd = fd;
        *ret_len = done;
        fd = -1;
        return 0;
}

/* ---- what the caller named -------------------------------------------------- */

static int open_null(int *ret_fd, struct nsb_error *e)
{
        /* Anew: a description nobody else holds, of a node the program
         * could open itself (the sandbox's /dev/null is the host's). */
        *ret_fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return *ret_fd < 0 ? nsb_fail(e, NSB_STAGE_PREPARE, errno, "open /dev/null for stdin") : 0;
}

int stdin_open(struct stdin_pump *p, const struct nsb_config *cfg, int *ret_fd, struct nsb_error *e)
{
        AUTOCLOSE int path_fd = -1;
        AUTOCLOSE int file = -1;
        struct stdin_src src;
        enum stdin_how how;
        const char *why;
        char what[PATH_MAX + 16];
        int from = STDIN_FILENO, r;
        off_t at = 0;
        uint64_t len;

        *p = (struct stdin_pump){ .src = -1, .dst = -1 };
        *ret_fd = -1;
        if ((r = cfg_stdin_describe(cfg, &path_fd, &src, e)) < 0)
                return r;
        how = stdin_plan(&src, &why);
        if (how == STDIN_REFUSE)
                return cfg_stdin_refused(cfg, why, e);
        if (how == STDIN_EMPTY)
                return open_null(ret_fd, e);
        snprintf(what, sizeof what, src.dash ? "--stdin -" : "--stdin '%s'", cfg->stdin_path);
        if (!src.dash) {
                /* The file read by nsbox, as the caller; this descriptor
                 * never leaves the supervisor. The same inode the O_PATH
                 * look found: no swap in between. */
                char proc[64];

                snprintf(proc, sizeof proc, "/proc/self/fd/%d", path_fd);
                /* An anonymous pipe whose writer is gone would block a
                 * plain open: nonblocking, then blocking again for the
                 * pump (this description is nsbox's own, nobody else's). */
                file = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | (src.anon_pipe ? O_NONBLOCK : 0));
                if (file < 0 || (src.anon_pipe && fcntl(file, F_SETFL, 0) < 0))
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s", what);
                from = file;
        } else if (S_ISREG(src.mode) && (at = lseek(STDIN_FILENO, 0, SEEK_CUR)) < 0) {
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: its offset", what);
        }
        if (how == STDIN_COPY) {
                r = copy_file(from, at, what, ret_fd, &len, e);
                if (r == 0 && src.dash)
                        (void) lseek(STDIN_FILENO, at + (off_t) len, SEEK_SET);
                if (r != -EFBIG)
                        return r;
        }
        /* Streamed: a non-regular stdin, a file above STDIN_COPY_MAX. */
        if ((r = stdin_pump_open(p, from, ret_fd, e)) < 0)
                return r;
        if (file >= 0) {
                p->src_owned = true;
                file = -1;
        }
        return 0;
}

/* ---- the pump --------------------------------------------------------------- */

/* Why a process of its own. The caller's description is shared: another
 * reader of the same pipe, terminal or socket (the caller's shell, a
 * sibling in a pipeline) can take the bytes between a poll that said
 * "readable" and the read that follows, and that read then blocks. In the
 * supervisor it blocked the wall limit, the CPU watch and cancel with it.
 * Making the read nonblocking would mean setting O_NONBLOCK on the caller's
 * description — a change the caller sees, which is what issue #27 forbids;
 * recv(MSG_DONTWAIT) serves sockets only, and a FIONREAD count is as stale
 * as the poll by the time of the read (and cannot tell a terminal's Ctrl-D
 * from a line another reader took). So the blocking read happens in a
 * small child of the supervisor that does nothing else: it may block at
 * will, the supervisor never touches the caller's description after
 * stdin_open, and it ends the child with SIGKILL (which interrupts any
 * read) when the run ends. It is nsbox's own code holding what nsbox
 * already holds; it dies with the supervisor (PR_SET_PDEATHSIG), is not
 * dumpable, and keeps no other descriptor. */

int stdin_pump_open(struct stdin_pump *p, int src, int *ret_read_fd, struct nsb_error *e)
{
        int fds[2];

        *p = (struct stdin_pump){ .src = src, .dst = -1 };
        if (pipe2(fds, O_CLOEXEC) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--stdin: a pipe for the program's input");
        p->dst = fds[1];
        *ret_read_fd = fds[0];
        return 0;
}

/* Every fd from 3 up closed but @a and @b. */
static void close_all_but(int a, int b)
{
        int lo = a < b ? a : b, hi = a < b ? b : a;
        unsigned next = 3;

        if (lo >= 3) {
                if (lo > 3)
                        (void) sys_close_range(3, (unsigned) lo - 1, 0);
                next = (unsigned) lo + 1;
        }
        if (hi >= (int) next) {
                if (hi > (int) next)
                        (void) sys_close_range(next, (unsigned) hi - 1, 0);
                next = (unsigned) hi + 1;
        }
        (void) sys_close_range(next, ~0U, 0);
}

__attribute__((noreturn)) static void pump_main(int src, int dst, pid_t supervisor)
{
        char buf[16384];

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != supervisor)
                _exit(0);
        (void) prctl(PR_SET_DUMPABLE, 0);
        close_all_but(src, dst);
        for (;;) {
                ssize_t n = read(src, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)             /* Ctrl-D, hang-up or an error: end of input */
                        _exit(0);
                if (write_all(dst, buf, (size_t) n) < 0)
                        _exit(0);       /* EPIPE: the program closed its stdin */
        }
}

int stdin_pump_start(struct stdin_pump *p, struct nsb_error *e)
{
        pid_t self = getpid(), pid;

        if (p->dst < 0 || p->pid > 0)
                return 0;
        pid = fork();
        if (pid < 0)
                return nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "fork the --stdin pump");
        if (pid == 0)
                pump_main(p->src, p->dst, self);
        p->pid = pid;
        /* The write end is the pump's alone: its exit is the program's end
         * of input. */
        close_fd(&p->dst);
        if (p->src_owned)
                close_fd(&p->src);
        return 0;
}

void stdin_pump_end(struct stdin_pump *p)
{
        if (p->pid > 0) {
                (void) kill(p->pid, SIGKILL);
                while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                p->pid = 0;
        }
        stdin_pump_close(p);
}

void stdin_pump_close(struct stdin_pump *p)
{
        close_fd(&p->dst);
        if (p->src_owned)
                close_fd(&p->src);
        p->src = -1;
        p->src_owned = false;
}
