/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* loop-gate's server (one per channel) and its connections, on the helper skeleton's event loop (accept
 * mode: nothing here blocks; a request waits for a human as a pending entry, its connection stays open):
 * reading requests (one at a time per connection, 100 Continue when asked, GATE_REQUEST_TIMEOUT_USEC to
 * send one), queueing and flushing answers, closing (a request still waiting is denied first: fail
 * closed), and the timers that follow the approvals (deadlines, audit windows, token rechecks) and decide
 * whether the service may idle. What a request means is the helper's (GateServer.handle). */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include <sys/types.h>

#include "audit-limiter.h"
#include "gate-approval.h"
#include "http-server.h"
#include "socket-service.h"

#define GATE_CONNECTIONS_MAX 256U               /* container connections at once */
#define GATE_ADMIN_CONNECTIONS_MAX 16U
#define GATE_HEADER_SIZE_MAX (8U * 1024U)
#define GATE_HEADERS_MAX 32U
#define GATE_BODY_MAX (16U * 1024U)             /* a request's JSON: the fields' caps plus room */
#define GATE_JSON_DEPTH_MAX 4
#define GATE_REQUEST_TIMEOUT_USEC (30ULL * 1000000ULL)  /* to send a whole request, or idle keep-alive */
#define GATE_TOKEN_RECHECK_USEC (1ULL * 1000000ULL)     /* how often removed containers are noticed */
#define GATE_IDLE_SEC_DEFAULT 60U
#define GATE_WEBHOOK_CHILDREN_MAX 8U
#define GATE_ADMIN_ANSWER_MAX 64U
#define GATE_WEBHOOK_URL_MAX 4096U

typedef struct GateServer GateServer;

typedef struct GateConn {
        GateServer *server;
        int fd;
        bool admin;
        sd_event_source *io, *timer;
        char *in;                               /* GATE_HEADER_SIZE_MAX + GATE_BODY_MAX bytes */
        size_t in_size;
        char *out;
        size_t out_size, out_done;
        bool close_after_write;
        bool sent_continue;
        bool dead;                              /* freed as soon as the current callback returns */
        uint64_t waiting_id;                    /* the pending request this connection waits for */
        uid_t peer_uid;
        pid_t peer_pid;
        struct GateConn *prev, *next;
} GateConn;

struct GateServer {
        int (*handle)(GateConn *c, const HttpRequest *req);     /* the protocol: one complete request */
        sd_event *event;
        char *channel;
        GateApprovals *approvals;
        GateLimits limits;
        AuditLimiter *audit_limiter;        /* local decisions journaled per container and second */
        AuditLimiter *unauth_limiter;       /* requests without a known token, journaled per peer */
        bool verbose;
        char *webhook_url;
        GateConn *connections;
        unsigned n_connections, n_admin;
        unsigned n_webhooks;
        SocketService *service;                 /* the skeleton: sockets, idling, stopping; owns event */
        sd_event_source *deadline_timer, *recheck_timer, *audit_timer;
};

void gate_conn_free(GateConn *c);
/* Marks c to be freed; with a request waiting, that request is denied first. */
void gate_conn_close(GateConn *c);
int gate_conn_flush(GateConn *c);
int gate_conn_queue(GateConn *c, const char *data, size_t size);
/* A JSON answer (body may be NULL), queued; the connection closes after it unless keep_alive. */
int gate_conn_reply(GateConn *c, int status, json_object *body, bool keep_alive);
int gate_conn_reply_error(GateConn *c, int status, const char *message, bool keep_alive);
int gate_conn_reply_deny(GateConn *c, int status, const char *reason, const char *container, bool keep_alive);
/* {"decision":"allow"|"deny","actor":...,"reason":...,"id":N} */
json_object *gate_decision_json(bool allow, const char *actor, const char *reason, uint64_t id);

/* The skeleton's accept: a connection of the "gate" or "admin" listener. */
void gate_server_on_accept(SocketService *service, int fd, const char *listener, void *userdata);
/* The skeleton's keeps_alive: no idling while anything is open, pending or kept. */
bool gate_server_busy(SocketService *service, void *userdata);
/* Arms the approvals' deadline, the audit window and the token recheck, and the idle timer. */
void gate_server_update_idle(GateServer *s);
