/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "egress-handover.h"
#include "macro.h"

int egress_handover_send(int sock, int fd, const char *credential) {
        char msg[1 + EGRESS_HANDOVER_CREDENTIAL_MAX];
        size_t n = strlen(credential);
        struct iovec iov = { .iov_base = msg, .iov_len = 1 + n };
        union {
                struct cmsghdr header;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        ssize_t k;

        if (n == 0 || n > EGRESS_HANDOVER_CREDENTIAL_MAX)
                return -EINVAL;
        msg[0] = EGRESS_HANDOVER_MARKER;
        memcpy(msg + 1, credential, n);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        do
                k = sendmsg(sock, &mh, MSG_NOSIGNAL);
        while (k < 0 && errno == EINTR);
        explicit_bzero(msg, sizeof msg);
        if (k < 0)
                return -errno;
        return (size_t) k == 1 + n ? 0 : -EIO;
}

/* Closes every fd a message carried. */
static void close_passed_fds(struct msghdr *mh) {
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
                size_t n;
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < n; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        safe_close(fd);
                }
        }
}

int egress_handover_receive(int sock, int *ret_fd, char ret_credential[static EGRESS_HANDOVER_CREDENTIAL_MAX + 1]) {
        char first, msg[1 + EGRESS_HANDOVER_CREDENTIAL_MAX];
        struct iovec iov = { .iov_base = &first, .iov_len = 1 };
        union {
                struct cmsghdr header;
                char buf[CMSG_SPACE(4 * sizeof(int))];          /* room to see (and close) a few too many */
        } control = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct cmsghdr *cm;
        int fd = -EBADF, r;
        ssize_t k;

        /* A peek without room for fds installs none. */
        do
                k = recv(sock, &first, 1, MSG_PEEK | MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return errno == EAGAIN ? -EAGAIN : -errno;
        if (k == 0)
                return -ECONNRESET;
        if (first != EGRESS_HANDOVER_MARKER)
                return 0;

        /* The marker and the credential come in one message (one sendmsg() of the relay): read at most
         * that much, and nothing of what may follow. */
        iov = (struct iovec) { .iov_base = msg, .iov_len = sizeof msg };
        mh.msg_control = &control;
        mh.msg_controllen = sizeof control;
        do
                k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        cm = CMSG_FIRSTHDR(&mh);
        if (k < 2 || msg[k - 1] != '\n' || memchr(msg + 1, 0, (size_t) k - 1) || (mh.msg_flags & MSG_CTRUNC) || !cm ||
            CMSG_NXTHDR(&mh, cm) || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
            cm->cmsg_len != CMSG_LEN(sizeof(int))) {
                close_passed_fds(&mh);
                explicit_bzero(msg, sizeof msg);
                return -EBADMSG;
        }
        memcpy(ret_credential, msg + 1, (size_t) k - 1);
        ret_credential[k - 1] = 0;
        explicit_bzero(msg, sizeof msg);
        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        /* a connected TCP socket, nothing else (not a file, not a listener, not another unix socket) */
        r = sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 0, 0);
        if (r <= 0) {
                safe_close(fd);
                return -EPROTONOSUPPORT;
        }
        *ret_fd = fd;
        return 1;
}
