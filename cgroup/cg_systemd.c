/* cgroup/cg_systemd.c — ask a systemd manager (over D-Bus, through sd-bus)
 * for a transient scope with Delegate=yes that holds this process, and wait
 * until its start job is done. Thin: the bus and the reasons come from
 * cg_obtain_plan(). Built as a stub that refuses when libsystemd was not
 * available at build time (doctor says so through the plan).
 *
 * sd-bus starts no thread, so the supervisor stays single-threaded (no
 * thread may exist next to clone()); the connection is closed before return.
 */
#include "cgroup/cg_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nsbox-config.h"

#if NSBOX_HAVE_SD_BUS
#include <systemd/sd-bus.h>

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
/* Under TCG or on a loaded machine the manager can be slow to answer. */
#define SCOPE_TIMEOUT_US (30ull * 1000 * 1000)

const bool cg_have_sd_bus = true;

/* libsystemd is bound at first use, never linked: linked, it and the five
 * libraries it needs (libgcrypt, libgpg-error, liblzma, libzstd, liblz4)
 * were loaded and relocated by every nsbox process (`nsbox --version` 1.1
 * -> 1.7 ms here, docs/performance.md) and mapped into every warm zygote
 * through libnsbox_warm.so, while only a host that needs a systemd scope
 * asks for one, once a process. The soname is libsystemd0's, stable since
 * systemd 209. */
#define SD_SONAME "libsystemd.so.0"
#define SDB_FUNCS(X) \
        X(sd_bus_call) \
        X(sd_bus_call_method) \
        X(sd_bus_error_free) \
        X(sd_bus_error_is_set) \
        X(sd_bus_flush_close_unref) \
        X(sd_bus_match_signal) \
        X(sd_bus_message_append) \
        X(sd_bus_message_close_container) \
        X(sd_bus_message_new_method_call) \
        X(sd_bus_message_open_container) \
        X(sd_bus_message_read) \
        X(sd_bus_message_unref) \
        X(sd_bus_new) \
        X(sd_bus_process) \
        X(sd_bus_set_address) \
        X(sd_bus_set_bus_client) \
        X(sd_bus_slot_unref) \
        X(sd_bus_start) \
        X(sd_bus_wait)
#define SDB_FIELD(f) __typeof__(f) *f;
static struct {
        void *handle;
        SDB_FUNCS(SDB_FIELD)
} sdb;

static int sdb_load(struct nsb_error *e)
{
        if (sdb.handle)
                return 0;
        if (!(sdb.handle = dlopen(SD_SONAME, RTLD_NOW | RTLD_LOCAL)))
                return nsb_fail(e, NSB_STAGE_CGROUP, ENOENT,
                                "asking systemd for a scope needs libsystemd: %s (Debian: apt install libsystemd0)",
                                dlerror());
#define SDB_BIND(f) \
        if (!(*(void **) &sdb.f = dlsym(sdb.handle, #f))) \
                goto missing;
        SDB_FUNCS(SDB_BIND)
        return 0;
missing:
        nsb_fail(e, NSB_STAGE_CGROUP, ENOENT, "%s lacks a function nsbox needs: %s", SD_SONAME, dlerror());
        dlclose(sdb.handle);
        memset(&sdb, 0, sizeof sdb);
        return -ENOENT;
}

struct job_wait {
        char path[256];         /* the job object we wait for; "" until StartTransientUnit answers */
        bool done;
        char result[32];        /* JobRemoved's result: "done", "failed", "timeout", ... */
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        struct job_wait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        (void) ret_error;
        if (sdb.sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->path[0] && strcmp(path, w->path) == 0) {
                w->done = true;
                snprintf(w->result, sizeof w->result, "%s", result);
        }
        return 0;
}

static uint64_t now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static int bus_fail(struct nsb_error *e, int r, const sd_bus_error *err, const char *what)
{
        if (err && sdb.sd_bus_error_is_set(err))
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "%s: %s", what, err->message ? err->message : err->name);
        return nsb_fail(e, NSB_STAGE_CGROUP, -r, "%s", what);
}

static int start_scope(sd_bus *bus, const char *unit, struct job_wait *w, struct nsb_error *e)
{
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error err = SD_BUS_ERROR_NULL;
        const char *job;
        int r;

        r = sdb.sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
        if (r >= 0)
                r = sdb.sd_bus_message_append(m, "ss", unit, "fail");
        if (r >= 0)
                r = sdb.sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sdb.sd_bus_message_append(m, "(sv)(sv)(sv)(sv)",
                                          "Description", "s", "nsbox supervisor (delegated cgroup for sandboxed runs)",
                                          /* this process: systemd moves it into the scope */
                                          "PIDs", "au", 1, (uint32_t) getpid(),
                                          /* the subtree is ours: systemd neither moves our
                                           * processes nor removes cgroups it did not make */
                                          "Delegate", "b", 1,
                                          /* gone with its last process, even after a failure */
                                          "CollectMode", "s", "inactive-or-failed");
        if (r >= 0)
                r = sdb.sd_bus_message_close_container(m);
        if (r >= 0)
                r = sdb.sd_bus_message_append(m, "a(sa(sv))", 0);      /* no auxiliary units */
        if (r < 0) {
                sdb.sd_bus_message_unref(m);
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "build the StartTransientUnit call");
        }
        r = sdb.sd_bus_call(bus, m, SCOPE_TIMEOUT_US, &err, &reply);
        sdb.sd_bus_message_unref(m);
        if (r < 0) {
                bus_fail(e, r, &err, "StartTransientUnit");
                sdb.sd_bus_error_free(&err);
                return r;
        }
        r = sdb.sd_bus_message_read(reply, "o", &job);
        if (r >= 0)
                snprintf(w->path, sizeof w->path, "%s", job);
        sdb.sd_bus_message_unref(reply);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "read the StartTransientUnit reply");
        return 0;
}

