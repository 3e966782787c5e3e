/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The HTTP/1.1 request parser of the socket-activated helpers, fed what a hostile client might send. */

#include <stdio.h>
#include <string.h>

#include "http-server.h"
#include "macro.h"
#include "tap.h"

#define GOOD_POST "POST /api/gate/container-approval HTTP/1.1\r\nHost: localhost\r\n" \
        "Authorization: Bearer abc\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"

static int parse(const char *s, HttpRequest *r, size_t *consumed, int *status) {
        return http_request_parse(s, strlen(s), NULL, r, consumed, status, NULL);
}

/* The status a bad request is answered with; 0 when it parses or is incomplete. */
static int status_of(const char *s) {
        _cleanup_(http_request_done) HttpRequest r = {};
        size_t consumed;
        int status = 0;

        if (parse(s, &r, &consumed, &status) >= 0)
                return 0;
        return status;
}

static void test_good(void) {
        _cleanup_(http_request_done) HttpRequest r = {};
        size_t consumed = 0;
        int status = 0, k;

        k = parse(GOOD_POST, &r, &consumed, &status);
        is_int(k, 1, "a complete POST parses");
        is_str(r.method, "POST", "the method is POST");
        is_str(r.path, "/api/gate/container-approval", "the path is the target without query");
        is_str(http_request_header(&r, "authorization"), "Bearer abc", "header lookup ignores case");
        is_int(r.body_size, 7, "the body has Content-Length bytes");
        is_str(r.body, "{\"a\":1}", "the body is the bytes after the head");
        is_int(consumed, strlen(GOOD_POST), "all bytes of the request are consumed");
        ok(r.keep_alive, "HTTP/1.1 keeps the connection by default");
}

static void test_incremental(void) {
        const char *s = GOOD_POST;
        size_t n = strlen(s);
        bool all_incomplete = true;

        for (size_t i = 0; i < n; i++) {
                _cleanup_(http_request_done) HttpRequest r = {};
                size_t consumed;
                int status = 0;
                if (http_request_parse(s, i, NULL, &r, &consumed, &status, NULL) != 0)
                        all_incomplete = false;
        }
        ok(all_incomplete, "every proper prefix of a request is incomplete, not an error");
}

static void test_pipelined(void) {
        _cleanup_(http_request_done) HttpRequest a = {}, b = {};
        const char *s = "GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
        size_t c1 = 0, c2 = 0;
        int status;

        is_int(parse(s, &a, &c1, &status), 1, "the first of two pipelined requests parses");
        is_str(a.query, "x=1", "the query is split off");
        is_int(parse(s + c1, &b, &c2, &status), 1, "the second parses from where the first ended");
        is_str(b.path, "/b", "the second request is /b");
        ok(!b.keep_alive, "Connection: close ends keep-alive");
}

static void test_versions(void) {
        _cleanup_(http_request_done) HttpRequest r = {}, k = {};
        size_t c;
        int status;

        is_int(parse("GET / HTTP/1.0\r\n\r\n", &r, &c, &status), 1, "HTTP/1.0 needs no Host");
        ok(!r.keep_alive, "HTTP/1.0 closes by default");
        is_int(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &k, &c, &status), 1,
               "HTTP/1.0 with keep-alive parses");
        ok(k.keep_alive, "HTTP/1.0 with Connection: keep-alive keeps the connection");
        is_int(status_of("GET / HTTP/2.0\r\nHost: h\r\n\r\n"), 505, "HTTP/2.0 on the wire is 505");
        is_int(status_of("GET / HTTP/1.2\r\nHost: h\r\n\r\n"), 505, "HTTP/1.2 is 505");
        is_int(status_of("GET / HTTX/1.1\r\nHost: h\r\n\r\n"), 400, "a garbled version is 400");
        is_int(status_of("GET / HTTP/1.1\r\n\r\n"), 400, "HTTP/1.1 without Host is 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400, "two Host headers are 400");
}

static void test_malformed(void) {
        is_int(status_of("GET  / HTTP/1.1\r\nHost: h\r\n\r\n"), 400, "two spaces in the request line are 400");
        is_int(status_of("GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n"), 400, "absolute-form targets are 400");
        is_int(status_of("GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n"), 400, "a control character in the target is 400");
        is_int(status_of("G(T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400, "a method that is not a token is 400");
        is_int(status_of("GET / HTTP/1.1\nHost: h\n\n"), 400, "bare LF line ends are 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n"), 400, "a bare CR is 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n"), 400, "obsolete line folding is 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n"), 400, "a header name with a space is 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: h\r\n: x\r\n\r\n"), 400, "an empty header name is 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n"), 400, "a header without a colon is 400");
        is_int(status_of("GET / HTTP/1.1\r\nHost: h\r\nX: a\x01" "b\r\n\r\n"), 400, "a control character in a value is 400");
        is_int(status_of("\r\n\r\n\r\n\r\n\r\n\r\n"), 400, "nothing but empty lines is 400");
        is_int(status_of(""), 0, "an empty buffer is incomplete");

        _cleanup_(http_request_done) HttpRequest r = {};
        size_t c;
        int status;
        const char nul[] = "GET / HTTP/1.1\r\nHost: h\0\r\n\r\n";
        is_int(http_request_parse(nul, sizeof(nul) - 1, NULL, &r, &c, &status, NULL) < 0 ? status : 0, 400,
               "a NUL byte in the head is 400");
        is_int(http_request_parse("GET", 3, NULL, &r, &c, &status, NULL), 0, "a partial request line is incomplete");
}

