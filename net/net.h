/* net/net.h — the sandbox's network namespace: bring up loopback.
 *
 * Owns: the interface state inside the sandbox's own (new, empty) network
 * namespace. The namespace itself is created by ns/ at clone time; without
 * --network loopback nothing here runs and the namespace keeps `lo` down, so
 * there is no network at all.
 *
 * Ordering rules: runs in the sandbox init, inside its user namespace, while
 * it still holds CAP_NET_ADMIN over the network namespace (that is, before
 * caps_drop_all()), and before the seccomp filter, which denies the
 * AF_NETLINK socket this needs.
 *
 * Records PROT_NET "loopback" only after reading `lo` back and finding it up.
 */
#pragma once

#include "util/error.h"
#include "util/ledger.h"

int net_loopback_up(struct nsb_ledger *ledger, struct nsb_error *e);
