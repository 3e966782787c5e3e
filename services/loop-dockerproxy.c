/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-dockerproxy: the Docker Engine API as one channel's agents may use it (loop-dockerproxy@NAME.service),
 * started by loop-dockerproxy@NAME.socket on /run/loop/NAME/docker.sock, which the runner bind-mounts
 * into the channel's agent containers as /var/run/docker.sock.
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
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "audit.h"
#include "audit-limiter.h"
#include "cgroup-freeze.h"
#include "config.h"
#include "curl-buffer.h"
#include "dockerproxy-body.h"
#include "dockerproxy-build.h"
#include "dockerproxy-endpoint.h"
#include "dockerproxy-image.h"
#include "dockerproxy-nested.h"
#include "dockerproxy-ownership.h"
#include "dockerproxy-path.h"
#include "dockerproxy-policy.h"
#include "dockerproxy-registry.h"
#include "engine.h"
#include "seccomp-profile.h"
#include "socket-service.h"
#include "gate-token.h"
#include "http-server.h"
#include "io-util.h"
#include "log.h"
#include "strv.h"
#include "text-escape.h"
#include "unit-name.h"

#define PROXY_CONNECTIONS_MAX 128U
#define PROXY_HEADER_SIZE_MAX (16U * 1024U)
#define PROXY_HEADERS_MAX 64U
#define PROXY_HEAD_TIMEOUT_USEC (30ULL * 1000000ULL)    /* to send a whole request (slowloris) */
#define PROXY_ENGINE_TIMEOUT_SEC 10                     /* the proxy's own questions to the engine */
#define PROXY_KEEPALIVE_IDLE_USEC (30ULL * 1000000ULL)  /* a kept connection without a next request */
#define PROXY_BODY_IDLE_TIMEOUT_MS 60000                /* a streamed body that stalls this long is cut */
#define PROXY_RESPONSE_HEAD_MAX (64U * 1024U)
#define PROXY_IO_BUFFER (64U * 1024U)           /* below malloc's mmap threshold: no mmap per request */
#define PROXY_IN_INITIAL (64U * 1024U)          /* the request buffer grows from this to its cap */
#define PROXY_IDLE_SEC_DEFAULT 60U
#define PROXY_CONTAINERS_MAX_DEFAULT 16U
#define PROXY_APPROVAL_TIMEOUT_SEC 900L
#define PROXY_APPROVAL_REPLY_MAX (64U * 1024U)
#define PROXY_DISPLAY_MAX 512U
#define PROXY_WORKER_STACK (256U * 1024U)      /* a connection's thread */

typedef struct Proxy {
        char *channel;
        char *engine_socket;
        char *gate_socket;
        char *cgroup_parent;                    /* the channel's slice when the engine uses systemd's cgroups */
        char *state_dir;                        /* the seccomp profile's file, for Podman */
        char **masked_paths;
        char *work_dir;                         /* the channel's; its owner is who root on the host makes binds as */
        EgressPolicy *egress;                   /* the registries pulls and pushes may reach; NULL: none */
        bool network_none;
        bool build;                             /* gates.docker_proxy.build: POST /build is served */
        char **protected_images;                /* the operator's images, beside every loop-* one */
        EngineKind engine_kind;                 /* found at start, or at the first create */
        char *seccomp_option;                   /* for engine_kind, made with it */
        ProxyPolicy *policy;
        uint64_t containers_max;
        uint64_t idle_usec;
        pthread_mutex_t create_lock;            /* count-then-create is one step per channel */
        pthread_mutex_t start_lock;             /* one frozen start at a time; pause and unpause wait for it */
        pthread_mutex_t not_found_lock;
        char *not_found[_PROXY_OBJECT_KIND_MAX]; /* the engine's 404 body for each kind, the probe's id in it */
        pthread_mutex_t refusal_lock;           /* guards refusals: the workers share it */
        AuditLimiter *refusals;                 /* refusals before a request is a caller's: journaled per peer */
        sd_event_source *refusal_timer;         /* on the loop: when the earliest window of refusals ends */
        SocketService *service;
} Proxy;

typedef struct Conn {
        Proxy *proxy;
        SocketConnection *sc;                   /* the skeleton's: its fd, the head's deadline, the drain */
        int fd;
        pid_t peer_pid;
        uid_t peer_uid;
        gid_t peer_gid;
        char *peer_name;                        /* the calling container's name, NULL for the host */
        bool peer_known;                        /* peer_check() said yes for this connection */
        int up;                                 /* the engine connection kept from the last request */
        unsigned n_requests;                    /* requests this connection carried before this one */
        uint64_t start_usec;
        uint64_t deadline_usec;
        bool complete;                          /* the whole request is read: consumed bytes of in */
        size_t consumed;
        bool keep_alive;                        /* another request may follow the answer */
        /* I/O buffers (PROXY_IO_BUFFER each, the response head's PROXY_RESPONSE_HEAD_MAX), allocated at
         * the first use and kept for the connection's next requests */
        char *io, *io_scratch, *response_head;
        /* the request as read */
        char *in;
        size_t in_size, in_allocated;
        HttpRequest head;
        size_t head_size;
        uint64_t content_length;
        ProxyTarget target;
        /* the http rules' verdict for the last request's method and path, which depends on nothing else
         * (the policy is fixed for the process's life): a client polling one endpoint on a kept
         * connection (a list, an inspect in a wait loop) is not run through the rules' regexes again */
        char *http_verdict_path;
        char http_verdict_method[HTTP_METHOD_MAX + 1];
        ProxyVerdict http_verdict;
        /* the record */
        const char *rule;
        char rule_buf[PROXY_RULE_ID_MAX];
        const char *decision;
        const char *actor;
        char *actor_owned;                      /* the human's name from the gate */
        char *reason;
        int status;
        json_object *default_network;           /* GET /networks/REF of the engine's default network */
        /* a start of a container with pinned binds: the channel's containers frozen around it */
        char **frozen;                          /* the cgroups this request froze, until thawed */
        int frozen_root_fd;                     /* the cgroup2 mount they are in */
        bool froze;                             /* the record says how many and for how long */
        bool unjournaled;                       /* this refusal is counted in a summary instead */
        bool start_locked;                      /* holds the proxy's start_lock until the thaw */
        unsigned n_frozen;
        uint64_t frozen_since, frozen_usec;
        /* a Podman build given this process's network namespace by its /proc path: the engine's answer
         * is read to its end even when the client left, so the process outlives the build's RUN steps
         * and that path never names a recycled pid's namespace */
        bool hold_until_engine_done;
        bool body_changed;                      /* the parsed body is forwarded, not the one sent */
        char *fields;                           /* the body's fields with a value, or the one refused */
} Conn;

static int proxy_seccomp_option(Proxy *p);
static void proxy_probe_engine(Proxy *p);
static int engine_connect_socket(Proxy *p);

/* Whether the proxy's network namespace has no interface but loopback (PrivateNetwork=). Read from
 * /proc/self/net/dev: if_nameindex() asks netlink, which RestrictAddressFamilies=AF_UNIX refuses. */
static bool proxy_network_is_isolated(void) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        char *line, *save = NULL;
        unsigned n = 0;

        if (read_full_file_at(AT_FDCWD, "/proc/self/net/dev", 64 * 1024, false, &text, &size) < 0)
                return false;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *colon = strchr(line, ':');
                if (n++ < 2 || !colon)          /* the two header lines */
                        continue;
                *colon = 0;
                line += strspn(line, " ");
                if (!streq(line, "lo"))
                        return false;
        }
        return n >= 2;
}

/* ---- the journal ---- */

/* The fields of fixed form (a method, a rule id, numbers) are formatted into buffers on the stack: this
 * runs for every request. The values of free form (the path, the reason, the approver's name) are
 * allocated, each once. */
#define PROXY_RECORD_FIELD_MAX 128U

/* Refusals that come before anything is the caller's request (a caller that is not one of the channel's
 * containers, a connection beyond PROXY_CONNECTIONS_MAX) can be caused by anyone who reaches the socket,
 * at any rate: PROXY_REFUSED_PER_WINDOW per peer and window are journaled one by one, the rest of a burst
 * as one record with the count. Every request of a caller that passed the check is journaled. */
#define PROXY_REFUSED_PER_WINDOW 3U
#define PROXY_REFUSED_WINDOW_USEC (10ULL * 1000000ULL)

/* key: "RULE:PEER" */
static void refusals_summary(const char *key, uint64_t suppressed, void *userdata) {
        Proxy *p = userdata;
        _cleanup_free_ char *rule = NULL, *f_dropped = NULL, *f_limit = NULL, *f_peer = NULL, *f_rule = NULL;
        const char *colon = key ? strchr(key, ':') : NULL;
        const char *peer = colon ? colon + 1 : "peers beyond the count";

        rule = colon ? strndup(key, (size_t) (colon - key)) : strdup("refused");
        if (!rule ||
            asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", PROXY_REFUSED_PER_WINDOW) < 0 ||
            asprintf(&f_peer, "LOOP_PEER=%s", colon ? peer : "beyond-the-count") < 0 ||
            asprintf(&f_rule, "LOOP_RULE=%s", rule) < 0) {
                log_oom();
                return;
        }
        char *extra[] = { (char *) "LOOP_KIND=docker", (char *) "LOOP_DECISION=deny", f_rule, f_dropped, f_limit,
                          f_peer, NULL };
        AuditFields f = { .channel = p->channel, .extra = extra };
        (void) audit_log(AUDIT_DOCKERPROXY_REQUEST, LOG_WARNING, &f,
                         "Docker API deny: %" PRIu64 " more connections or requests of %s refused (rule %s) in %llu s "
                         "(the first %u journaled one by one).", suppressed, peer, rule,
                         PROXY_REFUSED_WINDOW_USEC / 1000000ULL, PROXY_REFUSED_PER_WINDOW);
}

/* Whether this refusal of peer is journaled by itself (else it is counted for a summary). */
static bool refusal_journaled(Proxy *p, const char *rule, pid_t pid, uid_t uid) {
        char key[96];
        int r;

        if (!p->refusals)
                return true;
        (void) snprintf(key, sizeof(key), "%s:pid %d uid %u", rule, (int) pid, (unsigned) uid);
        pthread_mutex_lock(&p->refusal_lock);
        r = audit_limiter_admit(p->refusals, key, clock_usec(CLOCK_MONOTONIC), refusals_summary, p);
        pthread_mutex_unlock(&p->refusal_lock);
        return r != 0;  /* out of memory: journaled rather than lost */
}

static void refusals_expire(Proxy *p, uint64_t now) {
        if (!p->refusals)
                return;
        pthread_mutex_lock(&p->refusal_lock);
        audit_limiter_expire(p->refusals, now, refusals_summary, p);
        pthread_mutex_unlock(&p->refusal_lock);
}

static uint64_t refusals_next_deadline(Proxy *p) {
        uint64_t next;

        if (!p->refusals)
                return UINT64_MAX;
        pthread_mutex_lock(&p->refusal_lock);
        next = audit_limiter_next_deadline(p->refusals);
        pthread_mutex_unlock(&p->refusal_lock);
        return next;
}

static char *record_field(const char *name, const char *value) {
        size_t n = strlen(name), v = strlen(value);
        char *s = malloc(n + v + 1);

        if (s)
                memcpy(mempcpy(s, name, n), value, v + 1);
        return s;
}

static void conn_record(Conn *c) {
        _cleanup_free_ char *path = NULL, *reason = NULL, *f_path = NULL, *f_reason = NULL, *f_actor = NULL,
                *f_fields = NULL, *first_line = NULL;
        char f_peer[PROXY_RECORD_FIELD_MAX], f_peer_uid[PROXY_RECORD_FIELD_MAX], f_method[PROXY_RECORD_FIELD_MAX], f_rule[PROXY_RECORD_FIELD_MAX], f_status[PROXY_RECORD_FIELD_MAX],
                f_latency[PROXY_RECORD_FIELD_MAX], f_frozen[PROXY_RECORD_FIELD_MAX], f_frozen_us[PROXY_RECORD_FIELD_MAX];
        const char *method = c->head.method ?: "-";
        uint64_t latency = clock_usec(CLOCK_MONOTONIC) - c->start_usec;
        bool deny = !streq_ptr(c->decision, "allow");

        if (c->unjournaled)     /* counted for a summary record (refusal_journaled()) */
                return;
        /* a request that never parsed: what it began with, so that the record says what was refused */
        if (!c->target.path && !c->head.path && c->in && c->in_size > 0) {
                size_t n = 0;
                while (n < c->in_size && n < PROXY_DISPLAY_MAX && c->in[n] != '\r' && c->in[n] != '\n' && c->in[n] != 0)
                        n++;
                first_line = strndup(c->in, n);
        }
        path = text_escape_display(c->target.path ?: c->head.path ?: strempty(first_line), PROXY_DISPLAY_MAX);
        reason = text_escape_display(strempty(c->reason), PROXY_DISPLAY_MAX);
        if (!path || !reason)
                goto oom;
        f_path = record_field("LOOP_PATH=", path);
        f_reason = record_field("LOOP_REASON=", reason);
        f_actor = record_field("LOOP_ACTOR=", c->actor ?: "policy");
        if (!f_path || !f_reason || !f_actor)
                goto oom;
        /* the method is a token of at most HTTP_METHOD_MAX bytes (src/shared/http-server.c) */
        snprintf(f_method, sizeof(f_method), "LOOP_METHOD=%s", method);
        snprintf(f_rule, sizeof(f_rule), "LOOP_RULE=%s", strna(c->rule));
        snprintf(f_status, sizeof(f_status), "LOOP_STATUS=%d", c->status);
        snprintf(f_latency, sizeof(f_latency), "LOOP_LATENCY_NS=%" PRIu64, latency * 1000U);
        snprintf(f_peer, sizeof(f_peer), "LOOP_PEER_PID=%d", (int) c->peer_pid);
        snprintf(f_peer_uid, sizeof(f_peer_uid), "LOOP_PEER_UID=%d", (int) c->peer_uid);
        char *extra[16] = { (char *) "LOOP_KIND=docker", f_method, f_path, f_rule,
                            (char *) (deny ? "LOOP_DECISION=deny" : "LOOP_DECISION=allow"), f_status, f_latency,
                            f_actor, f_peer, f_peer_uid };
        size_t n = 10;
        if (!isempty(c->fields)) {
                f_fields = record_field("LOOP_FIELDS=", c->fields);
                if (!f_fields)
                        goto oom;
                extra[n++] = f_fields;
        }
        if (c->froze) {         /* a start with pins: how many of the channel's containers it froze, how long */
                snprintf(f_frozen, sizeof(f_frozen), "LOOP_FROZEN=%u", c->n_frozen);
                snprintf(f_frozen_us, sizeof(f_frozen_us), "LOOP_FROZEN_US=%" PRIu64, c->frozen_usec);
                extra[n++] = f_frozen;
                extra[n++] = f_frozen_us;
        }
        if (!isempty(c->reason))
                extra[n++] = f_reason;
        extra[n] = NULL;
        AuditFields f = { .channel = c->proxy->channel, .container = c->peer_name, .extra = extra };
        (void) audit_log(AUDIT_DOCKERPROXY_REQUEST, deny ? LOG_WARNING : LOG_INFO, &f,
                         "Docker API %s: %s %s -> %d (rule %s%s%s)", deny ? "deny" : "allow", method, path,
                         c->status, strna(c->rule), isempty(c->reason) ? "" : ": ", reason);
        return;
oom:
        log_oom();
}

/* ---- I/O ---- */

/* Waits until fd is ready for events, at most until deadline (CLOCK_MONOTONIC usec; UINT64_MAX: none). */
static int wait_fd(int fd, short events, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int timeout = -1, k;

                if (deadline != UINT64_MAX) {
                        uint64_t now = clock_usec(CLOCK_MONOTONIC);
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        timeout = (int) MIN((deadline - now + 999) / 1000, (uint64_t) INT32_MAX);
                }
                k = poll(&p, 1, timeout);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ETIMEDOUT;
                return 0;
        }
}