static void test_content_length(void) {
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n"), 400, "a negative Content-Length is 400");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n"), 400, "a non-numeric Content-Length is 400");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n"), 400, "an empty Content-Length is 400");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"), 400,
               "two Content-Length headers are 400 (request smuggling)");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 413,
               "a Content-Length that overflows is 413");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n"), 413,
               "a body over the cap is 413 before it is read");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 501,
               "Transfer-Encoding is 501");
        is_int(status_of("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab"), 0, "a short body is incomplete");

        _cleanup_(http_request_done) HttpRequest r = {};
        HttpParseInfo info;
        size_t c;
        int status;
        const char *s = "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
        is_int(http_request_parse(s, strlen(s), NULL, &r, &c, &status, &info), 0, "a request waiting for its body is incomplete");
        ok(info.headers_complete && info.expect_continue, "the parser reports that the client expects 100 Continue");
}

static void test_caps(void) {
        HttpLimits l = { .header_size_max = 256, .headers_max = 4, .body_size_max = 16 };
        _cleanup_free_ char *big = NULL, *many = NULL;
        _cleanup_(http_request_done) HttpRequest r = {};
        size_t c;
        int status = 0, k;

        big = malloc(600);
        strcpy(big, "GET / HTTP/1.1\r\nHost: h\r\nX: ");
        memset(big + strlen(big), 'a', 600 - strlen(big) - 1);
        big[599] = 0;
        k = http_request_parse(big, strlen(big), &l, &r, &c, &status, NULL);
        ok(k < 0 && status == 431, "a head that grows past the cap without ending is 431");

        many = strdup("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n");
        k = http_request_parse(many, strlen(many), &l, &r, &c, &status, NULL);
        ok(k < 0 && status == 431, "more headers than the cap is 431");

        const char *body = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n";
        k = http_request_parse(body, strlen(body), &l, &r, &c, &status, NULL);
        ok(k < 0 && status == 413, "a body one byte over the cap is 413");
}

/* The header array grows as headers come (8, 16, 32, 64 entries): every header up to the default cap is
 * kept, in order, and one more is refused. */
static void test_many_headers(void) {
        char head[4096], *p = head;
        bool all = true;
        size_t c;
        int status = 0, k;

        for (unsigned n = 1; n <= HTTP_HEADERS_MAX_DEFAULT + 1; n++) {
                _cleanup_(http_request_done) HttpRequest r = {};

                p = stpcpy(head, "GET / HTTP/1.1\r\nHost: h\r\n");
                for (unsigned i = 1; i < n; i++)
                        p += sprintf(p, "X-%u: v%u\r\n", i, i);
                (void) stpcpy(p, "\r\n");
                k = http_request_parse(head, strlen(head), NULL, &r, &c, &status, NULL);
                if (n > HTTP_HEADERS_MAX_DEFAULT) {
                        ok(k < 0 && status == 431, "one header more than the default cap is 431");
                        break;
                }
                if (k != 1 || r.n_headers != n || !streq_ptr(http_request_header(&r, "Host"), "h")) {
                        all = false;
                        continue;
                }
                for (unsigned i = 1; i < n; i++) {
                        char name[16], value[16];
                        snprintf(name, sizeof(name), "X-%u", i);
                        snprintf(value, sizeof(value), "v%u", i);
                        if (!streq(r.headers[i].name, name) || !streq(r.headers[i].value, value))
                                all = false;
                }
        }
        ok(all, "1 to 64 headers are each kept, in order, with their values (the array grows past 8, 16 and 32)");
}

static void test_response(void) {
        _cleanup_free_ char *buf = NULL;
        size_t n;

        is_int(http_response_format(200, "application/json", "{}", 2, true, &buf, &n), 0, "a response is formatted");
        is_str(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}",
               "the response has status line, type, length and connection headers");
        is_str(http_status_reason(431), "Request Header Fields Too Large", "431 has its reason phrase");
}

