/* platform/posix/doctor_posix.c — doctor_main (doctor.h) on the posix
 * platform: gathers what px_doctor_plan judges. Reads only. */
#include "platform/posix/posix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "supervisor/reduced.h"
#include "supervisor/sandbox.h"
#include "util/cleanup.h"
#include "util/textsafe.h"

static void gather(const char *interpreter, struct px_doc_facts *f)
{
        struct utsname u;
        unsigned long tasks = 0;

        memset(f, 0, sizeof *f);
        if (uname(&u) == 0) {
                snprintf(f->sysname, sizeof f->sysname, "%s", u.sysname);
                snprintf(f->release, sizeof f->release, "%s", u.release);
        } else {
                snprintf(f->sysname, sizeof f->sysname, "an unknown system");
        }
#ifdef RLIMIT_NPROC
        f->nproc_defined = true;
#endif
        f->as_nobody = geteuid() == 0;
        f->tasks_countable = reduced_count_tasks(f->as_nobody ? REDUCED_NOBODY_UID : getuid(), &tasks) == 0;
        f->user_tasks = (long) tasks;
        snprintf(f->interpreter, sizeof f->interpreter, "%s", interpreter ? interpreter : CFG_DEFAULT_INTERPRETER);
        f->interpreter_ok = access(f->interpreter, X_OK) == 0;
        if (!f->interpreter_ok)
                snprintf(f->interpreter_error, sizeof f->interpreter_error, "%s", strerror(errno));
}

int doctor_main(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cfg = run->cfg;
        FILE *out = run->out;
        struct px_doc_facts f;
        struct doc_report rep;

        gather(cfg->interpreter, &f);
        px_doctor_plan(&f, cfg->isolation, &rep);
        if (cfg->doctor_json) {
                json_t *j = doctor_to_json(&rep);
                if (!j)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "doctor: out of memory"), 1;
                textsafe_json_dumpf(j, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                fputc('\n', out);
                json_decref(j);
        } else {
                AUTOFREE char *text = doctor_to_text(&rep);
                if (!text)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "doctor: out of memory"), 1;
                fputs(text, out);
        }
        fflush(out);
        return rep.ready ? 0 : 1;
}
