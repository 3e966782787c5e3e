/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-dockerproxy: the Docker Engine API as one channel's agents may use it (loop-dockerproxy@NAME.service),
 * started by loop-dockerproxy@NAME.socket on /run/loop/NAME/docker.sock, which the runner bind-mounts
 * into the channel's agent containers as /var/run/docker.sock.
 *
 * This file is main(), the skeleton's callbacks and the connection's thread; the logic is in
 * src/dockerproxy/ (dockerproxy-request.h runs a request through its stages). The helper runs on the
 * skeleton every helper shares (src/shared/socket-service.h): it takes the socket from systemd, exits
 * when idle, drains on SIGTERM and joins every connection's thread.
 *
 * A connection is served by a thread of its own and carries requests one after the other (HTTP/1.1
 * keep-alive, as the docker CLI and Testcontainers use it), each read, checked and journaled on its own;
 * the caller is identified once per connection (SO_PEERCRED is fixed at connect), and one engine
 * connection is kept per client connection while the engine's answers are framed. A hijacked stream,
 * a streamed body, an unframed answer or "Connection: close" ends the connection after its request.
 * Per request:
 *   1. the head is read (at most PROXY_HEAD_TIMEOUT_USEC for the whole request: slow clients are cut off)
 *      and parsed strictly (src/shared/http-server.h): smuggling shapes, bad bytes and oversize heads never get
 *      further; the target is normalised (src/dockerproxy/dockerproxy-path.h) and only the normalised one is used;
 *   2. a JSON body (every endpoint but the streamed ones: build contexts, image tarballs, archive
 *      uploads) is read whole, at most PROXY_BODY_MAX, and parsed (src/dockerproxy/dockerproxy-policy.h); a build
 *      context (builds on) is read whole too, at most PROXY_BUILD_CONTEXT_MAX, and its Dockerfile
 *      checked before the engine gets any of it (src/dockerproxy/dockerproxy-build.h);
 *   3. the endpoint must be in the built-in table (src/dockerproxy/dockerproxy-endpoint.h) at API 1.24 or later,
 *      whatever the rules say; the policy decides (http rules, body rules, default); the JSON body is
 *      rebuilt from the fields the proxy knows, every value checked (src/dockerproxy/dockerproxy-body.h); a
 *      container, exec, volume or network named in the path is resolved once to its id, which the
 *      request then names, and must be the channel's (others' answer as missing ones,
 *      src/dockerproxy/dockerproxy-ownership.h): one of the channel's nested containers (labels loop-channel=NAME, loop-type=nested);
 *      image references are normalised, the operator's images kept, and the names a channel gives
 *      images its own (src/dockerproxy/dockerproxy-image.h);
 *      lists and prunes of containers are scoped to them; a create is refused beyond the channel's
 *      count and rewritten into the channel's policy (src/dockerproxy/dockerproxy-nested.h); "approve" asks a
 *      human through the channel's loop-gate@NAME (POST /api/gate/container-approval, with the token
 *      of the calling container, found from its cgroup);
 *   4. an allowed request is sent to the engine as a new request (normalised target, hop-by-hop headers
 *      dropped, the body re-framed), the response streamed back as it comes, and attach and exec start
 *      become a raw two-way stream once the engine has switched protocols; a start, restart or attach
 *      of a container with pinned binds is made with the channel's running containers frozen (cgroup
 *      v2 freezer, src/shared/cgroup-freeze.h) from the last pin check until the engine has answered, so that
 *      none of them can swap a bind source before the runtime mounts it.
 * Every request is one journal entry (dockerproxy-request: method, path, rule, decision, status,
 * latency, the caller, the body's field names, what a start froze), never with the query, a header or
 * a body value; every error the proxy answers itself is a deny.
 *
 * "loop-dockerproxy --thaw CHANNEL" (the unit's ExecStopPost=) thaws what a proxy that died during a
 * frozen start left frozen, from the record in its runtime directory; the service does so at start.
 *
 * Settings come from the environment loop-generator writes into the unit's drop-in:
 *   LOOP_DOCKERPROXY_ENGINE_SOCKET   the engine's socket (default: Podman's rootful one, else Docker's)
 *   LOOP_DOCKERPROXY_POLICY          the channel's policy document (proxy-policy.json: default_decision,
 *                                    http_rules, body_rules), whose rules go before the built-in ones;
 *                                    default: $CREDENTIALS_DIRECTORY/policy, else the built-in rules alone
 *   LOOP_DOCKERPROXY_WORK_DIR        the channel's work dir, for the built-in rules
 *   LOOP_DOCKERPROXY_CONTAINERS_MAX  nested containers the channel may have (default 16;
 *                                    gates.docker_proxy.containers_max)
 *   LOOP_DOCKERPROXY_NETWORK         "none": nested containers get no network (the agent has none and
 *                                    gates.docker_proxy.nested_network is off); "engine" (default): as asked
 *   LOOP_DOCKERPROXY_MASKED_PATHS    the channel's masked /proc and /sys paths, ':'-separated
 *   LOOP_DOCKERPROXY_BUILD           "1": POST /build is served (gates.docker_proxy.build; default 0)
 *   LOOP_DOCKERPROXY_PROTECTED_IMAGES the operator's images (agent, Chrome), ' '-separated, beside
 *                                    every loop-* repository: never tagged, committed or removed
 *   RUNTIME_DIRECTORY                where the seccomp profile is written for Podman (default
 *                                    $LOOP_RUNTIME_DIR/NAME/dockerproxy)
 *   LOOP_DOCKERPROXY_IDLE_SEC        how long to linger without connections (default 60)
 *   LOOP_RUNTIME_DIR                 where the channel's gate socket and tokens are (default /run/loop) */

#include <curl/curl.h>
#include <systemd/sd-daemon.h>

#include "dockerproxy-record.h"
#include "dockerproxy-request.h"
#include "dockerproxy-settings.h"
#include "log.h"

/* A connection, on a worker thread of the skeleton: its requests one after the other. */
static void conn_run(SocketConnection *sc, void *userdata) {
        _cleanup_(proxy_conn_freep) ProxyConn *c = NULL;

        if (proxy_conn_new(userdata, sc, socket_connection_fd(sc), &c) < 0) {
                log_oom();
                return;
        }
        proxy_conn_serve(c);
}

/* ---- the main thread: the skeleton's callbacks ---- */

/* A connection beyond PROXY_CONNECTIONS_MAX: 503 before it is a request, journaled per peer. */
static void on_busy(SocketService *s, int fd, void *userdata) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        DockerProxy *p = userdata;
        struct ucred cred = {};
        socklen_t len = sizeof(cred);

        (void) getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        (void) send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (proxy_refusal_journaled(p, "busy", len == sizeof(cred) ? cred.pid : 0, len == sizeof(cred) ? cred.uid : (uid_t) -1))
                log_warning("%u connections at once, refusing one of pid %d.", PROXY_CONNECTIONS_MAX,
                            len == sizeof(cred) ? (int) cred.pid : 0);
}