static void test_garbage(void) {
        /* Random bytes must never crash the parser or be accepted as a request. */
        unsigned seed = 1;
        bool fine = true;
        for (int round = 0; round < 20000; round++) {
                char buf[256];
                size_t n = (size_t) (rand_r(&seed) % (int) sizeof(buf));
                _cleanup_(http_request_done) HttpRequest r = {};
                size_t c;
                int status = 0, k;

                for (size_t i = 0; i < n; i++)
                        buf[i] = (char) (rand_r(&seed) % 4 == 0 ? "\r\n: /"[rand_r(&seed) % 5] : rand_r(&seed));
                k = http_request_parse(buf, n, NULL, &r, &c, &status, NULL);
                if (k < 0 && (status < 400 || status > 505))
                        fine = false;
                if (k > 0 && c > n)
                        fine = false;
        }
        ok(fine, "20000 random inputs give incomplete or a 4xx/5xx, never more than they hold");
}


/* The proxy's reading of request bodies: chunked decoded, every smuggling shape refused. */
static int chunked_status(const char *s, HttpRequest *ret) {
        HttpLimits l = { .chunked = true };
        _cleanup_(http_request_done) HttpRequest r = {};
        size_t consumed;
        int status = 0, k;

        k = http_request_parse(s, strlen(s), &l, &r, &consumed, &status, NULL);
        if (k < 0)
                return status;
        if (k == 1 && ret) {
                *ret = r;
                r = (HttpRequest) {};
        }
        return k == 1 ? 200 : 0;
}

#define CHUNKED_HEAD "POST /build HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"

static void test_chunked(void) {
        _cleanup_(http_request_done) HttpRequest r = {}, q = {};
        const char *two = CHUNKED_HEAD "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
        HttpLimits l = { .chunked = true };
        size_t consumed = 0;
        int status = 0;

        is_int(chunked_status(CHUNKED_HEAD "0\r\n\r\n", NULL), 200, "an empty chunked body parses");
        is_int(http_request_parse(two, strlen(two), &l, &r, &consumed, &status, NULL), 1, "a chunked body parses");
        is_str(r.body, "hello world", "the chunks are decoded and joined");
        ok(r.chunked && r.body_size == 11, "the request says its body came chunked");
        is_int(consumed, strlen(two) - strlen("GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
               "the request ends after the last chunk; the next request stays in the buffer");
        is_int(chunked_status(CHUNKED_HEAD "A\r\n0123456789\r\n0\r\n\r\n", &q), 200, "upper-case hex sizes parse");
        is_int(q.body_size, 10, "hex A is ten bytes");

        is_int(chunked_status(CHUNKED_HEAD "5\r\nhel", NULL), 0, "a chunk cut short is incomplete");
        is_int(chunked_status(CHUNKED_HEAD "5\r\nhello\r\n0\r\n", NULL), 0, "a body without its final empty line is incomplete");
        is_int(chunked_status(CHUNKED_HEAD "5;ext=1\r\nhello\r\n0\r\n\r\n", NULL), 400, "a chunk extension is 400");
        is_int(chunked_status(CHUNKED_HEAD "5 \r\nhello\r\n0\r\n\r\n", NULL), 400, "whitespace after a chunk size is 400");
        is_int(chunked_status(CHUNKED_HEAD "5\nhello\r\n0\r\n\r\n", NULL), 400, "a bare LF after a chunk size is 400");
        is_int(chunked_status(CHUNKED_HEAD "5\r\nhelloX\r\n0\r\n\r\n", NULL), 400, "data longer than its size is 400");
        is_int(chunked_status(CHUNKED_HEAD "\r\nhello\r\n0\r\n\r\n", NULL), 400, "an empty chunk size is 400");
        is_int(chunked_status(CHUNKED_HEAD "-5\r\nhello\r\n0\r\n\r\n", NULL), 400, "a negative chunk size is 400");
        is_int(chunked_status(CHUNKED_HEAD "0x5\r\nhello\r\n0\r\n\r\n", NULL), 400, "a 0x prefix is 400");
        is_int(chunked_status(CHUNKED_HEAD "00000000000000001\r\nh\r\n0\r\n\r\n", NULL), 400,
               "a chunk size of more than 16 digits is 400");
        is_int(chunked_status(CHUNKED_HEAD "ffffffffffffffff\r\nh", NULL), 413, "a chunk size beyond the body cap is 413");
        is_int(chunked_status(CHUNKED_HEAD "0\r\nX-Trailer: y\r\n\r\n", NULL), 400, "a trailer field is 400");

        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", NULL),
               400, "Transfer-Encoding together with Content-Length is 400");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", NULL),
               400, "Content-Length before Transfer-Encoding is 400 too");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", NULL),
               400, "two Transfer-Encoding headers are 400");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", NULL),
               400, "a Transfer-Encoding list is 400");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", NULL),
               501, "a coding other than chunked is 501");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", NULL),
               501, "a coding that merely contains chunked is 501");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", NULL),
               400, "a space before the colon of Transfer-Encoding is 400");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n", NULL),
               200, "a tab before the value is optional whitespace, as RFC 9110 says");
        is_int(chunked_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n Foo: x\r\n\r\n0\r\n\r\n", NULL),
               400, "obs-fold after Transfer-Encoding is 400");
        is_int(chunked_status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", NULL),
               400, "chunked in HTTP/1.0 is 400");
        is_int(status_of(CHUNKED_HEAD "0\r\n\r\n"), 501, "without HttpLimits.chunked, chunked stays 501");
}

