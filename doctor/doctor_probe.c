/* doctor/doctor_probe.c — gather the facts doctor_plan() judges, and
 * `nsbox doctor` itself. Reads only; the one process it starts (the user
 * namespace probe) changes nothing outside its own namespaces, which die
 * with it. */
#include "doctor/doctor.h"
#include "frame/frame.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock/landlock.h"
#include "profile/profile.h"
#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/textsafe.h"

#include <jansson.h>

#include "nsbox-config.h"

/* A sysctl's text, trailing whitespace stripped; "" when absent/unreadable. */
static void read_sysctl(const char *proc_sys, const char *rel, char *buf, size_t size)
{
        char path[DOC_PATH_MAX];
        AUTOCLOSE int fd = -1;
        ssize_t n;

        buf[0] = '\0';
        snprintf(path, sizeof path, "%s/%s", proc_sys, rel);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = 0;
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
                buf[--n] = '\0';
        for (char *p = buf; *p; p++)
                if (*p == '\t' || *p == '\n')
                        *p = ' ';
}

/* ---- the user namespace probe -------------------------------------------------- */

struct probe_msg {
        char step[32];
        int err;
        bool created;   /* the user namespace exists: a later step failed in it */
};

static int write_proc_self(const char *file, const char *text)
{
        char path[64];
        int fd, r = 0;
        size_t len = strlen(text);

        snprintf(path, sizeof path, "/proc/self/%s", file);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, text, len) != (ssize_t) len)
                r = -errno ? -errno : -EIO;
        close(fd);
        return r;
}

/* In the forked child: the steps the sandbox takes, up to its first mount. */
static __attribute__((noreturn)) void probe_child(int wfd, uid_t uid, gid_t gid)
{
        struct probe_msg m;
        char map[64];
        int r;

        memset(&m, 0, sizeof m);        /* the whole struct, padding too, goes down the pipe */
        if (unshare(CLONE_NEWUSER) < 0) {
                snprintf(m.step, sizeof m.step, "unshare(CLONE_NEWUSER)");
                m.err = errno;
                goto out;
        }
        m.created = true;
        r = write_proc_self("setgroups", "deny");
        if (r < 0 && r != -ENOENT) {
                snprintf(m.step, sizeof m.step, "setgroups");
                m.err = -r;
                goto out;
        }
        snprintf(map, sizeof map, "%u %u 1\n", (unsigned) uid, (unsigned) uid);
        r = write_proc_self("uid_map", map);
        if (r < 0) {
                snprintf(m.step, sizeof m.step, "uid_map");
                m.err = -r;
                goto out;
        }
        snprintf(map, sizeof map, "%u %u 1\n", (unsigned) gid, (unsigned) gid);
        r = write_proc_self("gid_map", map);
        if (r < 0) {
                snprintf(m.step, sizeof m.step, "gid_map");
                m.err = -r;
                goto out;
        }
        /* Capabilities inside the new namespace (AppArmor's restriction
         * lets the unshare succeed and takes them away). No network
         * namespace: creating one is the slow part and adds nothing here. */
        if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS) < 0) {
                snprintf(m.step, sizeof m.step, "unshare(namespaces)");
                m.err = errno;
                goto out;
        }
        /* The sandbox's first mount, in this private mount namespace, which
         * dies with the child. */
        if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {   /* both ignored: named for valgrind */
                snprintf(m.step, sizeof m.step, "mount");
                m.err = errno;
                goto out;
        }
out:
        (void) !write(wfd, &m, sizeof m);
        _exit(0);
}