static int send_all(int fd, const void *data, size_t size) {
        const char *p = data;

        while (size > 0) {
                ssize_t k = send(fd, p, size, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                size -= (size_t) k;
        }
        return 0;
}

/* Two buffers in one sendmsg() where the socket takes them: a response head and the body that came with
 * it reach the client in one wake-up, not two. */
static int send_two(int fd, const void *a, size_t a_size, const void *b, size_t b_size) {
        struct iovec iov[2] = { { .iov_base = (void *) a, .iov_len = a_size }, { .iov_base = (void *) b, .iov_len = b_size } };
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

        while (iov[0].iov_len + iov[1].iov_len > 0) {
                ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                for (size_t i = 0; i < 2; i++) {
                        size_t n = MIN((size_t) k, iov[i].iov_len);
                        iov[i].iov_base = (char *) iov[i].iov_base + n;
                        iov[i].iov_len -= n;
                        k -= (ssize_t) n;
                }
                if (iov[0].iov_len == 0) {      /* sendmsg() takes the first entry first */
                        m.msg_iov = &iov[1];
                        m.msg_iovlen = 1;
                }
        }
        return 0;
}

/* Without a deadline the (blocking) socket is read at once: no poll() before it. */
static ssize_t recv_some(int fd, void *buf, size_t size, uint64_t deadline) {
        for (;;) {
                int r = deadline == UINT64_MAX ? 0 : wait_fd(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
                ssize_t k = recv(fd, buf, size, 0);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                return k < 0 ? -errno : k;
        }
}

/* Reads more of the request into c->in, growing it up to its cap; -EFBIG when that is full, 0 at EOF. */
static ssize_t conn_read_more(Conn *c) {
        const size_t cap = PROXY_HEADER_SIZE_MAX + PROXY_BODY_MAX + HTTP_CHUNKED_FRAMING_MAX;
        ssize_t k;

        if (c->in_size >= c->in_allocated) {
                size_t n = MIN(MAX(c->in_allocated * 2, (size_t) PROXY_IN_INITIAL), cap);
                char *p;
                if (c->in_allocated >= cap)
                        return -EFBIG;
                p = realloc(c->in, n);
                if (!p)
                        return -ENOMEM;
                c->in = p;
                c->in_allocated = n;
        }
        k = recv_some(c->fd, c->in + c->in_size, c->in_allocated - c->in_size, c->deadline_usec);
        if (k > 0)
                c->in_size += (size_t) k;
        return k;
}

/* ---- freezing the channel around a start ---- */

/* Thaws what this request froze (a no-op when it froze nothing or thawed already), before the client
 * hears anything: every answer goes through here. A cgroup gone with its container needs no thaw; one
 * that cannot be thawed stays in the record, which the next start of the service (or its ExecStopPost=)
 * thaws. */
static void conn_thaw(Conn *c) {
        int failed = 0;

        if (!c->start_locked)           /* nothing is frozen but under the lock */
                return;
        STRV_FOREACH(cg, c->frozen) {
                int r = cgroup_set_frozen(c->frozen_root_fd, *cg, false);
                if (r < 0 && r != -ENOENT) {
                        log_error_errno(r, "Cannot thaw cgroup %s of channel %s: %m", *cg, c->proxy->channel);
                        failed = r;
                }
        }
        if (failed == 0 && cgroup_freeze_record_remove(c->proxy->state_dir) < 0)
                log_warning("Cannot remove the record of the frozen cgroups in %s, ignoring.", c->proxy->state_dir);
        if (c->froze)
                c->frozen_usec = clock_usec(CLOCK_MONOTONIC) - c->frozen_since;
        c->frozen = strv_free(c->frozen);
        c->frozen_root_fd = safe_close(c->frozen_root_fd);
        /* released here, not when the request ends: an attach goes on streaming after the thaw (and
         * the start it waits for needs the lock) */
        c->start_locked = false;
        pthread_mutex_unlock(&c->proxy->start_lock);
}

/* ---- answers of the proxy itself ---- */

/* An answer of the proxy's own: status and a JSON body; reason is what the journal says. Every error
 * status is a deny in the record, whatever was decided before (a 502 after an allow included). */
static int conn_reply_body(Conn *c, int status, const char *rule, const char *reason, const char *body) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r;

        conn_thaw(c);
        c->status = status;
        if (rule)
                c->rule = rule;
        if (status >= 400 || !c->decision)
                c->decision = status < 400 ? "allow" : "deny";
        /* a request answered before its body was read ends its connection: the rest is not a request */
        if (!c->complete)
                c->keep_alive = false;
        r = http_response_format(status, "application/json", body, strlen(body), c->keep_alive, &buf, &size);
        if (r < 0)
                return r;
        if (!c->reason)
                c->reason = strdup(reason);
        /* journaled before the caller hears of it, like the gate's decisions */
        conn_record(c);
        c->rule = NULL;
        return send_all(c->fd, buf, size);
}

/* {"message": "..."}: what the docker CLI prints for an error. */
static int conn_reply(Conn *c, int status, const char *rule, const char *message) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        _cleanup_free_ char *text = NULL;

        if (asprintf(&text, "loop-dockerproxy: %s", message) < 0 || !o)
                return -ENOMEM;
        json_object_object_add(o, "message", json_object_new_string(text));
        return conn_reply_body(c, status, rule, message, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

/* An answer of the proxy's own for an allowed request (a default network, the network list). */
static int conn_answer_json(Conn *c, json_object *o) {
        _cleanup_free_ char *buf = NULL;
        const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        size_t size;
        int r;

        r = http_response_format(200, "application/json", body, strlen(body), c->keep_alive, &buf, &size);
        if (r < 0)
                return conn_reply(c, 500, NULL, "out of memory");
        c->status = 200;
        r = send_all(c->fd, buf, size);
        conn_record(c);
        c->rule = NULL;
        return r;
}

/* ---- the engine ---- */

/* A client of the engine for the proxy's own questions (inspect, list), with their time limit. */
static int engine_open(Proxy *p, Engine **ret) {
        int r = engine_new(p->engine_socket, ret);

        if (r >= 0)
                engine_set_timeout(*ret, PROXY_ENGINE_TIMEOUT_SEC);
        return r;
}

/* The inspect reply of a container, or an answer to the client saying why there is none. */
static int conn_inspect_container(Conn *c, const char *ref, json_object **ret) {
        _cleanup_(engine_freep) Engine *e = NULL;
        int r;

        r = engine_open(c->proxy, &e);
        if (r < 0)
                return conn_reply(c, 500, "engine", "out of memory"), r;
        r = engine_container_inspect(e, ref, ret);
        if (r < 0)
                return conn_reply(c, 502, "engine", "the engine cannot be asked about the container"), r;
        return 0;
}

typedef enum RefKind { REF_NONE, REF_CONTAINER, REF_EXEC, REF_VOLUME, REF_NETWORK } RefKind;

/* The container, exec, volume or network a path names: /containers/REF[/...], /exec/REF/...,
 * /volumes/REF, /networks/REF[/...]. The collections' own endpoints (POST .../create and .../prune,
 * GET /containers/json) name none; anything else under them names one, exactly as the engine's router
 * (case-sensitive) reads it: GET /volumes/create is the inspect of a volume called "create". */
static RefKind path_ref(const char *method, const char *path, char **ret) {
        const char *rest;
        RefKind kind;
        size_t n;

        *ret = NULL;
        if ((rest = startswith(path, "/containers/")))
                kind = REF_CONTAINER;
        else if ((rest = startswith(path, "/exec/")))
                kind = REF_EXEC;
        else if ((rest = startswith(path, "/volumes/")))
                kind = REF_VOLUME;
        else if ((rest = startswith(path, "/networks/")))
                kind = REF_NETWORK;
        else
                return REF_NONE;
        n = strcspn(rest, "/");
        if (kind != REF_EXEC && !rest[n] &&
            ((streq(method, "POST") && (streq(rest, "create") || streq(rest, "prune"))) ||
             (streq(method, "GET") && kind == REF_CONTAINER && streq(rest, "json"))))
                return REF_NONE;
        *ret = strndup(rest, n);
        return *ret ? kind : REF_NONE;
}

/* Whether the container or exec c's path names belongs to the channel's nested containers. Replies
 * itself (404, 403, 502, 400) and returns < 0 when it does not. */
/* Containers named elsewhere than the path: POST /commit?container=X (its file system becomes an
 * image), POST /networks/ID/connect|disconnect {"Container": X} (its network next to the agent's). */
static RefKind other_ref(Conn *c, json_object *body, char **ret) {
        const char *path = c->target.unversioned, *rest;
        json_object *v = NULL;

        *ret = NULL;
        if (!streq(c->head.method, "POST"))
                return REF_NONE;
        if (strcasecmp(path, "/commit") == 0)
                v = proxy_query_get(&c->target, "container", NULL);
        else if ((rest = startswith(path, "/networks/")) && strchr(rest, '/') &&
                 (strcasecmp(strchr(rest, '/'), "/connect") == 0 || strcasecmp(strchr(rest, '/'), "/disconnect") == 0)) {
                json_object_object_foreach(body, k, e)
                        if (strcasecmp(k, "Container") == 0)
                                v = e;
        } else
                return REF_NONE;
        /* missing or not a string: the engine refuses the request itself, nothing to own */
        if (!v || !json_object_is_type(v, json_type_string))
                return REF_NONE;
        *ret = strdup(json_object_get_string(v));
        return *ret ? REF_CONTAINER : REF_NONE;
}

/* Whether the container, exec, volume or network ref belongs to the channel. Replies itself (404, 403,
 * 502, 400) and returns < 0 when it does not. */
static const char *json_get_string_or_null(json_object *o) {
        return json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

/* ---- objects that are not the channel's answer as missing ones ---- */

static ProxyObjectKind ref_object_kind(RefKind kind) {
        switch (kind) {
        case REF_EXEC:
                return PROXY_OBJECT_EXEC;
        case REF_VOLUME:
                return PROXY_OBJECT_VOLUME;
        case REF_NETWORK:
                return PROXY_OBJECT_NETWORK;
        default:
                return PROXY_OBJECT_CONTAINER;
        }
}

/* The engine's 404 body for a missing object of kind (src/dockerproxy/dockerproxy-ownership.h), asked once. */
static int engine_not_found_template(Proxy *p, ProxyObjectKind kind, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *req = NULL, *t = NULL;
        char buf[PROXY_NOT_FOUND_MAX + 1];
        size_t size = 0;
        HttpResponseHead h = {};
        int r;

        pthread_mutex_lock(&p->not_found_lock);
        if (p->not_found[kind]) {
                *ret = strdup(p->not_found[kind]);
                pthread_mutex_unlock(&p->not_found_lock);
                return *ret ? 0 : -ENOMEM;
        }
        pthread_mutex_unlock(&p->not_found_lock);

        fd = engine_connect_socket(p);
        if (fd >= 0 && asprintf(&req, "GET %s HTTP/1.0\r\nHost: docker\r\n\r\n", proxy_probe_path(kind)) >= 0 &&
            send_all(fd, req, strlen(req)) >= 0) {
                uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_ENGINE_TIMEOUT_SEC * 1000000ULL;
                while (size < PROXY_NOT_FOUND_MAX) {
                        ssize_t k = recv_some(fd, buf + size, PROXY_NOT_FOUND_MAX - size, deadline);
                        if (k <= 0)
                                break;
                        size += (size_t) k;
                }
        }
        buf[size] = 0;
        r = http_response_head_parse(buf, size, PROXY_NOT_FOUND_MAX, &h);
        bool usable = r > 0 && h.status == 404 && !h.chunked && h.has_length && h.head_size + h.length == size &&
                strlen(buf + h.head_size) == h.length && proxy_not_found_is_template(buf + h.head_size);
        t = strdup(usable ? buf + h.head_size : proxy_not_found_fallback(kind));
        if (!t)
                return -ENOMEM;
        if (usable) {           /* kept for the process's life: the engine does not change under it */
                pthread_mutex_lock(&p->not_found_lock);
                if (!p->not_found[kind])
                        p->not_found[kind] = strdup(t);
                pthread_mutex_unlock(&p->not_found_lock);
        }
        *ret = TAKE_PTR(t);
        return 0;
}

/* Answers 404 for ref as the engine answers for a missing object of kind; why is for the journal. */
static int conn_reply_not_found(Conn *c, RefKind kind, const char *ref, const char *why) {
        _cleanup_free_ char *template = NULL, *body = NULL;

        if (engine_not_found_template(c->proxy, ref_object_kind(kind), &template) < 0 ||
            proxy_not_found_format(template, ref, &body) < 0)
                return conn_reply(c, 500, NULL, "out of memory");
        return conn_reply_body(c, 404, "ownership", why, body);
}

/* Whether the container, exec, volume or network ref belongs to the channel, resolved once: the engine
 * is asked about ref, the ownership checked on its answer, and the object's full id (a volume's name)
 * returned in *ret_id for the request to name instead of ref (a name or id prefix can be moved to
 * another container between a check and a use; an id cannot). Others' objects answer as missing ones.
 * Replies itself (404, 502, 400) and returns < 0 when it does not. ret_id may be NULL. */
static int conn_check_ref(Conn *c, RefKind kind, const char *ref, char **ret_id) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *inspect = NULL, *exec = NULL;
        const char *id = NULL, *exec_id = NULL;
        json_object *v;
        int r;

        if (!proxy_ref_is_valid(ref))
                return conn_reply(c, 400, "parse", "not a valid name or id"), -EINVAL;
        r = engine_open(c->proxy, &e);
        if (r < 0)
                return conn_reply(c, 500, "engine", "out of memory"), r;

        if (kind == REF_VOLUME || kind == REF_NETWORK) {
                r = kind == REF_VOLUME ? engine_volume_inspect(e, ref, &inspect) : engine_network_inspect(e, ref, &inspect);
                if (r == -ENOENT)
                        return conn_reply_not_found(c, kind, ref, kind == REF_VOLUME ? "no such volume" : "no such network"), r;
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked about the volume or network"), r;
                /* the engine's default networks may be looked at (Testcontainers reads the bridge's gateway),
                 * answered by the proxy itself without the containers on them; nothing else */
                if (kind == REF_NETWORK && !proxy_object_is_nested_of(inspect, c->proxy->channel) &&
                    proxy_network_is_engine_default(inspect) && streq(c->head.method, "GET") &&
                    streq(c->target.unversioned + strlen("/networks/"), ref)) {
                        if (proxy_network_redact(inspect) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        json_object_put(c->default_network);
                        c->default_network = TAKE_PTR(inspect);
                        return 0;
                }
                if (!proxy_object_is_nested_of(inspect, c->proxy->channel))
                        return conn_reply_not_found(c, kind, ref, kind == REF_VOLUME ?
                                                    "the volume is not one of the channel's own (answered as missing)" :
                                                    "the network is not one of the channel's own (answered as missing)"), -EPERM;
                id = proxy_inspect_id(ref_object_kind(kind), inspect);
                if (!id)
                        return conn_reply(c, 502, "engine", "the engine did not say which object it is"), -EBADMSG;
                if (ret_id && !(*ret_id = strdup(id)))
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return 0;
        }

        if (kind == REF_EXEC) {
                r = engine_exec_inspect(e, ref, &exec);
                if (r == -ENOENT)
                        return conn_reply_not_found(c, REF_EXEC, ref, "no such exec instance"), r;
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked about the exec instance"), r;
                exec_id = proxy_inspect_id(PROXY_OBJECT_EXEC, exec);
                if (!json_object_object_get_ex(exec, "ContainerID", &v) || !(ref = json_get_string_or_null(v)) || !exec_id)
                        return conn_reply(c, 502, "engine", "the engine did not say whose exec instance this is"), -EBADMSG;
        }
        r = engine_container_inspect(e, ref, &inspect);
        if (r == -ENOENT && kind == REF_EXEC)
                return conn_reply_not_found(c, REF_EXEC, exec_id, "the exec instance's container is gone"), r;
        if (r == -ENOENT)
                return conn_reply_not_found(c, REF_CONTAINER, ref, "no such container"), r;
        if (r < 0)
                return conn_reply(c, 502, "engine", "the engine cannot be asked about the container"), r;
        if (!proxy_container_is_nested_of(inspect, c->proxy->channel)) {
                if (kind == REF_EXEC)
                        return conn_reply_not_found(c, REF_EXEC, exec_id, "the exec instance's container is not one of "
                                                    "the channel's own (answered as missing)"), -EPERM;
                return conn_reply_not_found(c, REF_CONTAINER, ref, "the container is not one of the channel's own "
                                            "(answered as missing)"), -EPERM;
        }
        id = kind == REF_EXEC ? exec_id : proxy_inspect_id(PROXY_OBJECT_CONTAINER, inspect);
        if (!id)
                return conn_reply(c, 502, "engine", "the engine did not say which container it is"), -EBADMSG;
        if (ret_id && !(*ret_id = strdup(id)))
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return 0;
}

/* What the path names, and a container named in the query or body, must be the channel's; the request
 * goes on naming their ids. */
static int conn_check_ownership(Conn *c, json_object *body) {
        _cleanup_free_ char *ref = NULL, *other = NULL, *id = NULL, *other_id = NULL;
        RefKind kind;
        int r;

        kind = path_ref(c->head.method, c->target.unversioned, &ref);
        if (kind != REF_NONE) {
                if ((r = conn_check_ref(c, kind, ref, &id)) < 0)
                        return r;
                if (id && !streq(id, ref) && kind != REF_VOLUME) {
                        static const char * const prefixes[] = {
                                [REF_CONTAINER] = "/containers/", [REF_EXEC] = "/exec/", [REF_NETWORK] = "/networks/",
                        };
                        r = proxy_target_replace_ref(&c->target, prefixes[kind], ref, id);
                        if (r < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), r;
                }
        }
        kind = other_ref(c, body, &other);
        if (kind != REF_NONE) {
                if ((r = conn_check_ref(c, kind, other, &other_id)) < 0)
                        return r;
                if (strcasecmp(c->target.unversioned, "/commit") == 0) {
                        /* the parameter as the engine documents it, the only one */
                        const char *spelt = NULL;
                        if (proxy_query_get(&c->target, "container", &spelt)) {
                                _cleanup_free_ char *key = strdup(spelt);
                                if (!key)
                                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                                json_object_object_del(c->target.query, key);
                        }
                        r = json_object_object_add(c->target.query, "container", json_object_new_string(other_id));
                }
                else {
                        /* the body's key as the engine documents it, the only one (proxy_body_parse()
                         * refused keys that differ in case only) */
                        json_object_object_foreach(body, k, e) {
                                (void) e;
                                if (strcasecmp(k, "Container") == 0) {
                                        _cleanup_free_ char *key = strdup(k);
                                        if (!key)
                                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                                        json_object_object_del(body, key);
                                        break;
                                }
                        }
                        r = json_object_object_add(body, "Container", json_object_new_string(other_id));
                        c->body_changed = true;
                }
                if (r < 0)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        }
        return 0;
}

/* ---- names per channel ---- */

static bool network_is_engine_default_name(const char *name) {
        return streq(name, "bridge") || streq(name, "default") || streq(name, "podman") || streq(name, "none");
}

static int conn_refuse_name(Conn *c, const char *what, const char *name) {
        _cleanup_free_ char *msg = NULL, *shown = text_escape_display(name, PROXY_DISPLAY_MAX);

        if (!shown || asprintf(&msg, "the %s name %s is not the channel's: names of channel %s's %ss begin with "
                               "\"%s-\" or \"%s_\"", what, shown, c->proxy->channel, what, c->proxy->channel,
                               c->proxy->channel) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return conn_reply(c, 403, "names", msg), -EPERM;
}

/* A volume or network create names its object the channel's way; a volume without a name gets one. */
static int conn_check_create_name(Conn *c, json_object *body, bool volume) {
        json_object *name = NULL;
        _cleanup_free_ char *made = NULL;
        uint8_t random[16];

        if (json_object_object_get_ex(body, "Name", &name) && !isempty(json_object_get_string(name))) {
                if (!proxy_name_is_channels(c->proxy->channel, json_object_get_string(name)))
                        return conn_refuse_name(c, volume ? "volume" : "network", json_object_get_string(name));
                return 0;
        }
        if (!volume)
                return 0;               /* the engine refuses a network without a name */
        if (getrandom(random, sizeof(random), 0) != (ssize_t) sizeof(random))
                return conn_reply(c, 500, NULL, "no random bytes for a volume's name"), -EIO;
        if (asprintf(&made, "%s-%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x", c->proxy->channel,
                     random[0], random[1], random[2], random[3], random[4], random[5], random[6], random[7], random[8],
                     random[9], random[10], random[11], random[12], random[13], random[14], random[15]) < 0 ||
            json_object_object_add(body, "Name", json_object_new_string(made)) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return 0;
}

/* A container create's named volumes, networks and namespace-sharing containers must be the channel's.
 * A named volume that does not exist yet is made here, with the channel's labels, rather than by the
 * engine without them. Replies itself when refused. */
static int conn_check_references(Conn *c, json_object *body) {
        _cleanup_(proxy_references_done) ProxyReferences refs = {};
        _cleanup_(engine_freep) Engine *e = NULL;
        int r;

        r = proxy_container_references(body, &refs);
        if (r == -ENOMEM)
                return conn_reply(c, 500, NULL, "out of memory"), r;
        if (r < 0)
                return conn_reply(c, 400, "parse", "the create body names volumes or networks unreadably"), r;
        STRV_FOREACH(v, refs.volumes)
                if (!proxy_name_is_channels(c->proxy->channel, *v))
                        return conn_refuse_name(c, "volume", *v);
        STRV_FOREACH(n, refs.networks)
                if (!network_is_engine_default_name(*n) && !proxy_name_is_channels(c->proxy->channel, *n))
                        return conn_refuse_name(c, "network", *n);
        STRV_FOREACH(v, refs.volumes) {
                _cleanup_(json_object_putp) json_object *inspect = NULL, *create = NULL, *made = NULL;
                if (!proxy_ref_is_valid(*v))
                        return conn_reply(c, 400, "parse", "not a valid volume name"), -EINVAL;
                if (!e) {
                        if (engine_open(c->proxy, &e) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                }
                r = engine_volume_inspect(e, *v, &inspect);
                if (r != -ENOENT) {
                        if ((r = conn_check_ref(c, REF_VOLUME, *v, NULL)) < 0)
                                return r;
                        continue;
                }
                create = json_object_new_object();
                if (!create || json_object_object_add(create, "Name", json_object_new_string(*v)) < 0 ||
                    proxy_labels_force(create, c->proxy->channel) < 0)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                r = engine_volume_create(e, create, &made);
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot create the named volume"), r;
        }
        STRV_FOREACH(n, refs.networks)
                if ((r = conn_check_ref(c, REF_NETWORK, *n, NULL)) < 0)
                        return r;
        /* namespaces of another container: the channel's own, named by id from here on */
        json_object *hc = NULL;
        if (json_object_object_get_ex(body, "HostConfig", &hc) && json_object_is_type(hc, json_type_object)) {
                static const char * const modes[] = { "NetworkMode", "PidMode", "IpcMode" };
                for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
                        _cleanup_free_ char *id = NULL, *mode = NULL;
                        json_object *m = NULL;
                        const char *ref;
                        if (!json_object_object_get_ex(hc, modes[i], &m) || !json_object_is_type(m, json_type_string) ||
                            !(ref = startswith(json_object_get_string(m), "container:")))
                                continue;
                        if ((r = conn_check_ref(c, REF_CONTAINER, ref, &id)) < 0)
                                return r;
                        if (asprintf(&mode, "container:%s", id) < 0 ||
                            json_object_object_add(hc, modes[i], json_object_new_string(mode)) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                }
        }
        return 0;
}

static int count_nested(Proxy *p, Engine *e, uint64_t *ret) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ char *label = NULL;
        uint64_t n = 0;
        int r;

        if (asprintf(&label, PROXY_LABEL_CHANNEL "=%s", p->channel) < 0)
                return -ENOMEM;
        r = engine_container_list(e, label, true, &list);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(list); i++)
                n += streq_ptr(engine_container_label(json_object_array_get_idx(list, i), PROXY_LABEL_TYPE),
                               PROXY_TYPE_NESTED);
        *ret = n;
        return 0;
}

/* POST /containers/ID/start: the binds are judged again as they are now, symlinks resolved anew. A
 * source swapped for a symlink after the create (a directory of the workspace replaced by a link to
 * /etc) would otherwise be mounted wherever it points at start. Replies itself when refused; else
 * *ret_inspect is the container's inspect reply (its pins, checked again with the channel frozen). */
static int conn_recheck_start(Conn *c, const char *ref, json_object **ret_inspect) {
        _cleanup_(json_object_putp) json_object *inspect = NULL, *doc = NULL;
        json_object *hc;
        ProxyVerdict v;
        int r;

        r = conn_inspect_container(c, ref, &inspect);
        if (r < 0)
                return r;
        {
                _cleanup_free_ char *changed = NULL, *msg = NULL, *shown = NULL;
                r = proxy_binds_verify(inspect, &changed);
                if (r == -EXDEV) {
                        shown = text_escape_display(changed, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "the bind source %s changed since the container was created "
                                               "(checked again at start)", shown) < 0)
                                return -ENOMEM;
                        return conn_reply(c, 403, "bind-pin", msg), -EPERM;
                }
                if (r < 0)
                        return conn_reply(c, 403, "bind-pin", "the container's bind pins cannot be read"), r;
        }
        doc = json_object_new_object();
        if (!doc)
                return -ENOMEM;
        /* only the binds: the rest of what an engine reports (Podman's Runtime "oci", its defaults) is
         * not what the agent asked for and was judged at create */
        if (json_object_object_get_ex(inspect, "HostConfig", &hc)) {
                json_object *binds = NULL, *mounts = NULL, *h = json_object_new_object();
                if (!h)
                        return -ENOMEM;
                if (json_object_object_get_ex(hc, "Binds", &binds))
                        json_object_object_add(h, "Binds", json_object_get(binds));
                if (json_object_object_get_ex(hc, "Mounts", &mounts))
                        json_object_object_add(h, "Mounts", json_object_get(mounts));
                json_object_object_add(doc, "HostConfig", h);
        }
        proxy_policy_check_body(c->proxy->policy, "POST", "/containers/create", NULL, doc, NULL, &v);
        if (v.matched && v.decision == DECISION_DENY) {
                _cleanup_free_ char *msg = NULL;
                snprintf(c->rule_buf, sizeof(c->rule_buf), "%s", v.rule_id);
                if (asprintf(&msg, "%s (checked again at start)", v.message ?: "denied") < 0)
                        return -ENOMEM;
                return conn_reply(c, 403, c->rule_buf, msg), -EPERM;
        }
        *ret_inspect = TAKE_PTR(inspect);
        return 0;
}

/* Refuses a start of a pinned container that cannot be made with the channel frozen; thaws first
 * (conn_reply()), so nothing stays frozen. */
static int conn_refuse_unfrozen(Conn *c, int error, const char *what) {
        _cleanup_free_ char *msg = NULL;

        log_warning_errno(error, "Channel %s: %s, refusing the start of a container with pinned binds: %m",
                          c->proxy->channel, what);
        if (asprintf(&msg, "the channel's containers cannot be frozen for this start (%s: %s); a container "
                     "with pinned binds is never started unfrozen", what, strerror(-error)) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        c->decision = "deny";
        return conn_reply(c, 403, "bind-pin", msg), -EPERM;
}

/* The cgroup of one running container of the channel (list entry o): its init's unified cgroup, cut at
 * the component that names the container. 0 with NULL when it has no process (it stopped meanwhile). */
static int container_cgroup(Engine *e, json_object *o, char **ret) {
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        _cleanup_free_ char *proc = NULL, *text = NULL, *unified = NULL;
        json_object *id, *state, *pid;
        size_t size;
        int64_t n;
        int r;

        *ret = NULL;
        if (!json_object_object_get_ex(o, "Id", &id) || !json_object_is_type(id, json_type_string) ||
            strlen(json_object_get_string(id)) != 64)
                return -EBADMSG;
        r = engine_container_inspect(e, json_object_get_string(id), &inspect);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(inspect, "State", &state) || !json_object_object_get_ex(state, "Pid", &pid) ||
            !json_object_is_type(pid, json_type_int))
                return -EBADMSG;
        n = json_object_get_int64(pid);
        if (n <= 0)
                return 0;
        if (n > INT32_MAX || asprintf(&proc, "/proc/%" PRIi64 "/cgroup", n) < 0)
                return n > INT32_MAX ? -EBADMSG : -ENOMEM;
        r = read_full_file_at(AT_FDCWD, proc, CGROUP_PROC_FILE_MAX, true, &text, &size);
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        r = cgroup_proc_unified_path(text, &unified);
        if (r < 0)
                return r;
        return cgroup_path_of_container(unified, json_object_get_string(id), ret);
}

/* Freezes every running container of the channel (label loop-channel=NAME: the agent's and the nested
 * ones), the processes that can swap a bind source in the work dir. The cgroups are recorded before the
 * first is frozen; a cgroup frozen already (a paused container) is left as it is, and not thawed after.
 * Replies itself (403, rule bind-pin) when anything fails, having thawed what it froze. */
static int conn_freeze_channel(Conn *c) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_close_ int root_fd = -EBADF;
        _cleanup_free_ char *label = NULL;
        int r;

        c->froze = true;
        c->n_frozen = 0;
        c->frozen_since = clock_usec(CLOCK_MONOTONIC);
        r = cgroup2_root_open(&root_fd);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, "no cgroup2 hierarchy");
        if (asprintf(&label, PROXY_LABEL_CHANNEL "=%s", c->proxy->channel) < 0 || engine_open(c->proxy, &e) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        r = engine_container_list(e, label, false, &list);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, "the engine cannot list the channel's running containers");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                _cleanup_free_ char *cg = NULL;
                r = container_cgroup(e, json_object_array_get_idx(list, i), &cg);
                if (r < 0)
                        return conn_refuse_unfrozen(c, r, "a running container's cgroup cannot be found");
                if (!cg || strv_contains(paths, cg))
                        continue;
                r = cgroup_is_frozen(root_fd, cg);
                if (r < 0)
                        return conn_refuse_unfrozen(c, r, "a container's cgroup.freeze cannot be read");
                if (r > 0)
                        continue;
                if (strv_length(paths) >= CGROUP_FREEZE_MAX)
                        return conn_refuse_unfrozen(c, -E2BIG, "too many running containers");
                if (strv_consume(&paths, TAKE_PTR(cg)) < 0)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        }
        /* recorded first: a proxy that dies from here on leaves the list of what to thaw */
        r = cgroup_freeze_record_write(c->proxy->state_dir, paths);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, "the frozen cgroups cannot be recorded");
        c->frozen = TAKE_PTR(paths);
        c->frozen_root_fd = TAKE_FD(root_fd);
        r = cgroup_freeze_all(c->frozen_root_fd, c->frozen);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, r == -ETIMEDOUT ? "a container did not freeze" :
                                                                    "a container's cgroup.freeze cannot be written");
        c->n_frozen = (unsigned) strv_length(c->frozen);
        return 0;
}

