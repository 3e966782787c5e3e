/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The head the egress gateway sends upstream for a request it can read (plain HTTP through the proxy, the
 * API pass-through): origin-form request line, the Host it was checked against, no hop-by-hop or proxy
 * headers, "Connection: close" (one request per upstream connection, so a second request on the same
 * client connection can never skip the policy), and credentials swapped in:
 *
 *   - a credential rule's dummy in its header, on a host that rule matched: replaced by the secret;
 *   - any known dummy anywhere else (another header, another host): refused, 403 "dummy-unbound";
 *   - the credential header of a credential host holding something other than the dummy: 403
 *     "unknown-dummy" (the agent's own token never reaches a host we hold a credential for);
 *   - API mode: x-api-key "sk-proxy" becomes the API key, "Authorization: Bearer sk-proxy" the OAuth token;
 *     any other value in those headers is refused ("unknown-dummy"), as is the dummy when the gateway has
 *     no real credential of that kind ("no-credential").
 */

#include "egress-policy.h"
#include "http-server.h"

#define EGRESS_UPSTREAM_HEAD_MAX (64U * 1024U)

typedef struct EgressApiAuth {
        const char *dummy;              /* EGRESS_DUMMY_KEY */
        const char *api_key;            /* NULL when not configured */
        const char *oauth_token;        /* NULL when not configured */
} EgressApiAuth;

/* rule is the rule the request matched (NULL in API mode, where api is not NULL). host_header is the Host
 * the upstream gets. Returns 0 with *ret_head (NUL-terminated), or -EACCES (answer 403) / -E2BIG (431)
 * with *ret_reason a static word for the journal; -ENOMEM. */
int egress_upstream_head(const HttpRequest *r, const EgressPolicy *p, const EgressRule *rule, const EgressApiAuth *api,
                         const char *host_header, char **ret_head, size_t *ret_size, const char **ret_reason);
