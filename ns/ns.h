/* ns/ns.h — user-namespace identities.
 *
 * Owns: who the sandboxed program is, inside and on the host. Inside it is
 * always NS_SANDBOX_UID/GID (a plain user, not root). On the host:
 *   - an unprivileged caller's program runs as the caller (the only id an
 *     unprivileged user may map; setgroups is denied first, as the kernel
 *     requires for that — user_namespaces(7));
 *   - a root caller's program runs as NS_ROOT_MAPPED_UID, an id nobody else
 *     uses, never as host root. Its workspace is then bound through an
 *     idmapped mount that shows the workspace owner's files as the sandbox
 *     user's, so what the program writes belongs to the workspace's owner.
 * ns_idmap_plan() is pure; the apply functions write /proc files or create the
 * helper user namespace that carries an idmapped mount's mapping.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "util/error.h"

#define NS_SANDBOX_UID 1000u
#define NS_SANDBOX_GID 1000u
#define NS_ROOT_MAPPED_UID 0x70000000u   /* 1879048192: unused on any sane host */
#define NS_ROOT_MAPPED_GID 0x70000000u

struct ns_idmap {
        uid_t host_uid;      /* the program's uid on the host */
        gid_t host_gid;
        char uid_map[64];    /* "1000 <host_uid> 1" */
        char gid_map[64];
        bool idmap_user_sources;   /* root caller: bind user sources through an idmapped mount */
};

/* Pure: the maps for a caller with effective ids @euid/@egid. */
void ns_idmap_plan(uid_t euid, gid_t egid, struct ns_idmap *ret);

/* Write setgroups=deny, uid_map and gid_map of @pid (a child in a new user
 * namespace, waiting for this). */
int ns_idmap_apply(pid_t pid, const struct ns_idmap *map, struct nsb_error *e);
/* The same for the calling process, in the user namespace it just entered
 * (a process may map its own ids there, with setgroups denied). */
int ns_idmap_apply_self(const struct ns_idmap *map, struct nsb_error *e);

/* Open @path as a detached mount (open_tree), idmapped so that files owned by
 * the path's owner appear owned by @map->host_uid/gid. Root callers only. */
int ns_open_idmapped(const char *path, const struct ns_idmap *map, bool recursive, int *ret_fd, struct nsb_error *e);
