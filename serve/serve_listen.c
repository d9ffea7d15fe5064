/* serve/serve_listen.c — the listening socket and the token. Syscall layer.
 *
 * The socket is made here and handed to libmicrohttpd
 * (MHD_OPTION_LISTEN_SOCKET), which is how a unix socket serves HTTP. */
#include "serve/serve_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/readfile.h"

/* The accept backlog. A burst of callers (a trainer's fan-out) arrives
 * faster than a loaded service accepts; with a short backlog a unix-socket
 * caller's non-blocking connect fails with EAGAIN, which it cannot tell from
 * a refusal. The kernel clamps this to net.core.somaxconn. */
#define LISTEN_BACKLOG SOMAXCONN

#define TOKEN_MAX 4096

int serve_token_load(const char *path, char **ret, size_t *ret_len, struct nsb_error *e)
{
        AUTOFREE char *t = NULL;
        size_t n = 0;
        struct stat st;

        /* A token others can read is a token others have: refused, with
         * the fix named, rather than served silently. */
        if (stat(path, &st) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "--token-file '%s'", path);
        if (st.st_mode & 077)
                return nsb_fail(e, NSB_STAGE_USAGE, EPERM,
                                "--token-file '%s': mode %04o lets other users read the token: chmod 600 '%s'", path,
                                (unsigned) (st.st_mode & 07777), path);
        if (read_file(path, TOKEN_MAX, &t, &n, e) < 0)
                return nsb_error_prefix(e, "--token-file");
        while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
                t[--n] = '\0';
        if (n < 16)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--token-file '%s': the token is shorter than 16 characters",
                                path);
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) t[i] <= ' ' || (unsigned char) t[i] >= 0x7f || strchr("/?#%", t[i]))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "--token-file '%s': the token must be printable ASCII without blanks, '/', "
                                        "'?', '#' or '%%' (it may travel as a path segment, where those would need "
                                        "percent-encoding)", path);
        *ret = move_ptr(&t);
        *ret_len = n;
        return 0;
}

/* The default socket's directory is ours alone: made 0700, or an existing
 * one that is a directory we own, then set to 0700. */
static int private_dir(const char *sock, struct nsb_error *e)
{
        char dir[sizeof(((struct sockaddr_un *) 0)->sun_path)];
        char *slash;
        struct stat st;

        snprintf(dir, sizeof dir, "%s", sock);
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: mkdir '%s'", dir);
        if (lstat(dir, &st) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: '%s'", dir);
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                return nsb_fail(e, NSB_STAGE_PREPARE, EPERM, "--listen: '%s' is not a directory of this user's", dir);
        if ((st.st_mode & 07777) != 0700 && chmod(dir, 0700) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: chmod 0700 '%s'", dir);
        return 0;
}

/* A socket file left by a service that died is replaced; one a live
 * service answers on is not. */
static int clear_stale(const char *path, const struct sockaddr_un *sa, struct nsb_error *e)
{
        struct stat st;
        AUTOCLOSE int fd = -1;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: '%s'", path);
        if (!S_ISSOCK(st.st_mode))
                return nsb_fail(e, NSB_STAGE_PREPARE, EEXIST, "--listen: '%s' exists and is not a socket", path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (const struct sockaddr *) sa, sizeof *sa) == 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, EADDRINUSE, "--listen: a service already answers on '%s'", path);
        if (unlink(path) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: remove the stale socket '%s'", path);
        return 0;
}

static int listen_unix(const struct serve_opts *o, struct nsb_error *e)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        AUTOCLOSE int fd = -1;
        mode_t old;
        int r;

        if (strlen(o->unix_path) >= sizeof sa.sun_path)
                return nsb_fail(e, NSB_STAGE_USAGE, ENAMETOOLONG, "--listen unix:%s: longer than %zu bytes",
                                o->unix_path, sizeof sa.sun_path - 1);
        memcpy(sa.sun_path, o->unix_path, strlen(o->unix_path) + 1);
        if (o->unix_default && private_dir(o->unix_path, e) < 0)
                return -EPERM;
        if (clear_stale(o->unix_path, &sa, e) < 0)
                return -EEXIST;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: socket");
        /* Mode 0600 from its creation (umask at bind), not set after: no
         * moment at which another user could connect. The socket's mode is
         * the unix listener's whole authentication. */
        old = umask(0177);
        r = bind(fd, (const struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: bind '%s'", o->unix_path);
        if (chmod(o->unix_path, 0600) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--listen: '%s'", o->unix_path);
        return move_fd(&fd);
}

static int listen_tcp(const struct serve_opts *o, struct nsb_error *e)
{
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
        struct addrinfo *ai = NULL;
        int r, one = 1;
        AUTOCLOSE int fd = -1;

        r = getaddrinfo(o->tcp_host, o->tcp_port, &hints, &ai);
        if (r != 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--listen tcp:%s:%s: %s", o->tcp_host, o->tcp_port,
                                gai_strerror(r));
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
                int err = errno;
                freeaddrinfo(ai);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "--listen tcp:%s:%s", o->tcp_host, o->tcp_port);
        }
        freeaddrinfo(ai);
        return move_fd(&fd);
}

int serve_listen_open(const struct serve_opts *o, char *ret_where, size_t size, struct nsb_error *e)
{
        int fd;

        if (o->listen_kind == SERVE_LISTEN_UNIX) {
                fd = listen_unix(o, e);
                if (fd >= 0)
                        snprintf(ret_where, size, "unix:%s", o->unix_path);
                return fd;
        }
        fd = listen_tcp(o, e);
        if (fd >= 0) {
                struct sockaddr_storage ss;
                socklen_t sl = sizeof ss;
                char host[128] = "?", port[16] = "?";

                /* the port actually bound (tcp:HOST:0 picks one) */
                if (getsockname(fd, (struct sockaddr *) &ss, &sl) == 0)
                        getnameinfo((struct sockaddr *) &ss, sl, host, sizeof host, port, sizeof port,
                                    NI_NUMERICHOST | NI_NUMERICSERV);
                snprintf(ret_where, size, strchr(host, ':') ? "tcp:[%s]:%s" : "tcp:%s:%s", host, port);
        }
        return fd;
}

#define SD_LISTEN_FDS_START 3

int serve_listen_inherited(const struct serve_opts *o, char *ret_where, size_t size, struct nsb_error *e)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int type = 0, acc = 0;
        socklen_t tl = sizeof type, al = sizeof acc;
        int fd = SD_LISTEN_FDS_START;

        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "socket activation: fd 3 is not a socket");
        if (type != SOCK_STREAM || !acc)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "socket activation: fd 3 is not a listening stream socket (ListenStream=, Accept=no)");
        /* The same rule as --listen tcp: a port needs the token. */
        if ((ss.ss_family == AF_INET || ss.ss_family == AF_INET6) && !o->token_file)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "socket activation: a TCP socket needs --token-file FILE: a TCP service without a "
                                "token would run anyone's code");
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "socket activation: FD_CLOEXEC on fd 3");
        if (ss.ss_family == AF_UNIX)
                snprintf(ret_where, size, "unix:%s (socket activation)", ((struct sockaddr_un *) &ss)->sun_path);
        else
                snprintf(ret_where, size, "%s (socket activation)", ss.ss_family == AF_INET6 ? "tcp6" : "tcp");
        return fd;
}
