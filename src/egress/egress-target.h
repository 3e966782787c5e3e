/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Whether what an agent's request says about its target agrees with itself: the Host header with the
 * request's target, the ClientHello's server name with the CONNECT target, the method with itself. All
 * are bytes the agent chose; a mismatch is how an allowed name would front another server, or an
 * allowed method carry a refused one. */

#include <stdbool.h>
#include <stdint.h>

#include "http-server.h"

/* Whether the Host header (if any; HTTP/1.1 requires one) names r->host:r->port (default_port when
 * the header has none); a trailing dot names the same host. */
bool egress_host_header_agrees(const HttpRequest *r, uint16_t default_port);

/* Whether a ClientHello's server name, normalised as hosts are, is the (normalised) CONNECT target. */
bool egress_sni_agrees(const char *sni, const char *host);

/* Whether the request names one method in one spelling: its method has no lower case letter (methods
 * are case-sensitive, RFC 9110 9.1, yet ASP.NET Core and Werkzeug read "delete" as DELETE), and no
 * method-override header (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, which many
 * frameworks obey) names another one. The policy's method rules decide on that one method. */
bool egress_method_is_unambiguous(const HttpRequest *r);
