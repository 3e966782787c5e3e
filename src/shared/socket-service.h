/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The skeleton every socket-activated helper of loop follows (STYLE.md 10): it takes the listening
 * sockets systemd passed (sd_listen_fds(), each checked to be a listening AF_UNIX stream socket), runs one
 * sd-event loop on the main thread that accepts, and exits after an idle timeout that is armed again each
 * time the last connection goes: an idle helper costs no CPU and no wake-ups.
 *
 * A connection whose handling must block (engine calls, a human's approval, upstream I/O) runs on a
 * worker thread of the skeleton's pool: a new connection goes to an idle worker (a wake-up, not a thread
 * start); a worker is started only when none is idle, so at most connections_max serve at once; when its
 * connection ends a worker waits for the next, unless workers_idle_max wait already, then it ends. The
 * skeleton owns and joins every worker: none is detached, none outlives socket_service_run(), idle ones
 * included (an idle worker keeps nothing alive: the idle exit counts connections). The skeleton owns the connection's fd too (a worker may swap it for one handed
 * over, socket_connection_set_fd()), so that it can act on it from the event loop:
 *
 *   - an absolute deadline per request head (socket_connection_head_begin()/_end()): when it passes, the
 *     read side of the connection is shut down, which ends a blocked read() or SSL_read() at once, however
 *     the bytes trickle in (a byte every 29 s does not hold a worker beyond the deadline); the write side
 *     stays open for the helper's 408;
 *   - SIGTERM or SIGINT: the listeners are no longer watched, connections waiting for a request head are
 *     ended (their read side shut down; socket_connection_head_begin() refuses new heads), requests under
 *     way finish; after drain_usec every connection is shut down both ways; every worker is joined, then
 *     socket_service_run() returns.
 *
 * A helper whose every step is an event (the gate: a request waits for a human without blocking anything)
 * takes its connections with the accept callback instead and keeps them on the same loop; the skeleton
 * still takes the sockets, parses the command line, idles, and stops it.
 *
 * Signals: socket_service_new() blocks SIGTERM and SIGINT in the calling thread (which every thread
 * started later inherits, so only the event loop sees them) and ignores SIGPIPE.
 *
 * A helper's command line is parsed by socket_service_parse_argv(): --help and --version are answered
 * there, never taken for a positional argument such as a channel name. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"

#define SOCKET_SERVICE_LISTEN_FDS_MAX 8U
#define SOCKET_SERVICE_CONNECTIONS_MAX_DEFAULT 256U
#define SOCKET_SERVICE_HEAD_USEC_DEFAULT (30ULL * 1000000ULL)
#define SOCKET_SERVICE_DRAIN_USEC_DEFAULT (10ULL * 1000000ULL)
#define SOCKET_SERVICE_STACK_SIZE_DEFAULT (512U * 1024U)
#define SOCKET_SERVICE_WORKERS_IDLE_DEFAULT 16U

typedef struct SocketService SocketService;
typedef struct SocketConnection SocketConnection;

typedef struct SocketServiceConfig {
        unsigned connections_max;       /* at once; 0: SOCKET_SERVICE_CONNECTIONS_MAX_DEFAULT */
        uint64_t idle_usec;             /* exit after this long without connections; 0: never */
        uint64_t head_usec;             /* the deadline of a request head; 0: SOCKET_SERVICE_HEAD_USEC_DEFAULT */
        uint64_t drain_usec;            /* after SIGTERM, before connections are shut down; 0: the default */
        size_t stack_size;              /* of a worker; 0: SOCKET_SERVICE_STACK_SIZE_DEFAULT */
        unsigned workers_idle_max;      /* idle workers kept; 0: SOCKET_SERVICE_WORKERS_IDLE_DEFAULT (at most
                                         * connections_max) */

        /* On a worker thread: serves the connection until it ends. socket_connection_fd() is the
         * connection; the skeleton closes it after run() returns. */
        void (*run)(SocketConnection *c, void *userdata);
        /* Instead of run, for a helper that never blocks: on the event loop, a new connection (non-blocking)
         * from the listener called listener (FileDescriptorName=, or "unknown"), the helper's from now on.
         * Such a helper caps its connections and times its requests itself, and says through keeps_alive
         * whether it may idle. */
        void (*accept)(SocketService *s, int fd, const char *listener, void *userdata);
        /* On the event loop, optional: whether the helper has work that must keep it running (connections
         * of its own, requests waiting); asked whenever socket_service_update_idle() runs. */
        bool (*keeps_alive)(SocketService *s, void *userdata);
        /* On the event loop, optional: SIGTERM or SIGINT arrived, after the listeners were closed to new
         * connections (an accept helper answers what waits, the service exits when it returns). */
        void (*stop)(SocketService *s, void *userdata);
        /* On the event loop, optional: a connection beyond connections_max, closed after it returns. */
        void (*busy)(SocketService *s, int fd, void *userdata);
        /* On the event loop, optional: workers were joined (a helper's chance to expire its own state). */
        void (*released)(SocketService *s, void *userdata);
        void *userdata;
} SocketServiceConfig;