static void test_chunked_caps(void) {
        _cleanup_free_ char *small = NULL;
        HttpLimits l = { .chunked = true, .body_size_max = 16 };
        size_t consumed, n = 0;
        int status = 0, k;

        {
                _cleanup_(http_request_done) HttpRequest r = {};
                const char *s = CHUNKED_HEAD "10\r\n0123456789abcdef\r\n1\r\nx\r\n0\r\n\r\n";
                k = http_request_parse(s, strlen(s), &l, &r, &consumed, &status, NULL);
                ok(k < 0 && status == 413, "chunks adding up to one byte over the cap are 413");
        }

        /* one-byte chunks: 6 bytes of framing per byte of data */
        small = malloc(strlen(CHUNKED_HEAD) + 6 * (HTTP_CHUNKED_FRAMING_MAX / 2) + 8);
        if (!small)
                abort();
        n = stpcpy(small, CHUNKED_HEAD) - small;
        for (size_t i = 0; i < HTTP_CHUNKED_FRAMING_MAX / 2; i++)
                n += (size_t) sprintf(small + n, "1\r\na\r\n");
        {
                _cleanup_(http_request_done) HttpRequest r = {};
                HttpLimits big_body = { .chunked = true, .body_size_max = 1024 * 1024 };
                k = http_request_parse(small, n, &big_body, &r, &consumed, &status, NULL);
                ok(k < 0 && status == 413, "more chunk framing than HTTP_CHUNKED_FRAMING_MAX is 413");
        }
        {
                /* a stream passed on: the same body decodes to its end */
                HttpChunked c = { .framing_unlimited = true };
                char *out = malloc(n);
                size_t o = 0, used = 0;
                size_t head = strlen(CHUNKED_HEAD);
                if (!out)
                        abort();
                memcpy(small + n, "0\r\n\r\n", 5);
                k = http_chunked_decode(&c, small + head, n + 5 - head, out, &o, &used);
                ok(k == 1 && o == HTTP_CHUNKED_FRAMING_MAX / 2, "with framing_unlimited, a stream of small chunks decodes whole");
                free(out);
        }

        {
                HttpChunked c = {};
                const char *s = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
                char out[64];
                size_t total = 0, o, used;
                bool done = false, fine = true;

                /* byte by byte, as a slow client sends it */
                for (size_t i = 0; i < strlen(s); i++) {
                        k = http_chunked_decode(&c, s + i, 1, out + total, &o, &used);
                        if (k < 0 || used != 1)
                                fine = false;
                        total += o;
                        if (k == 1) {
                                done = i == strlen(s) - 1;
                                break;
                        }
                }
                ok(fine && done && total == 5 && memcmp(out, "abcde", 5) == 0,
                   "the decoder reassembles a body fed one byte at a time");
        }
        {
                static const char body[] = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nNEXT";
                HttpChunked c = {};
                size_t out = 0, used = 0;
                is_int(http_chunked_decode(&c, body, sizeof(body) - 1, NULL, &out, &used), 1,
                       "the decoder follows the framing without an output buffer");
                ok(out == 5 && used == sizeof(body) - 1 - 4, "...and says where the body ended");
        }
}

/* Decodes s with chunk extensions and trailers allowed (or not), whole and again one byte at a time:
 * returns the result (both ways must agree, else -EIO), the data in out, and what the body used. */
static int decode_both(const char *s, bool allow, char *out, size_t *ret_out, size_t *ret_used) {
        HttpChunked whole = { .extensions = allow, .trailers = allow, .framing_unlimited = true },
                    bytes = { .extensions = allow, .trailers = allow, .framing_unlimited = true };
        size_t len = strlen(s), o = 0, used = 0, total = 0, at = 0;
        char byte_out[256];
        int k, kb = 0;

        k = http_chunked_decode(&whole, s, len, out, &o, &used);
        for (at = 0; at < len; at++) {
                size_t bo = 0, bu = 0;
                kb = http_chunked_decode(&bytes, s + at, 1, byte_out + total, &bo, &bu);
                total += bo;
                if (kb != 0)
                        break;
        }
        if (k != kb || (k >= 0 && (total != o || memcmp(out, byte_out, o) != 0)) || (k == 1 && at + 1 != used))
                return -EIO;
        *ret_out = o;
        *ret_used = used;
        return k;
}

