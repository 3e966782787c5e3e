/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal records of the Docker API proxy: one per request, and refusals before a request is a
 * caller's counted per peer with a summary per burst. */

#include "dockerproxy-conn.h"

/* Refusals that come before anything is the caller's request (a caller that is not one of the channel's
 * containers, a connection beyond PROXY_CONNECTIONS_MAX) can be caused by anyone who reaches the socket,
 * at any rate: PROXY_REFUSED_PER_WINDOW per peer and window are journaled one by one, the rest of a burst
 * as one record with the count. Every request of a caller that passed the check is journaled. */
#define PROXY_REFUSED_PER_WINDOW 3U
#define PROXY_REFUSED_WINDOW_USEC (10ULL * 1000000ULL)

/* Whether this refusal of peer is journaled by itself (else it is counted for a summary). */
bool proxy_refusal_journaled(DockerProxy *p, const char *rule, pid_t pid, uid_t uid);

/* Sums up the windows of refusals that are over at now (UINT64_MAX: all). */
void proxy_refusals_expire(DockerProxy *p, uint64_t now);

/* When the earliest window of refusals ends, UINT64_MAX when none is counted. */
uint64_t proxy_refusals_next_deadline(DockerProxy *p);

/* The fields of fixed form (a method, a rule id, numbers) are formatted into buffers on the stack: this
 * runs for every request. The path and the actor go there too when they fit; the reason, and a path or
 * an approver's name that does not fit, are allocated, each once. */
#define PROXY_RECORD_FIELD_MAX 128U

#define PROXY_RECORD_EXTRA_MAX 16U

/* The fields of a request's record, each "NAME=value", and the values its message shows. */
typedef struct ProxyRecord {
        char *extra[PROXY_RECORD_EXTRA_MAX];    /* NULL-terminated, pointing into the fields below */
        const char *method;
        char *path, *reason;                    /* escaped for display; reason NULL when there is none */
        bool deny;                              /* every decision but "allow" is journaled as a deny */
        char *f_path, *f_reason, *f_actor, *f_fields;
        char f_method[PROXY_RECORD_FIELD_MAX], f_rule[PROXY_RECORD_FIELD_MAX], f_status[PROXY_RECORD_FIELD_MAX],
                f_latency[PROXY_RECORD_FIELD_MAX], f_peer[PROXY_RECORD_FIELD_MAX], f_peer_uid[PROXY_RECORD_FIELD_MAX],
                f_frozen[PROXY_RECORD_FIELD_MAX], f_frozen_us[PROXY_RECORD_FIELD_MAX],
                f_path_fixed[PROXY_RECORD_FIELD_MAX], f_actor_fixed[PROXY_RECORD_FIELD_MAX];
} ProxyRecord;

/* The record of c's request at now (CLOCK_MONOTONIC usec): the method, the path as the proxy read it (or
 * what a request that never parsed began with), never the query, a header or a body value. -ENOMEM. */
int proxy_record_build(const ProxyConn *c, uint64_t now, ProxyRecord *r);
void proxy_record_done(ProxyRecord *r);

/* A record's message on the stack when it fits (it does unless a rule's name or a reason is long) */
#define PROXY_RECORD_MESSAGE_STACK 1024U

/* The record's MESSAGE, "Docker API allow: GET /_ping -> 200 (rule default)", with ": REASON" after the
 * rule when there is one, into buf when it fits in size bytes, else into an allocation returned in
 * *ret_allocated (NULL otherwise); NULL when out of memory. Written with stpcpy(): the printf machinery
 * cost as much as the rest of the record, which is made for every request. */
const char *proxy_record_message(const ProxyConn *c, const ProxyRecord *r, char *buf, size_t size,
                                 char **ret_allocated);

/* The journal record of c's request (nothing when it is counted for a summary). */
void proxy_conn_record(ProxyConn *c);
