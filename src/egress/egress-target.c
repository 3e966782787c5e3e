/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <strings.h>

#include "egress-policy.h"
#include "egress-target.h"
#include "parse-util.h"
/* Whether the Host header (if any; HTTP/1.1 requires one) names the target host:port. */
bool egress_host_header_agrees(const HttpRequest *r, uint16_t default_port) {
        const char *h = http_request_header(r, "Host"), *host, *colon;
        size_t host_len;
        unsigned long port = default_port;

        if (!h)
                return r->version_minor == 0;
        if (h[0] == '[') {
                const char *close = strchr(h, ']');
                if (!close)
                        return false;
                host = h + 1;
                host_len = (size_t) (close - host);
                colon = close[1] == ':' ? close + 1 : NULL;
                if (!colon && close[1])
                        return false;
        } else {
                host = h;
                colon = strchr(h, ':');
                if (colon && strchr(colon + 1, ':'))
                        return false;
                host_len = colon ? (size_t) (colon - h) : strlen(h);
        }
        if (colon) {
                uint16_t p;
                if (parse_port(colon + 1, &p) < 0)
                        return false;
                port = p;
        }
        /* a trailing dot names the same host */
        if (host_len > 1 && host[host_len - 1] == '.')
                host_len--;
        return host_len == strlen(r->host) && strncasecmp(host, r->host, host_len) == 0 && port == r->port;
}

/* Whether a ClientHello's server name, normalised as hosts are, is the (normalised) CONNECT target. */
bool egress_sni_agrees(const char *sni, const char *host) {
        _cleanup_free_ char *n = NULL;

        return sni && egress_host_normalize(sni, &n) >= 0 && streq(n, host);
}


bool egress_method_is_unambiguous(const HttpRequest *r) {
        static const char * const overrides[] = { "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override" };

        if (!r->method)
                return false;
        for (const char *c = r->method; *c; c++)
                if (*c >= 'a' && *c <= 'z')
                        return false;
        for (size_t i = 0; i < r->n_headers; i++)
                for (size_t k = 0; k < ELEMENTSOF(overrides); k++)
                        if (strcasecmp(r->headers[i].name, overrides[k]) == 0 && !streq(r->headers[i].value, r->method))
                                return false;
        return true;
}
