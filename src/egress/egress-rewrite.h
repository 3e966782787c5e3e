/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The head the egress gateway sends upstream for a request it can read (plain HTTP through the proxy, the
 * API pass-through): origin-form request line, the Host it was checked against, no hop-by-hop or proxy
 * headers (Expect too: the gateway answers 100-continue itself), "Transfer-Encoding: chunked" for a body
 * the client sent chunked (the gateway re-chunks it), no "Connection: close" (the upstream connection is
 * kept: every message on it is framed by the gateway), and credentials swapped in:
 *
 *   - a credential rule's dummy in its header, on a host that rule matched: replaced by the secret;
 *   - any known dummy anywhere else (another header, another host): refused, 403 "dummy-unbound";
 *   - the credential header of a credential host holding something other than the dummy: 403
 *     "unknown-dummy" (the agent's own token never reaches a host we hold a credential for);
 *   - API mode (api->pass_through): x-api-key with the container's dummy becomes the API key,
 *     "Authorization: Bearer DUMMY" the OAuth token; any other value in those headers is refused
 *     ("unknown-dummy"), as is the dummy when the gateway has no real credential of that kind
 *     ("no-credential"); elsewhere the container's API dummy is refused like any other ("dummy-unbound");
 *   - a real secret the gateway holds, anywhere in the request (echoed to the agent by some server and
 *     sent back): refused, 403 "secret-in-request".
 *
 * A request the gateway injects a secret into (a credential rule's host, the API pass-through) asks for
 * no content coding ("Accept-Encoding: identity" in place of the agent's): the answer is scrubbed of the
 * secret as it streams, which a compressed echo of it would pass (egress_response_is_encoded()).
 */

#include "egress-policy.h"
#include "http-server.h"

#define EGRESS_UPSTREAM_HEAD_MAX (64U * 1024U)

typedef struct EgressApiAuth {
        bool pass_through;              /* the request goes to the model API */
        const char *dummy;              /* the container's API dummy (egress-token.h) */
        const char *api_key;            /* NULL when not configured */
        const char *oauth_token;        /* NULL when not configured */
} EgressApiAuth;

/* rule is the rule the request matched (NULL in API mode). api is never NULL. host_header is the Host
 * the upstream gets. Returns 0 with *ret_head (NUL-terminated), or -EACCES (answer 403) / -E2BIG (431)
 * with *ret_reason a static word for the journal; -ENOMEM. */
int egress_upstream_head(const HttpRequest *r, const EgressPolicy *p, const EgressRule *rule, const EgressApiAuth *api,
                         const char *host_header, char **ret_head, size_t *ret_size, const char **ret_reason);

#define EGRESS_RESPONSE_HEAD_MAX (32U * 1024U)

/* How an upstream response is framed, so the gateway knows where it ends while it streams it on. */
typedef struct EgressResponseFraming {
        size_t head_size;
        int status;
        bool interim;                   /* 1xx (not 101): another head follows */
        bool chunked;                   /* the body is chunked: it ends with the last chunk */
        bool until_close;               /* the body ends when the server closes (101, no length) */
        uint64_t length;                /* otherwise: the body's Content-Length (0: none, HEAD, 204, 304) */
        bool reusable;                  /* the upstream connection can carry another request after it */
        bool ambiguous;                 /* framed two ways (Transfer-Encoding and Content-Length): the
                                         * client might read it the other way, its connection is closed */
} EgressResponseFraming;

/* Returns 1 with *ret when buf starts with a complete response head (request_method: the request's), 0
 * when more is needed, -E2BIG when EGRESS_RESPONSE_HEAD_MAX bytes hold none, -EBADMSG when it is not an
 * HTTP/1.x response. */
int egress_response_framing(const char *buf, size_t size, const char *request_method, EgressResponseFraming *ret);

/* Whether the response head head[0..size) (complete, as egress_response_framing() found it) says its body
 * has a content coding: a Content-Encoding other than "identity" (any case, blanks around it). An answer
 * to a request with an injected secret that has one cannot be scrubbed and is refused. */
bool egress_response_is_encoded(const char *head, size_t size);

/* What an upstream answers to a request the gateway injected a secret into: every occurrence of that
 * secret is replaced by its dummy before the agent gets it (a server that reflects a header, or sets a
 * cookie from it, would otherwise hand the agent the real value). The response is fed piece by piece; a
 * tail that could be the start of a secret is held back (at most the longest secret's length - 1 bytes,
 * and only while it is such a start: a stream of server-sent events is not delayed by it) until the next
 * piece or the end. */
#define EGRESS_SCRUB_PAIRS_MAX 2U
#define EGRESS_SCRUB_HOLD_MAX 4096U     /* a credential's secret is at most 4096 bytes */

typedef struct EgressScrub {
        const char *secret[EGRESS_SCRUB_PAIRS_MAX];
        const char *dummy[EGRESS_SCRUB_PAIRS_MAX];
        size_t n;
        char hold[EGRESS_SCRUB_HOLD_MAX];
        size_t held;
} EgressScrub;

/* Adds a secret and the dummy that replaces it; -E2BIG past EGRESS_SCRUB_PAIRS_MAX, -EINVAL for an empty
 * or too long secret. */
int egress_scrub_add(EgressScrub *s, const char *secret, const char *dummy);
void egress_scrub_reset(EgressScrub *s);

/* The held-back bytes and in[0..n), scrubbed, in a new buffer *ret of *ret_size bytes with room_before
 * free bytes before them and room_after after them (for chunk framing); the tail that could start a
 * secret is held back unless final. */
int egress_scrub(EgressScrub *s, const char *in, size_t n, bool final, size_t room_before, size_t room_after,
                 char **ret, size_t *ret_size);

/* What the agent is told when a request is refused for one of the reasons above (what the journal records
 * as LOOP_REASON): "no-credential" says that loop holds no credential for the model API, not that the
 * agent's key is wrong. Any other reason: the generic text. */
const char *egress_credential_refusal_text(const char *reason);
