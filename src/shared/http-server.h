/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The server side of HTTP/1.1 for loop's socket-activated helpers (the gate's approvals, the Docker API
 * proxy): parses requests from bytes a client sent and formats responses. No I/O here: the helper reads
 * into a buffer, calls http_request_parse() until it says a request is complete, and writes what
 * http_response_format() gives it.
 *
 * Strict on purpose, because every byte comes from a client we do not trust: a request line of
 * METHOD SP origin-form SP HTTP/1.x, CRLF line ends only, header names that are tokens, no obsolete
 * line folding, no control characters in values, at most one Content-Length (digits only), a Host header
 * for HTTP/1.1. Transfer-Encoding is refused (501) unless HttpLimits.chunked is set; then exactly one
 * "Transfer-Encoding: chunked" on an HTTP/1.1 request without Content-Length is decoded (anything else is
 * 400 or 501: the request smuggling shapes), chunks strictly as RFC 9112 7.1 without extensions or
 * trailers (a streaming caller may accept those, see HttpChunked). Everything is capped by HttpLimits; a request over a cap is answered with 413 or 431 instead
 * of being buffered.
 *
 * For a forward proxy (the egress gateway) HttpLimits.proxy_forms also accepts the authority-form of
 * CONNECT ("CONNECT host:port") and the absolute-form of http:// targets ("GET http://host[:port]/p"),
 * which fill HttpRequest.host and .port; and HttpLimits.head_only returns as soon as the head is complete,
 * leaving the body (content_length bytes) to be streamed by the caller. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Defaults of HttpLimits, used for every field left 0. */
#define HTTP_HEADER_SIZE_MAX_DEFAULT (16U * 1024U)      /* request line + headers + the empty line */
#define HTTP_HEADERS_MAX_DEFAULT 64U
#define HTTP_BODY_SIZE_MAX_DEFAULT (1024U * 1024U)
#define HTTP_METHOD_MAX 32U
/* Bytes of chunked framing (sizes and line ends) a body may carry beyond its data: a client that sends
 * one-byte chunks is refused with 413 long before it costs more than this. */
#define HTTP_CHUNKED_FRAMING_MAX (64U * 1024U)
#define HTTP_CHUNK_SIZE_DIGITS_MAX 16U
/* With HttpChunked.extensions: the bytes after a chunk's size up to its line end (";name=value"...). */
#define HTTP_CHUNK_EXT_MAX 4096U
/* With HttpChunked.trailers: the bytes of the trailer section (field lines after the last chunk). */
#define HTTP_CHUNK_TRAILERS_MAX (16U * 1024U)

typedef struct HttpLimits {
        size_t header_size_max;
        size_t headers_max;
        size_t body_size_max;
        bool chunked;                   /* decode chunked bodies instead of answering 501 */
        bool proxy_forms;               /* accept CONNECT authority-form and http:// absolute-form targets */
        bool head_only;                 /* complete once the head is; the body stays in the buffer */
} HttpLimits;

typedef enum HttpTargetForm {
        HTTP_TARGET_ORIGIN,             /* "/path?query" */
        HTTP_TARGET_AUTHORITY,          /* "host:port", CONNECT only */
        HTTP_TARGET_ABSOLUTE,           /* "http://host[:port]/path?query" */
} HttpTargetForm;

#define HTTP_HOST_MAX 253U

typedef struct HttpHeader {
        char *name;                     /* as sent */
        char *value;                    /* surrounding whitespace removed */
} HttpHeader;

typedef struct HttpRequest {
        char *method;
        char *target;                   /* as sent */
        HttpTargetForm form;
        char *host;                     /* authority and absolute forms: lower case, IPv6 without brackets */
        uint16_t port;                  /* authority and absolute forms (absolute default: 80) */
        char *path;                     /* target without the query ("/..." also for the absolute form) */
        char *query;                    /* after "?", or NULL */
        unsigned version_minor;         /* HTTP/1.0 or HTTP/1.1 */
        HttpHeader *headers;
        size_t n_headers;
        char *body;                     /* NUL-terminated for convenience (body_size excludes it); never NULL */
        size_t body_size;
        size_t content_length;          /* the Content-Length sent (0 if none); with head_only not in body */
        bool keep_alive;                /* the connection may carry another request after the response */
        bool chunked;                   /* the body came chunked (body holds it decoded) */
} HttpRequest;

void http_request_done(HttpRequest *r);

/* What http_request_parse() learnt about a request that is not complete yet. */
typedef struct HttpParseInfo {
        bool headers_complete;
        size_t head_size;               /* with headers_complete: bytes of the head, the body starts there */
        bool expect_continue;           /* the client waits for "100 Continue" before sending the body */
} HttpParseInfo;

/* Parses the request at the start of buf[0..size). Returns
 *   1  a complete request in *ret; *ret_consumed bytes of buf belong to it (the rest is the next one);
 *   0  incomplete: read more and call again with the whole buffer (ret_info, if given, says whether
 *      the client waits for 100 Continue);
 *  <0  the request is bad: *ret_status is the status to answer with before closing the connection
 *      (400, 413, 431, 501, 505), -ENOMEM with status 500.
 * Bytes beyond the caps are never needed: with header_size_max + body_size_max bytes buffered, the
 * answer is 1 or an error. */
