/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A send read once from a caller's memory (our own, through /proc/self/mem): sendto's and sendmsg's
 * decoding, the caps, and the allow-list of control messages with its fd and credential handling. */

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "gate-send.h"
#include "gate-syscall.h"
#include "macro.h"
#include "tap.h"

static int mem_fd = -1;

static void test_decode(void) {
        uint64_t a[6] = { 7, 0x1000, 12, MSG_DONTWAIT, 0x2000, 110 };
        GateCall c = {};

        ok(gate_call_decode(__NR_sendto, a, &c) == 0 && c.action == GATE_ACTION_SEND && c.dirfd == 7 &&
           c.data == 0x1000 && c.data_len == 12 && c.flags == MSG_DONTWAIT && c.path == 0x2000 && c.size == 110,
           "sendto decodes its socket, buffer, length, flags, address and address length");
        ok(gate_call_decode(__NR_sendmsg, (uint64_t[6]) { 3, 0x3000, MSG_NOSIGNAL }, &c) == 0 &&
           c.action == GATE_ACTION_SEND && c.dirfd == 3 && c.msg == 0x3000 && c.flags == MSG_NOSIGNAL,
           "sendmsg decodes its socket, msghdr and flags");
        ok(gate_call_decode(__NR_sendmmsg, (uint64_t[6]) { 4, 0x4000, 3, 0 }, &c) == 0 &&
           c.action == GATE_ACTION_SEND && c.msg == 0x4000 && c.vlen == 3, "sendmmsg decodes its array and count");
}

static void test_read(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/run/x.sock" };
        char one[] = "hello ", two[] = "world";
        struct iovec iov[2] = { { one, 6 }, { two, 5 } };
        struct msghdr h = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = iov, .msg_iovlen = 2 };
        GateSendMsg m = GATE_SEND_MSG_NULL;
        static char big[GATE_SEND_BYTES_MAX + 1];

        ok(gate_send_read_msg(mem_fd, (uint64_t) (uintptr_t) &h, false, &m) == 0 && m.len == 11 &&
           memcmp(m.data, "hello world", 11) == 0 && m.addr_len == sizeof(sa) &&
           streq(((struct sockaddr_un *) &m.addr)->sun_path, "/run/x.sock"),
           "sendmsg: the address and the iovecs' data are read into one buffer");
        gate_send_msg_done(&m);
        m = (GateSendMsg) GATE_SEND_MSG_NULL;
        h.msg_name = NULL;
        ok(gate_send_read_msg(mem_fd, (uint64_t) (uintptr_t) &h, false, &m) == 0 && m.addr_len == 0,
           "  ... no msg_name is no address, whatever msg_namelen says");
        gate_send_msg_done(&m);
        m = (GateSendMsg) GATE_SEND_MSG_NULL;
        h.msg_iovlen = GATE_SEND_IOV_MAX + 1;
        ok(gate_send_read_msg(mem_fd, (uint64_t) (uintptr_t) &h, false, &m) == -EMSGSIZE,
           "more iovecs than the kernel's UIO_MAXIOV: EMSGSIZE");
        gate_send_msg_done(&m);
        m = (GateSendMsg) GATE_SEND_MSG_NULL;
        ok(gate_send_read_to(mem_fd, (uint64_t) (uintptr_t) big, sizeof(big), 0, 0, false, &m) == -EMSGSIZE,
           "a datagram above GATE_SEND_BYTES_MAX is refused with EMSGSIZE");
        gate_send_msg_done(&m);
        m = (GateSendMsg) GATE_SEND_MSG_NULL;
        ok(gate_send_read_to(mem_fd, (uint64_t) (uintptr_t) big, sizeof(big), 0, 0, true, &m) == 0 &&
           m.len == GATE_SEND_BYTES_MAX && m.cut, "  ... on a stream the first GATE_SEND_BYTES_MAX bytes are sent");
        gate_send_msg_done(&m);
        m = (GateSendMsg) GATE_SEND_MSG_NULL;
        ok(gate_send_read_to(mem_fd, (uint64_t) (uintptr_t) one, 6, (uint64_t) (uintptr_t) &sa, 129, false, &m) == -EINVAL,
           "sendto: an address longer than a sockaddr_storage is EINVAL, as the kernel says");
        gate_send_msg_done(&m);
        m = (GateSendMsg) GATE_SEND_MSG_NULL;
        ok(gate_send_read_to(mem_fd, (uint64_t) (uintptr_t) one, 6, 8, sizeof(sa), false, &m) == -EFAULT,
           "  ... an address that is not mapped is EFAULT");
        gate_send_msg_done(&m);
}

