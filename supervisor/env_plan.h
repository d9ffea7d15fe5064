/* supervisor/env_plan.h — the scrubbed environment of the program. Pure. */
#pragma once

#include "config/config.h"

/* The program's PATH (unless --env PATH=... replaces it). */
#define SBX_PROGRAM_PATH "/usr/local/bin:/usr/bin:/bin"

/* A NULL-terminated, malloc'd envp: the base set plus cfg->env_add. HOME and
 * TMPDIR name @tmp_dir (NULL: "/tmp", the sandbox's private one). */
int env_build(const struct nsb_config *cfg, const char *tmp_dir, char ***ret, struct nsb_error *e);
void env_free(char **envp);