/* ---- approvals ---- */

/* The container a process runs in: the 64-hex id in its cgroup (…/libpod-ID.scope, …/docker-ID.scope,
 * /docker/ID). -ENOMEDIUM when it runs in none (a process of the host). */
static int peer_container_id(pid_t pid, char **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t size;
        int r;

        if (pid <= 0 || asprintf(&path, "/proc/%d/cgroup", (int) pid) < 0)
                return -ESRCH;
        r = read_full_file_at(AT_FDCWD, path, 64 * 1024, true, &text, &size);
        if (r < 0)
                return r;
        for (char *p = text; *p; p++) {
                size_t n = strspn(p, "0123456789abcdef");
                if (n == 64 && (p == text || !strchr("0123456789abcdef", p[-1]))) {
                        *ret = strndup(p, 64);
                        return *ret ? 0 : -ENOMEM;
                }
                p += n ? n - 1 : 0;
        }
        return -ENOMEDIUM;
}

/* Who may use the channel's proxy: processes in the channel's own containers (label loop-channel=NAME,
 * not a nested one: those never get the socket), and root on the host (the operator, tests). The socket
 * is 0666 so that the agent's uid can connect; this is the check that keeps everyone else out. Answers
 * are cached per container for PROXY_PEER_CACHE_USEC. */
#define PROXY_PEER_CACHE_USEC (5ULL * 1000000ULL)
#define PROXY_PEER_CACHE_SIZE 16U

static pthread_mutex_t peer_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        char id[65];
        char name[GATE_CONTAINER_ID_MAX + 1];
        bool allowed;
        uint64_t until;
} peer_cache[PROXY_PEER_CACHE_SIZE];

static int peer_check(Conn *c, uid_t uid, char **ret_name) {
        _cleanup_free_ char *id = NULL;
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        json_object *config, *labels, *ch, *type, *name;
        uint64_t now = clock_usec(CLOCK_MONOTONIC);
        bool allowed;
        const char *n = NULL;
        int r;

        *ret_name = NULL;
        r = peer_container_id(c->peer_pid, &id);
        if (r == -ENOMEDIUM)
                return uid == 0 ? 0 : -EPERM;
        if (r < 0)
                return -EPERM;

        pthread_mutex_lock(&peer_cache_lock);
        for (size_t i = 0; i < PROXY_PEER_CACHE_SIZE; i++)
                if (streq(peer_cache[i].id, id) && peer_cache[i].until > now) {
                        allowed = peer_cache[i].allowed;
                        *ret_name = allowed ? strdup(peer_cache[i].name) : NULL;
                        pthread_mutex_unlock(&peer_cache_lock);
                        return allowed ? 0 : -EPERM;
                }
        pthread_mutex_unlock(&peer_cache_lock);

        r = engine_open(c->proxy, &e);
        if (r < 0)
                return r;
        r = engine_container_inspect(e, id, &inspect);
        if (r < 0)
                return r == -ENOENT ? -EPERM : r;
        allowed = json_object_object_get_ex(inspect, "Config", &config) &&
                json_object_object_get_ex(config, "Labels", &labels) &&
                json_object_object_get_ex(labels, PROXY_LABEL_CHANNEL, &ch) &&
                streq_ptr(json_object_get_string(ch), c->proxy->channel) &&
                !(json_object_object_get_ex(labels, PROXY_LABEL_TYPE, &type) &&
                  streq_ptr(json_object_get_string(type), PROXY_TYPE_NESTED));
        if (json_object_object_get_ex(inspect, "Name", &name) && json_object_get_string(name)) {
                n = json_object_get_string(name);
                n += *n == '/';
                if (!gate_container_id_is_valid(n))
                        n = NULL;
        }

        pthread_mutex_lock(&peer_cache_lock);
        size_t slot = 0;
        for (size_t i = 1; i < PROXY_PEER_CACHE_SIZE; i++)
                if (peer_cache[i].until < peer_cache[slot].until)
                        slot = i;
        snprintf(peer_cache[slot].id, sizeof(peer_cache[slot].id), "%s", id);
        snprintf(peer_cache[slot].name, sizeof(peer_cache[slot].name), "%s", strempty(n));
        peer_cache[slot].allowed = allowed;
        peer_cache[slot].until = now + PROXY_PEER_CACHE_USEC;
        pthread_mutex_unlock(&peer_cache_lock);

        if (allowed && n)
                *ret_name = strdup(n);
        return allowed ? 0 : -EPERM;
}

static int read_token(const char *channel, const char *container, char ret[static GATE_TOKEN_HEX_LEN + 1]) {
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = gate_token_dir_open(channel, &dir_fd);
        if (r < 0)
                return r;
        r = read_full_file_at(dir_fd, container, GATE_TOKEN_HEX_LEN + 1, true, &text, &size);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = 0;
        if (!gate_token_is_well_formed(text))
                return -EBADMSG;
        memcpy(ret, text, GATE_TOKEN_HEX_LEN + 1);
        return 0;
}

/* "docker:METHOD:/containers/ID-replaced/exec" (as "*"): ids and names replaced, so a session answer covers the kind
 * of request, not one container. */
static char *approval_cache_key(const Conn *c) {
        _cleanup_free_ char *ref = NULL;
        const char *path = c->target.unversioned;
        char *key = NULL;

        if (path_ref(c->head.method, path, &ref) != REF_NONE && ref) {
                const char *after = strchr(path + 1, '/');
                size_t prefix = (size_t) (after - path) + 1;
                const char *tail = after + 1 + strlen(ref);
                if (asprintf(&key, "docker:%s:%.*s*%s", c->head.method, (int) prefix, path, tail) < 0)
                        return NULL;
                return key;
        }
        if (asprintf(&key, "docker:%s:%s", c->head.method, path) < 0)
                return NULL;
        return key;
}