/* The gate's reading of a sendmsg says what the kernel's own says of the same msghdr: each case sent for
 * real on a datagram socketpair (the kernel's answer) and read as the supervisor reads it. */
static void parity(const char *what, struct msghdr *h) {
        GateSendMsg m = GATE_SEND_MSG_NULL;
        int sv[2], kernel, gate;

        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0) {
                ok(false, "%s: socketpair: %m", what);
                return;
        }
        kernel = sendmsg(sv[0], h, MSG_DONTWAIT) < 0 ? -errno : 0;
        gate = gate_send_read_msg(mem_fd, (uint64_t) (uintptr_t) h, false, &m);
        gate_send_msg_done(&m);
        close(sv[0]);
        close(sv[1]);
        ok(gate == kernel, "%s: %s, as the kernel says", what, kernel == 0 ? "read" : strerrorname_np(-kernel));
        if (gate != kernel)
                printf("#   the kernel says %i, the gate %i\n", kernel, gate);
}

static void test_parity(void) {
        static char buf[16] = "data";
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct iovec huge[3] = { { buf, SSIZE_MAX }, { buf, SSIZE_MAX }, { buf, SSIZE_MAX } };
        struct iovec negative = { buf, (size_t) SSIZE_MAX + 1 }, empty = { NULL, 0 }, one = { buf, 4 };
        struct iovec wraps = { (void *) (UINTPTR_MAX - 8), 16 };

        parity("iov_len summing past SIZE_MAX",
               &(struct msghdr) { .msg_iov = huge, .msg_iovlen = 3 });
        parity("an iov_len negative as a ssize_t",
               &(struct msghdr) { .msg_iov = &negative, .msg_iovlen = 1 });
        parity("an iovec whose range wraps the address space",
               &(struct msghdr) { .msg_iov = &wraps, .msg_iovlen = 1 });
        parity("iov_base NULL with iov_len 0",
               &(struct msghdr) { .msg_iov = &empty, .msg_iovlen = 1 });
        parity("msg_name given with msg_namelen 0",
               &(struct msghdr) { .msg_name = &sa, .msg_namelen = 0, .msg_iov = &one, .msg_iovlen = 1 });
        parity("msg_namelen negative as an int",
               &(struct msghdr) { .msg_name = &sa, .msg_namelen = 0x80000000U, .msg_iov = &one, .msg_iovlen = 1 });
        parity("msg_name unmapped",
               &(struct msghdr) { .msg_name = (void *) 8, .msg_namelen = sizeof(sa), .msg_iov = &one, .msg_iovlen = 1 });
        parity("msg_iov unmapped",
               &(struct msghdr) { .msg_iov = (void *) 8, .msg_iovlen = 1 });
        parity("iov_base unmapped",
               &(struct msghdr) { .msg_iov = &(struct iovec) { (void *) 8, 4 }, .msg_iovlen = 1 });
        parity("msg_iovlen above UIO_MAXIOV",
               &(struct msghdr) { .msg_iov = &one, .msg_iovlen = GATE_SEND_IOV_MAX + 1 });
        parity("msg_control unmapped",
               &(struct msghdr) { .msg_iov = &one, .msg_iovlen = 1, .msg_control = (void *) 8, .msg_controllen = 16 });
        parity("msg_controllen above INT_MAX",
               &(struct msghdr) { .msg_iov = &one, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = (size_t) INT_MAX + 1 });
}