/* The refusals' summaries are due when their window ends, whether or not a connection comes or goes
 * then: a timer on the loop for the earliest, armed again after each (workers count, the loop expires). */
static int on_refusals_due(sd_event_source *source, uint64_t usec, void *userdata);

static void refusals_schedule(DockerProxy *p) {
        uint64_t next;
        int r;

        proxy_refusals_expire(p, clock_usec(CLOCK_MONOTONIC));
        next = proxy_refusals_next_deadline(p);
        if (next == UINT64_MAX)
                return;
        if (!p->refusal_timer) {
                r = sd_event_add_time(socket_service_event(p->service), &p->refusal_timer, CLOCK_MONOTONIC, next, 0,
                                      on_refusals_due, p);
                if (r < 0)
                        log_warning_errno(r, "Cannot arm the refusals' summary timer, summing up at the next connection: %m");
                return;
        }
        (void) sd_event_source_set_time(p->refusal_timer, next);
        (void) sd_event_source_set_enabled(p->refusal_timer, SD_EVENT_ONESHOT);
}

static int on_refusals_due(sd_event_source *source, uint64_t usec, void *userdata) {
        refusals_schedule(userdata);
        return 0;
}

static void on_released(SocketService *s, void *userdata) {
        refusals_schedule(userdata);
}

static int run(int argc, char *argv[]) {
        _cleanup_(proxy_done) DockerProxy p = { .create_lock = PTHREAD_MUTEX_INITIALIZER, .start_lock = PTHREAD_MUTEX_INITIALIZER,
                    .not_found_lock = PTHREAD_MUTEX_INITIALIZER, .refusal_lock = PTHREAD_MUTEX_INITIALIZER };
        _cleanup_(socket_service_freep) SocketService *service = NULL;
        const char *reason;
        char *channel = NULL;
        int r;

        log_setup();
        if (argc == 3 && streq(argv[1], "--thaw")) {
                _cleanup_free_ char *dir = NULL;
                if (channel_name_check(argv[2], &reason) < 0)
                        return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", argv[2], reason);
                if (proxy_state_dir(argv[2], &dir) < 0)
                        return log_oom();
                return proxy_thaw_leftovers(dir);
        }
        r = socket_service_parse_argv(argc, argv, "[--thaw] CHANNEL",
                                      "The Docker API proxy of a channel, started by loop-dockerproxy@CHANNEL.socket;\n"
                                      "with --thaw, thaws what a proxy that died during a frozen start left frozen.",
                                      NULL, 0, 1, &channel);
        if (r <= 0)
                return r;
        if (channel_name_check(channel, &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", channel, reason);
        p.channel = strdup(channel);
        if (!p.channel)
                return log_oom();
        r = proxy_settings(&p);
        if (r < 0)
                return r;
        (void) proxy_thaw_leftovers(p.state_dir);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return log_error_errno(ENOMEM, "Cannot initialise libcurl.");
        proxy_probe_engine(&p);

        r = audit_limiter_new(PROXY_REFUSED_PER_WINDOW, PROXY_REFUSED_WINDOW_USEC, &p.refusals);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the refusal limiter: %m");
        r = socket_service_new(&(SocketServiceConfig) {
                        .connections_max = PROXY_CONNECTIONS_MAX,
                        .idle_usec = p.idle_usec,
                        /* a backstop just after the proxy's own deadline, which answers 408 */
                        .head_usec = PROXY_HEAD_TIMEOUT_USEC + 1000000ULL,
                        .stack_size = PROXY_WORKER_STACK,
                        .run = conn_run,
                        .busy = on_busy,
                        .released = on_released,
                        .userdata = &p,
                }, &service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        p.service = service;
        r = socket_service_listen_systemd(service);
        if (r < 0)
                return log_error_errno(r, "Expected listening AF_UNIX stream sockets from loop-dockerproxy@NAME.socket: %m");

        log_debug("Docker API proxy of channel %s ready (engine %s, at most %" PRIu64 " containers%s%s).",
                  p.channel, p.engine_socket, p.containers_max, p.cgroup_parent ? ", slice " : "", strempty(p.cgroup_parent));
        (void) sd_notify(false, "READY=1\nSTATUS=Forwarding the Docker API.");

        r = socket_service_run(service);
        p.refusal_timer = sd_event_source_unref(p.refusal_timer);
        proxy_refusals_expire(&p, UINT64_MAX);        /* what is still counted gets its summary */
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