/* Asks loop-gate@NAME. Never fails: trouble is a deny with the reason in *ret_reason. */
static bool conn_ask_human(Conn *c, const ProxyVerdict *v, char **ret_actor, char **ret_reason) {
        _cleanup_free_ char *auth = NULL, *target = NULL, *key = NULL;
        _cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
        char token[GATE_TOKEN_HEX_LEN + 1];
        CurlBuffer buf = { .max = PROXY_APPROVAL_REPLY_MAX };
        struct curl_slist *headers = NULL;
        json_object *d, *a, *rs;
        bool allow = false;
        long code = 0;
        CURL *h;
        int r;

        *ret_actor = NULL;
        if (!c->peer_name) {
                *ret_reason = strdup("caller-unknown");
                return false;
        }
        r = read_token(c->proxy->channel, c->peer_name, token);
        if (r < 0) {
                *ret_reason = strdup("no-token");
                return false;
        }
        target = text_escape_display(c->target.path, PROXY_DISPLAY_MAX);
        key = approval_cache_key(c);
        req = json_object_new_object();
        if (!target || !key || !req || asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
                *ret_reason = strdup("oom");
                return false;
        }
        {
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, "%s %s", c->head.method, target) < 0) {
                        *ret_reason = strdup("oom");
                        return false;
                }
                json_object_object_add(req, "kind", json_object_new_string("docker"));
                json_object_object_add(req, "target", json_object_new_string(t));
        }
        json_object_object_add(req, "message", json_object_new_string(v->message ?: "Docker API request"));
        json_object_object_add(req, "cache_key", json_object_new_string(key));
        json_object_object_add(req, "rule", json_object_new_string(v->rule_id));
        json_object_object_add(req, "pid", json_object_new_int(0));

        h = curl_easy_init();
        headers = curl_slist_append(headers, auth);
        headers = curl_slist_append(headers, "Content-Type: application/json");
        explicit_bzero(token, sizeof(token));
        if (!h || !headers) {
                curl_slist_free_all(headers);
                if (h)
                        curl_easy_cleanup(h);
                *ret_reason = strdup("oom");
                return false;
        }
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->proxy->gate_socket);
        curl_easy_setopt(h, CURLOPT_URL, "http://loop-gate/api/gate/container-approval");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_buffer_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &buf);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, PROXY_APPROVAL_TIMEOUT_SEC);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(h) == CURLE_OK)
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(headers);
        curl_easy_cleanup(h);
        explicit_bzero(auth, strlen(auth));

        if (code != 200 || buf.overflow || !buf.data || !(reply = json_tokener_parse(buf.data)) ||
            !json_object_object_get_ex(reply, "decision", &d)) {
                free(buf.data);
                *ret_reason = strdup(code == 0 ? "gate-unreachable" : "gate-error");
                return false;
        }
        allow = streq_ptr(json_object_get_string(d), "allow");
        if (json_object_object_get_ex(reply, "actor", &a))
                *ret_actor = strdup(strempty(json_object_get_string(a)));
        if (json_object_object_get_ex(reply, "reason", &rs))
                *ret_reason = strdup(strempty(json_object_get_string(rs)));
        free(buf.data);
        return allow;
}

/* ---- forwarding ---- */

static bool header_is_hop_by_hop(const HttpRequest *req, const char *name) {
        static const char * const hop[] = {
                "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade",
                "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "TE", "Trailer", "Expect",
        };
        const char *conn = http_request_header(req, "Connection");

        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(name, hop[i]) == 0)
                        return true;
        /* headers the client named in Connection are for us, not the engine */
        if (conn) {
                size_t n = strlen(name);
                for (const char *p = conn; *p;) {
                        p += strspn(p, " \t,");
                        size_t len = strcspn(p, ",");
                        size_t l = len;
                        while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
                                l--;
                        if (l == n && strncasecmp(p, name, n) == 0)
                                return true;
                        p += len;
                }
        }
        return false;
}

static bool path_is_hijack(const char *method, const char *path) {
        const char *rest;

        if (!streq(method, "POST"))
                return false;
        if ((rest = startswith(path, "/containers/")) || (rest = startswith(path, "/exec/"))) {
                const char *slash = strchr(rest, '/');
                return slash && slash != rest &&
                        (strcasecmp(slash, "/attach") == 0 || strcasecmp(slash, "/start") == 0) &&
                        (startswith(path, "/containers/") ? strcasecmp(slash, "/attach") == 0 : strcasecmp(slash, "/start") == 0);
        }
        return false;
}

/* The head sent to the engine. body_size UINT64_MAX: chunked. Built in one allocation sized first:
 * this runs for every request. */
static int format_upstream_head(Conn *c, bool hijack, uint64_t body_size, bool has_body, char **ret, size_t *ret_size) {
        _cleanup_free_ char *target = NULL;
        const char *connection = NULL;
        size_t size;
        char *buf, *p;

        target = proxy_target_format(&c->target);
        if (!target)
                return -ENOMEM;
        if (hijack)
                connection = http_request_header(&c->head, "Upgrade") ? "Connection: Upgrade\r\nUpgrade: tcp\r\n" :
                                                                         "Connection: close\r\n";
        size = strlen(c->head.method) + strlen(target) + (sizeof(" HTTP/1.1\r\nHost: docker\r\n") - 1) + 2 +
                strlen(strempty(connection)) + (sizeof("Content-Length: 18446744073709551615\r\n") - 1) +
                (sizeof("Transfer-Encoding: chunked\r\n") - 1) + 2 + 1;
        for (size_t i = 0; i < c->head.n_headers; i++)
                size += strlen(c->head.headers[i].name) + 2 + strlen(c->head.headers[i].value) + 2;
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        p = stpcpy(stpcpy(stpcpy(stpcpy(buf, c->head.method), " "), target), " HTTP/1.1\r\nHost: docker\r\n");
        for (size_t i = 0; i < c->head.n_headers; i++)
                if (!header_is_hop_by_hop(&c->head, c->head.headers[i].name))
                        p = stpcpy(stpcpy(stpcpy(stpcpy(p, c->head.headers[i].name), ": "), c->head.headers[i].value), "\r\n");
        /* not hijacked: HTTP/1.1's default, the engine connection is kept for the client's next request */
        if (connection)
                p = stpcpy(p, connection);
        if (body_size == UINT64_MAX)
                p = stpcpy(p, "Transfer-Encoding: chunked\r\n");
        else if (has_body || body_size > 0)
                p += sprintf(p, "Content-Length: %" PRIu64 "\r\n", body_size);
        p = stpcpy(p, "\r\n");
        *ret = buf;
        *ret_size = (size_t) (p - buf);
        return 0;
}

static int engine_connect_socket(Proxy *p) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(p->engine_socket) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, p->engine_socket);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

/* Streams the rest of a request body from the client to the engine: Content-Length bytes, or chunks
 * (decoded and re-encoded, so the engine sees only framing we checked). pending are bytes already read. */
static int stream_request_body(Conn *c, int up, const char *pending, size_t n_pending) {
        HttpChunked ch = { .framing_unlimited = true };         /* passed on, never buffered */
        uint64_t left = c->content_length;
        char *buf = c->io, *dec = c->io_scratch;
        int r;

        for (;;) {
                const char *data;
                size_t size;

                if (n_pending > 0) {
                        data = pending;
                        size = MIN(n_pending, (size_t) PROXY_IO_BUFFER);
                        pending += size;
                        n_pending -= size;
                } else {
                        if (!c->head.chunked && left == 0)
                                return 0;
                        ssize_t k = recv_some(c->fd, buf, PROXY_IO_BUFFER, clock_usec(CLOCK_MONOTONIC) + PROXY_BODY_IDLE_TIMEOUT_MS * 1000ULL);
                        if (k < 0)
                                return (int) k;
                        if (k == 0)
                                return -EPIPE;          /* a body cut short never reaches its end */
                        data = buf;
                        size = (size_t) k;
                }

                if (c->head.chunked) {
                        size_t out, used;
                        char hdr[32];
                        int done = http_chunked_decode(&ch, data, size, dec, &out, &used);
                        if (done < 0)
                                return done;
                        if (out > 0) {
                                int l = snprintf(hdr, sizeof(hdr), "%zx\r\n", out);
                                if ((r = send_all(up, hdr, (size_t) l)) < 0 || (r = send_all(up, dec, out)) < 0 ||
                                    (r = send_all(up, "\r\n", 2)) < 0)
                                        return r;
                        }
                        if (done == 1)  /* bytes after the body's end belong to nobody: dropped */
                                return send_all(up, "0\r\n\r\n", 5);
                } else {
                        size_t n = (size_t) MIN((uint64_t) size, left);
                        r = send_all(up, data, n);
                        if (r < 0)
                                return r;
                        left -= n;
                        if (left == 0)
                                return 0;
                }
        }
}

/* Waits until the engine has something to say, passing on what the client sends meanwhile when the
 * stream is hijacked (its stdin) and otherwise only watching it for hanging up. 1: the engine's side is
 * readable; 0: the client is gone (a follow stream ends here); < 0: an error. */
static int relay_wait(Conn *c, int up, bool hijack, bool *client_open) {
        char *buf = c->io_scratch;      /* c->io may hold engine bytes not yet sent */
        int r;

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = up, .events = POLLIN },
                        { .fd = *client_open ? c->fd : -1, .events = (hijack ? POLLIN : 0) | POLLRDHUP },
                };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents && !hijack) {
                        /* gone, or only done sending: it still reads */
                        if (p[1].revents & (POLLHUP | POLLERR))
                                return 0;
                        *client_open = false;
                } else if (p[1].revents) {
                        ssize_t k = recv(c->fd, buf, PROXY_IO_BUFFER, 0);
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k <= 0) {
                                *client_open = false;
                                (void) shutdown(up, SHUT_WR);
                        } else if ((r = send_all(up, buf, (size_t) k)) < 0)
                                return r;
                }
                if (p[0].revents)
                        return 1;
        }
}

/* The engine's bytes that need no look (a hijacked stream: attach, exec output; an answer without
 * framing, which ends where the connection does) move to the client through a pipe with splice(): no
 * copy through user space, and up to PROXY_PIPE_SIZE a system call. Until the engine closes (0) or the
 * client leaves. Without a pipe (-EMFILE, say), -EOPNOTSUPP before anything moved: the caller copies
 * instead. A chunked answer (logs, events, build output: what the engines send) is copied, since its
 * framing is read to know where it ends; an answer of known length mostly comes with its head. */
#define PROXY_PIPE_SIZE (1024U * 1024U)

