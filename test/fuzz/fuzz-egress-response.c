/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: how the egress gateway reads an upstream's response to find where it ends on a
 * kept-alive connection: the head's framing (egress_response_framing()), then a chunked body (chunk
 * extensions and trailer fields allowed, as the gateway follows them) fed to the incremental decoder in
 * pieces of every size, as it arrives from the network, and whole: both must agree on the outcome, the
 * data and where the body ended. */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress-rewrite.h"
#include "http-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        EgressResponseFraming f;
        const char *method = size > 0 && data[0] & 1 ? "HEAD" : "GET";
        char *out;
        int q;

        q = egress_response_framing((const char *) data, size, method, &f);
        assert(q == 1 || q == 0 || q == -E2BIG || q == -EBADMSG);
        if (q != 1)
                return 0;
        assert(f.head_size <= size);
        assert(f.status >= 100 && f.status <= 599);
        assert(!f.interim || (f.status < 200 && f.status != 101));
        assert(!(f.until_close && f.reusable));
        assert(!(f.chunked && f.until_close));
        if (!f.chunked)
                return 0;

        out = malloc(2 * (size + 1));
        if (!out)
                return 0;
        {
                HttpChunked d = { .framing_unlimited = true, .extensions = true, .trailers = true },
                            w = { .framing_unlimited = true, .extensions = true, .trailers = true };
                size_t at = f.head_size, piece = 1 + size % 7, total = 0, end = 0, wn = 0, wconsumed = 0;
                char *whole = out + size + 1;
                int qw;

                q = 0;
                while (at < size) {
                        size_t n = 0, consumed = 0, len = size - at < piece ? size - at : piece;
                        q = http_chunked_decode(&d, (const char *) data + at, len, out + total, &n, &consumed);
                        assert(q == 1 || q == 0 || q == -EBADMSG || q == -EFBIG);
                        assert(n <= len);
                        total += n;
                        if (q != 0) {
                                assert(q < 0 || consumed <= len);
                                end = at + consumed;
                                break;
                        }
                        at += len;
                }
                qw = http_chunked_decode(&w, (const char *) data + f.head_size, size - f.head_size, whole, &wn, &wconsumed);
                assert(qw == q);
                if (q >= 0)
                        assert(wn == total && memcmp(whole, out, total) == 0);
                if (q == 1)
                        assert(f.head_size + wconsumed == end);
        }
        free(out);
        return 0;
}