int http_request_parse(const char *buf, size_t size, const HttpLimits *limits,
                       HttpRequest *ret, size_t *ret_consumed, int *ret_status, HttpParseInfo *ret_info);

/* The value of the first header called name (case-insensitive), or NULL. */
const char *http_request_header(const HttpRequest *r, const char *name);
/* Whether any of r's Connection headers lists name (a header for this hop only, RFC 9110 7.6.1). */
bool http_request_connection_lists(const HttpRequest *r, const char *name);

/* "Bad Request" for 400 and so on; "Unknown" for codes we never send. */
const char *http_status_reason(int status);

/* A complete response: status line, Content-Type (when body is not NULL), Content-Length, Connection:
 * keep-alive or close, a blank line and the body. */
int http_response_format(int status, const char *content_type, const void *body, size_t body_size,
                         bool keep_alive, char **ret, size_t *ret_size);

/* Parses only the head (request line and headers, with every check above, Content-Length and
 * Transfer-Encoding included) of the request at the start of buf, for callers that stream the body
 * themselves. Returns 1 with *ret (body empty) and *ret_head_size, 0 when incomplete, <0 with
 * *ret_status as http_request_parse(). ret->chunked says how the body is framed; otherwise
 * *ret_body_size is its Content-Length (0 without one). The body cap is not applied here. */
int http_request_parse_head(const char *buf, size_t size, const HttpLimits *limits,
                            HttpRequest *ret, size_t *ret_head_size, uint64_t *ret_body_size, int *ret_status);

/* An incremental decoder of a chunked body: feed it what arrived, it writes the data (never more bytes
 * than it was fed) and says where the body ended. Strict: 1 to HTTP_CHUNK_SIZE_DIGITS_MAX hex digits
 * and CRLF; chunk extensions and trailer fields are refused unless asked for:
 *   extensions  RFC 9112 7.1.1 after a size: *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ),
 *               checked and ignored (never written to out), at most HTTP_CHUNK_EXT_MAX bytes a line;
 *   trailers    RFC 9112 7.1.2 field lines after the last chunk (a token, ":", a value of visible
 *               characters, blanks and obs-text; no obsolete folding), at most HTTP_CHUNK_TRAILERS_MAX
 *               bytes in all, never written to out: the caller passes them on with the raw bytes or
 *               drops them. */
typedef struct HttpChunked {
        bool extensions;
        bool trailers;
        unsigned state;
        unsigned sub;                   /* where in an extension */
        unsigned digits;
        size_t line;                    /* bytes of the current extension or of the trailer section */
        uint64_t remaining;             /* data bytes left in the current chunk */
        uint64_t data_total;            /* data bytes decoded so far */
        uint64_t framing_total;         /* framing bytes seen so far */
        uint64_t data_max;              /* 0: no cap */
        bool framing_unlimited;         /* a stream passed on, not buffered: no HTTP_CHUNKED_FRAMING_MAX */
} HttpChunked;

/* Decodes in[0..size) into out (room for size bytes; NULL: only follows the framing, for a stream passed
 * on as it is). Returns 1 when the body ended (*ret_consumed
 * bytes of in were part of it), 0 when all of in was consumed and more is needed, -EBADMSG for a
 * malformed body, -EFBIG when the data exceeds data_max or the framing HTTP_CHUNKED_FRAMING_MAX (unless
 * framing_unlimited). */
int http_chunked_decode(HttpChunked *c, const char *in, size_t size, char *out, size_t *ret_out_size,
                        size_t *ret_consumed);

/* The head of a response from an upstream server (the Docker API proxy reads the engine's): the status
 * and how the body is framed, so that a stream can be passed on without buffering it. */
typedef struct HttpResponseHead {
        int status;
        size_t head_size;               /* bytes up to and including the empty line */
        bool chunked;
        bool has_length;
        uint64_t length;                /* Content-Length, when has_length */
        bool stream_type;               /* application/vnd.docker.raw-stream or multiplexed-stream */
        bool close;                     /* "Connection: close", or HTTP/1.0 without keep-alive: the
                                         * connection carries no other response */
} HttpResponseHead;

/* Returns 1 with *ret when buf starts with a complete head, 0 when more is needed, -E2BIG when head_max
 * bytes hold no complete head, -EBADMSG when it is not an HTTP/1.x response (a bad status line, a header
 * without a colon, a Content-Length that is not a number). */
int http_response_head_parse(const char *buf, size_t size, size_t head_max, HttpResponseHead *ret);

/* The first "\r\n" in buf[0..size), or NULL. */
const char *http_find_crlf(const char *buf, size_t size);

/* Whether a comma-separated header value (Connection, Transfer-Encoding) lists token, ignoring case and
 * the whitespace around elements. */
bool http_token_list_contains(const char *list, const char *token);
