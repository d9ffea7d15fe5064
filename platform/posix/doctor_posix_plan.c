/* platform/posix/doctor_posix_plan.c — `nsbox doctor` on the posix platform:
 * facts in, the report doctor.h renders out. Pure. */
#include "platform/posix/posix.h"

#include <string.h>

#include "util/portable.h"

#define DETAIL(c, ...) nsb_appendf((c)->detail, sizeof (c)->detail, __VA_ARGS__)
#define FIX(c, ...) nsb_appendf((c)->fix, sizeof (c)->fix, __VA_ARGS__)

static struct doc_check *add_check(struct doc_report *r, const char *name, enum doc_status st)
{
        struct doc_check *c = &r->checks[r->n_checks++];

        memset(c, 0, sizeof *c);
        c->name = name;
        c->status = st;
        return c;
}

void px_doctor_plan(const struct px_doc_facts *f, enum nsb_isolation iso, struct doc_report *ret)
{
        struct doc_check *c;

        memset(ret, 0, sizeof *ret);
        ret->isolation = iso;

        c = add_check(ret, "platform", iso == NSB_ISOLATION_STRICT ? DOC_UNAVAILABLE : DOC_DEGRADED);
        DETAIL(c, "nsbox built for the posix platform, running on %s %s: no user, mount, pid, network or IPC "
                  "namespaces, no cgroups, no seccomp, no Landlock, no no_new_privs",
               f->sysname, f->release);
        if (iso == NSB_ISOLATION_STRICT) {
                DETAIL(c, "; strict isolation cannot run here");
                FIX(c, "--isolation reduced (only a process group, rlimits, a private working directory and a "
                       "scrubbed environment; the program reads and writes what your user can and reaches the "
                       "network: docs/platforms.md), or build nsbox with -Dplatform=linux on Linux");
        } else {
                DETAIL(c, "; reduced isolation runs (process group, rlimits, private working directory, scrubbed "
                          "environment), labelled in every result; network, filesystem view, pid view, seccomp and "
                          "landlock are `unavailable`");
        }

        c = add_check(ret, "rlimits", DOC_OK);
        DETAIL(c, "per process: RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CORE=0, RLIMIT_AS");
        if (f->nproc_defined && f->tasks_countable) {
                DETAIL(c, "; RLIMIT_NPROC (per user: the %ld tasks %s already runs are added to --pids)",
                       f->user_tasks, f->as_nobody ? "nobody (the user a root caller's program runs as)" : "your user");
        } else {
                c->status = DOC_DEGRADED;
                DETAIL(c, "; processes are not bounded (%s): pids is `unavailable` in results",
                       f->nproc_defined ? "RLIMIT_NPROC is per user and this system's tasks cannot be counted"
                                        : "no RLIMIT_NPROC on this system");
        }

        c = add_check(ret, "interpreter", f->interpreter_ok ? DOC_OK : DOC_UNAVAILABLE);
        if (f->interpreter_ok) {
                DETAIL(c, "%s (executable)", f->interpreter);
        } else {
                DETAIL(c, "%s is not executable: %s", f->interpreter, f->interpreter_error);
                FIX(c, "pass an existing interpreter with --interpreter PATH");
        }

        ret->ready = true;
        for (size_t i = 0; i < ret->n_checks; i++)
                if (ret->checks[i].status == DOC_UNAVAILABLE)
                        ret->ready = false;
}
