/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* One connection of the Docker API proxy served end to end over a socket pair (src/dockerproxy/dockerproxy-request.h):
 * the answers the proxy gives itself before the engine is asked, and requests kept alive one after the
 * other. The engine's socket does not exist: a request the proxy lets through is answered 502. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dockerproxy-conn.h"
#include "dockerproxy-policy.h"
#include "dockerproxy-request.h"
#include "macro.h"
#include "tap.h"

#define assert_se(x) do { if (!(x)) abort(); } while (0)

static DockerProxy proxy = {
        .channel = (char *) "demo",
        .engine_socket = (char *) "/nonexistent/loop-test/engine.sock",
        .gate_socket = (char *) "/nonexistent/loop-test/gate.sock",
        .containers_max = 16,
        .create_lock = PTHREAD_MUTEX_INITIALIZER,
        .start_lock = PTHREAD_MUTEX_INITIALIZER,
        .not_found_lock = PTHREAD_MUTEX_INITIALIZER,
        .refusal_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Sends request (then ends the client's side), serves the connection, returns what the client read. */
static char *ask(const char *request, size_t size) {
        _cleanup_(proxy_conn_freep) ProxyConn *c = NULL;
        int fds[2];
        char *answer = malloc(65536);
        size_t n = 0;

        assert_se(answer);
        assert_se(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        assert_se(write(fds[0], request, size) == (ssize_t) size);
        assert_se(shutdown(fds[0], SHUT_WR) == 0);
        assert_se(proxy_conn_new(&proxy, NULL, fds[1], &c) == 0);
        c->peer_known = true;           /* the caller is one of the channel's: the rest is tested here */
        proxy_conn_serve(c);
        close(fds[1]);
        for (ssize_t k; n < 65535 && (k = read(fds[0], answer + n, 65535 - n)) > 0;)
                n += (size_t) k;
        answer[n] = 0;
        close(fds[0]);
        return answer;
}

static void check(const char *request, const char *status, const char *says, const char *name) {
        _cleanup_free_ char *a = ask(request, strlen(request));
        bool good = startswith(a, status) && (!says || strstr(a, says));

        if (strlen(a) > 300)
                a[300] = 0;

        ok(good, "%s", name);
        if (!good)
                diag(a);
}

static void test_refused_before_the_engine(void) {
        check("GET /v1.12/_ping HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ", "API version v1.12 is not served",
              "an API version before 1.24 is refused");
        check("GET /secrets HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ", "not an endpoint the proxy serves",
              "an endpoint outside the allow-list is refused");
        check("POST /build HTTP/1.1\r\nHost: d\r\nContent-Length: 1\r\n\r\nx", "HTTP/1.1 403 ", "builds are off",
              "a build is refused when builds are off");
        check("POST /images/create?fromImage=busybox&fromSrc=x HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ",
              "a pull takes the parameters fromImage, tag and platform only", "a pull with another parameter is refused");
        check("POST /images/create?fromSrc=http://x/y HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ",
              "fromSrc=-", "an import from a URL is refused");
        check("GET /_ping HTTP/1.1\r\nHost: d\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
              "HTTP/1.1 400 ", NULL, "a head with both framings (smuggling) is refused");
        check("GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 502 ", "not reachable",
              "an allowed request goes to the engine (unreachable here: 502)");
        check("POST /containers/create HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"x\":1}{}",
              "HTTP/1.1 400 ", NULL, "a body that is not one JSON value is refused");
        check("GET /containers/json HTTP/1.1\r\nHost: d\r\nContent-Length: 2\r\n\r\n{}", "HTTP/1.1 502 ", NULL,
              "a list with an empty JSON body goes to the engine");
        check("GET /_ping HTTP/1.1\r\nHost: d\r\nContent-Length: 3\r\n\r\n{}", "", NULL,
              "a request whose body the client did not finish gets no answer");
}

static void test_head_too_large(void) {
        size_t size = PROXY_HEADER_SIZE_MAX + 1024;
        _cleanup_free_ char *req = malloc(size + 64), *a = NULL;
        int n;

        assert_se(req);
        n = snprintf(req, size + 64, "GET /_ping HTTP/1.1\r\nX-Big: ");
        memset(req + n, 'a', size - (size_t) n);
        memcpy(req + size, "\r\n\r\n", 5);
        a = ask(req, size + 4);
        ok(!!startswith(a, "HTTP/1.1 431 "), "a head over PROXY_HEADER_SIZE_MAX is refused with 431");
}

static unsigned count(const char *s, const char *what) {
        unsigned n = 0;

        for (const char *p = s; p && (p = strstr(p, what)); p++)
                n++;
        return n;
}

static void test_kept_alive(void) {
        static const char two[] = "GET /_ping HTTP/1.1\r\nHost: d\r\n\r\nGET /v1.41/version HTTP/1.1\r\nHost: d\r\n\r\n";
        static const char refused[] = "GET /v1.12/_ping HTTP/1.1\r\nHost: d\r\n\r\nGET /_ping HTTP/1.1\r\nHost: d\r\n\r\n";
        _cleanup_free_ char *a = ask(two, strlen(two)), *b = ask(refused, strlen(refused));

        is_int(count(a, "HTTP/1.1 502 "), 2, "two pipelined requests are each answered on the one connection");
        ok(count(a, "Connection: keep-alive") == 2, "...each answer keeps the connection");
        is_int(count(b, "HTTP/1.1 "), 1, "a request refused before its body was read ends the connection");
        ok(b && strstr(b, "Connection: close"), "...and its answer says so");
}

/* The body rules' verdict a kept connection keeps for a request with no body, query or Content-Type is
 * not the verdict of the next request to the same method and path that has a query the rules read, and
 * that request's query (read into the object the requests before left empty) is not the next one's. */
static void test_kept_body_verdict(void) {
        static const char policy[] =
                "{\"body_rules\": [{\"applies_to\": \"GET ^/containers/json$\", \"decision\": \"deny\","
                " \"message\": \"listing all is refused here\", \"json_checks\": [{\"path\": \"all\", \"op\": \"present\"}]}]}";
        static const char four[] = "GET /containers/json HTTP/1.1\r\nHost: d\r\n\r\n"
                                    "GET /containers/json HTTP/1.1\r\nHost: d\r\n\r\n"
                                    "GET /containers/json?all=1 HTTP/1.1\r\nHost: d\r\n\r\n"
                                    "GET /containers/json HTTP/1.1\r\nHost: d\r\n\r\n";
        _cleanup_(json_object_putp) json_object *doc = json_tokener_parse(policy);
        _cleanup_free_ char *error = NULL, *a = NULL;
        ProxyPolicy *saved = proxy.policy;

        assert_se(doc && proxy_policy_compile(doc, &proxy.policy, &error) >= 0);
        a = ask(four, strlen(four));
        is_int(count(a, "HTTP/1.1 502 "), 3, "plain lists on a kept connection are let through (502: no engine)");
        ok(count(a, "HTTP/1.1 403 ") == 1 && strstr(a, "listing all is refused here"),
           "...the one to the same path with a query a body rule reads is refused by that rule, the plain one after it not");
        proxy_policy_free(proxy.policy);
        proxy.policy = saved;
}

/* An engine that answers each connection's requests with the connection's number, and after its first
 * answer on the first connection says something unasked (a stale answer) without closing. */
typedef struct FakeEngine {
        int listen_fd;
        unsigned connections;
        atomic_bool stale_sent;         /* the unasked answer is written */
} FakeEngine;

static void *fake_engine(void *userdata) {
        FakeEngine *e = userdata;

        for (int fd; (fd = accept4(e->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0;) {
                unsigned n = ++e->connections;
                char buf[4096], answer[128];
                size_t have = 0;

                for (;;) {
                        ssize_t k = read(fd, buf + have, sizeof(buf) - 1 - have);
                        if (k <= 0)
                                break;
                        have += (size_t) k;
                        buf[have] = 0;
                        if (!strstr(buf, "\r\n\r\n"))
                                continue;
                        have = 0;
                        int l = snprintf(answer, sizeof(answer), "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nconn%u", n);
                        assert_se(write(fd, answer, (size_t) l) == l);
                        if (n == 1) {   /* after the proxy passed the answer on: unasked bytes */
                                usleep(20 * 1000);
                                static const char stale[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale";
                                assert_se(write(fd, stale, sizeof(stale) - 1) == (ssize_t) sizeof(stale) - 1);
                                atomic_store(&e->stale_sent, true);
                        }
                }
                close(fd);
        }
        return NULL;
}

typedef struct Client {
        int fd;
        char answers[4096];
        FakeEngine *engine;
} Client;

/* Two requests on one kept connection, the second well after the first's answer. */
static void *client_two_apart(void *userdata) {
        Client *cl = userdata;
        static const char first[] = "GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n";
        static const char second[] = "GET /_ping HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n";
        size_t n = 0;

        assert_se(write(cl->fd, first, sizeof(first) - 1) == (ssize_t) sizeof(first) - 1);
        while (!strstr(cl->answers, "conn")) {
                ssize_t k = read(cl->fd, cl->answers + n, sizeof(cl->answers) - 1 - n);
                if (k <= 0)
                        return NULL;
                n += (size_t) k;
                cl->answers[n] = 0;
        }
        /* the engine's unasked bytes come meanwhile: waited for (a loaded machine may run the engine's
         * thread late), up to 10 s */
        for (int i = 0; i < 1000 && !atomic_load(&cl->engine->stale_sent); i++)
                usleep(10 * 1000);
        usleep(50 * 1000);
        assert_se(write(cl->fd, second, sizeof(second) - 1) == (ssize_t) sizeof(second) - 1);
        for (ssize_t k; n < sizeof(cl->answers) - 1 && (k = read(cl->fd, cl->answers + n, sizeof(cl->answers) - 1 - n)) > 0;)
                n += (size_t) k;
        cl->answers[n] = 0;
        return NULL;
}

static void test_kept_engine_connection_spoke_unasked(void) {
        char dir[] = "/tmp/loop-test-dockerproxy-request.XXXXXX", path[128];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_(proxy_conn_freep) ProxyConn *c = NULL;
        FakeEngine e = {};
        Client cl = { .engine = &e };
        pthread_t te, tc;
        int fds[2];

        assert_se(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/engine.sock", dir);
        strcpy(sa.sun_path, path);
        assert_se((e.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
        assert_se(bind(e.listen_fd, (struct sockaddr *) &sa, sizeof(sa)) == 0 && listen(e.listen_fd, 4) == 0);
        assert_se(pthread_create(&te, NULL, fake_engine, &e) == 0);
        proxy.engine_socket = path;

        assert_se(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        cl.fd = fds[0];
        assert_se(pthread_create(&tc, NULL, client_two_apart, &cl) == 0);
        assert_se(proxy_conn_new(&proxy, NULL, fds[1], &c) == 0);
        c->peer_known = true;
        proxy_conn_serve(c);
        c = proxy_conn_free(c);         /* and the engine connection it kept */
        close(fds[1]);
        pthread_join(tc, NULL);
        close(fds[0]);

        is_int(count(cl.answers, "HTTP/1.1 200 "), 2, "two requests kept alive are both answered by the engine");
        ok(strstr(cl.answers, "conn1") && strstr(cl.answers, "conn2") && !strstr(cl.answers, "stale"),
           "an engine connection that said something unasked between them is not used again: its words reach no one");

        proxy.engine_socket = (char *) "/nonexistent/loop-test/engine.sock";
        shutdown(e.listen_fd, SHUT_RDWR);
        close(e.listen_fd);
        pthread_join(te, NULL);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *error = NULL;

        assert_se(proxy_policy_document(NULL, NULL, &doc) >= 0);
        assert_se(proxy_policy_compile(doc, &proxy.policy, &error) >= 0);
        test_refused_before_the_engine();
        test_head_too_large();
        test_kept_alive();
        test_kept_body_verdict();
        test_kept_engine_connection_spoke_unasked();
        proxy_policy_free(proxy.policy);
        return done_testing();
}
