/* Unit tests for landlock/: the rights per ABI (pure), and a real domain
 * applied to a forked child over a temporary tree.
 *
 * Needs no root: Landlock only needs no_new_privs. If the kernel has no
 * Landlock the domain tests are skipped, unless NSBOX_TESTS_MUST_RUN=1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock/landlock_internal.h"
#include "tests/unit/must_run.h"

#define CHILD_SKIP 77

/* ---- pure: rights by ABI ---------------------------------------------------- */

static void test_fs_rights_by_abi(void **state)
{
        (void) state;
        assert_int_equal(ll_fs_rights(0), 0);
        assert_int_equal(ll_fs_rights(1), 0x1fff);
        assert_int_equal(ll_fs_rights(2), 0x1fff | LL_FS_REFER);
        assert_int_equal(ll_fs_rights(3), 0x1fff | LL_FS_REFER | LL_FS_TRUNCATE);
        assert_int_equal(ll_fs_rights(4), ll_fs_rights(3));
        assert_int_equal(ll_fs_rights(5), ll_fs_rights(3) | LL_FS_IOCTL_DEV);
        assert_int_equal(ll_fs_rights(7), ll_fs_rights(5));
}

static void test_plan(void **state)
{
        const struct ll_path_rule rules[] = { { "/usr", false }, { "/tmp", true } };
        const struct ll_spec spec = { rules, 2, false }, tcp = { rules, 2, true };
        struct ll_plan p;
        struct nsb_error e;

        (void) state;
        assert_int_equal(ll_plan_build(&spec, 3, &p, &e), 0);
        assert_int_equal(p.attr.handled_access_net, 0);         /* ABI 3 has no network rights */
        assert_int_equal(p.attr.scoped, 0);
        assert_int_equal(ll_plan_build(&spec, 4, &p, &e), 0);
        assert_int_equal(p.attr.handled_access_net, LL_NET_BIND_TCP | LL_NET_CONNECT_TCP);
        assert_int_equal(ll_plan_build(&tcp, 4, &p, &e), 0);
        assert_int_equal(p.attr.handled_access_net, 0);
        assert_int_equal(ll_plan_build(&spec, 6, &p, &e), 0);
        assert_int_equal(p.attr.scoped, LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL);
        /* A kernel newer than we know is treated as the newest we know. */
        assert_int_equal(ll_plan_build(&spec, 42, &p, &e), 0);
        assert_int_equal(p.abi, LL_ABI_KNOWN);
        assert_int_equal(p.attr.handled_access_fs, ll_fs_rights(LL_ABI_KNOWN));

        /* Read-only: read, list, execute. Writable: everything handled. Files: file rights only. */
        assert_int_equal(ll_plan_build(&spec, 5, &p, &e), 0);
        assert_int_equal(ll_rule_access(&p, false, true), LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_EXECUTE);
        assert_int_equal(ll_rule_access(&p, false, false), LL_FS_READ_FILE | LL_FS_EXECUTE);
        assert_int_equal(ll_rule_access(&p, true, true), ll_fs_rights(5));
        assert_int_equal(ll_rule_access(&p, true, false), LL_FS_FILE_RIGHTS);
        assert_int_equal(ll_plan_build(&spec, 2, &p, &e), 0);
        assert_int_equal(ll_rule_access(&p, true, false), LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE);
}

static void test_plan_rejects(void **state)
{
        const struct ll_path_rule rel[] = { { "usr", false } };
        const struct ll_spec spec = { rel, 1, false };
        struct ll_plan p;
        struct nsb_error e;

        (void) state;
        assert_int_equal(ll_plan_build(&spec, 7, &p, &e), -EINVAL);
        assert_int_equal(e.stage, NSB_STAGE_LANDLOCK);
        assert_non_null(strstr(e.msg, "'usr'"));
        assert_int_equal(ll_plan_build(&spec, 0, &p, &e), -EINVAL);
}