static void probe_userns(struct doc_facts *f)
{
        struct probe_msg m;
        int p[2];
        pid_t pid;
        ssize_t n;

        f->userns_probe = DOC_PROBE_FAILED;
        if (pipe2(p, O_CLOEXEC) < 0) {
                snprintf(f->userns_step, sizeof f->userns_step, "pipe");
                f->userns_errno = errno;
                return;
        }
        pid = fork();
        if (pid < 0) {
                snprintf(f->userns_step, sizeof f->userns_step, "fork");
                f->userns_errno = errno;
                close(p[0]);
                close(p[1]);
                return;
        }
        if (pid == 0) {
                close(p[0]);
                probe_child(p[1], getuid(), getgid());
        }
        close(p[1]);
        do
                n = read(p[0], &m, sizeof m);
        while (n < 0 && errno == EINTR);
        close(p[0]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t) sizeof m) {
                snprintf(f->userns_step, sizeof f->userns_step, "probe child (died)");
                return;
        }
        m.step[sizeof m.step - 1] = '\0';
        if (m.step[0] == '\0') {
                f->userns_probe = DOC_PROBE_OK;
                return;
        }
        snprintf(f->userns_step, sizeof f->userns_step, "%s", m.step);
        f->userns_errno = m.err;
        f->userns_created = m.created;
}

/* ---- seccomp ------------------------------------------------------------------------ */

/* The seccomp() syscall itself, for the two actions nsbox's filter returns:
 * PR_GET_SECCOMP answers on a kernel without filters too, and the sysctl may
 * be absent or not the whole story (a container's filter may refuse
 * seccomp()). Asking changes nothing. 0, or the errno. */
static int probe_seccomp_filter(void)
{
        static const unsigned actions[] = { SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO };

        for (size_t i = 0; i < ARRAY_SIZE(actions); i++) {
                unsigned action = actions[i];
                if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
                        return errno;
        }
        return 0;
}

/* ---- cgroup ------------------------------------------------------------------------ */

static void gather_cgroup(struct doc_facts *f, const char *cgroup_parent)
{
        struct cg_env env = { .proc_fd = -1, .sys_cgroup_fd = -1, .parent_path = cgroup_parent };
        struct cg_facts *cf = calloc(1, sizeof *cf);
        struct cg_obtained got;
        const char *reason = NULL;
        struct nsb_error e;

        if (!cf) {
                f->cg_errno = ENOMEM;
                return;
        }
        nsb_error_clear(&e);
        env.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        env.sys_cgroup_fd = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (env.proc_fd < 0) {
                f->cg_errno = errno;
        } else if (cg_obtain(&env, false, cf, &got, &e) < 0) {
                if (cgroup_parent && e.errnum == EINVAL) {   /* refused: a fact to report */
                        f->cg_detected = f->cg_refused = true;
                        snprintf(f->cg_refusal, sizeof f->cg_refusal, "%s", e.msg);
                        f->cg_v2_mounted = cf->v2_mounted;
                } else {
                        f->cg_errno = e.errnum ? e.errnum : EIO;
                }
        } else {
                f->cg_detected = true;
                (void) cg_choose(cf, &reason);
                f->cg_backend = got.backend;
                f->cg_origin = got.origin;
                snprintf(f->cg_origin_detail, sizeof f->cg_origin_detail, "%s", got.detail);
                snprintf(f->cg_fix, sizeof f->cg_fix, "%s", got.fix);
                snprintf(f->cg_reason, sizeof f->cg_reason, "%s", reason ? reason : cf->reason);
                f->cg_v2_mounted = cf->v2_mounted;
                f->cg_v1_mounted = cf->v1[CG_V1_MEMORY].mounted && cf->v1[CG_V1_PIDS].mounted;
        }
        if (env.proc_fd >= 0)
                close(env.proc_fd);
        if (env.sys_cgroup_fd >= 0)
                close(env.sys_cgroup_fd);
        free(cf);
}

static void gather_interpreter(const char *interpreter, struct doc_facts *f)
{
        struct host_set set = { 0 };
        AUTOFREE char *real = NULL;
        struct nsb_error e;
        char buf[NSB_ERROR_MSG_MAX + 128];

        nsb_error_clear(&e);
        f->interpreter_default = !interpreter;
        snprintf(f->interpreter, sizeof f->interpreter, "%s", interpreter ? interpreter : CFG_DEFAULT_INTERPRETER);
        /* Uncached: the closure cache would be created and written. */
        if (profile_add_python_uncached(&set, f->interpreter, &real, &e) < 0) {
                snprintf(f->interpreter_error, sizeof f->interpreter_error, "%s",
                         nsb_error_describe(&e, buf, sizeof buf));
                if (e.errnum == ENOEXEC)
                        (void) profile_script_python(f->interpreter, f->interpreter_hint, sizeof f->interpreter_hint);
        } else {
                f->interpreter_ok = true;
                snprintf(f->interpreter_real, sizeof f->interpreter_real, "%s", real ? real : "");
        }
        host_set_free(&set);
}