static int relay_splice(Conn *c, int up, bool hijack) {
        _cleanup_close_ int pipe_r = -EBADF, pipe_w = -EBADF;
        bool client_open = true, need_wait = hijack;
        int fds[2], r;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -EOPNOTSUPP;
        pipe_r = fds[0];
        pipe_w = fds[1];
        (void) fcntl(pipe_w, F_SETPIPE_SZ, PROXY_PIPE_SIZE);    /* a smaller pipe only costs more calls */

        for (;;) {
                /* hijacked: the client's side is served between reads; else the engine is read while it
                 * has something and waited for (watching the client) only when it has not */
                if (need_wait) {
                        r = relay_wait(c, up, hijack, &client_open);
                        if (r <= 0)
                                return r;
                }
                need_wait = hijack;
                ssize_t k = splice(up, NULL, pipe_w, NULL, PROXY_PIPE_SIZE, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (k < 0 && errno == EAGAIN) {
                        need_wait = true;
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {           /* the engine closed: the answer ends here */
                        (void) shutdown(c->fd, SHUT_WR);
                        return 0;
                }
                while (k > 0) {
                        ssize_t w = splice(pipe_r, NULL, c->fd, NULL, (size_t) k, SPLICE_F_MOVE);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                return w < 0 ? -errno : -EPIPE;
                        k -= w;
                }
        }
}

/* Both ways until the engine is done: what the client sends goes to the engine when the stream is
 * hijacked (its stdin); otherwise the client is only watched for hanging up, and what it sends stays in the
 * socket (its next request, read after this answer; nothing after a request reaches the engine as part
 * of it). initial are response bytes that came with the head. Returns 1 when the response ended where
 * its framing says and nothing followed it (both connections may carry another request), 0 when it
 * ended otherwise (the engine closed, the client left). prefix (the response head, when its body is
 * chunked and part of it came with the head) goes out with the first bytes, in one sendmsg(), and the
 * request is journaled then. */
static int relay(Conn *c, int up, bool hijack, const HttpResponseHead *h, bool head_request,
                 const char *initial, size_t n_initial, const char *prefix, size_t n_prefix) {
        HttpChunked ch = { .framing_unlimited = true };
        uint64_t left = h->length;
        char *buf = c->io;
        bool framed = !hijack && (h->chunked || h->has_length || head_request || h->status == 204 ||
                                  h->status == 304 || h->status < 200);
        bool client_open = true;
        /* an answer held to its end (c->hold_until_engine_done) is read without a client once it left:
         * the engine is not told (a shutdown() would make Podman cancel the request and close while its
         * build's steps still run in this process's network namespace) */
        bool client_gone = false;
        int r;

        if (framed && !h->chunked && (head_request || h->status == 204 || h->status == 304 || h->status < 200 || left == 0))
                return n_initial == 0;

        /* what needs no look goes by splice(): the bytes that came with the head first */
        if (!framed && n_prefix == 0) {
                if (n_initial > 0 && (r = send_all(c->fd, initial, n_initial)) < 0)
                        return r;
                r = relay_splice(c, up, hijack);
                if (r != -EOPNOTSUPP)
                        return r;
                n_initial = 0;
        }

        bool need_wait = hijack;
        for (;;) {
                const char *data;
                size_t n;

                if (n_initial > 0) {
                        data = initial;
                        n = MIN(n_initial, (size_t) PROXY_IO_BUFFER);
                        initial += n;
                        n_initial -= n;
                } else {
                        /* as relay_splice(): a stream that is not hijacked is read while the engine has
                         * something, and poll()ed only when it has not */
                        if (need_wait) {
                                r = relay_wait(c, up, hijack, &client_open);
                                if (r < 0)
                                        return r;
                                if (r == 0 && framed && c->hold_until_engine_done) {
                                        client_open = false;    /* relay_wait() watches the engine alone */
                                        client_gone = true;
                                        continue;
                                }
                                if (r == 0)
                                        return 0;
                        }
                        need_wait = hijack;
                        /* what the engine has sent so far, in one buffer and so one send(): a log stream
                         * comes in chunks of a few KB (a line each), and every send() wakes the client */
                        n = 0;
                        for (;;) {
                                ssize_t k = recv(up, buf + n, PROXY_IO_BUFFER - n, hijack ? 0 : MSG_DONTWAIT);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k < 0 && errno == EAGAIN)
                                        need_wait = true;
                                if (k <= 0)
                                        break;          /* the end or an error comes again after the data */
                                n += (size_t) k;
                                if (hijack || n == PROXY_IO_BUFFER)
                                        break;
                        }
                        if (n == 0 && need_wait)
                                continue;
                        if (n == 0)
                                break;
                        data = buf;
                }

                bool done = false, surplus = false;
                if (framed && h->chunked) {
                        size_t out, used;
                        /* only the framing: the bytes go on as they came */
                        r = http_chunked_decode(&ch, data, n, NULL, &out, &used);
                        if (r < 0)
                                return r;
                        if (r == 1) {
                                surplus = used < n || n_initial > 0;
                                n = used;
                                done = true;
                        }
                } else if (framed) {
                        surplus = n > left || (n == left && n_initial > 0);
                        n = (size_t) MIN((uint64_t) n, left);
                        left -= n;
                        done = left == 0;
                }
                if (n_prefix > 0) {
                        r = send_two(c->fd, prefix, n_prefix, data, n);
                        n_prefix = 0;
                        conn_record(c);
                        c->rule = NULL;         /* recorded */
                } else
                        r = client_gone ? 0 : send_all(c->fd, data, n);
                if (r < 0 && framed && c->hold_until_engine_done) {
                        client_open = false;
                        client_gone = true;
                } else if (r < 0)
                        return r;
                if (done)
                        return client_gone ? 0 : !surplus;      /* an engine that says more than it framed is not reused */
        }
        (void) shutdown(c->fd, SHUT_WR);
        return 0;
}

static bool header_line_is(const char *line, size_t len, const char *name) {
        size_t n = strlen(name);
        return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/* The engine's response head as the client gets it: the engine's Connection and Keep-Alive headers
 * (about the engine connection) replaced by one about the client's. */
static int response_head_for_client(const char *head, size_t size, bool keep_alive, char **ret, size_t *ret_size) {
        const char *end = head + size - 2, *line = head, *eol;  /* end: the empty line */
        char *buf, *p;

        buf = malloc(size + sizeof("Connection: keep-alive\r\n"));
        if (!buf)
                return -ENOMEM;
        p = buf;
        for (bool status_line = true; line < end; line = eol + 2, status_line = false) {
                eol = http_find_crlf(line, (size_t) (end + 2 - line));
                size_t len = (size_t) (eol - line);
                if (status_line || !(header_line_is(line, len, "Connection") || header_line_is(line, len, "Keep-Alive") ||
                                     header_line_is(line, len, "Proxy-Connection")))
                        p = mempcpy(p, line, len + 2);
        }
        p = stpcpy(p, keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
        *ret = buf;
        *ret_size = (size_t) (p - buf);
        return 0;
}

/* Whether a kept engine connection is still usable: idle, it has nothing to say; readable means the
 * engine closed it (or broke the protocol). */
static bool upstream_is_idle(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
        return poll(&p, 1, 0) == 0;
}

/* The rest of a (start's) answer after its head h, into buf (up to PROXY_RESPONSE_HEAD_MAX bytes in
 * all, at most PROXY_FROZEN_BODY_TIMEOUT_USEC): its body as framed, or until the engine closes. An
 * answer that does not fit is passed on as usual once the buffer is full; the engine has acted by then. */
#define PROXY_FROZEN_BODY_TIMEOUT_USEC (10ULL * 1000000ULL)

static void conn_read_whole_answer(Conn *c, int up, char *buf, size_t *size, const HttpResponseHead *h, bool head_request) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_FROZEN_BODY_TIMEOUT_USEC;

        if (head_request || h->status == 204 || h->status == 304 || h->status < 200 ||
            (h->has_length && !h->chunked && h->length == 0))
                return;
        while (*size < PROXY_RESPONSE_HEAD_MAX) {
                if (h->chunked) {
                        HttpChunked ch = { .framing_unlimited = true };
                        size_t out, used;
                        if (http_chunked_decode(&ch, buf + h->head_size, *size - h->head_size, NULL, &out, &used) != 0)
                                return;         /* ended, or malformed: relay() says so */
                } else if (h->has_length && *size - h->head_size >= h->length)
                        return;
                ssize_t k = recv_some(up, buf + *size, PROXY_RESPONSE_HEAD_MAX - *size, deadline);
                if (k <= 0) {
                        if (k < 0)
                                log_warning_errno((int) k, "Channel %s: the engine's answer to a start did not end, "
                                                  "thawing: %m", c->proxy->channel);
                        return;
                }
                *size += (size_t) k;
        }
}

/* Sends the request to the engine and streams the answer back. body NULL: the body is streamed from
 * the client (pending bytes first). The engine connection kept in c->up is used when it is still idle
 * and the request is not streamed (so that it can be sent again when the engine closed the kept
 * connection just then); one whose answer ended cleanly is kept for the next request. */
/* Reads and drops what the engine still sends until it closes the connection (or it fails). Our side is
 * shut first: the engine sees the client gone (Go's server cancels a request whose client did so) and
 * closes the connection once its answer is over instead of keeping it alive. A framed answer whose
 * client left is read to its end by relay() first, without that shutdown(): Podman, told, cancels a
 * build and closes while the build's steps still run (which one of the two came first was a race). */
static void drain_until_engine_done(int up, char *buf) {
        (void) shutdown(up, SHUT_WR);
        for (;;) {
                ssize_t k = recv(up, buf, PROXY_IO_BUFFER, 0);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return;
        }
}

static int conn_forward(Conn *c, const char *body, size_t body_size, const char *pending, size_t n_pending) {
        _cleanup_close_ int up = TAKE_FD(c->up);
        _cleanup_free_ char *head = NULL, *client_head = NULL;
        char *rbuf;
        bool hijack = path_is_hijack(c->head.method, c->target.unversioned);
        bool streamed = !body, head_request = streq(c->head.method, "HEAD");
        bool reused, may_resend = streq(c->head.method, "GET") || head_request;
        HttpResponseHead h = {};
        size_t head_size, rsize = 0, client_head_size = 0;
        int r;

        if (up >= 0 && (streamed || hijack || !upstream_is_idle(up)))
                up = safe_close(up);
        r = format_upstream_head(c, hijack, streamed ? (c->head.chunked ? UINT64_MAX : c->content_length) : body_size,
                                 !streamed && (body_size > 0 || c->content_length > 0 || c->head.chunked), &head, &head_size);
        if (r < 0)
                return conn_reply(c, 500, NULL, "out of memory");
        if (!c->io)
                c->io = malloc(PROXY_IO_BUFFER);
        if (!c->io_scratch)
                c->io_scratch = malloc(PROXY_IO_BUFFER);
        if (!c->response_head)
                c->response_head = malloc(PROXY_RESPONSE_HEAD_MAX);
        if (!c->io || !c->io_scratch || !c->response_head)
                return conn_reply(c, 500, NULL, "out of memory");
        rbuf = c->response_head;

        for (;;) {
                reused = up >= 0;
                if (!reused) {
                        up = engine_connect_socket(c->proxy);
                        if (up < 0) {
                                log_warning_errno(up, "Cannot connect to the engine at %s: %m", c->proxy->engine_socket);
                                return conn_reply(c, 502, NULL, "the engine is not reachable");
                        }
                }
                r = send_all(up, head, head_size);
                if (r >= 0 && !streamed && body_size > 0)
                        r = send_all(up, body, body_size);
                if (r < 0 && reused) {          /* the engine closed the kept connection: a new one */
                        up = safe_close(up);
                        continue;
                }
                if (r >= 0 && streamed)
                        r = stream_request_body(c, up, pending, n_pending);
                if (r == -EBADMSG || r == -EFBIG)
                        return conn_reply(c, 400, "parse", "malformed chunked body");
                if (r == -ETIMEDOUT)
                        return conn_reply(c, 408, "parse", "the request body stalled");
                if (r < 0) {
                        c->status = 502;
                        c->decision = "deny";
                        c->reason = strdup("the request could not be sent to the engine");
                        return r;
                }

                /* the response head, as the engine sends it */
                for (;;) {
                        ssize_t k = recv_some(up, rbuf + rsize, PROXY_RESPONSE_HEAD_MAX - rsize, UINT64_MAX);
                        if (k <= 0) {
                                r = -EPIPE;
                                break;
                        }
                        rsize += (size_t) k;
                        r = http_response_head_parse(rbuf, rsize, PROXY_RESPONSE_HEAD_MAX, &h);
                        if (r < 0)
                                return conn_reply(c, 502, NULL, "the engine's answer is malformed");
                        if (r > 0)
                                break;
                }
                if (r > 0)
                        break;
                /* closed without a byte of answer: a kept connection the engine dropped as we sent on it;
                 * only a request without side effects is sent again */
                if (reused && rsize == 0 && may_resend) {
                        up = safe_close(up);
                        continue;
                }
                return conn_reply(c, 502, NULL, "the engine closed the connection without an answer");
        }
        c->status = h.status;
        if (c->start_locked) {          /* also when there was nothing to freeze */
                /* the engine answers a start once the runtime has mounted; its whole answer is read
                 * before the channel is thawed and the client hears of it (an attach's stream is not
                 * an answer that ends: Podman initialised the container before it switched protocols) */
                if (!(hijack && (h.status == 101 || (h.status == 200 && h.stream_type))))
                        conn_read_whole_answer(c, up, rbuf, &rsize, &h, head_request);
                conn_thaw(c);
        }

        hijack = hijack && (h.status == 101 || (h.status == 200 && h.stream_type));
        bool framed = !hijack && (h.chunked || h.has_length || head_request || h.status == 204 || h.status == 304 ||
                                  h.status < 200);
        bool bodyless = head_request || h.status == 204 || h.status == 304 || h.status < 200;
        size_t extra = rsize - h.head_size, with_head = 0;
        /* a chunked body's first bytes, come with the head, go out with it (relay()) */
        bool head_with_chunks = framed && h.chunked && !bodyless && extra > 0;
        if (!framed)
                c->keep_alive = false;          /* the answer ends where the connection does */
        if (hijack)
                r = send_all(c->fd, rbuf, h.head_size);
        else {
                r = response_head_for_client(rbuf, h.head_size, c->keep_alive, &client_head, &client_head_size);
                /* a body of known length that came (part or whole) with the head goes out with it */
                if (framed && !bodyless && !h.chunked && h.has_length && extra <= h.length)
                        with_head = extra;
                if (r >= 0 && !head_with_chunks)
                        r = send_two(c->fd, client_head, client_head_size, rbuf + h.head_size, with_head);
        }
        /* journaled once the engine acted and the client has the head: the decision was made (and a
         * refusal journaled) before the request went to the engine; streams may be long */
        if (!head_with_chunks) {
                conn_record(c);
                c->rule = NULL;         /* recorded */
        }
        /* the client left before the head reached it: an answer that holds the proxy is read to its end
         * all the same when it is framed (relay() finds the client gone, the engine is not told) */
        if (r < 0 && !(framed && c->hold_until_engine_done)) {
                if (c->hold_until_engine_done)
                        drain_until_engine_done(up, c->io_scratch);
                return r;
        }

        HttpResponseHead rest = h;
        rest.length -= with_head;
        r = relay(c, up, hijack, &rest, head_request, rbuf + h.head_size + with_head, extra - with_head,
                  head_with_chunks ? client_head : NULL, head_with_chunks ? client_head_size : 0);
        if (r <= 0 && c->hold_until_engine_done)
                drain_until_engine_done(up, c->io_scratch);
        if (r < 0)
                return r;
        if (r == 0)
                c->keep_alive = false;
        else if (!h.close)
                c->up = TAKE_FD(up);
        return 0;
}

/* POST /containers/ID/start|restart|attach of a container with pinned binds: with the channel's containers
 * frozen (conn_freeze_channel()), the pins are checked once more and the start forwarded; nothing of the
 * channel runs between the check and the runtime's mount of the sources, so nothing can swap them. The
 * channel is thawed once the engine's answer is read (conn_forward()), or before a refusal
 * (conn_reply()), and in any case before this returns. One frozen start at a time. */
static int conn_start_frozen(Conn *c, json_object *inspect, const char *body, size_t body_size) {
        Proxy *p = c->proxy;
        int r;

        pthread_mutex_lock(&p->start_lock);
        c->start_locked = true;
        r = conn_freeze_channel(c);
        if (r < 0)
                r = 0;          /* answered */
        else {
                _cleanup_free_ char *changed = NULL, *msg = NULL, *shown = NULL;
                r = proxy_binds_verify(inspect, &changed);
                if (r < 0)
                        c->decision = "deny";
                if (r == -EXDEV) {
                        shown = text_escape_display(changed, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "the bind source %s changed since the container was created "
                                               "(checked again at start, the channel frozen)", shown) < 0)
                                r = conn_reply(c, 500, NULL, "out of memory");
                        else
                                r = conn_reply(c, 403, "bind-pin", msg);
                } else if (r < 0)
                        r = conn_reply(c, 403, "bind-pin", "the container's bind pins cannot be read");
                else
                        r = conn_forward(c, body, body_size, NULL, 0);
        }
        conn_thaw(c);           /* every path: a no-op when the answer or the refusal thawed already */
        return r;
}

/* POST /containers/ID/update of a container with pinned binds may not give it a restart policy: the
 * engine restarting it on its own would mount its binds by path, unchecked and unfrozen. Replies itself
 * when refused. */
/* Who a nested container that binds host paths runs as (dockerproxy-nested.h, proxy_container_run_as):
 * the agent, that is the calling process of the channel's container as the kernel saw it at connect.
 * Root there is not the agent (which never runs as root) and is refused. Root on the host (the operator,
 * tests) makes them as the work dir's owner, or as asked when that is root too: the caller is root on
 * the host already. 1 with the ids, 0 when nothing is forced, -EPERM. */
static int conn_run_as(Conn *c, uid_t *ret_uid, gid_t *ret_gid) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (c->peer_name) {
                if (c->peer_uid == 0 || c->peer_uid == (uid_t) -1 || c->peer_gid == (gid_t) -1)
                        return -EPERM;
                *ret_uid = c->peer_uid;
                *ret_gid = c->peer_gid;
                return 1;
        }
        if (c->peer_uid != 0)
                return -EPERM;          /* peer_check() lets no one else in */
        if (!c->proxy->work_dir)
                return 0;
        fd = open(c->proxy->work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -EPERM;
        if (st.st_uid == 0)
                return 0;
        *ret_uid = st.st_uid;
        *ret_gid = st.st_gid;
        return 1;
}

/* A container that binds host paths gets no exec as another user, nor files copied in by the engine (which
 * extracts a tar as root, with the owners and setuid bits it names, into a bind as well). */
static int conn_check_host_binds(Conn *c, const char *ref, const char *tail, json_object *body) {
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        uid_t uid;
        gid_t gid;
        int r;

        if (conn_inspect_container(c, ref, &inspect) < 0)
                return -EIO;    /* answered */
        if (!proxy_inspect_binds_host(inspect))
                return 0;
        if (strcasecmp(tail, "/archive") == 0)
                return conn_reply(c, 403, "bind-owner", "files cannot be copied into a container that binds host "
                                  "paths (the engine would write them with the owners and modes the archive names)"), -EPERM;
        r = conn_run_as(c, &uid, &gid);
        if (r < 0)
                return conn_reply(c, 403, "bind-owner", "a container that binds host paths runs as the agent's "
                                  "uid, which this caller does not have (root in the agent's container)"), -EPERM;
        if (r > 0 && proxy_exec_run_as(body, uid, gid) < 0)
                return conn_reply(c, 400, "parse", "the exec body has fields of the wrong type"), -EBADMSG;
        if (r > 0)
                c->body_changed = true;
        return 0;
}

static int conn_check_update(Conn *c, const char *ref, json_object *body) {
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        bool restart = false;
        int r;

        json_object_object_foreach(body, k, v) {
                if (strcasecmp(k, "RestartPolicy") != 0 || json_object_is_type(v, json_type_null))
                        continue;
                restart = true;         /* unless it says "no" (or nothing) */
                if (json_object_is_type(v, json_type_object)) {
                        const char *name = NULL;
                        json_object_object_foreach(v, k2, n)
                                if (strcasecmp(k2, "Name") == 0)
                                        name = json_object_is_type(n, json_type_string) ? json_object_get_string(n) : "?";
                        restart = name && !streq(name, "") && !streq(name, "no");
                }
        }
        if (!restart)
                return 0;
        r = conn_inspect_container(c, ref, &inspect);
        if (r < 0)
                return r;
        r = proxy_binds_pinned(inspect);
        if (r != 0)
                return conn_reply(c, 403, "bind-pin", "a container with binds may not get a restart policy (the "
                                  "engine would mount its binds again unchecked)"), -EPERM;
        return 0;
}

/* ---- the operator's images ---- */

/* Refuses (403, and returns -EPERM) when ref, or repo with tag, names a protected repository. */
static int conn_check_image_name(Conn *c, const char *repo, const char *tag, bool made) {
        _cleanup_free_ char *ref = NULL, *msg = NULL, *shown = NULL;

        if (isempty(repo))
                return 0;
        if (asprintf(&ref, "%s%s%s", repo, isempty(tag) ? "" : ":", strempty(tag)) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        /* a name a tag, commit, build or import gives is the channel's own: no channel makes or
         * overwrites another's */
        if (made && !proxy_image_ref_is_protected(ref, c->proxy->protected_images) &&
            !proxy_image_ref_is_channels(ref, c->proxy->channel)) {
                if (!proxy_channel_names_images(c->proxy->channel)) {
                        if (asprintf(&msg, "channel %s makes no images through the proxy: image names are lower case "
                                     "and the channel's name is not one (a channel named in lower case can make "
                                     "images named after it)", c->proxy->channel) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        return conn_reply(c, 403, "image", msg), -EPERM;
                }
                shown = text_escape_display(ref, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "%s is not a name of channel %s's own: the images a channel makes are "
                                       "named %s-... or %s_... (on any registry, e.g. localhost/%s-app)", shown,
                                       c->proxy->channel, c->proxy->channel, c->proxy->channel, c->proxy->channel) < 0)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return conn_reply(c, 403, "image", msg), -EPERM;
        }
        if (!proxy_image_ref_is_protected(ref, c->proxy->protected_images))
                return 0;
        shown = text_escape_display(ref, PROXY_DISPLAY_MAX);
        if (!shown || asprintf(&msg, "%s names one of the operator's images (or is no image reference): they are "
                               "not tagged, committed, built, imported or removed through the proxy", shown) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return conn_reply(c, 403, "image", msg), -EPERM;
}

/* A parameter ignoring case, as Podman reads it; a list (or anything but a string) is refused by the
 * caller as an unreadable reference. */
static const char *query_string(Conn *c, const char *key) {
        json_object *v = proxy_query_get(&c->target, key, NULL);
        return v ? (json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "\x01") : NULL;
}

/* A pull or a push reaches the registry of the reference from the engine, past the egress gateway: only
 * where the channel's egress policy lets the agent go (dockerproxy-registry.h). A pull may not name the
 * operator's images either (it would replace them). Refuses (403) and returns -EPERM otherwise. */
static int conn_check_registry(Conn *c, const char *what, const char *repo, const char *tag) {
        _cleanup_free_ char *ref = NULL, *registry = NULL, *msg = NULL, *shown = NULL;
        const char *rule = NULL;
        int r;

        if (isempty(repo) || (tag && !*tag))
                tag = NULL;
        /* as the engines join them: a tag that is a digest follows an '@' */
        if (isempty(repo) || asprintf(&ref, "%s%s%s", repo, !tag ? "" : strchr(tag, ':') ? "@" : ":", strempty(tag)) < 0)
                return conn_reply(c, isempty(repo) ? 400 : 500, what, isempty(repo) ? "no image named" : "out of memory"), -EINVAL;
        if (streq(what, "pull") && conn_check_image_name(c, ref, NULL, false) < 0)
                return -EPERM;
        r = proxy_registry_allows(c->proxy->egress, ref, &registry, &rule);
        if (r == -ENOMEM)
                return conn_reply(c, 500, NULL, "out of memory"), r;
        if (r < 0) {
                shown = text_escape_display(ref, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "%s is not an image reference whose registry can be told", shown) < 0)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return conn_reply(c, 403, what, msg), -EPERM;
        }
        free(c->reason);
        if (asprintf(&c->reason, "registry %s, egress %s", registry, rule) < 0)
                c->reason = NULL;
        if (r > 0)
                return 0;
        if (asprintf(&msg, "%s %s are refused: the channel's egress policy does not allow that registry "
                     "(%s; the operator allows it in egress.registries or egress.rules)",
                     streq(what, "push") ? "pushes to" : "pulls from", registry,
                     c->proxy->egress ? rule : "the channel has no egress gateway") < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return conn_reply(c, 403, what, msg), -EPERM;
}

/* Tags, commits, builds and imports may not name a protected repository; a removal may not remove one,
 * by its name or by an id whose image carries one of its tags. Replies itself when refused. */
static int conn_check_images(Conn *c, const ProxyEndpoint *endpoint) {
        const char *pattern = endpoint->pattern;
        int r;

        if (streq(pattern, "/images/**/tag") || streq(pattern, "/commit") || streq(pattern, "/images/create"))
                return conn_check_image_name(c, query_string(c, "repo"), query_string(c, "tag"), true);
        if (streq(pattern, "/build")) {
                json_object *t = NULL;
                if (!json_object_object_get_ex(c->target.query, "t", &t))
                        return 0;
                for (size_t i = 0; i < json_object_array_length(t); i++)
                        if ((r = conn_check_image_name(c, json_object_get_string(json_object_array_get_idx(t, i)), NULL, true)) < 0)
                                return r;
                return 0;
        }
        if (streq(pattern, "/images/**") && streq(c->head.method, "DELETE")) {
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_(json_object_putp) json_object *inspect = NULL;
                const char *name = c->target.unversioned + strlen("/images/");
                json_object *tags = NULL;

                if ((r = conn_check_image_name(c, name, NULL, false)) < 0)
                        return r;
                if (engine_open(c->proxy, &e) < 0)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                r = engine_image_inspect(e, name, &inspect);
                if (r == -ENOENT)
                        return 0;       /* the engine says so itself */
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked about the image"), r;
                if (json_object_object_get_ex(inspect, "RepoTags", &tags) && json_object_is_type(tags, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(tags); i++)
                                if ((r = conn_check_image_name(c, json_object_get_string(json_object_array_get_idx(tags, i)), NULL, false)) < 0)
                                        return r;
        }
        return 0;
}

/* ---- build contexts ---- */

/* A build context is read whole before the engine sees any of it (its Dockerfile decides whether the
 * build runs), at most PROXY_BUILD_CONTEXT_MAX bytes, within this long; the connection is not kept. */
#define PROXY_BUILD_READ_TIMEOUT_USEC (120ULL * 1000000ULL)

/* Reads the request's body (Content-Length or chunked, decoded) into *ret. Replies itself on error. */
/* A build's base images: each FROM names a local image (asked of the engine once, by the normalised
 * reference), never one the engine would pull (that would reach a registry past the egress policy, and
 * bring ONBUILD triggers nobody checked: pull it first, through the proxy), and the base's own ONBUILD
 * triggers pass the Dockerfile allow-list. Refuses (403) and returns -EPERM otherwise. */
static int conn_check_build_bases(Conn *c, char **bases) {
        _cleanup_(engine_freep) Engine *e = NULL;
        int r;

        if (strv_length(bases) == 0)
                return 0;
        pthread_mutex_lock(&c->proxy->create_lock);
        if (c->proxy->engine_kind == ENGINE_UNKNOWN)
                proxy_probe_engine(c->proxy);
        pthread_mutex_unlock(&c->proxy->create_lock);
        if (c->proxy->engine_kind == ENGINE_UNKNOWN)
                return conn_reply(c, 502, "engine", "the engine cannot be asked which it is"), -EIO;
        if (engine_open(c->proxy, &e) < 0)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        STRV_FOREACH(b, bases) {
                _cleanup_(proxy_image_ref_done) ProxyImageRef ref = {};
                _cleanup_(json_object_putp) json_object *inspect = NULL;
                _cleanup_free_ char *normalized = NULL, *shown = text_escape_display(*b, PROXY_DISPLAY_MAX),
                        *msg = NULL, *why = NULL;
                json_object *config, *onbuild = NULL;

                if (!shown)
                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                if (proxy_image_ref_parse(*b, &ref) < 0 || !(normalized = proxy_image_ref_format(&ref))) {
                        if (asprintf(&msg, "FROM %s is refused (not an image reference)", shown) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        c->decision = "deny";
                        return conn_reply(c, 403, "build", msg), -EPERM;
                }
                r = engine_image_inspect(e, normalized, &inspect);
                if (r == -ENOENT) {
                        if (asprintf(&msg, "FROM %s is refused: it is not a local image, and the engine would pull it "
                                     "(pull it first through the proxy, from a registry the channel's egress policy "
                                     "allows, or build it here)", shown) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        c->decision = "deny";
                        return conn_reply(c, 403, "build", msg), -EPERM;
                }
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked about a base image"), r;
                /* Podman's compat inspect never shows OnBuild; an image in Docker's format may have
                 * triggers (buildah runs them), one in OCI's has none: the former is refused there */
                if (c->proxy->engine_kind != ENGINE_DOCKER) {
                        _cleanup_(json_object_putp) json_object *libpod = NULL;
                        json_object *type;
                        r = engine_image_inspect_libpod(e, normalized, &libpod);
                        if (r < 0 && r != -ENOENT)
                                return conn_reply(c, 502, "engine", "the engine cannot be asked about a base image"), r;
                        if (r < 0 || !json_object_object_get_ex(libpod, "ManifestType", &type) ||
                            !startswith(strempty(json_object_get_string(type)), "application/vnd.oci.")) {
                                if (asprintf(&msg, "FROM %s is refused: on Podman an image in Docker's format may carry "
                                             "ONBUILD triggers that the engine's API does not show (an OCI image, "
                                             "e.g. one built or imported with Podman, is read)", shown) < 0)
                                        return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                                c->decision = "deny";
                                return conn_reply(c, 403, "build", msg), -EPERM;
                        }
                }
                if (json_object_object_get_ex(inspect, "Config", &config))
                        (void) json_object_object_get_ex(config, "OnBuild", &onbuild);
                r = proxy_build_onbuild_check(onbuild, c->proxy->channel, &why);
                if (r == -ENOMEM)
                        return conn_reply(c, 500, NULL, "out of memory"), r;
                if (r < 0) {
                        _cleanup_free_ char *why_shown = text_escape_display(why, PROXY_DISPLAY_MAX);
                        if (!why_shown || asprintf(&msg, "FROM %s is refused: its ONBUILD triggers do not pass the "
                                                   "Dockerfile allow-list (trigger %s)", shown, why_shown) < 0)
                                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        c->decision = "deny";
                        return conn_reply(c, 403, "build", msg), -EPERM;
                }
        }
        return 0;
}

static int conn_read_build_context(Conn *c, char **ret, size_t *ret_size) {
        _cleanup_free_ char *body = NULL, *buf = NULL;
        HttpChunked chunked = { .framing_unlimited = true, .data_max = PROXY_BUILD_CONTEXT_MAX };
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_BUILD_READ_TIMEOUT_USEC;
        const char *in = c->in + c->head_size;
        size_t n_in = c->in_size - c->head_size, n = 0;
        bool done = false;

        if (!c->head.chunked && c->content_length > PROXY_BUILD_CONTEXT_MAX)
                return conn_reply(c, 413, "build", "the build context is larger than the proxy reads "
                                  "(PROXY_BUILD_CONTEXT_MAX)"), -EFBIG;
        body = malloc((c->head.chunked ? PROXY_BUILD_CONTEXT_MAX : (size_t) c->content_length) + 1);
        buf = malloc(PROXY_IO_BUFFER);
        if (!body || !buf)
                return conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        for (;;) {
                if (c->head.chunked) {
                        size_t out = 0, used = 0;
                        /* data_max keeps what is written within the buffer */
                        int r = http_chunked_decode(&chunked, in, n_in, body + n, &out, &used);
                        n += out;
                        if (r == -EFBIG)
                                return conn_reply(c, 413, "build", "the build context is larger than the proxy reads "
                                                  "(PROXY_BUILD_CONTEXT_MAX)"), r;
                        if (r < 0)
                                return conn_reply(c, 400, "parse", "malformed chunked build context"), r;
                        done = r > 0;
                } else {
                        size_t k = MIN(n_in, (size_t) c->content_length - n);
                        memcpy(body + n, in, k);
                        n += k;
                        done = n == c->content_length;
                }
                if (done)
                        break;
                ssize_t k = recv_some(c->fd, buf, PROXY_IO_BUFFER, deadline);
                if (k == -ETIMEDOUT)
                        return conn_reply(c, 408, "parse", "the build context took too long"), -ETIMEDOUT;
                if (k <= 0) {
                        c->rule = "parse";
                        c->reason = strdup("the client left mid-request");
                        return -EPIPE;
                }
                in = buf;
                n_in = (size_t) k;
        }
        /* what followed the body in the buffer is dropped with the connection */
        c->complete = true;
        c->consumed = c->in_size;
        c->keep_alive = false;
        body[n] = 0;
        *ret = TAKE_PTR(body);
        *ret_size = n;
        return 0;
}

/* ---- one request ---- */

static int conn_handle(Conn *c) {
        Proxy *p = c->proxy;
        HttpLimits limits = {
                .header_size_max = PROXY_HEADER_SIZE_MAX, .headers_max = PROXY_HEADERS_MAX, .chunked = true,
        };
        _cleanup_(http_request_done) HttpRequest full = {};
        const char *req_body = "";      /* the request's JSON body as sent (full.body), or empty */
        size_t req_body_size = 0;
        _cleanup_(json_object_putp) json_object *body = NULL;
        _cleanup_free_ char *forced = NULL;
        _cleanup_(json_object_putp) json_object *start_inspect = NULL;
        char *actor = NULL;
        _cleanup_free_ char *context = NULL;      /* a build's context, read whole */
        size_t context_size = 0;
        ProxyVerdict http, bv = {}, v;
        const ProxyEndpoint *endpoint;
        bool stream, sent_continue = false, frozen_start = false, pause = false;
        int r, status = 0;

        /* the head */
        for (;;) {
                if (c->start_usec == 0 && c->in_size > 0) {     /* a kept connection's next request began */
                        c->start_usec = clock_usec(CLOCK_MONOTONIC);
                        c->deadline_usec = c->start_usec + PROXY_HEAD_TIMEOUT_USEC;
                        /* the skeleton's deadline starts again with it too */
                        (void) socket_connection_head_end(c->sc);
                        (void) socket_connection_head_begin(c->sc);
                }
                r = http_request_parse_head(c->in, c->in_size, &limits, &c->head, &c->head_size, &c->content_length, &status);
                if (r < 0)
                        return conn_reply(c, status, "parse", "malformed request");
                if (r > 0)
                        break;
                ssize_t k = conn_read_more(c);
                /* the skeleton shut the read side: its deadline (a backstop just after ours) or a stop */
                if (k == 0 && socket_connection_head_expired(c->sc))
                        k = -ETIMEDOUT;
                if (k == 0 && c->in_size == 0 && socket_service_stopping(socket_connection_service(c->sc)))
                        return 0;       /* a kept connection ended by a stop between requests */
                if (k == -ETIMEDOUT && c->in_size == 0 && c->n_requests > 0)
                        return 0;               /* a kept connection left idle: closed without a word */
                if (k == -ETIMEDOUT)
                        return conn_reply(c, 408, "parse", "the request took too long");
                if (k == -EFBIG)
                        return conn_reply(c, 431, "parse", "request head too large");
                if (k == -ENOMEM)
                        return conn_reply(c, 500, "parse", "out of memory");
                if (k <= 0) {
                        if (c->in_size == 0)
                                return 0;       /* a connection that never became a request: nothing to record */
                        c->status = 0;
                        c->rule = "parse";
                        c->reason = strdup(k == 0 ? "the client left mid-request" : "the client's connection failed");
                        return -EPIPE;
                }
        }

        (void) socket_connection_head_end(c->sc);      /* the proxy's own deadline goes on for the body */

        /* once per connection: its peer is fixed at connect, and a container's labels never change */
        if (!c->peer_known) {
                r = peer_check(c, c->peer_uid, &c->peer_name);
                if (r == -EPERM) {
                        c->unjournaled = !refusal_journaled(c->proxy, "caller", c->peer_pid, c->peer_uid);
                        r = conn_reply(c, 403, "caller", "only the channel's own containers may use its Docker API");
                        c->unjournaled = false;
                        return r;
                }
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked who is calling");
                c->peer_known = true;
        }

        r = proxy_target_parse(c->head.path, c->head.query, &c->target);
        if (r == -ENOMEM)
                return conn_reply(c, 500, "parse", "out of memory");
        if (r < 0)
                return conn_reply(c, 400, "parse", "the request target cannot be read unambiguously");

        /* the allow-list comes first: what it does not name is refused whatever the rules say */
        if (!proxy_api_version_is_supported(c->target.version)) {
                _cleanup_free_ char *msg = NULL, *shown = text_escape_display(c->target.version, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "API version %s is not served (vMAJOR.MINOR, " PROXY_API_VERSION_MIN
                                       " or later)", shown) < 0)
                        return conn_reply(c, 500, NULL, "out of memory");
                return conn_reply(c, 403, "api-version", msg);
        }
        endpoint = proxy_endpoint_lookup(c->head.method, c->target.unversioned);
        if (!endpoint) {
                _cleanup_free_ char *msg = NULL, *shown = text_escape_display(c->target.unversioned, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "%s %s is not an endpoint the proxy serves (not in its allow-list)",
                                       c->head.method, shown) < 0)
                        return conn_reply(c, 500, NULL, "out of memory");
                return conn_reply(c, 403, "endpoint", msg);
        }

        /* builds run steps the proxy never sees (and read host files through buildah's bind mounts
         * from stages): off unless the channel says otherwise */
        if (streq(endpoint->pattern, "/build") && !p->build)
                return conn_reply(c, 403, "build", "builds are off for this channel (gates.docker_proxy.build)");
        /* POST /images/create is an import of the request body (fromSrc=-) only: a pull or an import
         * from a URL or a path reaches the engine's network or the host's files */
        if (streq(endpoint->pattern, "/images/create") && proxy_query_get(&c->target, "fromImage", NULL)) {
                static const char * const known[] = { "fromImage", "tag", "platform" };
                json_object_object_foreach(c->target.query, k, e) {
                        bool found = false;
                        (void) e;
                        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                                found = found || streq(k, known[i]);
                        if (!found)
                                return conn_reply(c, 403, "pull", "a pull takes the parameters fromImage, tag and "
                                                  "platform only (as the API spells them)");
                }
                r = conn_check_registry(c, "pull", query_string(c, "fromImage"), query_string(c, "tag"));
                if (r < 0)
                        return 0;       /* answered */
        } else if (streq(endpoint->pattern, "/images/create")) {
                static const char * const known[] = { "fromSrc", "repo", "tag", "message", "changes", "platform" };
                json_object *src = proxy_query_get(&c->target, "fromSrc", NULL);
                if (!src || !streq_ptr(json_object_get_string(src), "-"))
                        return conn_reply(c, 403, "pull", "an import reads the request body only (fromSrc=-)");
                json_object_object_foreach(c->target.query, k, e) {
                        bool found = false;
                        (void) e;
                        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                                found = found || streq(k, known[i]);
                        if (!found)
                                return conn_reply(c, 403, "pull", "an import takes the parameters fromSrc=-, repo, tag, "
                                                  "message, changes and platform only (as the API spells them)");
                }
        }

        /* a push: of the channel's own images, to a registry its egress policy allows */
        if (streq(endpoint->pattern, "/images/**/push")) {
                _cleanup_free_ char *name = strndup(c->target.unversioned + strlen("/images/"),
                                                    strlen(c->target.unversioned) - strlen("/images/") - strlen("/push"));
                if (!name)
                        return conn_reply(c, 500, NULL, "out of memory");
                json_object_object_foreach(c->target.query, k, e) {
                        (void) e;
                        if (!streq(k, "tag"))
                                return conn_reply(c, 403, "push", "a push takes the parameter tag only");
                }
                if (conn_check_image_name(c, name, query_string(c, "tag"), true) < 0)
                        return 0;       /* answered */
                if (conn_check_registry(c, "push", name, query_string(c, "tag")) < 0)
                        return 0;       /* answered */
        }

        /* a build's context is read whole: its Dockerfile decides (below) whether the engine gets it */
        if (streq(endpoint->pattern, "/build")) {
                const char *expect = http_request_header(&c->head, "Expect");
                if (c->content_length == 0 && !c->head.chunked)
                        return conn_reply(c, 400, "build", "a build without a build context (the request body) is refused");
                if (c->in_size == c->head_size && c->head.version_minor == 1 && expect &&
                    strcasecmp(expect, "100-continue") == 0) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                        if (send_all(c->fd, cont, sizeof(cont) - 1) < 0)
                                return -EPIPE;
                }
                r = conn_read_build_context(c, &context, &context_size);
                if (r == -EPIPE)
                        return r;
                if (r < 0)
                        return 0;       /* answered */
        }

        stream = endpoint->body == PROXY_BODY_STREAM;
        if (context)
                ;       /* read whole above */
        else if (stream && c->content_length == 0 && !c->head.chunked) {
                /* nothing to stream (a pull): a request like any other */
                c->complete = true;
                c->consumed = c->head_size;
                c->keep_alive = c->head.keep_alive;
        } else if (!stream && c->content_length == 0 && !c->head.chunked) {
                /* no body (most requests: lists, inspects, pings): the head parsed above is the whole
                 * request, not parsed a second time for a body of nothing */
                c->complete = true;
                c->consumed = c->head_size;
                c->keep_alive = c->head.keep_alive;
                r = proxy_body_parse("", 0, &body);
                if (r < 0)
                        return conn_reply(c, 500, NULL, "out of memory");
        } else if (!stream) {
                size_t max = PROXY_BODY_MAX;
                HttpParseInfo info;
                size_t consumed;

                (void) proxy_policy_wants_body(p->policy, c->head.method, c->target.unversioned, &max);
                limits.body_size_max = max;
                for (;;) {
                        r = http_request_parse(c->in, c->in_size, &limits, &full, &consumed, &status, &info);
                        if (r < 0)
                                return conn_reply(c, status, "parse", status == 413 ? "request body too large" : "malformed request body");
                        if (r > 0) {
                                c->complete = true;
                                c->consumed = consumed;
                                c->keep_alive = full.keep_alive;
                                break;
                        }
                        if (info.expect_continue && !sent_continue) {
                                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                                if (send_all(c->fd, cont, sizeof(cont) - 1) < 0)
                                        return -EPIPE;
                                sent_continue = true;
                        }
                        ssize_t k = conn_read_more(c);
                        if (k == -ETIMEDOUT)
                                return conn_reply(c, 408, "parse", "the request took too long");
                        if (k == -EFBIG)
                                return conn_reply(c, 413, "parse", "request body too large");
                        if (k == -ENOMEM)
                                return conn_reply(c, 500, "parse", "out of memory");
                        if (k <= 0) {
                                c->rule = "parse";
                                c->reason = strdup("the client left mid-request");
                                return -EPIPE;
                        }
                }
                r = proxy_body_parse(full.body, full.body_size, &body);
                req_body = full.body;
                req_body_size = full.body_size;
                if (r == -EFBIG)
                        return conn_reply(c, 413, "parse", "request body too large");
                if (r < 0)
                        return conn_reply(c, 400, "parse", "the JSON body cannot be read unambiguously "
                                          "(invalid, too deep, or keys that differ only in case)");
        }

        /* an endpoint that takes no body gets none: a start with a HostConfig is the old API's create */
        if (endpoint->body == PROXY_BODY_NONE && body &&
            !(json_object_is_type(body, json_type_object) && json_object_object_length(body) == 0))
                return conn_reply(c, 400, "body", "this endpoint takes no request body");

        if (c->http_verdict_path && streq(c->http_verdict_method, c->head.method) &&
            streq(c->http_verdict_path, c->target.unversioned))
                http = c->http_verdict;
        else {
                proxy_policy_check_http(p->policy, c->head.method, c->target.unversioned, &http);
                free(c->http_verdict_path);
                c->http_verdict_path = strdup(c->target.unversioned);   /* NULL: not kept, checked again */
                snprintf(c->http_verdict_method, sizeof(c->http_verdict_method), "%s", c->head.method);
                c->http_verdict = http;
        }
        proxy_policy_check_body(p->policy, c->head.method, c->target.unversioned,
                                http_request_header(&c->head, "Content-Type"), body, c->target.query, &bv);
        proxy_verdict_combine(&http, &bv, proxy_policy_default_decision(p->policy), &v);
        snprintf(c->rule_buf, sizeof(c->rule_buf), "%s", v.rule_id);
        c->rule = c->rule_buf;
        if (v.decision == DECISION_DENY)
                return conn_reply(c, 403, c->rule, v.message ?: "denied by the channel's Docker API policy");

        /* the body the engine gets is one the proxy wrote, of fields it knows with values it checked */
        if (endpoint->body != PROXY_BODY_STREAM) {
                _cleanup_(json_object_putp) json_object *rebuilt = NULL;
                ProxyBodyRefusal refusal = {};
                r = proxy_body_rebuild(endpoint->body, body, &rebuilt, &c->fields, &refusal);
                if (r == -ENOMEM)
                        return conn_reply(c, 500, NULL, "out of memory");
                if (r < 0) {
                        _cleanup_free_ char *msg = NULL, *shown = text_escape_display(refusal.field, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "%s%s%s", shown, isempty(shown) ? "" : " ",
                                               strna(refusal.reason)) < 0)
                                return conn_reply(c, 500, NULL, "out of memory");
                        free(c->fields);
                        c->fields = TAKE_PTR(shown);
                        return conn_reply(c, r == -EPERM ? 403 : 400, "body-schema", msg);
                }
                json_object_put(body);
                body = TAKE_PTR(rebuilt);
                c->body_changed = endpoint->body != PROXY_BODY_NONE;
        }

        r = conn_check_ownership(c, body);
        if (r < 0)
                return 0;       /* answered */
        r = conn_check_images(c, endpoint);
        if (r < 0)
                return 0;       /* answered */
        {
                _cleanup_free_ char *ref = NULL;
                const char *tail = NULL;
                if (streq(c->head.method, "POST") && path_ref(c->head.method, c->target.unversioned, &ref) == REF_CONTAINER)
                        tail = c->target.unversioned + strlen("/containers/") + strlen(ref);
                bool attach = tail && strcasecmp(tail, "/attach") == 0;
                if (attach) {
                        pthread_mutex_lock(&p->create_lock);
                        if (p->engine_kind == ENGINE_UNKNOWN)
                                proxy_probe_engine(p);
                        pthread_mutex_unlock(&p->create_lock);
                }
                /* a restart mounts the binds again too, and so does Podman's attach to a container that is
                 * not running (it initialises the container: the runtime's create, which mounts; Docker's
                 * attach mounts nothing); a container with pins starts with its channel frozen */
                if (tail && (strcasecmp(tail, "/start") == 0 || strcasecmp(tail, "/restart") == 0 ||
                             (attach && p->engine_kind != ENGINE_DOCKER))) {
                        if (conn_recheck_start(c, ref, &start_inspect) < 0)
                                return 0;       /* answered */
                        r = proxy_binds_pinned(start_inspect);
                        if (r < 0)
                                return conn_reply(c, 403, "bind-pin", "the container's bind pins cannot be read");
                        frozen_start = r > 0;
                } else if (tail && strcasecmp(tail, "/update") == 0 && conn_check_update(c, ref, body) < 0)
                        return 0;       /* answered */
                else if (tail && strcasecmp(tail, "/exec") == 0 && conn_check_host_binds(c, ref, tail, body) < 0)
                        return 0;       /* answered */
                /* a pause or unpause in the middle of a frozen start would change what it froze */
                pause = tail && (strcasecmp(tail, "/pause") == 0 || strcasecmp(tail, "/unpause") == 0);
        }

        if (streq(c->head.method, "PUT")) {
                _cleanup_free_ char *ref = NULL;
                if (path_ref(c->head.method, c->target.unversioned, &ref) == REF_CONTAINER &&
                    strcasecmp(c->target.unversioned + strlen("/containers/") + strlen(ref), "/archive") == 0 &&
                    conn_check_host_binds(c, ref, "/archive", NULL) < 0)
                        return 0;       /* answered */
        }

        if (v.decision == DECISION_APPROVE) {
                _cleanup_free_ char *reason = NULL;
                bool allow = conn_ask_human(c, &v, &actor, &reason);
                c->actor_owned = actor;         /* recorded after this function returns */
                c->actor = actor ?: "gate";
                c->reason = TAKE_PTR(reason);
                if (!allow) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "%s: not approved (%s)", v.message ?: "request", strna(c->reason)) < 0)
                                return -ENOMEM;
                        return conn_reply(c, 403, c->rule, msg);
                }
        }
        c->decision = "allow";

        /* when the agent has no network its nested containers have none: a connect after the create
         * (compose makes one per network) is dropped as the create's networks were, and answered done */
        if (p->network_none && streq(endpoint->pattern, "/networks/*/connect")) {
                c->reason = strdup("the channel's nested containers have no network: the connect is dropped");
                return conn_reply_body(c, 200, "network", "dropped", "");
        }
        if (c->default_network) {
                c->reason = strdup("the engine's default network, without its containers");
                return conn_answer_json(c, c->default_network);
        }
        /* the engine as the channel sees it: no other channel's containers, images, labels or names */
        if (streq(endpoint->pattern, "/info")) {
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_(json_object_putp) json_object *info = NULL, *shown = NULL;
                if (engine_open(p, &e) < 0)
                        return conn_reply(c, 500, NULL, "out of memory");
                if (engine_info(e, &info) < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked about itself");
                r = proxy_info_redact(info, &shown);
                if (r == -ENOMEM)
                        return conn_reply(c, 500, NULL, "out of memory");
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine's info is malformed");
                c->reason = strdup("the engine's info, without other channels' objects");
                return conn_answer_json(c, shown);
        }
        if (streq(endpoint->pattern, "/events") && proxy_query_scope_to_channel(c->target.query, p->channel) < 0)
                return conn_reply(c, 400, "parse", "the filters parameter cannot be read");

        /* the network list without filters of the agent's: the channel's networks and the engine's
         * defaults (redacted), picked by the proxy from the engine's whole list */
        if (streq(c->head.method, "GET") && strcasecmp(c->target.unversioned, "/networks") == 0 &&
            json_object_object_length(c->target.query) == 0) {
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_(json_object_putp) json_object *all = NULL, *shown = NULL;
                if (engine_open(p, &e) < 0)
                        return conn_reply(c, 500, NULL, "out of memory");
                r = engine_network_list(e, &all);
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine cannot list its networks");
                r = proxy_network_list_scope(all, p->channel, &shown);
                if (r == -ENOMEM)
                        return conn_reply(c, 500, NULL, "out of memory");
                if (r < 0)
                        return conn_reply(c, 502, "engine", "the engine's network list is malformed");
                return conn_answer_json(c, shown);
        }

        /* lists and prunes see only the channel's containers, volumes and networks */
        if ((streq(c->head.method, "GET") && (strcasecmp(c->target.unversioned, "/containers/json") == 0 ||
                                               strcasecmp(c->target.unversioned, "/volumes") == 0 ||
                                               strcasecmp(c->target.unversioned, "/networks") == 0)) ||
            (streq(c->head.method, "POST") && (strcasecmp(c->target.unversioned, "/containers/prune") == 0 ||
                                                strcasecmp(c->target.unversioned, "/volumes/prune") == 0 ||
                                                strcasecmp(c->target.unversioned, "/networks/prune") == 0))) {
                if (proxy_query_scope_to_channel(c->target.query, p->channel) < 0)
                        return conn_reply(c, 400, "parse", "the filters parameter cannot be read");
        }

        /* volumes and networks made through the proxy are the channel's */
        if (streq(c->head.method, "POST") && (strcasecmp(c->target.unversioned, "/volumes/create") == 0 ||
                                              strcasecmp(c->target.unversioned, "/networks/create") == 0)) {
                if (conn_check_create_name(c, body, strcasecmp(c->target.unversioned, "/volumes/create") == 0) < 0)
                        return 0;       /* answered */
                if (proxy_labels_force(body, p->channel) < 0)
                        return conn_reply(c, 400, "parse", "the create body has fields of the wrong type");
                forced = strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
                if (!forced)
                        return conn_reply(c, 500, NULL, "out of memory");
                return conn_forward(c, forced, strlen(forced), NULL, 0);
        }

        /* a build's RUN steps run in containers the engine makes itself: what the build API lets a
         * caller widen is refused, and their network is the nested containers' */
        if (streq(c->head.method, "POST") && strcasecmp(c->target.unversioned, "/build") == 0) {
                _cleanup_free_ char *network = NULL, *refused = NULL, *msg = NULL, *shown = NULL;
                r = proxy_build_force(c->target.query, p->network_none, &network, &refused);
                if (r == -EPERM) {
                        shown = text_escape_display(refused, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "the build parameter %s is refused (the build's RUN steps would "
                                               "get what the channel's containers may not have)", shown) < 0)
                                return conn_reply(c, 500, NULL, "out of memory");
                        c->decision = "deny";
                        return conn_reply(c, 403, "build", msg);
                }
                if (r == -ENOMEM)
                        return conn_reply(c, 500, NULL, "out of memory");
                if (r < 0)
                        return conn_reply(c, 400, "parse", "the build's networkmode cannot be read");
                if (network && conn_check_ref(c, REF_NETWORK, network, NULL) < 0)
                        return 0;       /* answered */
                /* the Dockerfile the engine will read, by the name it will read it by */
                {
                        _cleanup_free_ char *dockerfile = NULL, *why = NULL;
                        const char *given = query_string(c, "dockerfile");
                        r = proxy_build_dockerfile_name(given, &dockerfile);
                        if (r == -ENOMEM)
                                return conn_reply(c, 500, NULL, "out of memory");
                        if (r < 0)
                                return conn_reply(c, 403, "build", "the dockerfile parameter is refused (a path inside "
                                                  "the build context only)");
                        _cleanup_strv_free_ char **bases = NULL;
                        r = proxy_build_context_check_bases(context, context_size, dockerfile, isempty(given), p->channel,
                                                            &bases, &why);
                        if (r == -ENOMEM)
                                return conn_reply(c, 500, NULL, "out of memory");
                        if (r < 0) {
                                _cleanup_free_ char *why_shown = text_escape_display(why, PROXY_DISPLAY_MAX);
                                c->decision = "deny";
                                return conn_reply(c, 403, "build", why_shown ?: "the build context is refused");
                        }
                        if (conn_check_build_bases(c, bases) < 0)
                                return 0;       /* answered */
                        /* the bases checked are the ones built on: the engine pulls none (Podman: never;
                         * Docker's classic builder takes local images first, which they are) */
                        for (bool again = true; again;) {
                                _cleanup_free_ char *key = NULL;
                                again = false;
                                json_object_object_foreach(c->target.query, k, e) {
                                        (void) e;
                                        if (!key && (strcasecmp(k, "pull") == 0 || strcasecmp(k, "pullpolicy") == 0)) {
                                                if (!(key = strdup(k)))
                                                        return conn_reply(c, 500, NULL, "out of memory");
                                        }
                                }
                                if (key) {
                                        json_object_object_del(c->target.query, key);
                                        again = true;
                                }
                        }
                        if (!isempty(given)) {
                                _cleanup_free_ char *key = NULL;
                                json_object *o;
                                json_object_object_foreach(c->target.query, k, e) {
                                        (void) e;
                                        if (strcasecmp(k, "dockerfile") == 0 && !key && !(key = strdup(k)))
                                                return conn_reply(c, 500, NULL, "out of memory");
                                }
                                if (key)
                                        json_object_object_del(c->target.query, key);
                                if (!(o = json_object_new_string(dockerfile)) ||
                                    json_object_object_add(c->target.query, "dockerfile", o) < 0) {
                                        json_object_put(o);
                                        return conn_reply(c, 500, NULL, "out of memory");
                                }
                        }
                }
                /* Podman's compat build runs RUN steps in the engine's own network namespace (the host's)
                 * whatever networkmode says; it honours a namespace given by path: the proxy's own, which
                 * PrivateNetwork= leaves with loopback alone and nothing listening */
                pthread_mutex_lock(&p->create_lock);
                if (p->engine_kind == ENGINE_UNKNOWN)
                        proxy_probe_engine(p);
                pthread_mutex_unlock(&p->create_lock);
                if (p->engine_kind == ENGINE_UNKNOWN)
                        return conn_reply(c, 502, "engine", "the engine cannot be asked which it is");
                if (p->engine_kind == ENGINE_PODMAN) {
                        _cleanup_free_ char *ns = NULL;
                        json_object *o;
                        if (!proxy_network_is_isolated()) {
                                c->decision = "deny";
                                return conn_reply(c, 403, "build", "builds on Podman need the proxy in a network namespace "
                                                  "of its own (PrivateNetwork=), where their RUN steps are put");
                        }
                        if (asprintf(&ns, "[{\"Name\":\"network\",\"Path\":\"/proc/%d/ns/net\"}]", (int) getpid()) < 0 ||
                            !(o = json_object_new_string(ns)))
                                return conn_reply(c, 500, NULL, "out of memory");
                        if (json_object_object_add(c->target.query, "nsoptions", o) < 0) {
                                json_object_put(o);
                                return conn_reply(c, 500, NULL, "out of memory");
                        }
                        if (!(o = json_object_new_string("never")) ||
                            json_object_object_add(c->target.query, "pullpolicy", o) < 0) {
                                json_object_put(o);
                                return conn_reply(c, 500, NULL, "out of memory");
                        }
                        c->hold_until_engine_done = true;
                }
        }

        if (context)
                return conn_forward(c, context, context_size, NULL, 0);
        if (stream && c->complete)
                return conn_forward(c, "", 0, NULL, 0);
        if (stream) {
                size_t pending = c->in_size - c->head_size;
                const char *expect = http_request_header(&c->head, "Expect");

                /* the decision is made: a client that waits before sending its body may send it now */
                if (pending == 0 && c->head.version_minor == 1 && expect && strcasecmp(expect, "100-continue") == 0) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                        if (send_all(c->fd, cont, sizeof(cont) - 1) < 0)
                                return -EPIPE;
                }
                return conn_forward(c, NULL, 0, c->in + c->head_size, pending);
        }

        if (streq(c->head.method, "POST") && strcasecmp(c->target.unversioned, "/containers/create") == 0) {
                _cleanup_(engine_freep) Engine *e = NULL;
                uint64_t n = 0;

                pthread_mutex_lock(&p->create_lock);
                r = proxy_seccomp_option(p);
                pthread_mutex_unlock(&p->create_lock);
                if (r < 0)      /* fail closed: no nested container without the workload profile */
                        return conn_reply(c, 502, "engine", "the seccomp profile for the engine cannot be made");
                ProxyNestedPolicy nested = {
                        .channel = p->channel, .cgroup_parent = p->cgroup_parent, .seccomp_option = p->seccomp_option,
                        .masked_paths = p->masked_paths, .podman = p->engine_kind == ENGINE_PODMAN,
                        .network_none = p->network_none,
                };
                r = proxy_container_force(body, &nested);
                if (r < 0)
                        return conn_reply(c, 400, "parse", "the create body has fields of the wrong type");
                c->decision = NULL;     /* not allowed until what it uses is the channel's too */
                if (conn_check_references(c, body) < 0)
                        return 0;       /* answered */
                const char *why = NULL;
                r = proxy_tmpfs_check(body, &why);
                if (r == -EPERM)
                        return conn_reply(c, 403, "tmpfs", why);
                if (r < 0)
                        return conn_reply(c, 400, "parse", "the create body's tmpfs mounts cannot be read");
                /* bind sources resolved now and pinned (checked again at start) */
                r = proxy_binds_pin(body);
                if (r == -ENOMEM)
                        return conn_reply(c, 500, NULL, "out of memory");
                if (r == -EBADMSG)
                        return conn_reply(c, 400, "parse", "the create body's binds cannot be read");
                if (r < 0)
                        return conn_reply(c, 403, "bind-pin", "a bind source cannot be resolved to a path a bind can name");
                /* a container that binds host paths writes host files as whoever runs in it: the agent */
                r = proxy_container_host_binds(body);
                if (r < 0)
                        return conn_reply(c, 400, "parse", "the create body's binds cannot be read");
                if (r > 0) {
                        uid_t uid;
                        gid_t gid;
                        r = conn_run_as(c, &uid, &gid);
                        if (r < 0)
                                return conn_reply(c, 403, "bind-owner", "a container that binds host paths runs as the "
                                                  "agent's uid, which this caller does not have (root in the agent's "
                                                  "container)");
                        if (r > 0 && proxy_container_run_as(body, uid, gid) < 0)
                                return conn_reply(c, 400, "parse", "the create body has fields of the wrong type");
                }
                c->decision = "allow";
                forced = strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
                if (!forced || engine_open(p, &e) < 0)
                        return conn_reply(c, 500, NULL, "out of memory");
                /* count and create under one lock, so parallel creates cannot overshoot */
                pthread_mutex_lock(&p->create_lock);
                r = count_nested(p, e, &n);
                if (r < 0) {
                        pthread_mutex_unlock(&p->create_lock);
                        return conn_reply(c, 502, "engine", "the engine cannot list the channel's containers");
                }
                if (n >= p->containers_max) {
                        _cleanup_free_ char *msg = NULL;
                        pthread_mutex_unlock(&p->create_lock);
                        if (asprintf(&msg, "channel %s has %" PRIu64 " containers, the most it may have",
                                     p->channel, n) < 0)
                                return -ENOMEM;
                        c->decision = "deny";
                        return conn_reply(c, 403, "container-limit", msg);
                }
                r = conn_forward(c, forced, strlen(forced), NULL, 0);
                pthread_mutex_unlock(&p->create_lock);
                return r;
        }
        if (frozen_start)
                return conn_start_frozen(c, start_inspect, req_body, req_body_size);
        if (c->body_changed) {
                forced = strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
                if (!forced)
                        return conn_reply(c, 500, NULL, "out of memory");
                req_body = forced;
                req_body_size = strlen(forced);
        }
        if (pause) {
                pthread_mutex_lock(&p->start_lock);
                r = conn_forward(c, req_body, req_body_size, NULL, 0);
                pthread_mutex_unlock(&p->start_lock);
                return r;
        }
        return conn_forward(c, req_body, req_body_size, NULL, 0);
}

