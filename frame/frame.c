/* frame/frame.c — the steps every command shares (frame.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/policy.h"
#include "frame/frame.h"
#include "platform/platform.h"
#include "util/cleanup.h"
#include "util/resultfile.h"

const struct frame_command *frame_lookup(const struct frame_command *table, enum nsb_cmd cmd)
{
        for (; table->main; table++)
                if (table->cmd == cmd)
                        return table;
        return NULL;
}

/* --result, --junit: the directory resolved before anything runs. */
static int pin_path(char **path, struct nsb_error *e)
{
        char *pinned;

        if (!*path)
                return 0;
        if (!(pinned = result_path_pin(*path)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        free(*path);
        *path = pinned;
        return 0;
}

int frame_check_files(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cfg = run->cfg;
        unsigned g = run->cmd->guarded;
        bool from_stdin = !cfg->input_path || strcmp(cfg->input_path, "-") == 0;
        const struct {
                unsigned bit;
                const char *path, *what;
        } files[] = {
                { FRAME_INPUT, from_stdin ? NULL : cfg->input_path, run->cmd->input_what },
                { FRAME_RESULT, cfg->result_path, "--result" },
                { FRAME_OBSERVE, cfg->observe_path, "--observe" },
                { FRAME_JUNIT, cfg->junit_path, "--junit" },
        };
        int r;

        for (size_t i = 0; i < ARRAY_SIZE(files); i++)
                if ((g & files[i].bit) && (r = cfg_check_unexposed(cfg, files[i].path, files[i].what, false, e)) < 0)
                        return r;
        if (g & FRAME_STDOUT)
                return cfg_check_unexposed_fd(cfg, run->out_fd, "stdout", e);
        return 0;
}

int frame_prepare(const struct frame_command *c, struct nsb_config *cfg, struct frame_run *run,
                  struct nsb_error *e)
{
        char cwd[4096];
        int r;

        *run = (struct frame_run) {
                .cfg = cfg, .cancel_fd = -1, .out = stdout, .out_fd = STDOUT_FILENO, .cmd = c,
                .progress = !cfg->quiet && isatty(STDERR_FILENO) ? stderr : NULL,
                .summary = cfg->quiet ? NULL : stderr,
        };
        if (!c->runs)
                return 0;   /* reads files or prints: no sandbox, no signals of its own */
        /* Relative bind sources from here, before a profile adds its own. */
        if ((getcwd(cwd, sizeof cwd) && (r = cfg_absolute_sources(cfg, cwd, e)) < 0) ||
            (c->profile == FRAME_PROFILE_CLI && (r = cfg_profile_resolve(cfg, NULL, e)) < 0))
                return r;
        if (c->profile == FRAME_PROFILE_CLI && (r = frame_open_image(cfg, c->python, e)) < 0)
                return r;
        if (c->python && (r = cfg_check_python_memory(cfg->memory_bytes, e)) < 0)
                /* a profile's limit: say whose (no flag gave it) */
                return (cfg->set & CFG_F_MEMORY) || !cfg->profile
                               ? r
                               : nsb_error_prefix(e, "profile '%s': [limits] memory", cfg->profile);
        if ((r = cfg_check_stdin(cfg, e)) < 0)
                return r;
        /* A command that resolves its own profile checks its files then (and
         * its main's errors carry its name); here they carry it too, as
         * test's did before the frame: "nsbox: test: --junit ...". */
        if (c->profile != FRAME_PROFILE_OWN && (r = frame_check_files(run, e)) < 0)
                return c->name ? nsb_error_prefix(e, "%s", c->name) : r;
        /* Pinned before the program runs: see util/resultfile.h. */
        if ((r = pin_path(&cfg->result_path, e)) < 0 || (r = pin_path(&cfg->junit_path, e)) < 0)
                return r;
        /* Before anything runs, whatever the output format: reduced isolation
         * is never silent (doctor reports it in its own words). */
        if (cfg->isolation == NSB_ISOLATION_REDUCED && c->profile != FRAME_PROFILE_NONE)
                fprintf(stderr, "nsbox: warning: --isolation reduced: %s\n", plat_reduced_banner);
        /* SIGINT/SIGTERM/SIGHUP become a readable fd: the supervisor cancels the run. */
        run->cancel_fd = plat_cancel_fd();
        return 0;
}
