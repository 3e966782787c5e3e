/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One exchange of the gateway: a request's head (already checked and rewritten) and its body sent
 * upstream, the response streamed back as it arrives, its end found from its framing (Content-Length,
 * chunks, or the connection's end), so that both connections can carry the next request. Chunked request
 * bodies are decoded strictly and sent on re-chunked; the response to a request the gateway injected a
 * secret into is scrubbed of it (egress_scrub()), re-chunked where a dummy changes its length. */

#include "egress-gateway.h"

/* Sends head (and the body that follows in c->buf and from the agent) to host:port and the response
 * back. A pooled connection the server closed meanwhile is replaced once, when nothing of the request
 * but its head was sent. Sets c->again when the agent's connection can carry another request; answers
 * the agent itself on a failure before any byte of the response. */
int egress_conn_forward(EgressConn *c, const char *host, uint16_t port, bool tls, const char *head, size_t head_size);