int socket_service_new(const SocketServiceConfig *config, SocketService **ret);
SocketService *socket_service_free(SocketService *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(SocketService *, socket_service_free);

/* The listening sockets systemd passed: at least one, at most SOCKET_SERVICE_LISTEN_FDS_MAX, each a
 * listening AF_UNIX stream socket (-ENOTSOCK otherwise, -EBADF when there is none). */
int socket_service_listen_systemd(SocketService *s);
/* A listening socket made by the caller (tests), checked the same way; taken over even on failure. */
int socket_service_add_listener(SocketService *s, int fd, const char *name);
size_t socket_service_n_listeners(SocketService *s);
/* The FileDescriptorName= of listener i, "unknown" without one. */
const char *socket_service_listener_name(SocketService *s, size_t i);

/* Arms the idle timer when nothing keeps the service alive (no worker, keeps_alive says no), unless it is
 * counting down already; stops it otherwise. A helper with state of its own calls it when that changes. */
void socket_service_update_idle(SocketService *s);

/* The event loop, for a helper's own sources on the main thread. */
sd_event *socket_service_event(SocketService *s);

/* Runs until idle or stopped, then joins every worker. Returns 0, or a negative errno of the loop. */
int socket_service_run(SocketService *s);

typedef struct SocketServiceStats {
        unsigned connections;           /* accepted, not yet freed */
        unsigned workers;               /* threads of the pool, not yet joined */
        unsigned workers_idle;          /* of them, serving no connection */
        unsigned workers_started;       /* threads started since socket_service_new() */
} SocketServiceStats;

/* On the event loop (e.g. in released): the pool as it is. */
void socket_service_get_stats(SocketService *s, SocketServiceStats *ret);

/* Whether SIGTERM or SIGINT arrived: a worker ends its connection after the request under way. */
bool socket_service_stopping(SocketService *s);

/* ---- on a worker thread ---- */

int socket_connection_fd(SocketConnection *c);
/* The connection is fd from now on (one handed over through the accepted socket, which is closed). */
void socket_connection_set_fd(SocketConnection *c, int fd);
/* Starts the deadline of a request head, unless one runs already. -ESHUTDOWN when the service stops:
 * no further request is read on this connection. */
int socket_connection_head_begin(SocketConnection *c);
/* Ends the deadline: 0, or -ETIMEDOUT when it had passed (the read side is shut down by then). */
int socket_connection_head_end(SocketConnection *c);
/* Whether the head's deadline passed (a read that returned 0 or failed tells a timeout from a client
 * that went away by this). */
bool socket_connection_head_expired(SocketConnection *c);
SocketService *socket_connection_service(SocketConnection *c);

/* ---- the command line ---- */

typedef struct SocketServiceOption {
        const char *name;               /* a long option with a value: --name VALUE or --name=VALUE */
        const char **ret_value;         /* set when given */
} SocketServiceOption;

/* Parses argv: --help (or -h) prints "Usage: PROGRAM usage" and summary, --version the version; options
 * is the helper's own; exactly n_positional arguments are left, put into ret_positional[]. Returns 1 to
 * go on, 0 when --help or --version was answered (exit successfully), -EINVAL for a usage error (logged). */
int socket_service_parse_argv(int argc, char *argv[], const char *usage, const char *summary,
                              const SocketServiceOption *options, size_t n_options,
                              size_t n_positional, char **ret_positional);
