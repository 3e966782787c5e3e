/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: bytes as what a client sends on a connection to the Docker API proxy
 * (dockerproxy-request.h): requests, pipelined or not, served one after the other through every stage
 * the proxy runs before the engine (the engine's and the gate's sockets do not exist: what the proxy
 * lets through is answered 502). Every input ends with the connection served, nothing else. */

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dockerproxy-conn.h"
#include "dockerproxy-policy.h"
#include "dockerproxy-request.h"
#include "io-util.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static DockerProxy proxy = {
        .channel = (char *) "demo",
        .engine_socket = (char *) "/nonexistent/loop-fuzz/engine.sock",
        .gate_socket = (char *) "/nonexistent/loop-fuzz/gate.sock",
        .containers_max = 16,
        .build = true,
        .create_lock = PTHREAD_MUTEX_INITIALIZER,
        .start_lock = PTHREAD_MUTEX_INITIALIZER,
        .not_found_lock = PTHREAD_MUTEX_INITIALIZER,
        .refusal_lock = PTHREAD_MUTEX_INITIALIZER,
};

typedef struct Client {
        int fd;
        const uint8_t *data;
        size_t size;
} Client;

/* The client: sends the input, ends its side, reads every answer (the proxy never blocks on it). */
static void *client_main(void *userdata) {
        Client *cl = userdata;
        char buf[16384];

        (void) loop_write(cl->fd, cl->data, cl->size);
        (void) shutdown(cl->fd, SHUT_WR);
        while (read(cl->fd, buf, sizeof buf) > 0)
                ;
        return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProxyConn *c = NULL;
        pthread_t t;
        int fds[2];

        if (!proxy.policy) {
                (void) signal(SIGPIPE, SIG_IGN);        /* a client the proxy stopped reading */
                _cleanup_(json_object_putp) json_object *doc = NULL;
                _cleanup_free_ char *error = NULL;
                if (proxy_policy_document(NULL, NULL, &doc) < 0 || proxy_policy_compile(doc, &proxy.policy, &error) < 0)
                        abort();
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
                abort();
        Client cl = { .fd = fds[0], .data = data, .size = size };
        if (pthread_create(&t, NULL, client_main, &cl) != 0)
                abort();
        if (proxy_conn_new(&proxy, NULL, fds[1], &c) < 0)
                abort();
        c->peer_known = true;
        proxy_conn_serve(c);
        proxy_conn_free(c);
        (void) shutdown(fds[1], SHUT_RDWR);
        (void) pthread_join(t, NULL);
        close(fds[0]);
        close(fds[1]);
        return 0;
}
