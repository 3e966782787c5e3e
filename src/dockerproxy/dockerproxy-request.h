/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One request of a connection, from its head to its answer: read, checked, decided, forwarded. */

#include "dockerproxy-conn.h"

/* ---- one request ---- */
int proxy_conn_handle(ProxyConn *c);
