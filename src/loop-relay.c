/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop relay`: the agent container's only way out. The container has no network interface but loopback;
 * the relay listens on 127.0.0.1 on the proxy port (HTTP_PROXY/HTTPS_PROXY) and the API port
 * (ANTHROPIC_BASE_URL) and carries each connection, byte for byte, to the channel's egress gateway socket,
 * bind-mounted from the host. It decides nothing: policy, names, addresses and credentials are the
 * gateway's. When the gateway cannot be reached the client gets a 503 saying so and nothing leaves.
 *
 * The entrypoint starts it as root before the privilege drop, so the agent (another uid, no capabilities)
 * can neither signal nor trace it; --background returns once both ports listen, so the agent never races
 * the relay's start. */

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "io-util.h"
#include "log.h"
#include "loop.h"

#define RELAY_SOCKET_DEFAULT "/run/loop/gateway.sock"
#define RELAY_PROXY_PORT_DEFAULT 3128
#define RELAY_API_PORT_DEFAULT 2376
#define RELAY_CONNECTIONS_MAX 512U
#define RELAY_IDLE_TIMEOUT_MS (660 * 1000)      /* a little longer than the gateway's own */
#define RELAY_BACKLOG 128

typedef struct Relay {
        const char *socket_path;
        atomic_uint active;
} Relay;

typedef struct RelayConnection {
        Relay *relay;
        int fd;
} RelayConnection;

static const char relay_unavailable[] =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: 71\r\n"
        "Connection: close\r\n"
        "\r\n"
        "loop relay: the egress gateway is not reachable; nothing leaves here.\r\n";

static int gateway_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static void *relay_connection_run(void *userdata) {
        RelayConnection *c = userdata;
        _cleanup_close_ int up = -EBADF;
        int q;

        up = gateway_connect(c->relay->socket_path);
        if (up < 0) {
                log_warning_errno(up, "Cannot reach the egress gateway at %s: %m", c->relay->socket_path);
                (void) send(c->fd, relay_unavailable, sizeof relay_unavailable - 1, MSG_NOSIGNAL);
        } else {
                q = fd_pump(c->fd, up, RELAY_IDLE_TIMEOUT_MS, NULL, NULL);
                if (q < 0 && q != -EPIPE && q != -ECONNRESET)
                        log_debug_errno(q, "A relayed connection ended: %m");
        }
        safe_close(c->fd);
        atomic_fetch_sub(&c->relay->active, 1);
        free(c);
        return NULL;
}

static int listen_loopback(uint16_t port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        _cleanup_close_ int fd = -EBADF;
        int one = 1;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, RELAY_BACKLOG) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static void relay_accept(Relay *r, int lfd) {
        pthread_attr_t attr;
        pthread_t t;
        RelayConnection *c;
        int fd, q;

        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        /* A relay must not hold back small writes (Nagle against the client's delayed ACK costs 40 ms a
         * round trip). */
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        if (atomic_load(&r->active) >= RELAY_CONNECTIONS_MAX) {
                (void) send(fd, relay_unavailable, sizeof relay_unavailable - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                safe_close(fd);
                return;
        }
        c = malloc(sizeof *c);
        if (!c) {
                safe_close(fd);
                return;
        }
        *c = (RelayConnection) { .relay = r, .fd = fd };
        atomic_fetch_add(&r->active, 1);
        (void) pthread_attr_init(&attr);
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        (void) pthread_attr_setstacksize(&attr, 256U * 1024U);
        q = pthread_create(&t, &attr, relay_connection_run, c);
        (void) pthread_attr_destroy(&attr);
        if (q != 0) {
                safe_close(fd);
                free(c);
                atomic_fetch_sub(&r->active, 1);
        }
}

static void help(void) {
        printf("%s relay [--socket PATH] [--proxy-port PORT] [--api-port PORT] [--background]\n\n"
               "Forward every connection to 127.0.0.1:PROXY-PORT and 127.0.0.1:API-PORT to the egress gateway's\n"
               "unix socket. Runs inside agent containers, started by the entrypoint.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --socket PATH       The gateway socket (default $LOOP_GATEWAY_SOCKET, else " RELAY_SOCKET_DEFAULT ")\n"
               "     --proxy-port PORT   The HTTP proxy port (default %d)\n"
               "     --api-port PORT     The model API port (default %d; 0: none)\n"
               "     --background        Return once both ports listen; the relay goes on in the background\n",
               program_invocation_short_name, RELAY_PROXY_PORT_DEFAULT, RELAY_API_PORT_DEFAULT);
}

static int parse_port(const char *s, bool zero_ok, uint16_t *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end || end == s || v > 65535 || (v == 0 && !zero_ok))
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

int verb_relay(int argc, char *argv[]) {
        enum { ARG_SOCKET = 0x100, ARG_PROXY_PORT, ARG_API_PORT, ARG_BACKGROUND };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h' },
                { "socket",     required_argument, NULL, ARG_SOCKET },
                { "proxy-port", required_argument, NULL, ARG_PROXY_PORT },
                { "api-port",   required_argument, NULL, ARG_API_PORT },
                { "background", no_argument,       NULL, ARG_BACKGROUND },
                {}
        };
        Relay relay = { .socket_path = getenv("LOOP_GATEWAY_SOCKET") ?: RELAY_SOCKET_DEFAULT };
        uint16_t proxy_port = RELAY_PROXY_PORT_DEFAULT, api_port = RELAY_API_PORT_DEFAULT;
        _cleanup_close_ int proxy_fd = -EBADF, api_fd = -EBADF;
        bool background = false;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_SOCKET:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--socket needs an absolute path.");
                        relay.socket_path = optarg;
                        break;
                case ARG_PROXY_PORT:
                        if (parse_port(optarg, false, &proxy_port) < 0)
                                return log_error_errno(EINVAL, "Invalid --proxy-port: %s", optarg);
                        break;
                case ARG_API_PORT:
                        if (parse_port(optarg, true, &api_port) < 0)
                                return log_error_errno(EINVAL, "Invalid --api-port: %s", optarg);
                        break;
                case ARG_BACKGROUND:
                        background = true;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind != argc)
                return log_error_errno(EINVAL, "loop relay takes no arguments.");

        proxy_fd = listen_loopback(proxy_port);
        if (proxy_fd < 0)
                return log_error_errno(proxy_fd, "Cannot listen on 127.0.0.1:%u: %m", proxy_port);
        if (api_port > 0) {
                api_fd = listen_loopback(api_port);
                if (api_fd < 0)
                        return log_error_errno(api_fd, "Cannot listen on 127.0.0.1:%u: %m", api_port);
        }

        if (background) {
                pid_t pid = fork();
                if (pid < 0)
                        return log_error_errno(errno, "Cannot fork: %m");
                if (pid > 0)
                        return 0;
                (void) setsid();
        }
        (void) signal(SIGPIPE, SIG_IGN);
        log_debug("Relaying 127.0.0.1:%u and :%u to %s.", proxy_port, api_port, relay.socket_path);

        for (;;) {
                struct pollfd p[2] = { { .fd = proxy_fd, .events = POLLIN }, { .fd = api_fd, .events = POLLIN } };
                int n = poll(p, api_fd >= 0 ? 2 : 1, -1);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "poll() failed: %m");
                }
                for (size_t i = 0; i < 2; i++)
                        if (p[i].revents & POLLIN)
                                relay_accept(&relay, p[i].fd);
        }
}