/* RFC 9112 7.1.1 and 7.1.2, as the egress gateway follows a response (and reads a request body). */
static void test_chunked_extensions_trailers(void) {
        char out[256];
        size_t o = 0, used = 0;

        static const char ext[] = "3;name=value\r\nabc\r\n2 ; a ; b = \"q\\\"uo;ted\" ;c=d\r\nde\r\n0;last\r\n\r\nNEXT";
        is_int(decode_both(ext, true, out, &o, &used), 1, "chunk extensions (token, quoted, blanks around ; and =) are followed");
        ok(o == 5 && memcmp(out, "abcde", 5) == 0 && used == sizeof ext - 1 - 4, "...ignored: only the data comes out, and the body ends where it does");
        is_int(decode_both(ext, false, out, &o, &used), -EBADMSG, "...and refused where not asked for (the Docker API proxy's strictness)");

        static const char trailers[] = "3\r\nabc\r\n0\r\nExpires: never\r\nX-Checksum:\tab c\r\n\r\nNEXT";
        is_int(decode_both(trailers, true, out, &o, &used), 1, "trailer fields after the last chunk are followed");
        ok(o == 3 && used == sizeof trailers - 1 - 4, "...never written out with the data, and the body ends after the empty line");
        is_int(decode_both(trailers, false, out, &o, &used), -EBADMSG, "...and refused where not asked for");

        static const char *const bad[] = {
                "3 \r\nabc\r\n0\r\n\r\n",              /* blanks without an extension */
                "3;\r\nabc\r\n0\r\n\r\n",              /* ; without a name */
                "3;a=\r\nabc\r\n0\r\n\r\n",            /* = without a value */
                "3;a=\"x\r\nabc\r\n0\r\n\r\n",        /* an open quoted string */
                "3;a=\"x\"y\r\nabc\r\n0\r\n\r\n",    /* junk after a quoted string */
                "3;a\nb\r\nabc\r\n0\r\n\r\n",         /* a bare LF in an extension */
                "3;a=b\rc\r\nabc\r\n0\r\n\r\n",        /* a bare CR */
                "3;a=\"\x01\"\r\nabc\r\n0\r\n\r\n",  /* a control character */
                ";a\r\nabc\r\n0\r\n\r\n",              /* an extension without a size */
                "0\r\nNo-Colon\r\n\r\n",               /* a trailer without ":" */
                "0\r\n: value\r\n\r\n",                /* ...without a name */
                "0\r\nA: b\r\n c\r\n\r\n",            /* obsolete line folding */
                "0\r\nA: b\nC: d\r\n\r\n",             /* a bare LF in a trailer */
                "0\r\nA: \x7f\r\n\r\n",                /* DEL in a value */
                "0\r\nBad Name: x\r\n\r\n",             /* a blank in a name */
        };
        bool all = true;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (decode_both(bad[i], true, out, &o, &used) != -EBADMSG) {
                        diag(bad[i]);
                        all = false;
                }
        ok(all, "malformed extensions and trailers are refused (blanks alone, empty names and values, open or "
                "trailing quotes, bare CR or LF, control characters, folding, names with blanks)");

        {
                /* the caps: an extension line and the trailer section */
                size_t n = HTTP_CHUNK_EXT_MAX + HTTP_CHUNK_TRAILERS_MAX + 64, l;
                _cleanup_free_ char *s = malloc(n);
                HttpChunked c = { .extensions = true, .trailers = true, .framing_unlimited = true };
                if (!s)
                        abort();
                l = (size_t) sprintf(s, "1;");
                memset(s + l, 'x', HTTP_CHUNK_EXT_MAX);
                memcpy(s + l + HTTP_CHUNK_EXT_MAX, "\r\n", 2);
                is_int(http_chunked_decode(&c, s, l + HTTP_CHUNK_EXT_MAX + 2, NULL, &o, &used), -EFBIG,
                       "an extension line over HTTP_CHUNK_EXT_MAX is refused");
                c = (HttpChunked) { .extensions = true, .trailers = true, .framing_unlimited = true };
                l = (size_t) sprintf(s, "1;");
                memset(s + l, 'x', HTTP_CHUNK_EXT_MAX - 1);
                l += HTTP_CHUNK_EXT_MAX - 1;
                l += (size_t) sprintf(s + l, "\r\na\r\n0\r\n\r\n");
                is_int(http_chunked_decode(&c, s, l, NULL, &o, &used), 1, "...one of exactly HTTP_CHUNK_EXT_MAX bytes is not");
                c = (HttpChunked) { .extensions = true, .trailers = true, .framing_unlimited = true };
                l = (size_t) sprintf(s, "0\r\nA:");
                memset(s + l, 'v', HTTP_CHUNK_TRAILERS_MAX);
                l += HTTP_CHUNK_TRAILERS_MAX;
                l += (size_t) sprintf(s + l, "\r\n\r\n");
                is_int(http_chunked_decode(&c, s, l, NULL, &o, &used), -EFBIG, "a trailer section over HTTP_CHUNK_TRAILERS_MAX is refused");
        }
}

