/* util/safedir.h — may a directory be trusted as the caller's, given who can
 * rename the entries on the way to it?
 *
 * Owns: the check that every directory from / down to a cache directory is
 * root's or the caller's and not group/other-writable unless sticky (/tmp).
 * Whoever can rename an entry of an ancestor can swap the directory for a
 * tree of their own after nsbox looked at it. Used by the image cache
 * (image/image_cache.c) and the closure cache (profile/closure_cache.c).
 *
 * Split: nsb_dir_verdict() is pure (one component's owner and mode);
 * nsb_dir_check_path() resolves the path and walks it from / by fd
 * (O_PATH|O_NOFOLLOW|O_DIRECTORY per component), so a symlink swapped in
 * during the walk fails it instead of redirecting it.
 */
#pragma once

#include <sys/types.h>

#include "util/error.h"

enum nsb_dir_verdict {
        NSB_DIR_OK = 0,
        NSB_DIR_FOREIGN,        /* owned by neither root nor the caller */
        NSB_DIR_WRITABLE,       /* group/other-writable and not sticky */
};

/* Pure: may a directory owned by @owner with @mode lie on the way to (or be)
 * a directory @caller trusts? */
enum nsb_dir_verdict nsb_dir_verdict(uid_t owner, mode_t mode, uid_t caller);
/* Pure: the reason, for a message ("" for NSB_DIR_OK). */
const char *nsb_dir_verdict_text(enum nsb_dir_verdict v);

/* Resolve @path (existing; symlinks followed once, by realpath), then check
 * every directory of the resolved path, / and itself included, against the
 * effective uid. @what names the directory in the message ("image cache").
 * On success: *@ret_real (if not NULL) the malloc'd resolved path, *@ret_fd
 * (if not NULL) an O_PATH fd of the very directory checked. On refusal:
 * -EPERM and @e says which directory and why. */
int nsb_dir_check_path(const char *what, const char *path, char **ret_real, int *ret_fd, struct nsb_error *e);
