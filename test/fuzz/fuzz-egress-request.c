/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the HTTP request parser as the egress gateway uses it (proxy forms, head only). Every
 * input is parsed whole and byte by byte growing (as a slow client sends it), in each mode; a complete
 * request must say how much of the buffer it used, and never more than it was given. A chunked body
 * after a head is decoded as the gateway streams it (extensions and trailers checked and dropped, the
 * data capped), in small pieces; the data never outgrows what was fed. */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_all(const char *buf, size_t size, const HttpLimits *l) {
        HttpRequest r = {};
        HttpParseInfo info;
        size_t consumed = 0;
        int status = 0, q;

        q = http_request_parse(buf, size, l, &r, &consumed, &status, &info);
        if (q > 0) {
                assert(consumed <= size);
                assert(r.method && r.path && r.body);
                if (l && l->proxy_forms && r.form != HTTP_TARGET_ORIGIN)
                        assert(r.host && r.port > 0);
                (void) http_request_header(&r, "Host");
                if (l && l->head_only && r.chunked && consumed < size) {
                        HttpChunked d = { .data_max = 64, .framing_unlimited = true, .extensions = true, .trailers = true };
                        char out[8];
                        uint64_t data = 0;

                        for (size_t at = consumed; at < size;) {
                                size_t n = 0, used = 0, len = size - at < 3 ? size - at : 3;
                                int k = http_chunked_decode(&d, buf + at, len, out, &n, &used);
                                assert(k == 0 || k == 1 || k == -EBADMSG || k == -EFBIG);
                                assert(n <= len);
                                data += n;
                                assert(data <= 64);
                                if (k != 0) {
                                        assert(k < 0 || used <= len);
                                        break;
                                }
                                at += len;
                        }
                }
        } else if (q < 0)
                assert(status >= 400 && status <= 505);
        http_request_done(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const HttpLimits modes[] = {
                { .header_size_max = 1024, .headers_max = 8, .body_size_max = 256 },
                { .header_size_max = 1024, .headers_max = 8, .body_size_max = 256, .proxy_forms = true, .head_only = true,
                  .chunked = true },
                { .header_size_max = 1024, .headers_max = 8, .body_size_max = 256, .proxy_forms = true },
        };
        /* A copy without a terminating NUL, so reads past the end are caught. */
        char *buf = malloc(size ?: 1);

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
                parse_all(buf, size, &modes[m]);
                /* growing prefixes, as bytes trickle in; bounded so one input stays fast */
                for (size_t n = 0; n < size && n < 512; n += 7)
                        parse_all(buf, n, &modes[m]);
        }
        parse_all(buf, size, NULL);
        free(buf);
        return 0;
}