/* After refusing a request whose body the client is still sending (a build context, say), read and drop
 * the rest for a while, so that the client reads the answer instead of a broken pipe. Bounded in time
 * and bytes: a client cannot keep a worker this way. */
#define PROXY_LINGER_USEC (5ULL * 1000000ULL)
#define PROXY_LINGER_BYTES (256ULL * 1024ULL * 1024ULL)

static void lingering_close(int fd) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_LINGER_USEC, total = 0;
        char buf[16384];

        (void) shutdown(fd, SHUT_WR);
        while (total < PROXY_LINGER_BYTES) {
                ssize_t k = recv_some(fd, buf, sizeof(buf), deadline);
                if (k <= 0)
                        break;
                total += (uint64_t) k;
        }
}

/* Ready for the connection's next request: what this one left in the buffer (a pipelined request)
 * moves to its start, the rest of the per-request state is cleared. */
static void conn_next_request(Conn *c) {
        assert(c->complete && c->consumed <= c->in_size);
        memmove(c->in, c->in + c->consumed, c->in_size - c->consumed);
        c->in_size -= c->consumed;
        http_request_done(&c->head);
        c->head = (HttpRequest) {};
        proxy_target_done(&c->target);
        c->head_size = 0;
        c->content_length = 0;
        c->complete = false;
        c->consumed = 0;
        c->keep_alive = false;
        c->rule = NULL;
        c->decision = NULL;
        c->actor = NULL;
        c->actor_owned = mfree(c->actor_owned);
        c->reason = mfree(c->reason);
        json_object_put(c->default_network);
        c->default_network = NULL;
        c->status = 0;
        c->froze = false;
        c->n_frozen = 0;
        c->frozen_usec = 0;
        c->hold_until_engine_done = false;
        c->body_changed = false;
        c->fields = mfree(c->fields);
        c->n_requests++;
        c->start_usec = 0;      /* set when the next request's first byte is in */
        c->deadline_usec = clock_usec(CLOCK_MONOTONIC) + PROXY_KEEPALIVE_IDLE_USEC;
}

