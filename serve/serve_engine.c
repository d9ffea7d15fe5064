/* serve/serve_engine.c — see serve_engine.h. */
#include "serve/serve_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_CHUNK 65536

/* The engine's argv: batch --quiet [-j N] [--warm] [ARGS...] -. */
static char **engine_argv(const struct serve_opts *o, unsigned profile, char *jobs)
{
        char **av = calloc(10 + o->n_engine_args, sizeof *av);
        size_t n = 0;

        if (!av)
                return NULL;
        av[n++] = o->engine;
        av[n++] = (char *) "batch";
        av[n++] = (char *) "--quiet";
        if (o->jobs) {
                av[n++] = (char *) "-j";
                av[n++] = jobs;
        }
        if (o->warm)
                av[n++] = (char *) "--warm";
        if (o->n_profiles) {
                av[n++] = (char *) "--profile";
                av[n++] = (char *) o->profiles[profile];
        }
        for (size_t i = 0; i < o->n_engine_args; i++)
                av[n++] = o->engine_args[i];
        av[n++] = (char *) "-";
        return av;
}

static __attribute__((noreturn)) void engine_child(char **av, int in_r, int out_w, pid_t parent)
{
        sigset_t none;

        /* The service may die by SIGKILL: its engine must not outlive it.
         * SIGTERM is batch's cancel: it stops every worker, whose sandbox
         * init dies with it (PR_SET_PDEATHSIG SIGKILL in the supervisor).
         * Checked after, as the parent may be gone already. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                _exit(127);
        /* Its own process group: a terminal's Ctrl-C is the service's to
         * handle (drain), not a cancel of every job behind its back. */
        (void) setpgid(0, 0);
        if (dup2(in_r, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0)
                _exit(127);
        /* The service blocks its stop signals (signalfd) and ignores
         * SIGPIPE: batch sets up its own. */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execv(av[0], av);
        _exit(127);
}

int serve_engine_start(struct serve_engine *eng, const struct serve_opts *o, unsigned profile, struct nsb_error *e)
{
        int in[2], out[2];
        char jobs[16];
        char **av;
        pid_t parent = getpid(), pid;

        memset(eng, 0, sizeof *eng);
        eng->in_fd = eng->out_fd = -1;
        snprintf(jobs, sizeof jobs, "%u", o->jobs);
        if (!(av = engine_argv(o, profile, jobs)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        if (pipe2(in, O_CLOEXEC) < 0) {
                free(av);
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "engine: pipe");
        }
        if (pipe2(out, O_CLOEXEC) < 0) {
                int err = errno;
                close(in[0]), close(in[1]), free(av);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "engine: pipe");
        }
        pid = fork();
        if (pid == 0)
                engine_child(av, in[0], out[1], parent);
        free(av);
        close(in[0]);
        close(out[1]);
        if (pid < 0) {
                int err = errno;
                close(in[1]), close(out[0]);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "engine: fork");
        }
        /* Never block the loop on a full pipe: lines wait in obuf. */
        if (fcntl(in[1], F_SETFL, O_NONBLOCK) < 0 || fcntl(out[0], F_SETFL, O_NONBLOCK) < 0) {
                int err = errno;
                close(in[1]), close(out[0]);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "engine: O_NONBLOCK");
        }
        eng->pid = pid;
        eng->profile = profile;
        eng->in_fd = in[1];
        eng->out_fd = out[0];
        return 0;
}

int serve_engine_send(struct serve_engine *eng, const char *line, size_t len)
{
        if (eng->in_fd < 0)
                return -EPIPE;
        if (eng->ocap - eng->olen < len) {
                size_t cap = eng->ocap ? eng->ocap : READ_CHUNK;
                char *nb;

                while (cap - eng->olen < len)
                        cap *= 2;
                if (!(nb = realloc(eng->obuf, cap)))
                        return -ENOMEM;
                eng->obuf = nb;
                eng->ocap = cap;
        }
        memcpy(eng->obuf + eng->olen, line, len);
        eng->olen += len;
        return serve_engine_flush(eng);
}

int serve_engine_flush(struct serve_engine *eng)
{
        size_t off = 0;

        while (eng->in_fd >= 0 && off < eng->olen) {
                ssize_t n = write(eng->in_fd, eng->obuf + off, eng->olen - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0) {
                        eng->olen = 0;
                        return -EPIPE;
                }
                off += (size_t) n;
        }
        memmove(eng->obuf, eng->obuf + off, eng->olen - off);
        eng->olen -= off;
        return 0;
}

int serve_engine_read(struct serve_engine *eng, void (*on_line)(void *ctx, const char *line, size_t len), void *ctx)
{
        size_t start = 0;
        ssize_t n;

        if (eng->out_fd < 0)
                return 0;
        if (eng->icap - eng->ilen < READ_CHUNK) {
                char *nb = realloc(eng->ibuf, eng->icap * 2 + READ_CHUNK);
                if (!nb)
                        return 1;   /* try again on the next turn */
                eng->ibuf = nb;
                eng->icap = eng->icap * 2 + READ_CHUNK;
        }
        n = read(eng->out_fd, eng->ibuf + eng->ilen, eng->icap - eng->ilen);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 1 : 0;
        if (n == 0) {
                close(eng->out_fd);
                eng->out_fd = -1;
                return 0;
        }
        eng->ilen += (size_t) n;
        for (;;) {
                char *nl = memchr(eng->ibuf + start, '\n', eng->ilen - start);
                if (!nl)
                        break;
                on_line(ctx, eng->ibuf + start, (size_t) (nl - (eng->ibuf + start)));
                start = (size_t) (nl - eng->ibuf) + 1;
        }
        memmove(eng->ibuf, eng->ibuf + start, eng->ilen - start);
        eng->ilen -= start;
        return 1;
}

void serve_engine_close_input(struct serve_engine *eng)
{
        if (eng->in_fd >= 0)
                close(eng->in_fd);
        eng->in_fd = -1;
        eng->olen = 0;
}

int serve_engine_reap(struct serve_engine *eng)
{
        int status = 0;

        serve_engine_close_input(eng);
        if (eng->out_fd >= 0)
                close(eng->out_fd);
        eng->out_fd = -1;
        if (eng->pid > 0)
                while (waitpid(eng->pid, &status, 0) < 0 && errno == EINTR)
                        ;
        eng->pid = 0;
        free(eng->obuf);
        free(eng->ibuf);
        eng->obuf = eng->ibuf = NULL;
        eng->olen = eng->ocap = eng->ilen = eng->icap = 0;
        return status;
}
