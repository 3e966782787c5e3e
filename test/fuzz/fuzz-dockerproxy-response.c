/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: bytes as the engine's answer to a request the Docker API proxy forwarded
 * (dockerproxy-forward.h): the response head parsed and rewritten for the client, the body relayed
 * (framed by length, chunked, or to the end), on a kept client connection. Every input ends with the
 * request answered or the connection ended, nothing else. Also the head rewrite on its own. */

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dockerproxy-conn.h"
#include "dockerproxy-forward.h"
#include "dockerproxy-policy.h"
#include "dockerproxy-request.h"
#include "http-server.h"
#include "io-util.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char engine_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];
static int engine_fd = -EBADF;

static DockerProxy proxy = {
        .channel = (char *) "demo",
        .engine_socket = engine_path,
        .gate_socket = (char *) "/nonexistent/loop-fuzz/gate.sock",
        .containers_max = 16,
        .create_lock = PTHREAD_MUTEX_INITIALIZER,
        .start_lock = PTHREAD_MUTEX_INITIALIZER,
        .not_found_lock = PTHREAD_MUTEX_INITIALIZER,
        .refusal_lock = PTHREAD_MUTEX_INITIALIZER,
};

typedef struct Peer {
        int fd;
        const uint8_t *data;
        size_t size;
} Peer;

/* The engine: takes the proxy's connection, reads the request's head, answers with the input, closes. */
static void *engine_main(void *userdata) {
        Peer *e = userdata;
        struct pollfd p = { .fd = engine_fd, .events = POLLIN };
        char buf[16384];
        size_t n = 0;
        int fd;

        if (poll(&p, 1, 5000) <= 0)
                return NULL;
        fd = accept4(engine_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return NULL;
        for (ssize_t k; n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0;) {
                n += (size_t) k;
                buf[n] = 0;
                if (strstr(buf, "\r\n\r\n"))
                        break;
        }
        (void) loop_write(fd, e->data, e->size);
        close(fd);
        return NULL;
}

/* The client: one request on a kept connection, then reads the answer to its end. */
static void *client_main(void *userdata) {
        static const char req[] = "GET /v1.41/containers/json HTTP/1.1\r\nHost: d\r\n\r\n";
        Peer *cl = userdata;
        char buf[16384];

        (void) loop_write(cl->fd, req, sizeof req - 1);
        (void) shutdown(cl->fd, SHUT_WR);
        while (read(cl->fd, buf, sizeof buf) > 0)
                ;
        return NULL;
}

static void engine_path_unlink(void) {
        (void) unlink(engine_path);
}

static void setup(void) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *error = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        (void) signal(SIGPIPE, SIG_IGN);
        if (proxy_policy_document(NULL, NULL, &doc) < 0 || proxy_policy_compile(doc, &proxy.policy, &error) < 0)
                abort();
        snprintf(engine_path, sizeof engine_path, "/tmp/loop-fuzz-engine-%d.sock", (int) getpid());
        (void) unlink(engine_path);
        atexit(engine_path_unlink);
        memcpy(sa.sun_path, engine_path, strlen(engine_path) + 1);
        engine_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (engine_fd < 0 || bind(engine_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(engine_fd, 8) < 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProxyConn *c = NULL;
        pthread_t te, tc;
        int fds[2];

        if (engine_fd < 0)
                setup();

        /* the head rewrite alone, on whatever head the bytes begin with */
        {
                HttpResponseHead h = {};
                _cleanup_free_ char *head = NULL;
                size_t head_size;
                if (http_response_head_parse((const char *) data, size, PROXY_RESPONSE_HEAD_MAX, &h) > 0 &&
                    proxy_response_head_for_client((const char *) data, h.head_size, true, &head, &head_size) >= 0 &&
                    (head_size < 4 || memcmp(head + head_size - 4, "\r\n\r\n", 4) != 0))
                        abort();
        }

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
                abort();
        Peer e = { .data = data, .size = size }, cl = { .fd = fds[0] };
        if (pthread_create(&te, NULL, engine_main, &e) != 0 || pthread_create(&tc, NULL, client_main, &cl) != 0)
                abort();
        if (proxy_conn_new(&proxy, NULL, fds[1], &c) < 0)
                abort();
        c->peer_known = true;
        proxy_conn_serve(c);
        proxy_conn_free(c);
        (void) shutdown(fds[1], SHUT_RDWR);
        (void) pthread_join(tc, NULL);
        (void) pthread_join(te, NULL);
        close(fds[0]);
        close(fds[1]);
        return 0;
}