/* ---- a real domain ------------------------------------------------------------ */

struct tree {
        char root[64];
        char ro[128], rw[128], other[128], ro_file[128], rw_file[128];
};

static void path_join(char *out, size_t len, const char *a, const char *b)
{
        if ((size_t) snprintf(out, len, "%s/%s", a, b) >= len)
                fail_msg("path too long: %s/%s", a, b);
}

static void write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (fd < 0)
                fail_msg("create %s: %s", path, strerror(errno));
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        assert_int_equal(close(fd), 0);
}

static void make_tree(struct tree *t)
{
        char p[160];
        const char *tmp = getenv("TMPDIR");

        snprintf(t->root, sizeof t->root, "%s/nsbox-ll-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
        if (!mkdtemp(t->root))
                fail_msg("mkdtemp %s: %s", t->root, strerror(errno));
        path_join(t->ro, sizeof t->ro, t->root, "ro");
        path_join(t->rw, sizeof t->rw, t->root, "rw");
        path_join(t->other, sizeof t->other, t->root, "other");
        path_join(t->ro_file, sizeof t->ro_file, t->root, "ro_file");
        path_join(t->rw_file, sizeof t->rw_file, t->root, "rw_file");
        assert_int_equal(mkdir(t->ro, 0755), 0);
        assert_int_equal(mkdir(t->rw, 0755), 0);
        assert_int_equal(mkdir(t->other, 0755), 0);
        path_join(p, sizeof p, t->ro, "file");
        write_file(p, "read me");
        path_join(p, sizeof p, t->other, "secret");
        write_file(p, "not for you");
        write_file(t->ro_file, "a file rule");
        write_file(t->rw_file, "a writable file rule");
}

static void remove_tree(const struct tree *t)
{
        char cmd[128];

        /* The parent is unrestricted; the tree is ours, under a mkdtemp name. */
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", t->root);
        if (system(cmd) != 0)
                print_message("could not remove %s\n", t->root);
}

struct ctx {
        const struct tree *t;
        bool allow_tcp;
        char msg[512];
};

#define CHECK(cond, ...)                                                        \
        do {                                                                    \
                if (!(cond)) {                                                  \
                        snprintf(c->msg, sizeof c->msg, __VA_ARGS__);           \
                        return 1;                                               \
                }                                                               \
        } while (0)

/* open() → 0 or errno */
static int try_open(const char *dir, const char *name, int flags)
{
        char p[200];
        int fd;

        if (name)
                snprintf(p, sizeof p, "%s/%s", dir, name);
        else
                snprintf(p, sizeof p, "%s", dir);
        fd = open(p, flags | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno;
        (void) close(fd);
        return 0;
}

static int tcp_listener(struct sockaddr_in *addr)
{
        socklen_t alen = sizeof *addr;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        *addr = (struct sockaddr_in) { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (fd < 0 || bind(fd, (struct sockaddr *) addr, sizeof *addr) < 0 || listen(fd, 4) < 0
            || getsockname(fd, (struct sockaddr *) addr, &alen) < 0)
                return -1;
        return fd;
}

static int tcp_connect(const struct sockaddr_in *addr)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

        if (fd < 0)
                return errno;
        r = connect(fd, (const struct sockaddr *) addr, sizeof *addr) < 0 ? errno : 0;
        (void) close(fd);
        return r;
}

static int abstract_addr(struct sockaddr_un *sun, socklen_t *len)
{
        int n;

        *sun = (struct sockaddr_un) { .sun_family = AF_UNIX };
        n = snprintf(sun->sun_path + 1, sizeof sun->sun_path - 1, "nsbox-ll-test-%d", (int) getpid());
        *len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) n);
        return 0;
}

