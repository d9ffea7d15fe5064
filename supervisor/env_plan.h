/* supervisor/env_plan.h — the scrubbed environment of the program. Pure. */
#pragma once

#include "config/config.h"

/* A NULL-terminated, malloc'd envp: the base set plus cfg->env_add. */
int env_build(const struct nsb_config *cfg, char ***ret, struct nsb_error *e);
void env_free(char **envp);