/* ---- AppArmor ---------------------------------------------------------------------- */

const char *doctor_proc_sys(void)
{
#if NSBOX_TEST_HOOKS
        const char *v = getenv("NSBOX_DOCTOR_PROC_SYS");
        if (v && *v)
                return v;
#endif
        return "/proc/sys";
}

/* Does the profile at @path name @exe (as its attachment path)? Read whole:
 * a profile is a few hundred bytes. */
static bool profile_names(const char *path, const char *exe)
{
        char text[8192];
        AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t n;
        size_t len = strlen(exe);

        if (fd < 0 || !exe[0])
                return false;
        n = read(fd, text, sizeof text - 1);
        if (n <= 0)
                return false;
        text[n] = '\0';
        for (const char *p = strstr(text, exe); p; p = strstr(p + 1, exe))
                if ((p == text || p[-1] == ' ' || p[-1] == '"') &&
                    (p[len] == ' ' || p[len] == '"' || p[len] == '\n' || p[len] == '{'))
                        return true;
        return false;
}

void doctor_aa_gather(const char *proc_sys, struct doc_aa *ret)
{
        char ninja[DOC_PATH_MAX + 16];
        int r;

        memset(ret, 0, sizeof *ret);
        ret->root = geteuid() == 0;
        read_sysctl(proc_sys, "kernel/apparmor_restrict_unprivileged_userns", ret->restrict_sysctl,
                    sizeof ret->restrict_sysctl);
        r = (int) readlink("/proc/self/exe", ret->self_exe, sizeof ret->self_exe - 1);
        ret->self_exe[r > 0 ? r : 0] = '\0';
        snprintf(ret->bindir, sizeof ret->bindir, "%s", NSBOX_BINDIR);
        /* A binary in a meson build directory (build.ninja next to it). */
        if (ret->self_exe[0] && strrchr(ret->self_exe, '/')) {
                size_t dir = (size_t) (strrchr(ret->self_exe, '/') - ret->self_exe);
                snprintf(ninja, sizeof ninja, "%.*s/build.ninja", (int) dir, ret->self_exe);
                if (access(ninja, F_OK) == 0)
                        snprintf(ret->build_dir, sizeof ret->build_dir, "%.*s", (int) dir, ret->self_exe);
        }
        ret->profile_present = access(DOC_AA_PROFILE, F_OK) == 0;
        ret->profile_names_self = ret->profile_present && profile_names(DOC_AA_PROFILE, ret->self_exe);
        /* AppArmor's own attr directory (Linux 5.8+): /proc/self/attr/current
         * would be another LSM's label where that one comes first. */
        read_sysctl("/proc/self/attr/apparmor", "current", ret->label, sizeof ret->label);
}

/* Two jobs through this binary's `batch --warm -j 1`: what a user's batch
 * would get. Their lines must say warm, PID 2, and differ in random(). */
#define WARM_PROBE_JOBS                                                                                      \
        "{\"id\":1,\"kind\":\"python\",\"code\":\"import os, random\\nprint(os.getpid(), random.random())\"}\n" \
        "{\"id\":2,\"kind\":\"python\",\"code\":\"import os, random\\nprint(os.getpid(), random.random())\"}\n"
#define WARM_PROBE_TIMEOUT_MS 30000

