/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "io-util.h"
#include "macro.h"
#include "time-util.h"

/* read() (offset < 0) or pread() until nbytes or EOF. */
static ssize_t read_all(int fd, void *buf, size_t nbytes, off_t offset) {
        size_t done = 0;

        while (done < nbytes) {
                ssize_t k = offset < 0 ? read(fd, (char *) buf + done, nbytes - done) :
                        pread(fd, (char *) buf + done, nbytes - done, offset + (off_t) done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        return (ssize_t) done;
}

ssize_t loop_read(int fd, void *buf, size_t nbytes) {
        return read_all(fd, buf, nbytes, -1);
}

int read_text_fd(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        ssize_t n;

        if (max >= SIZE_MAX - 1)
                return -EINVAL;
        buf = malloc(max + 1);          /* one more than max shows there is more */
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, max + 1);
        if (n < 0)
                return (int) n;
        if ((size_t) n > max)
                return -E2BIG;
        buf[n] = 0;
        if (strlen(buf) != (size_t) n)
                return -EINVAL;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = (size_t) n;
        return 0;
}

int loop_write(int fd, const void *buf, size_t nbytes) {
        const char *p = buf;

        while (nbytes > 0) {
                ssize_t k = write(fd, p, nbytes);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                nbytes -= (size_t) k;
        }
        return 0;
}

ssize_t loop_pread(int fd, void *buf, size_t nbytes, off_t offset) {
        if (offset < 0)
                return -EINVAL;
        return read_all(fd, buf, nbytes, offset);
}

ssize_t read_snapshot(int fd, char *buf, size_t size) {
        ssize_t k;

        if (size == 0)
                return -EINVAL;
        do
                k = pread(fd, buf, size - 1, 0);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        buf[k] = 0;
        return k;
}

int fd_wait_until(int fd, short events, uint64_t deadline_usec) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int timeout = -1, k;

                if (deadline_usec != UINT64_MAX) {
                        uint64_t now = clock_usec(CLOCK_MONOTONIC);
                        if (now >= deadline_usec)
                                return -ETIMEDOUT;
                        timeout = (int) MIN((deadline_usec - now + 999) / 1000, (uint64_t) INT32_MAX);
                }
                k = poll(&p, 1, timeout);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        continue;       /* the deadline decides, above */
                return p.revents;
        }
}

int read_full_file_at(int dir_fd, const char *path, size_t max_size, bool nofollow,
                      char **ret_contents, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        if ((size_t) st.st_size > max_size)
                return -EFBIG;

        /* Ask for one byte more than fstat() promised, so a file that grew since is noticed and capped;
         * at least a page, since procfs and sysfs files promise 0 and would be read a byte at a time. */
        size_t cap = MAX((size_t) st.st_size + 1, (size_t) 4096), used = 0;
        if (max_size < SIZE_MAX)
                cap = MIN(cap, max_size + 1);
        buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                n = loop_read(fd, buf + used, cap - used);
                if (n < 0)
                        return (int) n;
                used += (size_t) n;
                if (used > max_size)
                        return -EFBIG;
                if (used < cap)
                        break;
                size_t ncap = MIN(cap * 2, max_size + 1);
                char *nb = realloc(buf, ncap + 1);
                if (!nb)
                        return -ENOMEM;
                buf = nb;
                cap = ncap;
        }
        buf[used] = 0;
        if (ret_size)
                *ret_size = used;
        *ret_contents = TAKE_PTR(buf);
        return 0;
}

int write_file_atomic(const char *path, const void *contents, size_t size, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&tmp, "%s.#tmp.%d", path, (int) getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, contents, size);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

/* mkdir -p, the last component owned by uid:gid with mode. Parents are created root-owned 0755. */
int mkdir_owned(const char *path, mode_t mode, uid_t uid, gid_t gid) {
        _cleanup_free_ char *p = strdup(path);
        struct stat st;

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, mode) < 0) {
                if (errno != EEXIST)
                        return -errno;
                if (lstat(p, &st) < 0)
                        return -errno;
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                return 0;
        }
        if (geteuid() == 0 && chown(p, uid, gid) < 0)
                return -errno;
        return 0;
}

typedef struct PumpDirection {
        int from, to;
        int pipe[2];                    /* splice(): from -> pipe -> to, no copy through user space */
        size_t in_pipe;
        size_t pipe_size;               /* what one splice() takes in */
        bool grow_tried;
        bool grown;                     /* counted in pump_pipes_grown */
        char *buf;                      /* the fallback where splice() is refused */
        size_t start, end;              /* buf[start..end) read, not yet written */
        bool eof;                       /* read side ended; to's write side shut down once drained */
        bool shut;
        uint64_t moved;
} PumpDirection;

/* Pipes grown past their default size, in this process: a pipe's pages count against its user's
 * pipe-user-pages-soft (64 MiB by default), past which the kernel gives that user's new pipes two pages
 * (every tunnel would crawl) and refuses to grow any (F_SETPIPE_SZ fails with EPERM). */
