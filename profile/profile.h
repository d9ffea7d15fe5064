/* profile/profile.h — what of the host a program needs, as a list of paths.
 *
 * Owns: resolving an executable (and, for the python profile, the
 * interpreter's standard library) into the host files and directories that
 * must be visible inside the sandbox: the binary, its ELF program interpreter,
 * its shared-library closure (DT_NEEDED, searched in the multiarch and default
 * library directories), and every symlink met on the way, so the sandbox
 * mirrors the host's layout (/lib -> usr/lib, python3 -> python3.11).
 *
 * Split: elf_parse.c is pure (a buffer in, names out); profile_resolve.c reads
 * the host (lstat, readlink, mmap). The mount planner consumes the resulting
 * struct host_set and never touches the host itself.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

enum host_kind { HOST_DIR, HOST_FILE, HOST_SYMLINK };

struct host_entry {
        char *path;            /* absolute, normalised, host path == sandbox path */
        enum host_kind kind;
        char *target;          /* HOST_SYMLINK: the link text, as readlink gives it */
};

struct host_set {
        struct host_entry *v;
        size_t n;
        /* Directories that must look empty although a directory entry of
         * the set holds them (a standard library's site-packages or
         * dist-packages: an unnamed package must be absent). The mount plan
         * covers each with an empty read-only tmpfs, after the directory
         * holding it and before any entry of the set inside it (a named
         * package), so those still show. Where files are granted by path
         * rather than mounted (reduced isolation's Landlock rules) they stay
         * visible: docs/profiles.md. */
        char **hidden;
        size_t n_hidden;
        /* NULL: every entry is the host's file at its own path. Else the
         * host directory that holds the entries: entry /usr is ROOT/usr on
         * the host (an image's unpacked root, image/image.h). */
        char *root;
};

struct elf_deps {
        char *interp;          /* PT_INTERP, or NULL (static) */
        char **needed;         /* DT_NEEDED names */
        size_t n_needed;
        char **runpath;        /* DT_RUNPATH/DT_RPATH entries ($ORIGIN expanded by the caller) */
        size_t n_runpath;
};

/* Pure: parse a 64-bit little-endian ELF image held in @buf. */
int elf_deps_parse(const void *buf, size_t len, struct elf_deps *ret, struct nsb_error *e);
void elf_deps_free(struct elf_deps *d);

/* Add @path (following and recording symlinks) and, if it is an ELF file, its
 * whole library closure. */
int profile_add_executable(struct host_set *set, const char *path, struct nsb_error *e);
/* Only the library closure of the ELF file @path (its interpreter and every
 * library it needs, with their symlinks), not @path itself: a file mounted
 * elsewhere (a warm zygote's library) brings its libraries at their paths. */
int profile_add_libraries_of(struct host_set *set, const char *path, struct nsb_error *e);

/* Pure: the "#!" line at the start of @buf. 1 and the interpreter (and its
 * one argument, or NULL) malloc'd; 0: not a script; -EINVAL: an empty or
 * NUL-holding line; -ENOMEM. */
int shebang_parse(const char *buf, size_t len, char **ret_interp, char **ret_arg);

/* A command for nsbox run: profile_add_executable, and for a script its
 * "#!" interpreter too (as the kernel does, up to 4 levels); "#!/usr/bin/env
 * NAME" also brings NAME, found on @sandbox_path (the program's PATH). A
 * python interpreter comes with its standard library (profile_add_python). */
int profile_add_command(struct host_set *set, const char *path, const char *sandbox_path, struct nsb_error *e);

/* The python profile: the interpreter (resolved to its real binary), its
 * closure, its standard library directory and the closure of the extension
 * modules in lib-dynload. *ret_real gets the interpreter's real path. */
int profile_add_python(struct host_set *set, const char *interpreter, char **ret_real, struct nsb_error *e);

/* The same, without the closure cache (neither read nor written, so nothing
 * is created under ~/.cache): for `nsbox doctor`, which changes nothing. */
int profile_add_python_uncached(struct host_set *set, const char *interpreter, char **ret_real, struct nsb_error *e);

/* Is @path a script ("#!")? 1, and in @ret the interpreter of its #! line when
 * that is an absolute python path (else ""); 0: not a script (or unreadable);
 * -ENOMEM. profile_add_python refuses a script: it would be exec'd with
 * python's arguments. */
int profile_script_python(const char *path, char *ret, size_t size);

/* Add @path (a file or a directory, mounted whole) and every symlink on
 * the way to it. */
int profile_add_path(struct host_set *set, const char *path, struct nsb_error *e);

/* python_extras.c: the pyvenv.cfg of the venv @interpreter lives in (if
 * any; @interpreter may be NULL), and each of @packages (package dirs or
 * module files). */
int profile_add_python_extras(struct host_set *set, const char *interpreter, char *const *packages,
                              size_t n_packages, struct nsb_error *e);

/* Find @name on @search_path (colon-separated) like execvp; returns a malloc'd
 * absolute path. */
int profile_which(const char *name, const char *search_path, char **ret, struct nsb_error *e);

/* Add every entry of @src to @set (a batch resolves the interpreter once and
 * each job starts from a copy of it). */
int host_set_add_all(struct host_set *set, const struct host_set *src, struct nsb_error *e);

void host_set_free(struct host_set *set);
/* Record @dir in set->hidden (once); 0 or -ENOMEM. */
int host_set_add_hidden(struct host_set *set, const char *dir);
