/* landlock/landlock_internal.h — the pure part of the Landlock module, and
 * the UAPI pieces newer than the build host's <linux/landlock.h>.
 *
 * Debian 12's linux-libc-dev (6.1) stops at ABI 2 (REFER). Everything later
 * is defined here under our own names, with the kernel's values; the kernel
 * accepts our larger ruleset attribute on older ABIs as long as the fields it
 * does not know are zero, and the plan keeps them zero there.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "landlock/landlock.h"

/* Filesystem rights (ABI 1: bits 0-12). */
#define LL_FS_EXECUTE           (1ull << 0)
#define LL_FS_WRITE_FILE        (1ull << 1)
#define LL_FS_READ_FILE         (1ull << 2)
#define LL_FS_READ_DIR          (1ull << 3)
#define LL_FS_REMOVE_DIR        (1ull << 4)
#define LL_FS_REMOVE_FILE       (1ull << 5)
#define LL_FS_MAKE_CHAR         (1ull << 6)
#define LL_FS_MAKE_DIR          (1ull << 7)
#define LL_FS_MAKE_REG          (1ull << 8)
#define LL_FS_MAKE_SOCK         (1ull << 9)
#define LL_FS_MAKE_FIFO         (1ull << 10)
#define LL_FS_MAKE_BLOCK        (1ull << 11)
#define LL_FS_MAKE_SYM          (1ull << 12)
#define LL_FS_REFER             (1ull << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE          (1ull << 14)    /* ABI 3 */
#define LL_FS_IOCTL_DEV         (1ull << 15)    /* ABI 5 */

/* Rights that make sense on a file (not a directory); Landlock rejects a
 * rule that grants any other right on a non-directory with EINVAL. */
#define LL_FS_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_FS_READ_ONLY   (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)

/* Network rights (ABI 4). */
#define LL_NET_BIND_TCP         (1ull << 0)
#define LL_NET_CONNECT_TCP      (1ull << 1)

/* Scopes (ABI 6). */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET   (1ull << 0)
#define LL_SCOPE_SIGNAL                 (1ull << 1)

/* The newest ABI this module knows what to do with; a newer kernel is
 * treated as this one (rights we do not know stay unhandled, i.e. allowed). */
#define LL_ABI_KNOWN 7

#define LL_RULE_PATH_BENEATH 1

/* struct landlock_ruleset_attr as of ABI 6. */
struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

/* struct landlock_path_beneath_attr (packed in the UAPI). */
struct ll_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

/* What the ruleset handles for this ABI and spec. */
struct ll_plan {
        int abi;                        /* clamped to LL_ABI_KNOWN */
        struct ll_ruleset_attr attr;
};

/* Pure: every filesystem right ABI @abi knows. */
uint64_t ll_fs_rights(int abi);

/* Pure: validate @spec and compute the handled rights for @abi (>= 1). */
int ll_plan_build(const struct ll_spec *spec, int abi, struct ll_plan *ret, struct nsb_error *e);

/* Pure: the rights one rule grants, given what its path turned out to be. */
uint64_t ll_rule_access(const struct ll_plan *plan, bool writable, bool is_dir);
