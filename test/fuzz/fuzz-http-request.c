/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the HTTP/1.1 head parser, both ways. As a request, as the Docker API proxy uses it
 * (chunked bodies on), then the target normalisation the proxy applies to whatever parsed and the
 * hop-by-hop filter; as a response head, as the proxy, the egress gateway and the engine client read an
 * answer, with the head cap at every size up to the input's (the seeds in corpus/http-request hold
 * both). */

#include <stdint.h>

#include "dockerproxy-path.h"
#include "http-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        HttpLimits l = { .chunked = true, .body_size_max = 64 * 1024 };
        _cleanup_(http_request_done) HttpRequest r = {}, h = {};
        HttpParseInfo info;
        size_t consumed, head_size;
        uint64_t body_size;
        int status = 0, k;

        k = http_request_parse((const char *) data, size, &l, &r, &consumed, &status, &info);
        if (k == 1) {
                _cleanup_(proxy_target_done) ProxyTarget t = {};
                if (consumed > size || r.body_size > l.body_size_max)
                        abort();
                if (proxy_target_parse(r.path, r.query, NULL, &t) >= 0) {
                        char *f = proxy_target_format(&t);
                        free(f);
                }
        } else if (k < 0 && (status < 400 || status > 505))
                abort();

        k = http_request_parse_head((const char *) data, size, &l, &h, &head_size, &body_size, &status);
        if (k == 1 && head_size > size)
                abort();

        /* the same bytes as an engine's or an upstream's answer */
        HttpResponseHead rh;
        k = http_response_head_parse((const char *) data, size, 64 * 1024, &rh);
        if (k == 1 && (rh.head_size > size || rh.head_size < 16 || rh.status < 100 || rh.status > 599 ||
                       rh.version_minor > 1 || (rh.chunked && !rh.transfer_encoding)))
                abort();
        if (k != 1 && k != 0 && k != -E2BIG && k != -EBADMSG && k != -EPROTONOSUPPORT)
                abort();
        /* a smaller cap never finds a head the full one did not, nor a different one */
        for (size_t cap = 1; cap <= size && cap <= 512; cap++) {
                HttpResponseHead c;
                int kc = http_response_head_parse((const char *) data, size, cap, &c);
                if (kc == 1 && (k != 1 || c.head_size != rh.head_size || c.head_size > cap))
                        abort();
        }
        if (k == 1 && http_response_head_parse((const char *) data, rh.head_size - 1, 64 * 1024, &rh) != 0)
                abort();

        if (r.n_headers > 0)
                for (size_t i = 0; i < r.n_headers; i++)
                        (void) http_request_header_is_hop_by_hop(&r, r.headers[i].name, NULL);
        return 0;
}