/* A connection, on a worker thread of the skeleton: its requests one after the other. */
static void conn_run(SocketConnection *sc, void *userdata) {
        Proxy *p = userdata;
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        Conn *c;

        c = calloc(1, sizeof(Conn));
        if (!c) {
                log_oom();
                return;
        }
        c->proxy = p;
        c->sc = sc;
        c->fd = socket_connection_fd(sc);
        c->up = -EBADF;
        c->frozen_root_fd = -EBADF;
        (void) getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        c->peer_pid = len == sizeof(cred) ? cred.pid : 0;
        c->peer_uid = len == sizeof(cred) ? cred.uid : (uid_t) -1;
        c->peer_gid = len == sizeof(cred) ? cred.gid : (gid_t) -1;
        c->start_usec = clock_usec(CLOCK_MONOTONIC);
        c->deadline_usec = c->start_usec + PROXY_HEAD_TIMEOUT_USEC;
        c->in_allocated = PROXY_IN_INITIAL;
        c->in = malloc(c->in_allocated);
        for (int r = socket_connection_head_begin(sc); r >= 0 && c->in;) {
                r = conn_handle(c);
                if (c->rule)            /* not recorded yet */
                        conn_record(c);
                if (r < 0 || !c->keep_alive)
                        break;
                /* a stop ends a kept connection between its requests */
                r = socket_connection_head_begin(sc);
                if (r >= 0)
                        conn_next_request(c);
        }

        if (c->status >= 400 && !c->complete && (c->content_length > 0 || c->head.chunked))
                lingering_close(c->fd);
        /* the skeleton closes c->fd */
        safe_close(c->up);
        http_request_done(&c->head);
        proxy_target_done(&c->target);
        free(c->reason);
        free(c->fields);
        json_object_put(c->default_network);
        free(c->peer_name);
        free(c->http_verdict_path);
        free(c->actor_owned);
        free(c->in);
        free(c->io);
        free(c->io_scratch);
        free(c->response_head);
        free(c);
}

