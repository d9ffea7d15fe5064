/* util/strv.c — see strv.h. */
#include "util/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int strv_add(char ***v, size_t *n, const char *s, bool unique)
{
        char **nv;

        for (size_t i = 0; unique && i < *n; i++)
                if (strcmp((*v)[i], s) == 0)
                        return 0;
        if (!(nv = realloc(*v, (*n + 1) * sizeof *nv)))
                return -ENOMEM;
        *v = nv;
        if (!(nv[*n] = strdup(s)))
                return -ENOMEM;
        (*n)++;
        return 1;
}
