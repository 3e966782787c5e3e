/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The gateway's upstream connections: the name resolved and every address checked (egress-address.h)
 * before and after connecting, directly or through a CONNECT tunnel of the host's proxy to the checked
 * address, TLS verified by the gateway itself (names get SNI and a name check, IP literals an address
 * check) with sessions resumed, and idle connections kept in the pool. A failure to reach the upstream
 * is answered to the agent here (502, 504, or 403 for a refused address), with the record's reason. */

#include "egress-gateway.h"

/* The client context of upstream TLS: TLS 1.2 or later, verified against the system's trust store and
 * ca_file (if not NULL; -ENOENT when it cannot be loaded), sessions handed to the gateway's cache. */
int egress_upstream_tls_new(const char *ca_file, SSL_CTX **ret);

/* Connects c->up to host:port (directly or through the host's proxy), or refuses and answers. */
int egress_conn_upstream_open(EgressConn *c, const char *host, uint16_t port);
/* c->up to host:port, TLS verified when tls: from the pool (c->up_pooled), or a new connection. */
int egress_conn_upstream_get(EgressConn *c, const char *host, uint16_t port, bool tls);
/* Hands c->up to the pool (reusable) or closes it. */
void egress_conn_upstream_release(EgressConn *c, bool reusable);

int egress_conn_up_write(EgressConn *c, const void *buf, size_t n);
/* 0 at the end (also a TLS server that closed without close_notify), or a negative errno. */
ssize_t egress_conn_up_read(EgressConn *c, void *buf, size_t n);
