/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The one place that retries interrupted and short reads and writes. Short transfers are made real with
 * a pipe whose reader takes less than was written at a time. */

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "io-util.h"
#include "macro.h"
#include "tap.h"
#include "time-util.h"

#define BIG (1024U * 1024U)     /* larger than a pipe: the write is short at least once */

static void *drain(void *userdata) {
        int fd = *(int *) userdata;
        char *buf = malloc(BIG);
        ssize_t n = buf ? loop_read(fd, buf, BIG) : -ENOMEM;
        bool good = n == (ssize_t) BIG;

        for (size_t i = 0; good && i < BIG; i++)
                good = buf[i] == (char) (i % 251);
        free(buf);
        return (void *) (uintptr_t) good;
}

/* read_text_fd() of what a pipe carries, written first and then closed. */
static int read_text_of(const char *data, size_t size, size_t max, char **ret, size_t *ret_size) {
        int p[2], r;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        if (loop_write(p[1], data, size) < 0)
                r = -EIO;
        else {
                close(p[1]);
                p[1] = -EBADF;
                r = read_text_fd(p[0], max, ret, ret_size);
        }
        close(p[0]);
        if (p[1] >= 0)
                close(p[1]);
        return r;
}

static void test_read_text_fd(void) {
        char *text = NULL;
        size_t n = 0;

        is_int(read_text_of("hello\n", 6, 6, &text, &n), 0, "read_text_fd() of exactly max bytes");
        ok(text && streq(text, "hello\n") && n == 6, "gives the text, NUL-terminated, with its length");
        text = mfree(text);
        is_int(read_text_of("", 0, 6, &text, NULL), 0, "read_text_fd() of an empty stream");
        ok(text && streq(text, ""), "is the empty text");
        text = mfree(text);
        is_int(read_text_of("hello!!", 7, 6, &text, &n), -E2BIG, "one byte more than max is -E2BIG");
        ok(!text, "and returns nothing");
        is_int(read_text_of("a\0b", 3, 6, &text, &n), -EINVAL, "a NUL byte is -EINVAL");
        ok(!text, "and returns nothing");
}

static void test_listen_fd_prepare(void) {
        int pair[2], fd, flags;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);       /* no SOCK_CLOEXEC: prepare sets it */
        /* bound to an autobind abstract address: nothing on the file system */
        ok(fd >= 0 && bind(fd, (struct sockaddr *) &(struct sockaddr_un) { .sun_family = AF_UNIX }, sizeof(sa_family_t)) == 0 &&
           listen(fd, 1) == 0, "a listening socket to prepare");
        is_int(listen_fd_prepare(fd, false), 0, "listen_fd_prepare() takes a listening AF_UNIX stream socket");
        flags = fcntl(fd, F_GETFL);
        ok(flags >= 0 && !(flags & O_NONBLOCK), "made blocking when asked");
        ok(fcntl(fd, F_GETFD) == FD_CLOEXEC, "and close-on-exec");
        is_int(listen_fd_prepare(fd, true), 0, "listen_fd_prepare() again, non-blocking");
        ok(fcntl(fd, F_GETFL) & O_NONBLOCK, "made non-blocking when asked");
        close(fd);

        ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0, "a connected socket pair");
        is_int(listen_fd_prepare(pair[0], true), -ENOTSOCK, "a connected socket is not a listener");
        close(pair[0]);
        close(pair[1]);
        ok(pipe2(pair, O_CLOEXEC) == 0, "a pipe");
        is_int(listen_fd_prepare(pair[0], true), -ENOTSOCK, "a pipe is not a listener");
        close(pair[0]);
        close(pair[1]);
}

int main(void) {
        char tmp[] = "/tmp/test-io-util-XXXXXX", buf[64];
        _cleanup_close_ int fd = -EBADF;
        int p[2];
        pthread_t t;
        void *good = NULL;
        char *data = malloc(BIG);

        if (!data || pipe2(p, O_CLOEXEC) < 0)
                return 1;
        for (size_t i = 0; i < BIG; i++)
                data[i] = (char) (i % 251);
        pthread_create(&t, NULL, drain, &p[0]);
        is_int(loop_write(p[1], data, BIG), 0, "loop_write() writes all of a buffer larger than the pipe");
        pthread_join(t, &good);
        ok(good != NULL, "loop_read() reads all of it, in order, across short reads");
        close(p[1]);
        is_int(loop_read(p[0], buf, sizeof buf), 0, "loop_read() at EOF returns 0");
        close(p[0]);
        free(data);

        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return 1;
        unlink(tmp);
        is_int(loop_write(fd, "0123456789", 10), 0, "loop_write() to a file");
        is_int(loop_pread(fd, buf, 4, 3), 4, "loop_pread() reads at an offset");
        ok(memcmp(buf, "3456", 4) == 0, "what is at that offset");
        is_int(loop_pread(fd, buf, sizeof buf, 8), 2, "loop_pread() stops at EOF with what there was");
        is_int(read_snapshot(fd, buf, 6), 5, "read_snapshot() reads size - 1 bytes from the start");
        is_str(buf, "01234", "and NUL-terminates them");
        is_int(read_snapshot(fd, buf, 0), -EINVAL, "read_snapshot() without room is refused");
        {
                int q[2];
                if (pipe2(q, O_CLOEXEC) < 0)
                        return 1;
                is_int(fd_wait_until(q[0], POLLIN, clock_usec(CLOCK_MONOTONIC) + 20 * 1000), -ETIMEDOUT,
                       "fd_wait_until() on a silent pipe times out at the deadline");
                is_int(fd_wait_until(q[0], POLLIN, clock_usec(CLOCK_MONOTONIC) - 1), -ETIMEDOUT,
                       "a deadline in the past times out at once");
                (void) loop_write(q[1], "x", 1);
                ok(fd_wait_until(q[0], POLLIN, UINT64_MAX) & POLLIN, "a readable pipe is ready, without a deadline too");
                close(q[1]);
                close(q[0]);
        }
        is_int(loop_read(-1, buf, 1), -EBADF, "loop_read() returns -errno");
        is_int(loop_write(-1, buf, 1), -EBADF, "loop_write() returns -errno");
        test_listen_fd_prepare();
        test_read_text_fd();
        return done_testing();
}
