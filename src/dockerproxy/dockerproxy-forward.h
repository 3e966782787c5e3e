/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* An allowed request sent to the engine as a new request (normalised target, hop-by-hop headers dropped,
 * the body re-framed) and the engine's answer relayed to the client as it comes; a raw two-way stream
 * once the engine switched protocols. */

#include "dockerproxy-conn.h"

int proxy_engine_connect(DockerProxy *p);

int proxy_conn_forward(ProxyConn *c, const char *body, size_t body_size, const char *pending, size_t n_pending);