static atomic_uint pump_pipes_grown;

/* A direction that moved IO_PUMP_GROW_AFTER is a bulk transfer: its pipe grows to IO_PUMP_PIPE_SIZE_MAX,
 * so that one splice() each way moves what the socket holds (often a megabyte) instead of at most 64 KiB
 * (16 pages, fewer bytes when the socket's segments fill the pipe's slots partly): fewer system calls
 * and wake-ups, and larger segments for the next hop. Best effort: at most
 * IO_PUMP_PIPES_GROWN_MAX at once; where the kernel refuses, the default stays. */
static void pump_pipe_grow(PumpDirection *d) {
        int k;

        if (d->grow_tried)
                return;
        d->grow_tried = true;
        if (atomic_fetch_add(&pump_pipes_grown, 1) >= IO_PUMP_PIPES_GROWN_MAX) {
                atomic_fetch_sub(&pump_pipes_grown, 1);
                return;
        }
        k = fcntl(d->pipe[1], F_SETPIPE_SZ, (int) IO_PUMP_PIPE_SIZE_MAX);
        if (k < 0 || (size_t) k <= d->pipe_size) {
                atomic_fetch_sub(&pump_pipes_grown, 1);
                return;
        }
        d->pipe_size = (size_t) k;
        d->grown = true;
}

static void pump_pipe_release(PumpDirection *d) {
        if (d->grown)
                atomic_fetch_sub(&pump_pipes_grown, 1);
        d->grown = false;
}

unsigned fd_pump_pipes_grown(void) {
        return atomic_load(&pump_pipes_grown);
}

static size_t pump_pending(const PumpDirection *d) {
        return d->in_pipe + (d->end - d->start);
}

/* What one read (or splice) k from the source means: an error other than EINTR/EAGAIN is returned; EINTR,
 * EAGAIN or fewer bytes than short_below find the source dry for now (*readable = false); 0 is its end. */
static int pump_took(PumpDirection *d, ssize_t k, size_t short_below, bool *readable) {
        if (k < 0) {
                if (errno != EINTR && errno != EAGAIN)
                        return -errno;
                *readable = false;
        } else if (k == 0)
                d->eof = true;
        else if ((size_t) k < short_below)
                *readable = false;
        return 0;
}