static int child_domain(struct ctx *c)
{
        const struct tree *t = c->t;
        const struct ll_path_rule rules[] = {
                { t->ro, false }, { t->rw, true }, { t->ro_file, false }, { t->rw_file, true },
        };
        const struct ll_spec spec = { rules, 4, c->allow_tcp };
        struct sockaddr_in tcp_addr;
        struct sockaddr_un sun;
        socklen_t sun_len;
        struct nsb_ledger ledger;
        struct nsb_error e;
        int abi = ll_abi_version(), tcp_fd, unix_fd, fd, r;
        char p[200];

        if (abi < 0) {
                snprintf(c->msg, sizeof c->msg, "Landlock unavailable: %s", strerror(-abi));
                return CHILD_SKIP;
        }
        /* Listeners created before restriction, i.e. outside the domain. */
        tcp_fd = tcp_listener(&tcp_addr);
        CHECK(tcp_fd >= 0, "TCP listener on 127.0.0.1: %s", strerror(errno));
        abstract_addr(&sun, &sun_len);
        unix_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(unix_fd >= 0 && bind(unix_fd, (struct sockaddr *) &sun, sun_len) == 0 && listen(unix_fd, 4) == 0,
              "abstract listener: %s", strerror(errno));

        CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        ledger_init(&ledger);
        r = ll_apply(&spec, &ledger, &e);
        CHECK(r == 0, "ll_apply: %s (errno %d)", e.msg, e.errnum);
        CHECK(strcmp(ledger_get(&ledger, PROT_LANDLOCK), "landlock") == 0, "ledger says '%s'",
              ledger_get(&ledger, PROT_LANDLOCK));

        /* Read-only directory: readable, listable, not writable. */
        CHECK((r = try_open(t->ro, "file", O_RDONLY)) == 0, "read ro/file: %s", strerror(r));
        CHECK((r = try_open(t->ro, NULL, O_RDONLY | O_DIRECTORY)) == 0, "list ro/: %s", strerror(r));
        CHECK((r = try_open(t->ro, "file", O_WRONLY)) == EACCES, "write ro/file: %s", strerror(r));
        CHECK((r = try_open(t->ro, "new", O_WRONLY | O_CREAT)) == EACCES, "create ro/new: %s", strerror(r));
        snprintf(p, sizeof p, "%s/dir", t->ro);
        CHECK(mkdir(p, 0755) < 0 && errno == EACCES, "mkdir ro/dir: %s", strerror(errno));

        /* Writable directory: everything. */
        CHECK((r = try_open(t->rw, "new", O_WRONLY | O_CREAT)) == 0, "create rw/new: %s", strerror(r));
        CHECK((r = try_open(t->rw, "new", O_RDWR | O_TRUNC)) == 0, "truncate rw/new: %s", strerror(r));
        snprintf(p, sizeof p, "%s/dir", t->rw);
        CHECK(mkdir(p, 0755) == 0, "mkdir rw/dir: %s", strerror(errno));
        CHECK(rmdir(p) == 0, "rmdir rw/dir: %s", strerror(errno));
        snprintf(p, sizeof p, "%s/new", t->rw);
        CHECK(unlink(p) == 0, "unlink rw/new: %s", strerror(errno));

        /* Unlisted paths: not even readable. */
        CHECK((r = try_open(t->other, "secret", O_RDONLY)) == EACCES, "read other/secret: %s", strerror(r));
        CHECK((r = try_open(t->root, NULL, O_RDONLY | O_DIRECTORY)) == EACCES, "list the root: %s", strerror(r));
        CHECK((r = try_open(t->root, "new", O_WRONLY | O_CREAT)) == EACCES, "create in the root: %s",
              strerror(r));
        CHECK((r = try_open("/etc/hostname", NULL, O_RDONLY)) == EACCES, "read /etc/hostname: %s", strerror(r));

        /* File rules: file rights only, read-only or not. */
        CHECK((r = try_open(t->ro_file, NULL, O_RDONLY)) == 0, "read ro_file: %s", strerror(r));
        CHECK((r = try_open(t->ro_file, NULL, O_WRONLY)) == EACCES, "write ro_file: %s", strerror(r));
        CHECK((r = try_open(t->rw_file, NULL, O_RDWR | O_TRUNC)) == 0, "write rw_file: %s", strerror(r));

        /* TCP, handled from ABI 4 unless allow_tcp. */
        r = tcp_connect(&tcp_addr);
        if (abi >= 4 && !c->allow_tcp)
                CHECK(r == EACCES, "TCP connect to 127.0.0.1:%d: %s, want EACCES", ntohs(tcp_addr.sin_port),
                      r ? strerror(r) : "connected");
        else
                CHECK(r == 0, "TCP connect with allow_tcp: %s", strerror(r));

        /* Scopes, from ABI 6: a listener made outside the domain, and the parent. */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0, "AF_UNIX socket: %s", strerror(errno));
        r = connect(fd, (struct sockaddr *) &sun, sun_len) < 0 ? errno : 0;
        (void) close(fd);
        if (abi >= 6) {
                CHECK(r == EPERM, "abstract connect: %s, want EPERM", r ? strerror(r) : "connected");
                CHECK(kill(getppid(), 0) < 0 && errno == EPERM, "signal to the parent: %s",
                      strerror(errno));
        }
        (void) close(tcp_fd);
        (void) close(unix_fd);
        return 0;
}