/* ---- the main thread: the skeleton's callbacks ---- */

/* A connection beyond PROXY_CONNECTIONS_MAX: 503 before it is a request, journaled per peer. */
static void on_busy(SocketService *s, int fd, void *userdata) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        Proxy *p = userdata;
        struct ucred cred = {};
        socklen_t len = sizeof(cred);

        (void) getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        (void) send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (refusal_journaled(p, "busy", len == sizeof(cred) ? cred.pid : 0, len == sizeof(cred) ? cred.uid : (uid_t) -1))
                log_warning("%u connections at once, refusing one of pid %d.", PROXY_CONNECTIONS_MAX,
                            len == sizeof(cred) ? (int) cred.pid : 0);
}

/* The refusals' summaries are due when their window ends, whether or not a connection comes or goes
 * then: a timer on the loop for the earliest, armed again after each (workers count, the loop expires). */
static int on_refusals_due(sd_event_source *source, uint64_t usec, void *userdata);

static void refusals_schedule(Proxy *p) {
        uint64_t next;
        int r;

        refusals_expire(p, clock_usec(CLOCK_MONOTONIC));
        next = refusals_next_deadline(p);
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

/* ---- setup ---- */

/* The service's runtime directory: the seccomp profile for Podman, the record of frozen cgroups. */
static int proxy_state_dir(const char *channel, char **ret) {
        const char *rt = getenv("RUNTIME_DIRECTORY");

        if (!isempty(rt) && !strchr(rt, ':'))           /* one directory (RuntimeDirectory= names one) */
                return (*ret = strdup(rt)) ? 0 : -ENOMEM;
        return asprintf(ret, "%s/%s/dockerproxy", loop_runtime_dir(), channel) < 0 ? -ENOMEM : 0;
}

/* What a proxy that died during a frozen start left frozen (its record) is thawed: at the service's
 * start, and by "--thaw CHANNEL" from the unit's ExecStopPost=. */
static int proxy_thaw_leftovers(const char *state_dir) {
        int r = cgroup_freeze_record_thaw(state_dir);

        if (r < 0)
                return log_error_errno(r, "Cannot thaw the cgroups recorded in %s/%s: %m", state_dir, CGROUP_FREEZE_RECORD);
        if (r > 0)
                log_notice("Thawed %d cgroup(s) a Docker API proxy left frozen (%s/%s).", r, state_dir, CGROUP_FREEZE_RECORD);
        return 0;
}

static int proxy_settings(Proxy *p) {
        _cleanup_free_ char *error = NULL, *cred_policy = NULL;
        const char *sock = getenv("LOOP_DOCKERPROXY_ENGINE_SOCKET"), *policy = getenv("LOOP_DOCKERPROXY_POLICY");
        const char *work_dir = getenv("LOOP_DOCKERPROXY_WORK_DIR"), *creds = getenv("CREDENTIALS_DIRECTORY");
        int r;

        if ((r = env_uint("LOOP_DOCKERPROXY_CONTAINERS_MAX", PROXY_CONTAINERS_MAX_DEFAULT, 10000, &p->containers_max)) < 0 ||
            (r = env_uint("LOOP_DOCKERPROXY_IDLE_SEC", PROXY_IDLE_SEC_DEFAULT, 86400, &p->idle_usec)) < 0)
                return r;
        p->idle_usec = MAX(p->idle_usec, 1U) * 1000000ULL;

        const char *build = getenv("LOOP_DOCKERPROXY_BUILD");
        if (!isempty(build) && !streq(build, "0") && !streq(build, "1"))
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_BUILD=%s is neither 0 nor 1.", build);
        p->build = streq_ptr(build, "1");

        for (const char *i = strempty(getenv("LOOP_DOCKERPROXY_PROTECTED_IMAGES")); *i;) {
                size_t n = strcspn(i, " ");
                if (n > 0) {
                        _cleanup_(proxy_image_ref_done) ProxyImageRef ref = {};
                        _cleanup_free_ char *image = strndup(i, n);
                        if (!image)
                                return log_oom();
                        if (proxy_image_ref_parse(image, &ref) < 0)
                                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_PROTECTED_IMAGES: %s is not an image reference.", image);
                        if (strv_consume(&p->protected_images, TAKE_PTR(image)) < 0)
                                return log_oom();
                }
                i += n + (i[n] == ' ');
        }

        const char *network = getenv("LOOP_DOCKERPROXY_NETWORK"), *masks = getenv("LOOP_DOCKERPROXY_MASKED_PATHS");
        if (!isempty(network) && !streq(network, "none") && !streq(network, "engine"))
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_NETWORK=%s is neither \"none\" nor \"engine\".", network);
        p->network_none = streq_ptr(network, "none");
        for (const char *m = strempty(masks); *m;) {
                size_t n = strcspn(m, ":");
                _cleanup_free_ char *path = strndup(m, n);
                if (!path)
                        return log_oom();
                if (!(startswith(path, "/proc/") || startswith(path, "/sys/")) || strstr(path, "/../") || endswith(path, "/.."))
                        return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_MASKED_PATHS: %s is not a /proc or /sys path.", path);
                if (strv_consume(&p->masked_paths, TAKE_PTR(path)) < 0)
                        return log_oom();
                m += n + (m[n] == ':');
        }
        if (proxy_state_dir(p->channel, &p->state_dir) < 0)
                return log_oom();

        if (isempty(sock))
                sock = access("/run/podman/podman.sock", F_OK) >= 0 ? "/run/podman/podman.sock" : "/var/run/docker.sock";
        if (sock[0] != '/')
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_ENGINE_SOCKET=%s is not an absolute path.", sock);
        p->engine_socket = strdup(sock);
        if (asprintf(&p->gate_socket, "%s/%s/gate.sock", loop_runtime_dir(), p->channel) < 0 || !p->engine_socket)
                return log_oom();

        if (isempty(policy) && !isempty(creds)) {
                if (asprintf(&cred_policy, "%s/policy", creds) < 0)
                        return log_oom();
                if (access(cred_policy, F_OK) >= 0)
                        policy = cred_policy;
        }
        if (!isempty(work_dir) && (work_dir[0] != '/' || streq(work_dir, "/")))
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_WORK_DIR=%s must be absolute and not /.", work_dir);
        if (!isempty(work_dir) && !(p->work_dir = strdup(work_dir)))
                return log_oom();
        {
                _cleanup_free_ char *cred_egress = NULL, *text = NULL, *egress_error = NULL;
                _cleanup_(json_object_putp) json_object *doc = NULL;
                const char *egress = getenv("LOOP_DOCKERPROXY_EGRESS");
                size_t size;
                if (isempty(egress) && !isempty(creds)) {
                        if (asprintf(&cred_egress, "%s/egress", creds) < 0)
                                return log_oom();
                        if (access(cred_egress, F_OK) >= 0)
                                egress = cred_egress;
                }
                if (!isempty(egress)) {
                        r = read_full_file_at(AT_FDCWD, egress, PROXY_BODY_MAX, false, &text, &size);
                        if (r < 0)
                                return log_error_errno(r, "Cannot read the egress policy %s: %m", egress);
                        doc = json_tokener_parse(text);
                        if (!doc)
                                return log_error_errno(EINVAL, "The egress policy %s is not JSON.", egress);
                        r = egress_policy_compile(doc, NULL, &p->egress, &egress_error);
                        if (r < 0)
                                return log_error_errno(r, "The egress policy %s refused: %s", egress, strna(egress_error));
                }
        }
        if (!isempty(policy)) {
                r = proxy_policy_load_channel_file(policy, isempty(work_dir) ? NULL : work_dir, &p->policy, &error);
                if (r < 0)
                        return log_error_errno(r, "Policy %s refused: %s", policy, strna(error));
        } else {
                _cleanup_(json_object_putp) json_object *doc = NULL;
                r = proxy_policy_document(NULL, isempty(work_dir) ? NULL : work_dir, &doc);
                if (r < 0)
                        return log_error_errno(r, "Cannot build the default policy: %m");
                r = proxy_policy_compile(doc, &p->policy, &error);
                if (r < 0)
                        return log_error_errno(r, "The built-in policy does not compile: %s", strna(error));
        }
        return 0;
}

/* Which engine it is (the seccomp profile is given differently), and whether it manages cgroups through
 * systemd (then containers go into the channel's slice). An engine down at start is asked again at the
 * first create. */
static void proxy_probe_engine(Proxy *p) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *info = NULL;
        json_object *driver;

        if (engine_open(p, &e) < 0)
                return;
        engine_set_timeout(e, 5);
        if (engine_info(e, &info) < 0)
                return;
        p->engine_kind = engine_kind(e);
        if (sd_booted() > 0 && !p->cgroup_parent && json_object_object_get_ex(info, "CgroupDriver", &driver) &&
            streq(strempty(json_object_get_string(driver)), "systemd"))
                p->cgroup_parent = channel_slice_name(p->channel);
}

/* The workload profile's security option for the engine (seccomp-profile.h), made once; under
 * create_lock. */
static int proxy_seccomp_option(Proxy *p) {
        int r;

        if (p->seccomp_option)
                return 0;
        if (p->engine_kind == ENGINE_UNKNOWN)
                proxy_probe_engine(p);
        if (p->engine_kind == ENGINE_UNKNOWN)
                return -EHOSTDOWN;
        if (p->engine_kind == ENGINE_PODMAN)
                /* the directory and what is missing above it, readable by the engine */
                for (char *s = p->state_dir + 1;; s++)
                        if (*s == '/' || !*s) {
                                char saved = *s;
                                *s = 0;
                                int k = mkdir(p->state_dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
                                *s = saved;
                                if (k < 0)
                                        return log_warning_errno(k, "Cannot make %s for the seccomp profile: %m", p->state_dir);
                                if (!saved)
                                        break;
                        }
        r = seccomp_profile_security_opt(p->engine_kind, p->state_dir, &p->seccomp_option);
        if (r < 0)
                return log_warning_errno(r, "Cannot make the seccomp workload profile for nested containers: %m");
        return 0;
}

static int run(int argc, char *argv[]) {
        Proxy p = { .create_lock = PTHREAD_MUTEX_INITIALIZER, .start_lock = PTHREAD_MUTEX_INITIALIZER,
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
        refusals_expire(&p, UINT64_MAX);        /* what is still counted gets its summary */
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