/* Reads from the source into the pipe (splice) or, where splice() is refused, into the buffer. */
static int pump_fill(PumpDirection *d, bool *readable) {
        ssize_t k;
        int r;

        if (d->pipe[0] >= 0) {
                k = splice(d->from, NULL, d->pipe[1], NULL, d->pipe_size, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                r = pump_took(d, k, IO_PUMP_DRAINED_BELOW, readable);
                if (r >= 0 && k > 0)
                        d->in_pipe = (size_t) k;
        } else {
                k = read(d->from, d->buf, IO_PUMP_COPY_BUFFER_SIZE);
                r = pump_took(d, k, IO_PUMP_COPY_BUFFER_SIZE, readable);
                if (r >= 0 && k > 0) {
                        d->start = 0;
                        d->end = (size_t) k;
                }
        }
        return r;
}

/* Writes what is pending to the destination without blocking: 1 when all of it went, 0 when only part or
 * nothing could go now (EINTR and EAGAIN included). */
static int pump_drain(PumpDirection *d) {
        ssize_t k;

        if (d->pipe[0] >= 0) {
                if (d->moved >= IO_PUMP_GROW_AFTER)
                        pump_pipe_grow(d);
                k = splice(d->pipe[0], NULL, d->to, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (k >= 0)
                        d->in_pipe -= (size_t) k;
        } else {
                k = send(d->to, d->buf + d->start, d->end - d->start, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k >= 0)
                        d->start += (size_t) k;
        }
        if (k < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        d->moved += (uint64_t) k;
        return pump_pending(d) == 0;
}

/* Each step moves as much as the sockets take without blocking: read (or splice in), write out at once
 * without a poll() in between, again, up to IO_PUMP_ROUNDS_MAX rounds before the other direction gets
 * its turn. A poll() per buffer each way would cost more system calls than the bytes are worth. A read
 * that came back short found the socket dry: reading again at once would only be told EAGAIN (a system
 * call per message of a request-response exchange, a fourth of a tunnel's calls), so poll() waits for
 * more. A splice() into a pipe also stops short where the socket's segments take up the pipe's slots
 * (a page each): under IO_PUMP_DRAINED_BELOW only if they were smaller than 1 KiB. */
static int pump_step(PumpDirection *d, short revents_from) {
        bool readable = revents_from & (POLLIN | POLLHUP | POLLERR);
        int r;

        for (unsigned i = 0; i < IO_PUMP_ROUNDS_MAX; i++) {
                if (pump_pending(d) == 0 && !d->eof && readable) {
                        r = pump_fill(d, &readable);
                        if (r < 0)
                                return r;
                }
                if (pump_pending(d) == 0)
                        break;
                r = pump_drain(d);
                if (r < 0)
                        return r;
                if (r == 0 || !readable)
                        break;
        }
        if (d->eof && pump_pending(d) == 0 && !d->shut) {
                (void) shutdown(d->to, SHUT_WR);
                d->shut = true;
        }
        return 0;
}

static void pump_direction_drop(PumpDirection *d) {
        d->eof = d->shut = true;
        d->start = d->end = 0;
        d->in_pipe = 0;
}

int fd_pump(int a, int b, int idle_timeout_ms, int half_closed_timeout_ms, FdPumpStats *ret_stats) {
        _cleanup_free_ char *buf = NULL;
        PumpDirection ab = { .from = a, .to = b, .pipe = { -EBADF, -EBADF } },
                      ba = { .from = b, .to = a, .pipe = { -EBADF, -EBADF } };
        int r = 0;

        /* splice() where both ends allow it (sockets do); a plain copy otherwise. Non-blocking from here
         * on: poll() decides when to move. */
        (void) fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
        (void) fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
        if (pipe2(ab.pipe, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(ba.pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                ab.pipe[0] = safe_close(ab.pipe[0]);
                ab.pipe[1] = safe_close(ab.pipe[1]);
                buf = malloc(2 * IO_PUMP_COPY_BUFFER_SIZE);
                if (!buf)
                        return -ENOMEM;
                ab.buf = buf;
                ba.buf = buf + IO_PUMP_COPY_BUFFER_SIZE;
        } else
                /* The default size to begin with; a bulk direction's pipe grows (pump_pipe_grow()). */
                ab.pipe_size = ba.pipe_size = IO_PUMP_BUFFER_SIZE;

        while (!(ab.shut && ba.shut)) {
                struct pollfd p[2] = {
                        { .fd = a, .events = (short) ((!ab.eof && pump_pending(&ab) == 0 ? POLLIN : 0) | (pump_pending(&ba) > 0 ? POLLOUT : 0)) },
                        { .fd = b, .events = (short) ((!ba.eof && pump_pending(&ba) == 0 ? POLLIN : 0) | (pump_pending(&ab) > 0 ? POLLOUT : 0)) },
                };
                bool half_closed = (ab.eof || ba.eof) && half_closed_timeout_ms >= 0;
                int n = poll(p, 2, half_closed ? half_closed_timeout_ms : idle_timeout_ms);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (n == 0) {
                        r = half_closed ? 0 : -ETIMEDOUT;
                        break;
                }
                r = pump_step(&ab, p[0].revents);
                if (r >= 0)
                        r = pump_step(&ba, p[1].revents);
                /* splice() refused: EINVAL for fds that cannot splice, ENOSYS or EPERM where a seccomp
                 * profile takes it away (loop's workload profile does, for the relay in the container). */
                if ((r == -EINVAL || r == -ENOSYS || r == -EPERM) && ab.pipe[0] >= 0 && ab.moved == 0 && ba.moved == 0 &&
                    ab.in_pipe == 0 && ba.in_pipe == 0 && !buf) {
                        /* copy instead, nothing was moved yet */
                        buf = malloc(2 * IO_PUMP_COPY_BUFFER_SIZE);
                        if (!buf) {
                                r = -ENOMEM;
                                break;
                        }
                        ab.buf = buf;
                        ba.buf = buf + IO_PUMP_COPY_BUFFER_SIZE;
                        ab.pipe[0] = safe_close(ab.pipe[0]);
                        ab.pipe[1] = safe_close(ab.pipe[1]);
                        ba.pipe[0] = safe_close(ba.pipe[0]);
                        ba.pipe[1] = safe_close(ba.pipe[1]);
                        ab.in_pipe = ba.in_pipe = 0;
                        continue;
                }
                if (r < 0)
                        break;
                if ((p[1].revents & POLLERR) || (p[0].revents & POLLERR)) {
                        r = -ECONNRESET;
                        break;
                }
                /* A peer that is gone entirely (hung up, and its sending side ended) takes nothing more:
                 * what was meant for it is dropped, what it sent is still delivered. */
                if ((p[0].revents & POLLHUP) && ab.eof && !ba.shut)
                        pump_direction_drop(&ba);
                if ((p[1].revents & POLLHUP) && ba.eof && !ab.shut)
                        pump_direction_drop(&ab);
        }
        if (ret_stats)
                *ret_stats = (FdPumpStats) {
                        .a_to_b = ab.moved,
                        .b_to_a = ba.moved,
                        .pipe_size_max = ab.pipe[0] >= 0 ? MAX(ab.pipe_size, ba.pipe_size) : 0,
                };
        pump_pipe_release(&ab);
        pump_pipe_release(&ba);
        safe_close(ab.pipe[0]);
        safe_close(ab.pipe[1]);
        safe_close(ba.pipe[0]);
        safe_close(ba.pipe[1]);
        return r;
}

int listen_fd_prepare(int fd, bool nonblocking) {
        int r, flags;

        r = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOTSOCK;
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, nonblocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) < 0 ||
            fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        return 0;
}

