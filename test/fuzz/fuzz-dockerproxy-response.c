/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: bytes as the engine's answers (the first byte picks the client's request): to a
 * request the Docker API proxy forwarded (dockerproxy-forward.h: the response head parsed and rewritten
 * for the client, the body relayed, framed by length, chunked, or to the end) and to the questions it
 * asks the engine first (dockerproxy-access.h, -pin.h: inspects, lists, counts). Every input ends with
 * the request answered or the connection ended, nothing else. Also the head rewrite on its own. */

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
        const char *request;
} Peer;

/* The engine's answer to every connection of the current input: the proxy's own questions (an inspect,
 * a list, through the engine client) and the forwarded request alike. */
static pthread_mutex_t answer_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *answer;
static size_t answer_size;

/* The engine: for each connection, reads the request's head, answers with the input, closes. */
static void *engine_main(void *userdata) {
        for (;;) {
                char buf[16384];
                size_t n = 0, size;
                uint8_t *copy;
                int fd;

                fd = accept4(engine_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                for (ssize_t k; n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0;) {
                        n += (size_t) k;
                        buf[n] = 0;
                        if (strstr(buf, "\r\n\r\n"))
                                break;
                }
                pthread_mutex_lock(&answer_lock);
                size = answer_size;
                copy = size > 0 ? malloc(size) : NULL;
                if (copy)
                        memcpy(copy, answer, size);
                pthread_mutex_unlock(&answer_lock);
                if (copy)
                        (void) loop_write(fd, copy, size);
                free(copy);
                close(fd);
        }
        return NULL;
}

/* The client: one request on a kept connection, then reads the answer to its end. */
static void *client_main(void *userdata) {
        Peer *cl = userdata;
        char buf[16384];

        (void) loop_write(cl->fd, cl->request, strlen(cl->request));
        (void) shutdown(cl->fd, SHUT_WR);
        while (read(cl->fd, buf, sizeof buf) > 0)
                ;
        return NULL;
}

/* What the client asks, picked by the input's first byte: a forward, and requests that make the proxy
 * ask the engine first (whose object a path names, a start's pins, the channel's count, a network). */
static const char * const requests[] = {
        "GET /v1.41/containers/json HTTP/1.1\r\nHost: d\r\n\r\n",
        "GET /v1.41/containers/abc/json HTTP/1.1\r\nHost: d\r\n\r\n",
        "POST /v1.41/containers/abc/start HTTP/1.1\r\nHost: d\r\n\r\n",
        "DELETE /v1.41/volumes/v1 HTTP/1.1\r\nHost: d\r\n\r\n",
        "GET /v1.41/networks/bridge HTTP/1.1\r\nHost: d\r\n\r\n",
        "POST /v1.41/containers/create HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\n"
                "Content-Length: 37\r\n\r\n{\"Image\":\"busybox\",\"Cmd\":[\"true\"]}",
        "POST /v1.41/exec/abc/start HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\n"
                "Content-Length: 2\r\n\r\n{}",
        "GET /v1.41/info HTTP/1.1\r\nHost: d\r\n\r\n",
};

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
        if (engine_fd < 0 || bind(engine_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(engine_fd, 64) < 0)
                abort();
        pthread_t t;
        if (pthread_create(&t, NULL, engine_main, NULL) != 0 || pthread_detach(t) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProxyConn *c = NULL;
        pthread_t tc;
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

        if (size < 1)
                return 0;
        pthread_mutex_lock(&answer_lock);
        free(answer);
        answer = size > 1 ? malloc(size - 1) : NULL;
        answer_size = answer ? size - 1 : 0;
        if (answer)
                memcpy(answer, data + 1, size - 1);
        pthread_mutex_unlock(&answer_lock);

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
                abort();
        Peer cl = { .fd = fds[0], .request = requests[data[0] % ELEMENTSOF(requests)] };
        if (pthread_create(&tc, NULL, client_main, &cl) != 0)
                abort();
        if (proxy_conn_new(&proxy, NULL, fds[1], &c) < 0)
                abort();
        c->peer_known = true;
        proxy_conn_serve(c);
        proxy_conn_free(c);
        (void) shutdown(fds[1], SHUT_RDWR);
        (void) pthread_join(tc, NULL);
        close(fds[0]);
        close(fds[1]);
        return 0;
}
