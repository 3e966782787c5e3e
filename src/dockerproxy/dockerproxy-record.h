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

/* The journal record of c's request (nothing when it is counted for a summary). */
void proxy_conn_record(ProxyConn *c);
