/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "gate-send.h"
#include "gate-syscall.h"
#include "macro.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

void gate_send_msg_done(GateSendMsg *m) {
        m->data = mfree(m->data);
        m->control = mfree(m->control);
        for (size_t i = 0; i < m->n_fds; i++)
                safe_close(m->fds[i]);
        m->n_fds = 0;
}

/* The address as the kernel copies it (move_addr_to_kernel()): more than a sockaddr_storage is EINVAL. */
static int read_addr(int mem_fd, uint64_t addr, uint64_t addr_len, GateSendMsg *m) {
        if (addr == 0 || addr_len == 0)
                return 0;
        if (addr_len > sizeof(m->addr))
                return -EINVAL;
        m->addr_len = (size_t) addr_len;
        return gate_mem_read(mem_fd, addr, &m->addr, m->addr_len);
}

/* The data of iov[0..n) into one buffer, read once: a datagram beyond the cap is EMSGSIZE, a stream is cut. */
static int read_iov(int mem_fd, const struct iovec *iov, size_t n, bool stream, GateSendMsg *m) {
        size_t total = 0, at = 0;
        int r;

        /* The kernel's import of the iovecs: a length that is negative as a ssize_t is EINVAL, a range no
         * process can have mapped fails access_ok(): EFAULT. Lengths whose sum wraps are such ranges. */
        for (size_t i = 0; i < n; i++) {
                if (iov[i].iov_len > (size_t) SSIZE_MAX)
                        return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (iov[i].iov_len > UINTPTR_MAX - (uintptr_t) iov[i].iov_base)
                        return -EFAULT;
                if (iov[i].iov_len > SIZE_MAX - total)
                        return -EFAULT;
                total += iov[i].iov_len;
        }
        if (total > GATE_SEND_BYTES_MAX) {
                if (!stream)
                        return -EMSGSIZE;
                m->cut = true;
                total = GATE_SEND_BYTES_MAX;
        }
        m->data = malloc(MAX(total, (size_t) 1));
        if (!m->data)
                return -ENOMEM;
        for (size_t i = 0; i < n && at < total; i++) {
                size_t k = MIN(iov[i].iov_len, total - at);

                if (k == 0)
                        continue;
                r = gate_mem_read(mem_fd, (uint64_t) (uintptr_t) iov[i].iov_base, m->data + at, k);
                if (r < 0)
                        return r;
                at += k;
        }
        m->len = total;
        return 0;
}

int gate_send_read_to(int mem_fd, uint64_t data, uint64_t data_len, uint64_t addr, uint64_t addr_len,
                      bool stream, GateSendMsg *ret) {
        struct iovec iov = { .iov_base = (void *) (uintptr_t) data, .iov_len = (size_t) data_len };
        int r;

        r = read_addr(mem_fd, addr, addr_len, ret);
        if (r < 0)
                return r;
        return read_iov(mem_fd, &iov, 1, stream, ret);
}

int gate_send_read_msg(int mem_fd, uint64_t msg, bool stream, GateSendMsg *ret) {
        struct msghdr h;
        int r;

        r = gate_mem_read(mem_fd, msg, &h, sizeof(h));
        if (r < 0)
                return r;
        return gate_send_read_msghdr(mem_fd, &h, stream, ret);
}

int gate_send_read_msghdr(int mem_fd, const struct msghdr *hdr, bool stream, GateSendMsg *ret) {
        _cleanup_free_ struct iovec *iov = NULL;
        struct msghdr h = *hdr;
        int r = 0;

        /* What the kernel's copy of the msghdr does (__copy_msghdr()). */
        if ((int) h.msg_namelen < 0)
                return -EINVAL;
        if (h.msg_name)
                r = read_addr(mem_fd, (uint64_t) (uintptr_t) h.msg_name,
                              MIN((uint64_t) h.msg_namelen, (uint64_t) sizeof(ret->addr)), ret);
        if (r < 0)
                return r;
        if (h.msg_iovlen > GATE_SEND_IOV_MAX)
                return -EMSGSIZE;
        if (h.msg_iovlen > 0) {
                iov = calloc(h.msg_iovlen, sizeof(struct iovec));
                if (!iov)
                        return -ENOMEM;
                r = gate_mem_read(mem_fd, (uint64_t) (uintptr_t) h.msg_iov, iov, h.msg_iovlen * sizeof(struct iovec));
                if (r < 0)
                        return r;
        }
        r = read_iov(mem_fd, iov, h.msg_iovlen, stream, ret);
        if (r < 0)
                return r;
        if (h.msg_controllen == 0)
                return 0;
        if (h.msg_controllen > INT_MAX || h.msg_controllen > GATE_SEND_CONTROL_MAX)
                return -ENOBUFS;
        ret->control = malloc(h.msg_controllen);
        if (!ret->control)
                return -ENOMEM;
        ret->control_len = h.msg_controllen;
        return gate_mem_read(mem_fd, (uint64_t) (uintptr_t) h.msg_control, ret->control, ret->control_len);
}

/* Options of one packet, which the kernel checks against the sender's own rights (the worker's, the
 * agent's, with no capability). */
static bool packet_option(int level, int type) {
        switch (level) {
        case SOL_IP:
                return type == IP_PKTINFO || type == IP_TTL || type == IP_TOS;
        case SOL_IPV6:
                return type == IPV6_PKTINFO || type == IPV6_HOPLIMIT || type == IPV6_TCLASS || type == IPV6_DONTFRAG;
        case SOL_UDP:
                return type == UDP_SEGMENT;
        default:
                return false;
        }
}

int gate_send_control(GateSendMsg *m, pid_t tgid, uid_t uid, gid_t gid, pid_t pid_as,
                      int (*take)(void *userdata, int fd), void *userdata) {
        size_t off = 0, len = m->control_len;

        /* The kernel's walk (__scm_send()): a header that does not fit is EINVAL, a tail shorter than a
         * header ends the walk. */
        while (len >= sizeof(struct cmsghdr) && off <= len - sizeof(struct cmsghdr)) {
                struct cmsghdr *c = (struct cmsghdr *) (m->control + off);

                if (c->cmsg_len < sizeof(struct cmsghdr) || c->cmsg_len > len - off)
                        return -EINVAL;
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int *fds = (int *) CMSG_DATA(c);

                        if (n > GATE_SEND_FDS_MAX - m->n_fds)
                                return -EINVAL;
                        for (size_t i = 0; i < n; i++) {
                                int fd, theirs;

                                memcpy(&theirs, fds + i, sizeof(int));
                                fd = take(userdata, theirs);
                                if (fd < 0)
                                        return fd;
                                m->fds[m->n_fds++] = fd;
                                memcpy(fds + i, &fd, sizeof(int));
                        }
                } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                        struct ucred u;

                        if (c->cmsg_len != CMSG_LEN(sizeof(struct ucred)))
                                return -EINVAL;
                        memcpy(&u, CMSG_DATA(c), sizeof(u));
                        if (u.pid != tgid || u.uid != uid || u.gid != gid)
                                return -EPERM;
                        u.pid = pid_as;
                        memcpy(CMSG_DATA(c), &u, sizeof(u));
                } else if (!packet_option(c->cmsg_level, c->cmsg_type))
                        return -EINVAL;
                if (CMSG_ALIGN(c->cmsg_len) > len - off)
                        break;
                off += CMSG_ALIGN(c->cmsg_len);
        }
        return 0;
}