/* "@what[: @detail]" */
static void warm_fail(struct doc_facts *f, const char *what, const char *detail)
{
        f->warm_probe = DOC_PROBE_FAILED;
        snprintf(f->warm_error, sizeof f->warm_error, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

static void probe_warm_lines(struct doc_facts *f, const char *out, size_t len)
{
        char first[64] = "";
        size_t lines = 0;

        for (const char *p = out, *end = out + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                json_t *j = json_loadb(p, n, 0, NULL);
                const char *start = j ? json_string_value(json_object_get(j, "start")) : NULL;
                const char *reason = j ? json_string_value(json_object_get(j, "start_reason")) : NULL;
                const char *status = j ? json_string_value(json_object_get(j, "status")) : NULL;
                const char *text = j ? json_string_value(json_object_get(json_object_get(j, "stdout"), "text")) : NULL;
                json_t *err = j ? json_object_get(json_object_get(j, "error"), "message") : NULL;

                p = nl ? nl + 1 : end;
                if (!j) {
                        warm_fail(f, "the probe batch wrote a line that is not JSON", NULL);
                        return;
                }
                lines++;
                if (!start || strcmp(start, "warm") != 0) {
                        warm_fail(f, reason ? reason : "a probe job started cold", NULL);
                } else if (!status || strcmp(status, "exited") != 0 || !text || strncmp(text, "2 ", 2) != 0) {
                        warm_fail(f, "a warm probe job did not run as expected",
                                  err ? json_string_value(err) : text ? text : "no output");
                } else if (!first[0]) {
                        snprintf(first, sizeof first, "%s", text);
                } else if (strcmp(first, text) == 0) {
                        warm_fail(f, "two warm jobs drew the same random number: the zygote's "
                                     "generator was not re-seeded", NULL);
                }
                json_decref(j);
                if (f->warm_probe == DOC_PROBE_FAILED)
                        return;
        }
        if (lines != 2)
                warm_fail(f, "the probe batch did not answer both jobs", NULL);
        else
                f->warm_probe = DOC_PROBE_OK;
}

static void probe_warm(struct doc_facts *f, const char *interpreter)
{
        int in[2], out[2];
        pid_t pid;
        AUTOFREE char *buf = NULL;
        size_t len = 0, cap = 0;
        int status;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
                warm_fail(f, "pipe", strerror(errno));
                return;
        }
        pid = fork();
        if (pid == 0) {
                const char *argv[10] = { "nsbox", "batch", "--warm", "-j", "1", "--quiet" };
                int n = 6;
                int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (interpreter) {
                        argv[n++] = "--interpreter";
                        argv[n++] = interpreter;
                }
                argv[n++] = "-";
                argv[n] = NULL;
                /* Doctor changes nothing: no interpreter closure cache is
                 * written for the probe (it has no place without these). */
                unsetenv("HOME");
                unsetenv("XDG_CACHE_HOME");
                dup2(in[0], STDIN_FILENO);
                dup2(out[1], STDOUT_FILENO);
                if (devnull >= 0)
                        dup2(devnull, STDERR_FILENO);
                execv("/proc/self/exe", (char *const *) argv);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        if (pid < 0) {
                close(in[1]);
                close(out[0]);
                warm_fail(f, "fork", strerror(errno));
                return;
        }
        (void) write_all(in[1], WARM_PROBE_JOBS, sizeof WARM_PROBE_JOBS - 1);
        close(in[1]);
        for (;;) {
                struct pollfd p = { out[0], POLLIN, 0 };
                ssize_t k;
                int r = poll(&p, 1, WARM_PROBE_TIMEOUT_MS);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        kill(pid, SIGKILL);
                        break;
                }
                if (cap - len < 4096) {
                        char *nb = realloc(buf, cap + 65536);
                        if (!nb)
                                break;
                        buf = nb;
                        cap += 65536;
                }
                k = read(out[0], buf + len, cap - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t) k;
        }
        close(out[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!buf || len == 0) {
                warm_fail(f, "the probe batch wrote nothing (it failed or did not finish in 30 s)", NULL);
                return;
        }
        probe_warm_lines(f, buf, len);
}

int doctor_gather(const char *proc_sys, int fake_userns, const char *interpreter, const char *cgroup_parent,
                  struct doc_facts *ret,
                  struct nsb_error *e)
{
        int r;

        memset(ret, 0, sizeof *ret);
        ret->root = geteuid() == 0;

        read_sysctl(proc_sys, "kernel/unprivileged_userns_clone", ret->userns_clone, sizeof ret->userns_clone);
        read_sysctl(proc_sys, "user/max_user_namespaces", ret->max_user_ns, sizeof ret->max_user_ns);
        doctor_aa_gather(proc_sys, &ret->aa);
        if (fake_userns == 0) {
                ret->userns_probe = DOC_PROBE_FAILED;
                snprintf(ret->userns_step, sizeof ret->userns_step, "unshare(CLONE_NEWUSER)");
                ret->userns_errno = EPERM;
        } else if (fake_userns == 1) {
                ret->userns_probe = DOC_PROBE_OK;
        } else {
                probe_userns(ret);
        }

        gather_cgroup(ret, cgroup_parent);
        /* A size below the first version's: EINVAL where clone3 exists,
         * ENOSYS where it is refused. Nothing is created either way. */
        ret->clone3_errno = syscall(SYS_clone3, NULL, (size_t) 0) < 0 ? errno : 0;
        if (ret->cg_errno == ENOMEM)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "doctor: out of memory");

        r = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        ret->seccomp_mode = r < 0 ? -errno : r;
        read_sysctl(proc_sys, "kernel/seccomp/actions_avail", ret->seccomp_actions, sizeof ret->seccomp_actions);
        ret->seccomp_filter_err = probe_seccomp_filter();
        r = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        ret->nnp = r < 0 ? -errno : r;

        ret->landlock_abi = ll_abi_version();
        read_sysctl("/sys/kernel/security", "lsm", ret->lsm, sizeof ret->lsm);
        gather_interpreter(interpreter, ret);
        /* Only where a strict sandbox can exist at all: the probe runs two. */
        if (fake_userns < 0 && ret->userns_probe == DOC_PROBE_OK && ret->landlock_abi >= 6 && ret->interpreter_ok)
                probe_warm(ret, interpreter);
        return 0;
}

int doctor_main(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cfg = run->cfg;
        FILE *out = run->out;
        const char *proc_sys = doctor_proc_sys();
        int fake_userns = -1;
        struct doc_facts *f = calloc(1, sizeof *f);
        struct doc_report *rep = calloc(1, sizeof *rep);
        int code = 1;

#if NSBOX_TEST_HOOKS
        {
                const char *v = getenv("NSBOX_DOCTOR_FAKE_USERNS");
                if (v && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0))
                        fake_userns = v[0] - '0';
        }
#endif
        if (!f || !rep) {
                nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "doctor: out of memory");
                goto out;
        }
        if (doctor_gather(proc_sys, fake_userns, cfg->interpreter, cfg->cgroup_parent, f, e) < 0)
                goto out;
        doctor_plan(f, cfg->isolation, rep);
        /* --image: its own check (docs/images.md); a run on it cannot start without it */
        if (cfg->image && rep->n_checks < DOC_MAX_CHECKS) {
                struct doc_check *c = &rep->checks[rep->n_checks++];
                c->name = "image";
                c->status = frame_doctor_image(cfg, c->detail, sizeof c->detail, c->fix, sizeof c->fix) ? DOC_OK
                                                                                                        : DOC_UNAVAILABLE;
                rep->ready = rep->ready && c->status == DOC_OK;
                rep->warm = false;
                snprintf(rep->warm_reason, sizeof rep->warm_reason,
                         "not with --image: the zygote is the host's interpreter (docs/images.md)");
        }
        if (cfg->doctor_json) {
                json_t *j = doctor_to_json(rep);
                if (!j) {
                        nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "doctor: out of memory");
                        goto out;
                }
                textsafe_json_dumpf(j, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                fputc('\n', out);
                json_decref(j);
        } else {
                AUTOFREE char *text = doctor_to_text(rep);
                if (!text) {
                        nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "doctor: out of memory");
                        goto out;
                }
                fputs(text, out);
        }
        fflush(out);
        code = rep->ready ? 0 : 1;
out:
        free(f);
        free(rep);
        return code;
}
