/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The nested-container pinning glue: a start of a container with pinned binds runs with the channel's
 * containers frozen (cgroup v2 freezer) from the last pin check until the engine answered; binds run as
 * the agent. */

#include "dockerproxy-conn.h"

/* Thaws what this request froze (a no-op when it froze nothing or thawed already), before the client
 * hears anything: every answer goes through here. A cgroup gone with its container needs no thaw; one
 * that cannot be thawed stays in the record, which the next start of the service (or its ExecStopPost=)
 * thaws. */
void proxy_conn_thaw(ProxyConn *c);

/* POST /containers/ID/start|restart|attach of a container with pinned binds: with the channel's containers
 * frozen (conn_freeze_channel()), the pins are checked once more and the start forwarded; nothing of the
 * channel runs between the check and the runtime's mount of the sources, so nothing can swap them. The
 * channel is thawed once the engine's answer is read (conn_forward()), or before a refusal
 * (conn_reply()), and in any case before this returns. One frozen start at a time. */
int proxy_conn_start_frozen(ProxyConn *c, json_object *inspect, const char *body, size_t body_size);

/* Who a nested container that binds host paths runs as (dockerproxy-nested.h, proxy_container_run_as):
 * the agent, that is the calling process of the channel's container as the kernel saw it at connect.
 * Root there is not the agent (which never runs as root) and is refused. Root on the host (the operator,
 * tests) makes them as the work dir's owner, or as asked when that is root too: the caller is root on
 * the host already. 1 with the ids, 0 when nothing is forced, -EPERM. */
int proxy_conn_run_as(ProxyConn *c, uid_t *ret_uid, gid_t *ret_gid);