/* What the proxy reads of the engine's answers. */
static int head_of(const char *s, HttpResponseHead *h) {
        return http_response_head_parse(s, strlen(s), 64 * 1024, h);
}

static void test_response_head(void) {
        HttpResponseHead h;

        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", &h), 1,
               "a response head parses");
        ok(h.status == 200 && h.has_length && h.length == 2 && !h.chunked && h.head_size == strlen(
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"),
           "its status, length and size are read");
        is_int(head_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &h), 1, "a chunked response parses");
        ok(h.chunked && !h.has_length, "it is known to be chunked");
        ok(!h.close, "an HTTP/1.1 response keeps its connection by default");
        is_int(head_of("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", &h), 1,
               "a response that ends its connection parses");
        ok(h.close, "Connection: close wins over keep-alive");
        is_int(head_of("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &h), 1, "an HTTP/1.0 response parses");
        ok(h.close, "an HTTP/1.0 response without keep-alive ends its connection");
        is_int(head_of("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", &h), 1,
               "an HTTP/1.0 keep-alive response parses");
        ok(!h.close, "an HTTP/1.0 response with keep-alive keeps its connection");
        is_int(head_of("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n\r\n", &h),
               1, "a switch to a raw stream parses");
        ok(h.status == 101 && h.stream_type, "it is known to be a raw stream");
        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Le", &h), 0, "a partial head is incomplete");
        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", &h), -EBADMSG, "a negative length is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", &h), -EBADMSG, "a non-numeric length is malformed");
        is_int(head_of("HTTP/1.1 2x0 OK\r\n\r\n", &h), -EBADMSG, "a bad status is malformed");
        is_int(head_of("SSH-2.0-x\r\n\r\n", &h), -EBADMSG, "something that is not HTTP is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", &h), -EBADMSG, "a header without a colon is malformed");
        is_int(http_response_head_parse("HTTP/1.1 200 OK\r\nX: y", 22, 16, &h), -E2BIG, "a head beyond the cap is refused");

        /* as strict as a request's head */
        is_int(head_of("HTTP/1.1 +01 OK\r\n\r\n", &h), -EBADMSG, "a status with a sign is malformed");
        is_int(head_of("HTTP/1.1 2000 OK\r\n\r\n", &h), -EBADMSG, "a four-digit status is malformed");
        is_int(head_of("HTTP/1.1 099 Early\r\n\r\n", &h), -EBADMSG, "a status below 100 is malformed");
        is_int(head_of("HTTP/1.1 200\r\n\r\n", &h), 1, "a status line without a reason parses");
        is_int(head_of("HTTP/1.x 200 OK\r\n\r\n", &h), -EBADMSG, "a version that is not a digit is malformed");
        is_int(head_of("HTTP/1.2 200 OK\r\n\r\n", &h), -EPROTONOSUPPORT, "HTTP/1.2 is not supported");
        is_int(head_of("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", &h), -EBADMSG, "a bare LF is malformed");
        is_int(http_response_head_parse("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 27, 64, &h), -EBADMSG,
               "a NUL in the head is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", &h), -EBADMSG, "a header name that is not a token is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", &h), -EBADMSG, "obsolete line folding is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n", &h), -EBADMSG, "a control character in a value is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", &h), -EBADMSG,
               "two Content-Length headers are malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n", &h), -EBADMSG, "a length with a sign is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", &h), -EBADMSG,
               "a length beyond 64 bits is malformed");
        is_int(head_of("HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n", &h), -EBADMSG, "an empty Transfer-Encoding is malformed");
        ok(head_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", &h) == 1 && h.transfer_encoding && !h.chunked,
           "a body whose last coding is not chunked is not chunked");
        ok(head_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", &h) == 1 && h.chunked,
           "the codings of several Transfer-Encoding headers are read in order");
        ok(head_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n", &h) == 1 && !h.chunked,
           "a coding that only contains \"chunked\" is not chunked");
        ok(head_of("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: x, close\r\nContent-Length: 0\r\n\r\n", &h) == 1 &&
           h.close, "close in a second Connection header ends the connection");
        ok(head_of("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\n\r\n", &h) == 1 &&
           h.stream_type, "a multiplexed stream is known as a stream");
}

