/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* engine_exec_attach() speaks HTTP by hand on its own connection: what it makes of the answers an engine
 * (or something in its place) gives to the upgrade request. A thread here plays the socket's other end. */

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "engine.h"
#include "io-util.h"
#include "macro.h"
#include "tap.h"
#include "time-util.h"

typedef struct Peer {
        int listen_fd;
        const char *answer;             /* NULL: close without reading the request (a reset) */
} Peer;

static void *peer_run(void *userdata) {
        Peer *p = userdata;
        char buf[4096];
        int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0)
                return NULL;
        if (p->answer) {
                ssize_t n = read(fd, buf, sizeof buf);      /* the request fits one read */
                (void) n;
                (void) loop_write(fd, p->answer, strlen(p->answer));
        } else {
                /* the request arrived, and is left unread, so that closing resets (waited for: a loaded
                 * machine may run the client's write after any fixed pause) */
                (void) fd_wait_until(fd, POLLIN, clock_usec(CLOCK_MONOTONIC) + 10 * 1000 * 1000);
        }
        close(fd);
        return NULL;
}

static int attach(const char *socket_path, int listen_fd, const char *answer, int *ret_fd, char **ret_pending,
                  size_t *ret_pending_size, char **ret_error) {
        _cleanup_(engine_freep) Engine *e = NULL;
        Peer p = { .listen_fd = listen_fd, .answer = answer };
        pthread_t t;
        int r;

        if (engine_new(socket_path, &e) < 0 || pthread_create(&t, NULL, peer_run, &p) != 0)
                return -ENOMEM;
        r = engine_exec_attach(e, "abc123", false, ret_fd, ret_pending, ret_pending_size);
        pthread_join(t, NULL);
        *ret_error = engine_last_error(e) ? strdup(engine_last_error(e)) : NULL;
        return r;
}

int main(void) {
        char dir[] = "/tmp/test-engine-attach-XXXXXX", path[PATH_MAX];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int listen_fd = -EBADF;
        int r;

        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof path, "%s/engine.sock", dir);
        if (strlen(path) >= sizeof sa.sun_path)
                return 1;
        memcpy(sa.sun_path, path, strlen(path));
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(listen_fd, 4) < 0)
                return 1;

        {
                _cleanup_close_ int fd = -EBADF;
                _cleanup_free_ char *pending = NULL, *error = NULL;
                size_t n = 0;
                r = attach(path, listen_fd, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                           "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\nearly", &fd, &pending, &n, &error);
                ok(r == 0 && fd >= 0, "a 101 answer hands over the connection");
                ok(r == 0 && n == 5 && memcmp(pending, "early", 5) == 0, "bytes after the head are handed over too");
        }
        {
                _cleanup_close_ int fd = -EBADF;
                _cleanup_free_ char *pending = NULL, *error = NULL;
                size_t n = 0;
                r = attach(path, listen_fd, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n",
                           &fd, &pending, &n, &error);
                ok(r == 0 && fd >= 0 && n == 0, "a 200 answer (Podman's) hands over the connection");
        }
        {
                _cleanup_free_ char *error = NULL;
                int fd = -EBADF;
                r = attach(path, listen_fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", &fd, NULL, NULL, &error);
                is_int(r, -ENOENT, "a 404 is -ENOENT");
                is_str(error, "POST /exec/abc123/start: HTTP/1.1 404 Not Found", "the error names the call and the status line");
        }
        {
                _cleanup_free_ char *error = NULL;
                int fd = -EBADF;
                r = attach(path, listen_fd, "HTTP/1.1 500 Internal Server Error\r\n\r\n", &fd, NULL, NULL, &error);
                is_int(r, -EIO, "another status is -EIO");
        }
        {
                _cleanup_free_ char *error = NULL;
                int fd = -EBADF;
                r = attach(path, listen_fd, "HTTP/1.1 +101 UPGRADED\r\n\r\n", &fd, NULL, NULL, &error);
                is_int(r, -EBADMSG, "a status with a sign is not an HTTP response (sscanf() took it)");
        }
        {
                _cleanup_free_ char *error = NULL;
                int fd = -EBADF;
                r = attach(path, listen_fd, "HTTP/1.1 101 UPGRADED\r\nBad Name: x\r\n\r\n", &fd, NULL, NULL, &error);
                is_int(r, -EBADMSG, "a head with a malformed header is refused");
        }
        {
                _cleanup_free_ char *error = NULL;
                int fd = -EBADF;
                r = attach(path, listen_fd, "HTTP/1.1 101 UPGRADED\r\n", &fd, NULL, NULL, &error);
                is_int(r, -ECONNRESET, "a connection closed in the middle of the head is -ECONNRESET");
        }
        {
                _cleanup_free_ char *error = NULL;
                int fd = -EBADF;
                r = attach(path, listen_fd, NULL, &fd, NULL, NULL, &error);
                is_int(r, -ECONNRESET, "a connection reset is reported with read()'s errno, not one engine_set_error() left");
                ok(error && strstr(error, "the engine closed the connection"), "and the error says so");
        }

        unlink(path);
        rmdir(dir);
        return done_testing();
}
