/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A send (sendto with an address, sendmsg, sendmmsg) read once from the caller's memory, for the
 * supervisor to perform on the caller's socket: the address, the data of every iovec, the control
 * messages. Nothing here is read again: a sibling thread that changes the msghdr, the address, the data
 * or the fds afterwards changes nothing of what is sent.
 *
 * Every allocation is capped by the constants below; beyond them the caller gets what the kernel would
 * say (EMSGSIZE, ENOBUFS, EINVAL), or for a stream socket a short count (legal for a send on a stream). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define GATE_SEND_BYTES_MAX (1024U * 1024U)     /* data of one message read from the caller */
#define GATE_SEND_IOV_MAX 1024U                 /* the kernel's UIO_MAXIOV: more is EMSGSIZE */
#define GATE_SEND_CONTROL_MAX (64U * 1024U)     /* control bytes (the kernel's optmem_max is 20-128 KiB) */
#define GATE_SEND_FDS_MAX 253U                  /* the kernel's SCM_MAX_FD: more is EINVAL */
#define GATE_SENDMMSG_MAX 1024U                 /* the kernel sends at most UIO_MAXIOV messages a call */

typedef struct GateSendMsg {
        struct sockaddr_storage addr;
        size_t addr_len;                /* 0: no address */
        uint8_t *data;
        size_t len;                     /* the bytes read (at most GATE_SEND_BYTES_MAX) */
        bool cut;                       /* the caller gave more than len (a stream is answered short) */
        uint8_t *control;               /* the control messages, SCM_RIGHTS fds replaced by ours */
        size_t control_len;
        int fds[GATE_SEND_FDS_MAX];     /* ours, closed by gate_send_msg_done() */
        size_t n_fds;
} GateSendMsg;

#define GATE_SEND_MSG_NULL { .n_fds = 0 }

void gate_send_msg_done(GateSendMsg *m);

/* sendto(): data_len bytes at data, the address (addr_len bytes at addr) if any. A datagram beyond the
 * cap is -EMSGSIZE; on a stream (stream true) only the first GATE_SEND_BYTES_MAX bytes are read (cut). */
int gate_send_read_to(int mem_fd, uint64_t data, uint64_t data_len, uint64_t addr, uint64_t addr_len,
                      bool stream, GateSendMsg *ret);
/* sendmsg(): the struct msghdr at msg (the native layout), then what it points to. */
int gate_send_read_msg(int mem_fd, uint64_t msg, bool stream, GateSendMsg *ret);
/* The same from a struct msghdr already read (sendmmsg reads its array once). */
int gate_send_read_msghdr(int mem_fd, const struct msghdr *h, bool stream, GateSendMsg *ret);

/* Checks the control messages read (an allow-list; anything else is -EINVAL, fail closed):
 * SOL_SOCKET SCM_RIGHTS (its fds are taken by take(), see below) and SCM_CREDENTIALS, which must carry
 * the caller's own pid (tgid, as the supervisor sees it), uid and gid, else -EPERM as the kernel says to a
 * sender without privileges; its pid is then rewritten to pid_as, the sender the receiver sees (the
 * supervisor). And the per-packet options of IPv4, IPv6 and UDP, which only shape the packet.
 * Every SCM_RIGHTS fd is replaced by take(fd): a duplicate of the caller's fd, or a negative errno. */
int gate_send_control(GateSendMsg *m, pid_t tgid, uid_t uid, gid_t gid, pid_t pid_as,
                      int (*take)(void *userdata, int fd), void *userdata);