int cg_systemd_scope(const struct cg_obtain_plan *plan, const char *unit, struct nsb_error *e)
{
        sd_bus *bus = NULL;
        sd_bus_slot *slot = NULL;
        sd_bus_error err = SD_BUS_ERROR_NULL;
        struct job_wait w = { .path = "" };
        uint64_t deadline = now_us() + SCOPE_TIMEOUT_US;
        int r;

        if ((r = sdb_load(e)) < 0)
                return r;
        r = sdb.sd_bus_new(&bus);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "sd_bus_new");
        r = sdb.sd_bus_set_address(bus, plan->bus_address);
        if (r >= 0)
                r = sdb.sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sdb.sd_bus_start(bus);
        if (r < 0) {
                nsb_fail(e, NSB_STAGE_CGROUP, -r, "connect to the D-Bus bus %s", plan->bus_address);
                goto out;
        }
        /* The match goes in before the call, so the job's JobRemoved cannot
         * pass unseen; Subscribe makes the manager send its signals at all. */
        r = sdb.sd_bus_match_signal(bus, &slot, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, &w);
        if (r < 0) {
                nsb_fail(e, NSB_STAGE_CGROUP, -r, "add a match for JobRemoved");
                goto out;
        }
        r = sdb.sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &err, NULL, "");
        if (r < 0) {
                bus_fail(e, r, &err, "Subscribe to the systemd manager");
                goto out;
        }
        r = start_scope(bus, unit, &w, e);
        if (r < 0)
                goto out;
        while (!w.done) {
                uint64_t t = now_us();
                if (t >= deadline) {
                        r = nsb_fail(e, NSB_STAGE_CGROUP, ETIMEDOUT, "the start job of %s did not finish", unit);
                        goto out;
                }
                r = sdb.sd_bus_process(bus, NULL);
                if (r < 0) {
                        nsb_fail(e, NSB_STAGE_CGROUP, -r, "wait for the start job of %s", unit);
                        goto out;
                }
                if (r > 0)
                        continue;
                r = sdb.sd_bus_wait(bus, deadline - t);
                if (r < 0 && r != -EINTR) {
                        nsb_fail(e, NSB_STAGE_CGROUP, -r, "wait for the start job of %s", unit);
                        goto out;
                }
        }
        if (strcmp(w.result, "done") != 0)
                r = nsb_fail(e, NSB_STAGE_CGROUP, EIO, "the start job of %s ended '%s'", unit, w.result);
        else
                r = 0;
out:
        sdb.sd_bus_error_free(&err);
        sdb.sd_bus_slot_unref(slot);
        sdb.sd_bus_flush_close_unref(bus);
        if (r < 0)
                nsb_error_prefix(e, "systemd %s manager at %s", plan->user_manager ? "user" : "system",
                                 plan->bus_address);
        return r < 0 ? r : 0;
}

#else

const bool cg_have_sd_bus = false;

int cg_systemd_scope(const struct cg_obtain_plan *plan, const char *unit, struct nsb_error *e)
{
        (void) plan;
        return nsb_fail(e, NSB_STAGE_CGROUP, EOPNOTSUPP, "cannot ask systemd for %s: built without libsystemd", unit);
}

#endif
