/* profile/profile_internal.h — what profile/'s files share with each other
 * (and with their unit tests), not part of the module's interface. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

/* Pure: "home" of pyvenv.cfg text @buf into @ret_home (0; -ENOENT if none,
 * -EINVAL if empty or too long) and its "version" X.Y (0.0 if absent). */
int pyvenv_parse(const char *buf, size_t len, char *ret_home, size_t home_size, unsigned *ret_major,
                 unsigned *ret_minor);

/* Pure: @dir (a DT_RUNPATH entry) with every $ORIGIN and ${ORIGIN}
 * replaced by @origin, as ld.so(8) expands them, into @ret (@size bytes);
 * -ENAMETOOLONG when it does not fit (nothing is cut). */
int elf_expand_origin(const char *dir, const char *origin, char *ret, size_t size);

/* The pyvenv.cfg of the venv @interpreter (as given, not resolved) belongs
 * to, in @ret (PATH_MAX): next to it or one directory up, as CPython looks.
 * -ENOENT if none. */
int profile_find_pyvenv_cfg(const char *interpreter, char *ret);

/* The library closure of the extension module @so (an ELF file), with the
 * "*.libs" directory of a wheel's bundled libraries whole. -ENOENT (e
 * filled) if a library it needs is not installed. */
int profile_add_module_libraries(struct host_set *set, const char *so, struct nsb_error *e);

/* The directories libraries are searched in after an object's RUNPATH: a
 * closure depends on what they hold, so a cache watches them. */
const char *const *profile_lib_dirs(size_t *ret_n);
