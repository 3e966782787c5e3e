/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A connection of the Docker API proxy and its requests' state (DockerProxy, ProxyConn), its I/O with deadlines,
 * and the answers the proxy gives itself. */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit-limiter.h"
#include "dockerproxy-endpoint.h"
#include "dockerproxy-ownership.h"
#include "dockerproxy-path.h"
#include "dockerproxy-policy.h"
#include "egress-policy.h"
#include "engine.h"
#include "http-server.h"
#include "socket-service.h"

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

/* A lock held for the rest of a scope: one function takes it and every path out releases it.
 *   _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&p->create_lock); */
static inline pthread_mutex_t *proxy_mutex_lock(pthread_mutex_t *m) {
        pthread_mutex_lock(m);
        return m;
}
static inline void proxy_mutex_unlockp(pthread_mutex_t **m) {
        if (*m)
                pthread_mutex_unlock(*m);
}

typedef struct DockerProxy {
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
} DockerProxy;

typedef struct ProxyConn {
        DockerProxy *proxy;
        SocketConnection *sc;                   /* the skeleton's: its fd, the head's deadline, the drain */
        int fd;
        pid_t peer_pid;
        uid_t peer_uid;
        gid_t peer_gid;
        char *peer_name;                        /* the calling container's name, NULL for the host */
        bool peer_known;                        /* proxy_conn_peer_check() said yes for this connection */
        int up;                                 /* the engine connection kept from the last request */
        bool up_seen_idle;                      /* watched while this request's head was awaited: idle */
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
        /* the body rules' verdict for that method and path when none of the rest they read was there (no
         * body, no query, no Content-Type): it then depends on nothing else either */
        ProxyVerdict body_verdict_plain;
        bool body_verdict_plain_kept;
        /* the empty body of a request without one to an endpoint that takes none, one for the
         * connection's requests (nothing changes such a body: it is checked empty and sent as nothing) */
        json_object *empty_body;
        json_object *spare_query;               /* the last request's query object, empty: the next one's */
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
} ProxyConn;

int proxy_send_all(int fd, const void *data, size_t size);

/* Two buffers in one sendmsg() where the socket takes them: a response head and the body that came with
 * it reach the client in one wake-up, not two. */
int proxy_send_two(int fd, const void *a, size_t a_size, const void *b, size_t b_size);

/* Without a deadline the (blocking) socket is read at once: no poll() before it. */
ssize_t proxy_recv_some(int fd, void *buf, size_t size, uint64_t deadline);

/* Reads more of the request into c->in, growing it up to its cap; -EFBIG when that is full, 0 at EOF. */
ssize_t proxy_conn_read_more(ProxyConn *c);

/* An answer of the proxy's own: status and a JSON body; reason is what the journal says. Every error
 * status is a deny in the record, whatever was decided before (a 502 after an allow included). */
int proxy_conn_reply_body(ProxyConn *c, int status, const char *rule, const char *reason, const char *body);

/* {"message": "..."}: what the docker CLI prints for an error. */
int proxy_conn_reply(ProxyConn *c, int status, const char *rule, const char *message);

/* An answer of the proxy's own for an allowed request (a default network, the network list). */
int proxy_conn_answer_json(ProxyConn *c, json_object *o);

/* A client of the engine for the proxy's own questions (inspect, list), with their time limit. */
int proxy_engine_open(DockerProxy *p, Engine **ret);

/* The inspect reply of a container, or an answer to the client saying why there is none. */
int proxy_conn_inspect_container(ProxyConn *c, const char *ref, json_object **ret);

void proxy_lingering_close(int fd);

/* Ready for the connection's next request: what this one left in the buffer (a pipelined request)
 * moves to its start, the rest of the per-request state is cleared. */
void proxy_conn_next_request(ProxyConn *c);

/* A client connection on fd (its peer read from SO_PEERCRED), served on the skeleton's connection sc
 * (NULL: none, for tests and fuzzers). The fd stays its owner's. */
int proxy_conn_new(DockerProxy *p, SocketConnection *sc, int fd, ProxyConn **ret);
ProxyConn *proxy_conn_free(ProxyConn *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProxyConn *, proxy_conn_free);

/* The skeleton's deadline of a request head (socket-service.h), and whether the service stops; without
 * a skeleton there is neither. */
int proxy_conn_head_begin(ProxyConn *c);

/* The connection's empty body (a reference of it, for json_object_put()), made at its first use; -ENOMEM. */
int proxy_conn_empty_body(ProxyConn *c, json_object **ret);
void proxy_conn_head_end(ProxyConn *c);
bool proxy_conn_head_expired(ProxyConn *c);
bool proxy_conn_stopping(ProxyConn *c);