static void run_domain_test(bool allow_tcp)
{
        struct tree t;
        struct ctx c = { .t = &t, .allow_tcp = allow_tcp };
        int fds[2], status;
        ssize_t got;
        pid_t pid;

        make_tree(&t);
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int r;
                (void) close(fds[0]);
                r = child_domain(&c);
                (void) !write(fds[1], c.msg, strnlen(c.msg, sizeof c.msg - 1));
                _exit(r);
        }
        (void) close(fds[1]);
        got = read(fds[0], c.msg, sizeof c.msg - 1);
        c.msg[got > 0 ? got : 0] = '\0';
        (void) close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        remove_tree(&t);
        if (WIFSIGNALED(status))
                fail_msg("child killed by signal %d", WTERMSIG(status));
        if (WEXITSTATUS(status) == CHILD_SKIP)
                skip_or_fail("%s", c.msg);
        if (WEXITSTATUS(status) != 0)
                fail_msg("%s", c.msg);
}

static void test_domain(void **state)
{
        (void) state;
        run_domain_test(false);
}

static void test_domain_allow_tcp(void **state)
{
        (void) state;
        run_domain_test(true);
}

/* A rule whose path does not exist: an error naming it, no domain, no claim. */
static void test_missing_path(void **state)
{
        const struct ll_path_rule rules[] = { { "/nonexistent/nsbox-landlock-test", true } };
        const struct ll_spec spec = { rules, 1, false };
        struct nsb_ledger ledger;
        struct nsb_error e;
        int status;
        pid_t pid;

        (void) state;
        if (ll_abi_version() < 0)
                skip_or_fail("Landlock is unavailable");
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                ledger_init(&ledger);
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(10);
                if (ll_apply(&spec, &ledger, &e) != -ENOENT)
                        _exit(11);
                if (e.stage != NSB_STAGE_LANDLOCK || !strstr(e.msg, "/nonexistent/nsbox-landlock-test"))
                        _exit(12);
                if (strcmp(ledger_get(&ledger, PROT_LANDLOCK), "unavailable") != 0)
                        _exit(13);
                /* Still unrestricted. */
                if (try_open("/etc/hostname", NULL, O_RDONLY) == EACCES)
                        _exit(14);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fs_rights_by_abi),
                cmocka_unit_test(test_plan),
                cmocka_unit_test(test_plan_rejects),
                cmocka_unit_test(test_domain),
                cmocka_unit_test(test_domain_allow_tcp),
                cmocka_unit_test(test_missing_path),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
