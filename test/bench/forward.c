/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* forward LISTEN TARGET: the floor of a forwarding hop, for the benchmarks of the proxies. It accepts on
 * LISTEN and, for each connection, connects to TARGET and moves bytes both ways with splice() through a
 * 1 MiB pipe, in one of FORWARD_THREADS threads that each accept and serve one connection at a time (as
 * loop-dockerproxy's workers do, so a new connection costs no thread start): no parsing, no policy, no logging, no copies through user memory.
 * What a proxy adds over the baseline beyond what this adds is the proxy's own; what this adds is the
 * price of the extra hop on the machine (its wake-ups, the second socket's kernel path).
 *
 * forward --record LISTEN TARGET: the floor of a hop that must journal every request, as loop-dockerproxy
 * must: besides the above, one record a request (bytes from the client, then an answer passed on: a
 * request on a kept connection), written once the client has the answer's first bytes, as the proxy
 * writes its record. The record is the line the proxy's audit record makes on the console (its stderr,
 * LOOP_LOG_TARGET=console, as the benchmark runs the proxy): the same fields, formatted with snprintf()
 * and written with one write(). Still nothing parsed, decided or copied through user memory.
 *
 * forward --http [--record] LISTEN TARGET: the floor of a hop that must read each request before it can
 * decide on it, as loop-dockerproxy must (and any proxy that filters by method and path): instead of
 * splicing, each connection reads the client's request head through user memory until its CRLFCRLF,
 * writes it to the engine, reads the engine's answer head the same way and writes it to the client, then
 * relays the bodies (Content-Length, chunked, or until the engine closes), a request at a time on a kept
 * connection. The only parsing is finding a head's end and its body's length (Content-Length,
 * Transfer-Encoding: chunked, Connection: close); no policy, no validation, no rewrite. With --record,
 * one record a request as above, once the answer's head went to the client.
 *
 * LISTEN and TARGET are unix:PATH or tcp:ADDRESS:PORT (IPv4). Prints "ready" on stdout once listening.
 * Bench code, not a product: it exits on any setup error and drops a connection on any transfer error. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FORWARD_PIPE_SIZE (1024 * 1024)
#define FORWARD_THREADS 8
#define FORWARD_HTTP_BUFFER (64 * 1024)     /* --http: a head must fit; bodies go through it in pieces */

typedef struct {
        struct sockaddr_storage sa;
        socklen_t len;
} Address;

static Address listen_address, target;
static int listen_fd;
static bool record, http;

static int address_parse(const char *s, Address *ret) {
        memset(ret, 0, sizeof(*ret));
        if (strncmp(s, "unix:", 5) == 0) {
                struct sockaddr_un *un = (struct sockaddr_un *) &ret->sa;

                if (strlen(s + 5) >= sizeof(un->sun_path))
                        return -ENAMETOOLONG;
                un->sun_family = AF_UNIX;
                strcpy(un->sun_path, s + 5);
                ret->len = sizeof(*un);
                return 0;
        }
        if (strncmp(s, "tcp:", 4) == 0) {
                struct sockaddr_in *in = (struct sockaddr_in *) &ret->sa;
                char host[64];
                const char *colon = strrchr(s + 4, ':');
                char *end;
                long port;

                if (!colon || (size_t) (colon - (s + 4)) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 4, colon - (s + 4));
                host[colon - (s + 4)] = '\0';
                port = strtol(colon + 1, &end, 10);
                if (*end || port <= 0 || port > 65535 || inet_pton(AF_INET, host, &in->sin_addr) != 1)
                        return -EINVAL;
                in->sin_family = AF_INET;
                in->sin_port = htons((uint16_t) port);
                ret->len = sizeof(*in);
                return 0;
        }
        return -EINVAL;
}

static void tcp_nodelay(int fd) {
        int one = 1;

        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

typedef struct {
        int from, to, pipe[2];
        size_t buffered;
        uint64_t sent;          /* bytes passed on to "to" */
        bool eof, done;
} Direction;

/* Moves what is there: from the socket into the pipe, from the pipe into the other socket. -1 on error. */
static int direction_move(Direction *d) {
        ssize_t k;

        if (d->done)
                return 0;
        if (!d->eof && d->buffered < FORWARD_PIPE_SIZE) {
                k = splice(d->from, NULL, d->pipe[1], NULL, FORWARD_PIPE_SIZE - d->buffered,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (k == 0) {
                        d->eof = true;
                } else if (k > 0)
                        d->buffered += (size_t) k;
                else if (errno != EAGAIN)
                        return -1;
        }
        while (d->buffered > 0) {
                k = splice(d->pipe[0], NULL, d->to, NULL, d->buffered, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (k > 0) {
                        d->buffered -= (size_t) k;
                        d->sent += (uint64_t) k;
                } else if (k < 0 && errno == EAGAIN)
                        break;
                else
                        return -1;
        }
        if (d->eof && d->buffered == 0) {
                (void) shutdown(d->to, SHUT_WR);
                d->done = true;
        }
        return 0;
}

static uint64_t now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* One record: the fields of loop-dockerproxy's, on stderr in one write(), as its console line. */
static void record_write(uint64_t started_nsec, uint64_t bytes, const struct ucred *peer) {
        char line[512];
        int n;

        n = snprintf(line, sizeof(line),
                     "forward: request passed on: %" PRIu64 " bytes [LOOP_CHANNEL=bench LOOP_KIND=forward LOOP_METHOD=- "
                     "LOOP_PATH=- LOOP_RULE=- LOOP_DECISION=allow LOOP_STATUS=0 LOOP_LATENCY_NS=%" PRIu64 " "
                     "LOOP_ACTOR=forward LOOP_PEER_PID=%d LOOP_PEER_UID=%u]\n",
                     bytes, now_nsec() - started_nsec, (int) peer->pid, (unsigned) peer->uid);
        if (n > 0)
                (void) !write(STDERR_FILENO, line, (size_t) n < sizeof(line) ? (size_t) n : sizeof(line) - 1);
}

static void connection_run(int client) {
        struct ucred peer = {};
        socklen_t peer_len = sizeof(peer);
        uint64_t request_sent = 0, answer_mark = 0, started_nsec = 0;
        Direction d[2] = { { .from = client, .pipe = { -1, -1 } }, { .to = client, .pipe = { -1, -1 } } };
        int up;

        up = socket(target.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (up < 0)
                goto out;
        if (connect(up, (struct sockaddr *) &target.sa, target.len) < 0 && errno != EINPROGRESS)
                goto out;
        if (target.sa.ss_family == AF_INET)
                tcp_nodelay(up);
        d[0].to = up;
        d[1].from = up;
        /* the caller's identity, asked once a connection as the proxy does */
        if (record)
                (void) getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len);
        for (int i = 0; i < 2; i++) {
                if (pipe2(d[i].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                        goto out;
                (void) fcntl(d[i].pipe[0], F_SETPIPE_SZ, FORWARD_PIPE_SIZE);
        }

        while (!d[0].done || !d[1].done) {
                struct pollfd p[2];

                for (int i = 0; i < 2; i++) {
                        /* a direction with bytes left waits for its destination, otherwise for its source */
                        p[i].fd = d[i].done ? -1 : d[i].buffered > 0 ? d[i].to : d[i].from;
                        p[i].events = d[i].buffered > 0 ? POLLOUT : POLLIN;
                }
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if ((p[0].revents | p[1].revents) & POLLNVAL)
                        break;
                /* only the direction poll() woke: trying the other would be a splice() that finds nothing */
                if ((p[0].revents && direction_move(&d[0]) < 0) || (p[1].revents && direction_move(&d[1]) < 0))
                        break;
                if (!record)
                        continue;
                /* a request went on: its record once its answer's first bytes reached the client */
                if (d[0].sent > request_sent && started_nsec == 0) {
                        started_nsec = now_nsec();
                        answer_mark = d[1].sent;
                }
                if (started_nsec != 0 && d[1].sent > answer_mark) {
                        record_write(started_nsec, d[0].sent - request_sent, &peer);
                        request_sent = d[0].sent;
                        started_nsec = 0;
                }
        }
out:
        for (int i = 0; i < 2; i++)
                if (d[i].pipe[0] >= 0) {
                        close(d[i].pipe[0]);
                        close(d[i].pipe[1]);
                }
        if (up >= 0)
                close(up);
        close(client);
}


/* --http: blocking reads and writes through a buffer, the least a proxy that reads each head does. */

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -1;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

typedef enum {
        BODY_NONE,
        BODY_LENGTH,
        BODY_CHUNKED,
        BODY_UNTIL_EOF,
} BodyKind;

typedef enum {
        CHUNK_SIZE,
        CHUNK_EXTENSION,
        CHUNK_SIZE_LF,
        CHUNK_DATA,
        CHUNK_DATA_CR,
        CHUNK_DATA_LF,
        CHUNK_TRAILER_START,
        CHUNK_TRAILER,
        CHUNK_END_LF,
} ChunkState;

typedef struct {
        BodyKind kind;
        uint64_t left;          /* BODY_LENGTH: bytes to come; BODY_CHUNKED: of the current chunk */
        ChunkState state;
        bool close;             /* Connection: close */
        bool done;
} Body;

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        c |= 0x20;
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Follows a chunked body's framing over n bytes; sets done at its end. -1 on a framing it cannot follow. */
static int chunked_feed(Body *b, const char *p, size_t n) {
        size_t i = 0;

        while (i < n && !b->done) {
                char c = p[i];
                int v;

                switch (b->state) {
                case CHUNK_SIZE:
                        v = hex_value(c);
                        if (v >= 0) {
                                if (b->left > (UINT64_MAX >> 4))
                                        return -1;
                                b->left = b->left * 16 + (uint64_t) v;
                        } else if (c == ';' || c == ' ' || c == '\t')
                                b->state = CHUNK_EXTENSION;
                        else if (c == '\r')
                                b->state = CHUNK_SIZE_LF;
                        else
                                return -1;
                        break;
                case CHUNK_EXTENSION:
                        if (c == '\r')
                                b->state = CHUNK_SIZE_LF;
                        break;
                case CHUNK_SIZE_LF:
                        if (c != '\n')
                                return -1;
                        b->state = b->left == 0 ? CHUNK_TRAILER_START : CHUNK_DATA;
                        break;
                case CHUNK_DATA: {
                        size_t take = n - i < b->left ? n - i : (size_t) b->left;

                        b->left -= take;
                        i += take;
                        if (b->left == 0)
                                b->state = CHUNK_DATA_CR;
                        continue;
                }
                case CHUNK_DATA_CR:
                        if (c != '\r')
                                return -1;
                        b->state = CHUNK_DATA_LF;
                        break;
                case CHUNK_DATA_LF:
                        if (c != '\n')
                                return -1;
                        b->state = CHUNK_SIZE;
                        break;
                case CHUNK_TRAILER_START:
                        b->state = c == '\r' ? CHUNK_END_LF : CHUNK_TRAILER;
                        break;
                case CHUNK_TRAILER:
                        if (c == '\n')
                                b->state = CHUNK_TRAILER_START;
                        break;
                case CHUNK_END_LF:
                        if (c != '\n')
                                return -1;
                        b->done = true;
                        break;
                }
                i++;
        }
        return 0;
}

/* Counts n bytes of body that went on. */
static int body_feed(Body *b, const char *p, size_t n) {
        switch (b->kind) {
        case BODY_NONE:
                b->done = true;
                return 0;
        case BODY_LENGTH:
                b->left -= n < b->left ? n : b->left;
                b->done = b->left == 0;
                return 0;
        case BODY_CHUNKED:
                return chunked_feed(b, p, n);
        case BODY_UNTIL_EOF:
                return 0;
        }
        return -1;
}

static bool header_is(const char *line, const char *end, const char *name, const char **ret_value) {
        size_t l = strlen(name);

        if ((size_t) (end - line) <= l || strncasecmp(line, name, l) != 0 || line[l] != ':')
                return false;
        line += l + 1;
        while (line < end && (*line == ' ' || *line == '\t'))
                line++;
        *ret_value = line;
        return true;
}

/* The body that follows the head buf[0..head) (the head ends with CRLFCRLF): its length, nothing else. */
static void head_body(const char *buf, size_t head, bool answer, Body *ret) {
        const char *p = memchr(buf, '\n', head), *end = buf + head, *v;
        bool length = false, chunked = false;
        uint64_t n = 0;

        *ret = (Body) {};
        while (p && ++p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));

                if (!eol)
                        break;
                if (header_is(p, eol, "content-length", &v)) {
                        length = true;
                        n = strtoull(v, NULL, 10);
                } else if (header_is(p, eol, "transfer-encoding", &v) && strncasecmp(v, "chunked", 7) == 0)
                        chunked = true;
                else if (header_is(p, eol, "connection", &v) && strncasecmp(v, "close", 5) == 0)
                        ret->close = true;
                p = eol;
        }
        if (answer && head > 12 && (buf[9] == '1' || memcmp(buf + 9, "204", 3) == 0 || memcmp(buf + 9, "304", 3) == 0))
                ret->kind = BODY_NONE;          /* an answer without a body: 1xx, 204, 304 */
        else if (chunked)
                ret->kind = BODY_CHUNKED;
        else if (length && n > 0) {
                ret->kind = BODY_LENGTH;
                ret->left = n;
        } else if (answer && !length)
                ret->kind = BODY_UNTIL_EOF;
        else
                ret->kind = BODY_NONE;
        ret->done = ret->kind == BODY_NONE;
}

/* Reads a head from "from" into buf, writes it and the body that follows it to "to". 0 when a message went
 * on, 1 when "from" closed before a message began, -1 on error. */
static int message_relay(int from, int to, char *buf, bool answer, Body *ret_body) {
        size_t len = 0, head = 0;
        ssize_t k;

        /* the head: read until its CRLFCRLF */
        while (head == 0) {
                const char *end;

                if (len == FORWARD_HTTP_BUFFER)
                        return -1;
                k = recv(from, buf + len, FORWARD_HTTP_BUFFER - len, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k == 0 && len == 0 ? 1 : -1;
                end = memmem(buf + (len > 3 ? len - 3 : 0), len + (size_t) k - (len > 3 ? len - 3 : 0), "\r\n\r\n", 4);
                len += (size_t) k;
                if (end)
                        head = (size_t) (end - buf) + 4;
        }
        head_body(buf, head, answer, ret_body);
        if (body_feed(ret_body, buf + head, len - head) < 0 || write_all(to, buf, len) < 0)
                return -1;
        /* the body: relayed as it comes, followed just enough to know where it ends */
        while (!ret_body->done) {
                k = recv(from, buf, FORWARD_HTTP_BUFFER, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k == 0 && ret_body->kind == BODY_UNTIL_EOF) {
                        ret_body->done = true;
                        ret_body->close = true;
                        break;
                }
                if (k <= 0 || body_feed(ret_body, buf, (size_t) k) < 0 || write_all(to, buf, (size_t) k) < 0)
                        return -1;
        }
        return 0;
}

static void connection_run_http(int client) {
        static __thread char buf[FORWARD_HTTP_BUFFER];
        struct ucred peer = {};
        socklen_t peer_len = sizeof(peer);
        int up;

        up = socket(target.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (up < 0 || connect(up, (struct sockaddr *) &target.sa, target.len) < 0)
                goto out;
        if (target.sa.ss_family == AF_INET)
                tcp_nodelay(up);
        if (record)
                (void) getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len);

        for (;;) {
                Body request, answer;
                uint64_t started_nsec;

                if (message_relay(client, up, buf, false, &request) != 0)
                        break;
                started_nsec = now_nsec();
                if (message_relay(up, client, buf, true, &answer) != 0)
                        break;
                if (record)
                        record_write(started_nsec, 0, &peer);
                if (request.close || answer.close)
                        break;
        }
out:
        if (up >= 0)
                close(up);
        close(client);
}

static void *worker_run(void *userdata) {
        (void) userdata;
        for (;;) {
                int client = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | (http ? 0 : SOCK_NONBLOCK));

                if (client < 0)
                        continue;
                if (listen_address.sa.ss_family == AF_INET)
                        tcp_nodelay(client);
                if (http)
                        connection_run_http(client);
                else
                        connection_run(client);
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        pthread_t t;
        int one = 1;

        while (argc > 1 && (strcmp(argv[1], "--record") == 0 || strcmp(argv[1], "--http") == 0)) {
                if (strcmp(argv[1], "--record") == 0)
                        record = true;
                else
                        http = true;
                argv++;
                argc--;
        }
        if (argc != 3 || address_parse(argv[1], &listen_address) < 0 || address_parse(argv[2], &target) < 0) {
                fprintf(stderr, "usage: %s [--http] [--record] unix:PATH|tcp:ADDRESS:PORT unix:PATH|tcp:ADDRESS:PORT\n", argv[0]);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        listen_fd = socket(listen_address.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(listen_fd, (struct sockaddr *) &listen_address.sa, listen_address.len) < 0 || listen(listen_fd, 128) < 0) {
                fprintf(stderr, "%s: cannot listen on %s: %m\n", argv[0], argv[1]);
                return 1;
        }
        for (int i = 1; i < FORWARD_THREADS; i++)
                if (pthread_create(&t, NULL, worker_run, NULL) != 0) {
                        fprintf(stderr, "%s: cannot start a thread\n", argv[0]);
                        return 1;
                }
        printf("ready\n");
        fflush(stdout);
        worker_run(NULL);
        return 0;
}