static int take_count;

static int take(void *userdata, int fd) {
        take_count++;
        return fd == 99 ? -EBADF : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* A message with one control message of level/type and data, read as the supervisor reads it. */
static int control(int level, int type, const void *data, size_t size, GateSendMsg *m) {
        union { struct cmsghdr h; char buf[CMSG_SPACE(64)]; } c = {};
        struct msghdr h = { .msg_control = c.buf, .msg_controllen = CMSG_SPACE(size) };

        c.h = (struct cmsghdr) { .cmsg_len = CMSG_LEN(size), .cmsg_level = level, .cmsg_type = type };
        memcpy(CMSG_DATA(&c.h), data, size);
        *m = (GateSendMsg) GATE_SEND_MSG_NULL;
        return gate_send_read_msg(mem_fd, (uint64_t) (uintptr_t) &h, false, m);
}

static void test_control(void) {
        struct ucred own = { .pid = 42, .uid = 1000, .gid = 1000 }, root = { .pid = 42, .uid = 0, .gid = 0 };
        int fds[2] = { 0, 1 }, bad = 99, ttl = 9;
        GateSendMsg m;

        ok(control(SOL_SOCKET, SCM_RIGHTS, fds, sizeof(fds), &m) == 0 &&
           gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == 0 && take_count == 2 && m.n_fds == 2,
           "SCM_RIGHTS: each fd is taken from the caller");
        {
                int sent[2];

                memcpy(sent, CMSG_DATA((struct cmsghdr *) m.control), sizeof(sent));
                ok(sent[0] == m.fds[0] && sent[1] == m.fds[1], "  ... and the message carries the fds taken, not the caller's numbers");
        }
        gate_send_msg_done(&m);
        ok(control(SOL_SOCKET, SCM_RIGHTS, &bad, sizeof(bad), &m) == 0 &&
           gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == -EBADF, "  ... an fd the caller does not have is EBADF");
        gate_send_msg_done(&m);
        ok(control(SOL_SOCKET, SCM_CREDENTIALS, &own, sizeof(own), &m) == 0 &&
           gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == 0 &&
           ((struct ucred *) CMSG_DATA((struct cmsghdr *) m.control))->pid == 7,
           "SCM_CREDENTIALS with the caller's own ids pass, with the pid of the sender the receiver sees");
        gate_send_msg_done(&m);
        ok(control(SOL_SOCKET, SCM_CREDENTIALS, &root, sizeof(root), &m) == 0 &&
           gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == -EPERM, "  ... naming uid 0: EPERM");
        gate_send_msg_done(&m);
        own.pid = 43;
        ok(control(SOL_SOCKET, SCM_CREDENTIALS, &own, sizeof(own), &m) == 0 &&
           gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == -EPERM, "  ... naming another pid: EPERM");
        gate_send_msg_done(&m);
        ok(control(SOL_IP, IP_TTL, &ttl, sizeof(ttl), &m) == 0 && gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == 0,
           "a per-packet IP option (IP_TTL) passes as given");
        gate_send_msg_done(&m);
        ok(control(SOL_SOCKET, SO_MARK, &ttl, sizeof(ttl), &m) == 0 &&
           gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == -EINVAL,
           "any other control message (SO_MARK) is refused with EINVAL: fail closed");
        gate_send_msg_done(&m);
        ok(control(SOL_SOCKET, SCM_RIGHTS, fds, sizeof(fds), &m) == 0, "a message to break");
        ((struct cmsghdr *) m.control)->cmsg_len = m.control_len + 1;
        ok(gate_send_control(&m, 42, 1000, 1000, 7, take, NULL) == -EINVAL, "  ... a control message longer than the buffer is EINVAL");
        gate_send_msg_done(&m);
}

int main(void) {
        mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
        if (mem_fd < 0)
                return 1;
        test_decode();
        test_read();
        test_parity();
        test_control();
        return done_testing();
}