static void test_hop_by_hop(void) {
        HttpLimits l = {};
        HttpRequest r = {};
        size_t consumed;
        int status;
        static const char * const own[] = { "Host", NULL };
        const char *s = "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-One\r\nConnection: X-Two\r\n"
                        "X-One: 1\r\nX-Two: 2\r\nX-Three: 3\r\n\r\n";

        if (http_request_parse(s, strlen(s), &l, &r, &consumed, &status, NULL) != 1) {
                ok(false, "a request with two Connection headers parses");
                return;
        }
        ok(http_request_header_is_hop_by_hop(&r, "keep-alive", NULL) && http_request_header_is_hop_by_hop(&r, "TE", NULL) &&
           http_request_header_is_hop_by_hop(&r, "proxy-authorization", NULL),
           "RFC 9110's hop-by-hop headers and the proxy's own are hop-by-hop, in any case");
        ok(http_request_header_is_hop_by_hop(&r, "x-one", NULL), "a header the first Connection header names is hop-by-hop");
        ok(http_request_header_is_hop_by_hop(&r, "X-Two", NULL), "a header a second Connection header names is hop-by-hop");
        ok(!http_request_header_is_hop_by_hop(&r, "X-Three", NULL), "a header no Connection header names is not");
        ok(!http_request_header_is_hop_by_hop(&r, "Host", NULL) && http_request_header_is_hop_by_hop(&r, "Host", own),
           "the caller's own headers are hop-by-hop when it says so");
        http_request_done(&r);
}

static int parse_proxy(const char *s, HttpRequest *r, int *status) {
        HttpLimits l = { .proxy_forms = true, .head_only = true };
        size_t consumed;
        return http_request_parse(s, strlen(s), &l, r, &consumed, status, NULL);
}

static int proxy_status(const char *s) {
        HttpRequest r = {};
        int status = 0, q = parse_proxy(s, &r, &status);
        http_request_done(&r);
        return q < 0 ? status : 200;
}

