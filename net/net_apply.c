/* net/net_apply.c — see net.h. Syscalls: a NETLINK_ROUTE socket through libnl-route. */
#include "net/net.h"

#include <errno.h>
#include <net/if.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include "util/cleanup.h"

DEFINE_AUTO_CLEANUP(struct nl_sock, nl_socket_free)
DEFINE_AUTO_CLEANUP(struct rtnl_link, rtnl_link_put)

/* libnl returns its own negative NLE_* codes; the error object carries an
 * errno. Map the ones that mean something to a caller, EIO for the rest
 * (the message keeps libnl's own wording). */
static int nl_errno(int nlerr)
{
        switch (nlerr < 0 ? -nlerr : nlerr) {
        case NLE_NOMEM:
                return ENOMEM;
        case NLE_PERM:
                return EPERM;
        case NLE_NOACCESS:
                return EACCES;
        case NLE_OBJ_NOTFOUND:
        case NLE_NODEV:
                return ENODEV;
        case NLE_INVAL:
                return EINVAL;
        case NLE_OPNOTSUPP:
                return EOPNOTSUPP;
        case NLE_AF_NOSUPPORT:
                return EAFNOSUPPORT;
        case NLE_BUSY:
                return EBUSY;
        case NLE_INTR:
                return EINTR;
        case NLE_AGAIN:
                return EAGAIN;
        default:
                return EIO;
        }
}

int net_loopback_up(struct nsb_ledger *ledger, struct nsb_error *e)
{
        AUTO(nl_socket_free) struct nl_sock *sk = NULL;
        AUTO(rtnl_link_put) struct rtnl_link *lo = NULL;
        AUTO(rtnl_link_put) struct rtnl_link *change = NULL;
        AUTO(rtnl_link_put) struct rtnl_link *after = NULL;
        int r;

        sk = nl_socket_alloc();
        if (!sk)
                return nsb_fail(e, NSB_STAGE_NET, ENOMEM, "nl_socket_alloc");
        r = nl_connect(sk, NETLINK_ROUTE);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_NET, nl_errno(r), "connect NETLINK_ROUTE: %s", nl_geterror(r));

        r = rtnl_link_get_kernel(sk, 0, "lo", &lo);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_NET, nl_errno(r), "look up 'lo': %s", nl_geterror(r));

        change = rtnl_link_alloc();
        if (!change)
                return nsb_fail(e, NSB_STAGE_NET, ENOMEM, "rtnl_link_alloc");
        /* IFF_UP on lo needs CAP_NET_ADMIN over this network namespace, which
         * the sandbox init holds through its user namespace (and nothing on
         * the host). A new namespace's lo already has 127.0.0.1/8 and ::1;
         * setting it up is all "loopback" means. */
        rtnl_link_set_flags(change, IFF_UP);
        r = rtnl_link_change(sk, lo, change, 0);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_NET, nl_errno(r), "set 'lo' up: %s", nl_geterror(r));

        /* Claim only what the kernel reports back. */
        r = rtnl_link_get_kernel(sk, 0, "lo", &after);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_NET, nl_errno(r), "read back 'lo': %s", nl_geterror(r));
        if (!(rtnl_link_get_flags(after) & IFF_UP))
                return nsb_fail(e, NSB_STAGE_NET, EIO, "'lo' is still down after setting it up");
        ledger_set(ledger, PROT_NET, "loopback");
        return 0;
}
