/* supervisor/wire.c — one record with descriptors attached (SCM_RIGHTS).
 * Used for the v1 cgroup join fds, supervisor to init. */
#include "supervisor/wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

union wire_ctl {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
};

int wire_send_fds(int sock, const struct wire_msg *m, const int *fds, size_t n_fds)
{
        union wire_ctl ctl;
        struct iovec iov = { (void *) m, sizeof *m };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = CMSG_SPACE(sizeof(int) * n_fds) };
        struct cmsghdr *cm;
        ssize_t r;

        if (n_fds == 0 || n_fds > WIRE_MAX_FDS)
                return -EINVAL;
        memset(&ctl, 0, sizeof ctl);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
        while ((r = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        return r < 0 ? -errno : 0;
}

ssize_t wire_recv_fds(int sock, struct wire_msg *m, int *fds, size_t cap, size_t *ret_n_fds)
{
        union wire_ctl ctl;
        struct iovec iov = { m, sizeof *m };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof ctl.buf };
        ssize_t n;

        *ret_n_fds = 0;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                size_t k;
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                if (k > cap || *ret_n_fds) {
                        const int *in = (const int *) (const void *) CMSG_DATA(cm);
                        for (size_t i = 0; i < k; i++)
                                close(in[i]);   /* installed already: don't leak them */
                        return -EPROTO;
                }
                memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
                *ret_n_fds = k;
        }
        if (mh.msg_flags & MSG_CTRUNC)
                return -EPROTO;
        return n;
}
