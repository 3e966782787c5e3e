/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: what the egress gateway decides about a request's target from bytes the agent sent.
 * The input is a request head (parsed as the gateway does: proxy forms, head only), optionally followed
 * by "\0" and a TLS server name. The host and path are normalised as the gateway does before any
 * decision, then the Host header is checked against the target (with the default port of each scheme)
 * and the server name against the host. An agreeing Host header must name the host. */

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress-policy.h"
#include "egress-rewrite.h"
#include "egress-target.h"
#include "http-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const HttpLimits limits = {
                .header_size_max = 4096, .headers_max = 16, .body_size_max = 256,
                .proxy_forms = true, .head_only = true, .chunked = true,
        };
        const uint8_t *nul = memchr(data, 0, size);
        size_t head_size = nul ? (size_t) (nul - data) : size;
        char *buf = malloc(head_size ?: 1), *sni = NULL;
        HttpRequest r = {};
        size_t consumed = 0;
        int status = 0;

        if (!buf)
                return 0;
        memcpy(buf, data, head_size);
        if (nul) {
                sni = strndup((const char *) nul + 1, size - head_size - 1);
                if (!sni) {
                        free(buf);
                        return 0;
                }
        }

        if (http_request_parse(buf, head_size, &limits, &r, &consumed, &status, NULL) > 0) {
                char *n = NULL;

                if (r.path && r.form != HTTP_TARGET_AUTHORITY && egress_path_normalize(r.path, &n) >= 0)
                        free(n);
                n = NULL;
                if (!r.host) {
                        /* an origin-form request inside a tunnel gets the CONNECT target */
                        r.host = strdup("example.com");
                        r.port = 443;
                }
                if (r.host && egress_host_normalize(r.host, &n) >= 0) {
                        const char *h = http_request_header(&r, "Host");

                        free(r.host);
                        r.host = n;
                        for (unsigned p = 0; p < 2; p++)
                                if (egress_host_header_agrees(&r, p == 0 ? 80 : 443) && h) {
                                        /* the header names the host, brackets and a trailing dot aside */
                                        size_t l = strlen(r.host);
                                        const char *at = h[0] == '[' ? h + 1 : h;
                                        assert(strncasecmp(at, r.host, l) == 0);
                                }
                        (void) egress_sni_agrees(sni, r.host);
                }
        }
        http_request_done(&r);
        free(sni);
        free(buf);
        return 0;
}
