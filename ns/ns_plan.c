/* ns/ns_plan.c — pure: the uid/gid maps. */
#include "ns/ns.h"

#include <stdio.h>
#include <string.h>

void ns_idmap_plan(uid_t euid, gid_t egid, struct ns_idmap *ret)
{
        memset(ret, 0, sizeof *ret);
        if (euid == 0) {
                /* Never map host root: a process that is root on the host
                 * inside a user namespace keeps host-root ownership of every
                 * file it creates and is one kernel bug from host root. */
                ret->host_uid = NS_ROOT_MAPPED_UID;
                ret->host_gid = NS_ROOT_MAPPED_GID;
                ret->idmap_user_sources = true;
        } else {
                ret->host_uid = euid;
                ret->host_gid = egid;
        }
        snprintf(ret->uid_map, sizeof ret->uid_map, "%u %u 1\n", NS_SANDBOX_UID, (unsigned) ret->host_uid);
        snprintf(ret->gid_map, sizeof ret->gid_map, "%u %u 1\n", NS_SANDBOX_GID, (unsigned) ret->host_gid);
}
