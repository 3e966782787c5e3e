/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* An allowed request sent to the engine as a new request (normalised target, hop-by-hop headers dropped,
 * the body re-framed) and the engine's answer relayed to the client as it comes; a raw two-way stream
 * once the engine switched protocols. */

#include "dockerproxy-conn.h"

/* Whether a client's header is for this hop only: the hop-by-hop ones (RFC 9110 7.6.1, the Proxy-* ones,
 * and the framing the proxy writes anew), and every header the client's Connection header names. */
bool proxy_header_is_hop_by_hop(const HttpRequest *req, const char *name);

/* Whether the request becomes a raw two-way stream once the engine switched protocols: POST
 * /containers/ID/attach and POST /exec/ID/start. */
bool proxy_path_is_hijack(const char *method, const char *path);

/* The engine's response head (size bytes, ending in the empty line) as the client gets it: the engine's
 * Connection, Keep-Alive and Proxy-Connection headers (about the engine connection) replaced by one
 * about the client's. */
int proxy_response_head_for_client(const char *head, size_t size, bool keep_alive, char **ret, size_t *ret_size);

/* A new connection to the engine's socket, or -errno. */
int proxy_engine_connect(DockerProxy *p);

/* Sends the request to the engine (the body given, or pending bytes and the rest of a streamed body)
 * and relays the answer; replies itself when the engine cannot be reached or answers malformed. */
int proxy_conn_forward(ProxyConn *c, const char *body, size_t body_size, const char *pending, size_t n_pending);
