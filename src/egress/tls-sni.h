/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The server name a TLS client asks for (RFC 6066 server_name in the ClientHello), read from the first
 * bytes of a connection without terminating TLS: the egress gateway checks it against the CONNECT target
 * before it passes a tunnel through. */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define TLS_RECORD_HEADER_SIZE 5U
#define TLS_RECORD_SIZE_MAX (16384U + 256U)     /* a plaintext record and what older stacks add */

/* Parses the ClientHello at the start of buf. Returns
 *   1        *ret_sni is the host name (lower case, no trailing dot; caller frees);
 *   0        a complete ClientHello without a host name;
 *   -EAGAIN  incomplete: read more (never more than TLS_RECORD_HEADER_SIZE + TLS_RECORD_SIZE_MAX);
 *   -EBADMSG not a TLS ClientHello, or a malformed one (also one split across records, one with two
 *            server_name extensions or two host names in one: a server might read the other);
 *   -ENOMEM. */
int tls_client_hello_sni(const uint8_t *buf, size_t size, char **ret_sni);
