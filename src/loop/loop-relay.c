/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop relay`: the agent container's only way out. The container has no network interface but loopback;
 * the relay listens on 127.0.0.1 on the proxy port (HTTP_PROXY/HTTPS_PROXY) and the API port
 * (ANTHROPIC_BASE_URL) and hands each connection it accepts to the channel's egress gateway over the
 * gateway socket, bind-mounted from the host: the socket itself, passed with SCM_RIGHTS
 * (egress-handover.h), so no byte is copied here. It decides nothing: policy, names, addresses and
 * credentials are the gateway's. When the gateway cannot be reached the client gets a 503 saying so and
 * nothing leaves.
 *
 * The entrypoint starts it as root before the privilege drop, so the agent (another uid, no capabilities)
 * can neither signal nor trace it; --background returns once both ports listen, so the agent never races
 * the relay's start.
 *
 * Every hand-over carries the container's credential for the gateway ("NAME TOKEN", egress-token.h),
 * read once at the start from a file only root can read (bound in by the runner): without it the gateway
 * refuses the connection, so the socket alone serves nobody, and the agent never holds the token. */

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "egress-handover.h"
#include "io-util.h"
#include "log.h"
#include "loop.h"
#include "parse-util.h"
#include "socket-util.h"

#define RELAY_SOCKET_DEFAULT "/run/loop/gateway.sock"
#define RELAY_TOKEN_FILE_DEFAULT "/run/loop/gateway-token"
#define RELAY_PROXY_PORT_DEFAULT 3128
#define RELAY_API_PORT_DEFAULT 2376
#define RELAY_BACKLOG 128

typedef struct Relay {
        const char *socket_path;
        char credential[EGRESS_HANDOVER_CREDENTIAL_MAX + 1];    /* "NAME TOKEN\n"; empty: none */
} Relay;

static const char relay_unavailable[] =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: 71\r\n"
        "Connection: close\r\n"
        "\r\n"
        "loop relay: the egress gateway is not reachable; nothing leaves here.\r\n";

static int gateway_connect(const char *path) {
        /* non-blocking: a full backlog is a 503 now, not a relay that stops accepting */
        return unix_connect(path, SOCK_NONBLOCK, 0);
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

/* The container's credential, "NAME TOKEN" on one line. */
static int relay_read_credential(Relay *r, const char *path) {
        _cleanup_free_ char *text = NULL;
        const char *name, *token;
        size_t size;
        int q;

        q = read_full_file_at(AT_FDCWD, path, EGRESS_HANDOVER_CREDENTIAL_MAX, true, &text, &size);
        if (q < 0)
                return q;
        text[strcspn(text, "\n")] = 0;
        (void) snprintf(r->credential, sizeof r->credential, "%s\n", text);
        q = egress_credential_parse(text, &name, &token);
        explicit_bzero(text, size);
        if (q < 0)
                explicit_bzero(r->credential, sizeof r->credential);
        return q;
}

/* Hands one accepted connection over; the gateway holds it from then on, the relay closes its copy. The
 * gateway's socket is systemd's (socket activation), so connecting and sending do not wait for the
 * gateway to start. */
static void relay_accept(Relay *r, int lfd) {
        _cleanup_close_ int fd = -EBADF, up = -EBADF;
        int q;

        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        /* Nagle against the client's delayed ACK would cost 40 ms a round trip */
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        up = r->credential[0] ? gateway_connect(r->socket_path) : -ENOKEY;
        q = up < 0 ? up : egress_handover_send(up, fd, r->credential);
        if (q < 0) {
                log_warning_errno(q, "Cannot reach the egress gateway at %s: %m", r->socket_path);
                (void) send(fd, relay_unavailable, sizeof relay_unavailable - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
}

static void help(void) {
        printf("%s relay [--socket PATH] [--token-file PATH] [--proxy-port PORT] [--api-port PORT] [--background]\n\n"
               "Hand every connection to 127.0.0.1:PROXY-PORT and 127.0.0.1:API-PORT over to the egress gateway\n"
               "through its unix socket. Runs inside agent containers, started by the entrypoint.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --socket PATH       The gateway socket (default $LOOP_GATEWAY_SOCKET, else " RELAY_SOCKET_DEFAULT ")\n"
               "     --token-file PATH   The container's credential for the gateway (default\n"
               "                         $LOOP_GATEWAY_TOKEN_FILE, else " RELAY_TOKEN_FILE_DEFAULT ")\n"
               "     --proxy-port PORT   The HTTP proxy port (default %d)\n"
               "     --api-port PORT     The model API port (default %d; 0: none)\n"
               "     --background        Return once both ports listen; the relay goes on in the background\n",
               program_invocation_short_name, RELAY_PROXY_PORT_DEFAULT, RELAY_API_PORT_DEFAULT);
}

int verb_relay(int argc, char *argv[]) {
        enum { ARG_SOCKET = 0x100, ARG_TOKEN_FILE, ARG_PROXY_PORT, ARG_API_PORT, ARG_BACKGROUND };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h' },
                { "socket",     required_argument, NULL, ARG_SOCKET },
                { "token-file", required_argument, NULL, ARG_TOKEN_FILE },
                { "proxy-port", required_argument, NULL, ARG_PROXY_PORT },
                { "api-port",   required_argument, NULL, ARG_API_PORT },
                { "background", no_argument,       NULL, ARG_BACKGROUND },
                {}
        };
        Relay relay = { .socket_path = getenv("LOOP_GATEWAY_SOCKET") ?: RELAY_SOCKET_DEFAULT };
        const char *token_file = getenv("LOOP_GATEWAY_TOKEN_FILE") ?: RELAY_TOKEN_FILE_DEFAULT;
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
                case ARG_TOKEN_FILE:
                        token_file = optarg;
                        break;
                case ARG_PROXY_PORT:
                        if (parse_port(optarg, &proxy_port) < 0)
                                return log_error_errno(EINVAL, "Invalid --proxy-port: %s", optarg);
                        break;
                case ARG_API_PORT:
                        if (parse_port_full(optarg, SIZE_MAX, true, &api_port) < 0)
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

        c = relay_read_credential(&relay, token_file);
        if (c < 0)
                log_warning_errno(c, "No credential for the egress gateway in %s (%m): every connection gets a 503.", token_file);

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
