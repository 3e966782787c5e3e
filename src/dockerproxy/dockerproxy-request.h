/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One request of a connection, from its head to its answer: read, checked, decided, forwarded. */

#include "dockerproxy-conn.h"

/* One request: read, checked, decided, answered (by the proxy or the engine). 0 when it was answered or
 * ended without a word, < 0 when the connection cannot carry another. */
int proxy_conn_handle(ProxyConn *c);

/* The connection's requests one after the other, while it is kept alive and the service does not
 * stop; a refused request whose body is still coming is read and dropped for a while at the end. */
void proxy_conn_serve(ProxyConn *c);