static void test_proxy_forms(void) {
        HttpRequest r = {};
        int status = 0;

        ok(parse_proxy("CONNECT Example.COM:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", &r, &status) == 1 &&
           r.form == HTTP_TARGET_AUTHORITY && streq(r.host, "example.com") && r.port == 443,
           "CONNECT host:port is the authority form, host in lower case");
        http_request_done(&r);
        ok(parse_proxy("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: x\r\n\r\n", &r, &status) == 1 &&
           streq(r.host, "2001:db8::1") && r.port == 8443, "CONNECT [IPv6]:port loses its brackets");
        http_request_done(&r);
        ok(parse_proxy("GET http://a.test:8080/p/q?x=1 HTTP/1.1\r\nHost: a.test:8080\r\nContent-Length: 5\r\n\r\nhello", &r, &status) == 1 &&
           r.form == HTTP_TARGET_ABSOLUTE && streq(r.host, "a.test") && r.port == 8080 && streq(r.path, "/p/q") &&
           streq(r.query, "x=1") && r.content_length == 5 && r.body_size == 0,
           "an absolute-form target gives host, port, path and query; head_only leaves the body unread");
        http_request_done(&r);
        ok(parse_proxy("GET http://a.test HTTP/1.1\r\nHost: a.test\r\n\r\n", &r, &status) == 1 &&
           r.port == 80 && streq(r.path, "/"), "an absolute-form target without port and path is port 80, path /");
        http_request_done(&r);
        ok(parse_proxy("POST /v1/messages HTTP/1.1\r\nHost: localhost\r\n\r\n", &r, &status) == 1 &&
           r.form == HTTP_TARGET_ORIGIN && !r.host && streq(r.path, "/v1/messages"), "the origin form stays what it was");
        http_request_done(&r);

        is_int(proxy_status("CONNECT a.test HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "CONNECT without a port is refused");
        is_int(proxy_status("CONNECT a.test:0 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "CONNECT to port 0 is refused");
        is_int(proxy_status("CONNECT a.test:65536 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "CONNECT to port 65536 is refused");
        is_int(proxy_status("CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "CONNECT with an origin-form target is refused");
        is_int(proxy_status("CONNECT [nope]:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "CONNECT to a bad IPv6 literal is refused");
        is_int(proxy_status("GET https://a.test/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "an https:// absolute form is refused (CONNECT it)");
        is_int(proxy_status("GET ftp://a.test/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "another scheme is refused");
        is_int(proxy_status("GET http://user:pw@a.test/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "userinfo in the target is refused");
        is_int(proxy_status("GET http://a_b$c/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "a host with other characters is refused");
        is_int(proxy_status("GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "an empty host is refused");
        is_int(proxy_status("GET http://a.test/#f HTTP/1.1\r\nHost: a\r\n\r\n"), 200, "a fragment after the path is part of the path");
        is_int(proxy_status("GET http://a.test#f HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "a fragment right after the host is refused");
        {
                HttpRequest o = {};
                size_t consumed;
                const char *c = "CONNECT a.test:443 HTTP/1.1\r\nHost: a\r\n\r\n";
                ok(http_request_parse(c, strlen(c), NULL, &o, &consumed, &status, NULL) < 0 &&
                   status == 400, "without proxy_forms CONNECT host:port stays a bad request");
                http_request_done(&o);
        }
}

static void test_find_crlf(void) {
        static const char lines[] = "a\rb\r\nc\r\n";
        static const char cr_last[] = "abc\r";

        ok(http_find_crlf(lines, strlen(lines)) == lines + 3, "the first CRLF is found past a bare CR");
        ok(http_find_crlf(lines + 5, strlen(lines) - 5) == lines + 6, "and the next one from where the line ends");
        ok(!http_find_crlf(lines, 3) && !http_find_crlf(lines, 0), "none in bytes without one");
        ok(!http_find_crlf(cr_last, strlen(cr_last)), "a CR as the last byte given is not a CRLF");
        ok(http_find_crlf(lines, 4) == NULL && http_find_crlf(lines, 5) == lines + 3,
           "a CRLF must lie whole within the size given");
}

/* RFC 9110's classes, written out here apart from the parser's table: tchar (5.6.2) for a header name,
 * field text (5.5: HTAB, SP, VCHAR, obs-text) for a value. */
static bool rfc_tchar(unsigned c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                (c != 0 && strchr("!#$%&'*+-.^_`|~", (int) c));
}

static bool rfc_field_text(unsigned c) {
        return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static void byte_diag(const char *where, unsigned c, int k) {
        char m[96];

        snprintf(m, sizeof(m), "byte 0x%02x in %s: %d", c, where, k);
        diag(m);
}

/* Every byte in a header name and inside a header value, in a request and in a response head: accepted
 * exactly where RFC 9110 allows it (CR, LF and NUL are refused by the head's framing). */
static void test_byte_classes(void) {
        bool name_ok = true, value_ok = true, response_ok = true;

        for (unsigned c = 1; c < 256; c++) {
                char req[128], resp[128];
                int n, k, status = 0;
                HttpResponseHead h;

                if (c == '\r' || c == '\n')
                        continue;
                /* the byte inside a header name */
                n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: d\r\nX%cY: v\r\n\r\n", (int) c);
                {
                        _cleanup_(http_request_done) HttpRequest r = {};
                        size_t consumed;

                        k = http_request_parse(req, (size_t) n, NULL, &r, &consumed, &status, NULL);
                }
                /* a colon ends the name: "X" then ":Y: v" as the value, which is valid field text */
                if ((k > 0) != (rfc_tchar(c) || c == ':')) {
                        byte_diag("a header name", c, k);
                        name_ok = false;
                }
                /* the byte inside a header value */
                n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: d\r\nX: a%cb\r\n\r\n", (int) c);
                {
                        _cleanup_(http_request_done) HttpRequest r = {};
                        size_t consumed;

                        k = http_request_parse(req, (size_t) n, NULL, &r, &consumed, &status, NULL);
                }
                if ((k > 0) != rfc_field_text(c)) {
                        byte_diag("a header value", c, k);
                        value_ok = false;
                }
                /* the same in the engine's answer */
                n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nX%cY: a%cb\r\nContent-Length: 0\r\n\r\n",
                             (int) (rfc_tchar(c) ? c : 'Z'), (int) c);
                k = http_response_head_parse(resp, (size_t) n, 64 * 1024, &h);
                if ((k == 1) != rfc_field_text(c)) {
                        byte_diag("a response header", c, k);
                        response_ok = false;
                }
                n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nX%cY: v\r\nContent-Length: 0\r\n\r\n", (int) c);
                k = http_response_head_parse(resp, (size_t) n, 64 * 1024, &h);
                if ((k == 1) != (rfc_tchar(c) || c == ':')) {
                        byte_diag("a response header name", c, k);
                        response_ok = false;
                }
        }
        ok(name_ok, "a request header name takes every tchar and no other byte");
        ok(value_ok, "a request header value takes HTAB, SP, visible characters and obs-text and no other byte");
        ok(response_ok, "a response header's name and value take the same bytes as a request's");
}

int main(void) {
        test_proxy_forms();
        test_good();
        test_incremental();
        test_pipelined();
        test_versions();
        test_malformed();
        test_content_length();
        test_caps();
        test_many_headers();
        test_response();
        test_garbage();
        test_chunked();
        test_chunked_caps();
        test_chunked_extensions_trailers();
        test_response_head();
        test_hop_by_hop();
        test_find_crlf();
        test_byte_classes();
        return done_testing();
}
