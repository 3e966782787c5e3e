/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the HTTP/1.1 request parser as the Docker API proxy uses it (chunked bodies on),
 * then the target normalisation the proxy applies to whatever parsed, and the response head reader. */

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
                if (proxy_target_parse(r.path, r.query, &t) >= 0) {
                        char *f = proxy_target_format(&t);
                        free(f);
                }
        } else if (k < 0 && (status < 400 || status > 505))
                abort();

        k = http_request_parse_head((const char *) data, size, &l, &h, &head_size, &body_size, &status);
        if (k == 1 && head_size > size)
                abort();

        /* the same bytes as an engine's answer */
        HttpResponseHead rh;
        k = http_response_head_parse((const char *) data, size, 64 * 1024, &rh);
        if (k == 1 && (rh.head_size > size || rh.status < 100 || rh.status > 599))
                abort();
        return 0;
}
