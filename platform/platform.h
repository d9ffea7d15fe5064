/* platform/platform.h — what differs between the platforms nsbox builds for.
 *
 * meson picks one implementation (option `platform`, docs/platforms.md):
 *   - platform/linux/: the Linux build — namespaces, cgroups, seccomp,
 *     Landlock (supervisor/sandbox.c runs the sandbox, doctor/doctor_probe.c
 *     answers doctor);
 *   - platform/posix/: any POSIX system — reduced isolation only (fork/exec,
 *     a session and process group, rlimits, a private directory); its own
 *     sbx_run (sandbox_posix.c) and doctor_main (doctor_posix.c).
 * Everything else is portable code that reaches the host only through this
 * header, sandbox.h and doctor.h, so it builds with -D_POSIX_C_SOURCE=200809L
 * and no _GNU_SOURCE on either platform.
 *
 * Owns: the host calls whose spelling differs by platform (the cancel fd
 * and signal reset, the CPU count, the parent-death signal, close-on-exec
 * pipes, an anonymous file, the no-symlink open, the interpreter's host
 * files) and the platform's name and reduced-isolation banner.
 * Invariants: a portable file reaches Linux-only interfaces through here
 * alone (tests/layers.py and the posix build check it); each function has
 * one contract that both implementations keep, documented below.
 *
 * No hidden state, except on posix the self-pipe a signal handler must
 * reach (plat_cancel_fd).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "util/error.h"

/* This build's platform: "linux" or "posix". */
extern const char plat_name[];

/* What reduced isolation is here, for the warning nsbox prints on stderr
 * before every reduced run (after "--isolation reduced: "). */
extern const char plat_reduced_banner[];

/* SIGINT, SIGTERM and SIGHUP become a file descriptor that is readable once
 * one of them has arrived (level-triggered: nothing reads it), in this
 * process and in every child it forks; a closed stdout does not kill
 * (SIGPIPE ignored). -1 on failure. Linux: a signalfd, the signals blocked;
 * posix: a self-pipe written by a handler. Children that exec must restore
 * the default dispositions and an empty mask (plat_signals_reset). */
int plat_cancel_fd(void);

/* In a forked child about to run someone else's code: every signal back to
 * its default, none blocked. */
void plat_signals_reset(void);

/* CPUs this process may run on (at least 1). */
unsigned plat_cpu_count(void);

/* In a forked worker: be sent SIGTERM when @parent dies. Linux: the
 * parent-death signal; posix: nothing can ask for that, so 0 and the worker
 * ends with its job (bounded by the job's wall time). -1 when @parent is
 * already gone. */
int plat_die_with_parent(pid_t parent);

/* pipe(2) with both ends close-on-exec. 0 or -1 (errno). */
int plat_pipe_cloexec(int p[2]);

/* An anonymous, unlinked, close-on-exec read/write file: Linux memfd_create,
 * posix an unlinked mkstemp file under $TMPDIR. -1 (errno) on failure. */
int plat_anon_fd(const char *name);

/* open(2) that follows no symlink in any component of @path. Linux: openat2
 * RESOLVE_NO_SYMLINKS (O_NOFOLLOW on kernels without it); posix: each
 * directory opened with O_NOFOLLOW from the root or the working directory. */
int plat_open_no_symlinks(const char *path, int flags, mode_t mode);

/* What a python run needs from the host, resolved once for many runs
 * (batch): Linux the interpreter's closure (profile_add_python); posix
 * nothing (the program sees the host's files; @set stays empty). */
int plat_python_host(struct host_set *set, const char *interpreter, struct nsb_error *e);
