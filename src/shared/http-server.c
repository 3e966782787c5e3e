/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "http-server.h"
#include "parse-util.h"

#define HTTP_LEADING_EMPTY_LINES_MAX 4U

void http_request_done(HttpRequest *r) {
        free(r->method);
        free(r->target);
        free(r->host);
        free(r->path);
        free(r->query);
        for (size_t i = 0; i < r->n_headers; i++) {
                free(r->headers[i].name);
                free(r->headers[i].value);
        }
        free(r->headers);
        free(r->body);
        *r = (HttpRequest) {};
}

/* Every byte of every head a proxy reads is classed here, a table look-up a byte instead of a switch or
 * two comparisons: RFC 9110 5.6.2's tchar (a header name, a method) and 5.5's field text (HTAB, SP,
 * visible characters and obs-text: a header value, a reason phrase). Ranges do not overlap. */
#define CHAR_FIELD 1U
#define CHAR_TOKEN (2U | CHAR_FIELD)

static const uint8_t char_class[256] = {
        ['\t'] = CHAR_FIELD, [' '] = CHAR_FIELD,
        ['!'] = CHAR_TOKEN, ['"'] = CHAR_FIELD, ['#' ... '\''] = CHAR_TOKEN, ['(' ... ')'] = CHAR_FIELD,
        ['*' ... '+'] = CHAR_TOKEN, [','] = CHAR_FIELD, ['-' ... '.'] = CHAR_TOKEN, ['/'] = CHAR_FIELD,
        ['0' ... '9'] = CHAR_TOKEN, [':' ... '@'] = CHAR_FIELD, ['A' ... 'Z'] = CHAR_TOKEN,
        ['[' ... ']'] = CHAR_FIELD, ['^' ... '`'] = CHAR_TOKEN, ['a' ... 'z'] = CHAR_TOKEN, ['{'] = CHAR_FIELD,
        ['|'] = CHAR_TOKEN, ['}'] = CHAR_FIELD, ['~'] = CHAR_TOKEN,
        [0x80 ... 0xff] = CHAR_FIELD,
};

/* RFC 9110 5.6.2's tchar */
static bool char_is_tchar(char c) {
        return (char_class[(uint8_t) c] & CHAR_TOKEN) == CHAR_TOKEN;
}

/* Visible characters and obs-text (bytes >= 0x80) as a request target may hold them: no space, no
 * controls. Non-ASCII is not valid in a target either. */
static bool target_is_valid(const char *s, size_t n, bool proxy_forms) {
        if (n == 0 || (s[0] != '/' && !proxy_forms))
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] <= 0x20 || (unsigned char) s[i] >= 0x7f)
                        return false;
        return true;
}

/* Header values: HTAB, SP, visible characters and obs-text; no other controls. */
static bool value_is_valid(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!(char_class[(uint8_t) s[i]] & CHAR_FIELD))
                        return false;
        return true;
}

/* The first CRLFCRLF in buf[0..size): memchr() to each CR, which finds it a word at a time; glibc's
 * memmem() took a step a byte for this needle (1,500 instructions a proxied request, two heads). */
static const char *memmem_crlfcrlf(const char *buf, size_t size) {
        const char *end = buf + size, *cr;

        for (const char *p = buf; end - p >= 4 && (cr = memchr(p, '\r', (size_t) (end - p - 3))); p = cr + 1)
                if (cr[1] == '\n' && cr[2] == '\r' && cr[3] == '\n')
                        return cr;
        return NULL;
}

/* memchr() finds the CR a word at a time; memmem() with a two-byte needle goes byte by byte, and a head is
 * cut into lines for every request a proxy passes on. */
const char *http_find_crlf(const char *buf, size_t size) {
        const char *end = buf + size, *cr;

        for (const char *p = buf; p < end && (cr = memchr(p, '\r', (size_t) (end - p))); p = cr + 1)
                if (cr + 1 < end && cr[1] == '\n')
                        return cr;
        return NULL;
}

static int fail(int status, int error, int *ret_status) {
        *ret_status = status;
        return error;
}

/* Whether the comma-separated list[0..n) holds token, ignoring case and the whitespace around elements. */
static bool token_list_contains(const char *list, size_t n, const char *token) {
        size_t tl = strlen(token);

        for (const char *p = list, *end = list + n; p < end;) {
                size_t len, l;

                while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
                        p++;
                for (len = 0; p + len < end && p[len] != ','; len++)
                        ;
                /* trailing whitespace of the element */
                for (l = len; l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'); l--)
                        ;
                if (l == tl && strncasecmp(p, token, tl) == 0)
                        return true;
                p += len;
        }
        return false;
}

bool http_token_list_contains(const char *list, const char *token) {
        return token_list_contains(list, strlen(list), token);
}

static int parse_content_length(const char *v, size_t *ret) {
        uint64_t n = 0;

        if (isempty(v))
                return -EINVAL;
        for (const char *p = v; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                if (n > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                n = n * 10 + (uint64_t) (*p - '0');
        }
        if (n > SIZE_MAX)
                return -ERANGE;
        *ret = (size_t) n;
        return 0;
}

/* host[:port] with host a reg-name, an IPv4 address or an [IPv6] literal; no userinfo. */
static int parse_authority(const char *s, size_t n, bool port_required, uint16_t default_port,
                           HttpRequest *r) {
        const char *host, *port = NULL, *end = s + n;
        size_t host_len;

        if (n == 0)
                return -EBADMSG;
        if (s[0] == '[') {
                const char *close = memchr(s, ']', n);
                if (!close)
                        return -EBADMSG;
                host = s + 1;
                host_len = (size_t) (close - host);
                if (close + 1 < end) {
                        if (close[1] != ':')
                                return -EBADMSG;
                        port = close + 2;
                }
        } else {
                const char *colon = memchr(s, ':', n);
                host = s;
                host_len = colon ? (size_t) (colon - s) : n;
                if (colon)
                        port = colon + 1;
        }
        if (host_len == 0 || host_len > HTTP_HOST_MAX)
                return -EBADMSG;

        if (port) {
                if (parse_port_full(port, (size_t) (end - port), false, &r->port) < 0)
                        return -EBADMSG;
        } else if (port_required)
                return -EBADMSG;
        else
                r->port = default_port;

        r->host = strndup(host, host_len);
        if (!r->host)
                return -ENOMEM;
        if (s[0] == '[') {
                struct in6_addr a;
                if (inet_pton(AF_INET6, r->host, &a) != 1)
                        return -EBADMSG;
        } else
                for (char *c = r->host; *c; c++) {
                        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == '_' ||
                              (*c >= 'A' && *c <= 'Z')))
                                return -EBADMSG;
                        if (*c >= 'A' && *c <= 'Z')
                                *c = (char) (*c - 'A' + 'a');
                }
        return 0;
}

/* Fills r->form, r->host, r->port and the path of a proxy's request target. */
static int parse_proxy_target(HttpRequest *r, int *ret_status) {
        const char *t = r->target, *rest, *slash;
        int q;

        if (streq(r->method, "CONNECT")) {
                r->form = HTTP_TARGET_AUTHORITY;
                q = parse_authority(t, strlen(t), true, 0, r);
                if (q == -ENOMEM)
                        return fail(500, q, ret_status);
                if (q < 0)
                        return fail(400, q, ret_status);
                r->path = strdup("");
                return r->path ? 0 : fail(500, -ENOMEM, ret_status);
        }
        if (t[0] == '/') {
                r->form = HTTP_TARGET_ORIGIN;
                return 0;
        }
        /* Only http:// travels as absolute-form; https goes through CONNECT. */
        rest = startswith(t, "http://");
        if (!rest)
                return fail(400, -EBADMSG, ret_status);
        r->form = HTTP_TARGET_ABSOLUTE;
        slash = rest + strcspn(rest, "/?#");
        if (*slash == '#' || memchr(rest, '@', (size_t) (slash - rest)))
                return fail(400, -EBADMSG, ret_status);
        q = parse_authority(rest, (size_t) (slash - rest), false, 80, r);
        if (q == -ENOMEM)
                return fail(500, q, ret_status);
        if (q < 0)
                return fail(400, q, ret_status);
        if (*slash == '?') {
                if (asprintf(&r->path, "/") < 0 || !(r->query = strdup(slash + 1)))
                        return fail(500, -ENOMEM, ret_status);
                return 0;
        }
        if (*slash == 0)
                r->path = strdup("/");
        else {
                const char *qm = strchr(slash, '?');
                r->path = qm ? strndup(slash, (size_t) (qm - slash)) : strdup(slash);
                if (r->path && qm && !(r->query = strdup(qm + 1)))
                        return fail(500, -ENOMEM, ret_status);
        }
        return r->path ? 0 : fail(500, -ENOMEM, ret_status);
}

static int parse_request_line(const char *line, size_t n, HttpRequest *r, bool proxy_forms, int *ret_status) {
        const char *sp1, *sp2, *version;
        size_t version_len;

        sp1 = memchr(line, ' ', n);
        if (!sp1 || sp1 == line || (size_t) (sp1 - line) > HTTP_METHOD_MAX)
                return fail(400, -EBADMSG, ret_status);
        for (const char *p = line; p < sp1; p++)
                if (!char_is_tchar(*p))
                        return fail(400, -EBADMSG, ret_status);
        sp2 = memchr(sp1 + 1, ' ', n - (size_t) (sp1 + 1 - line));
        if (!sp2)
                return fail(400, -EBADMSG, ret_status);
        if (!target_is_valid(sp1 + 1, (size_t) (sp2 - sp1 - 1), proxy_forms))
                return fail(400, -EBADMSG, ret_status);
        version = sp2 + 1;
        version_len = n - (size_t) (version - line);
        if (version_len != 8 || strncmp(version, "HTTP/", 5) != 0 || version[6] != '.' ||
            version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9')
                return fail(400, -EBADMSG, ret_status);
        if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
                return fail(505, -EPROTONOSUPPORT, ret_status);

        r->version_minor = (unsigned) (version[7] - '0');
        r->method = strndup(line, (size_t) (sp1 - line));
        r->target = strndup(sp1 + 1, (size_t) (sp2 - sp1 - 1));
        if (!r->method || !r->target)
                return fail(500, -ENOMEM, ret_status);

        if (proxy_forms) {
                int q = parse_proxy_target(r, ret_status);
                if (q < 0 || r->form != HTTP_TARGET_ORIGIN)
                        return q;
        }

        const char *q = strchr(r->target, '?');
        r->path = q ? strndup(r->target, (size_t) (q - r->target)) : strdup(r->target);
        if (!r->path || (q && !(r->query = strdup(q + 1))))
                return fail(500, -ENOMEM, ret_status);
        return 0;
}

/* One field line of a head (request or response), strictly: a token, a colon, a value of field text
 * (whitespace around it removed); no obsolete line folding. */
static int field_line_split(const char *line, size_t n, size_t *ret_name_len, const char **ret_value,
                            size_t *ret_value_len) {
        const char *colon, *v, *end;

        if (n == 0 || line[0] == ' ' || line[0] == '\t')    /* obs-fold */
                return -EBADMSG;
        /* the name: tchars up to the first byte that is not one, which must be the colon */
        end = line + n;
        for (colon = line; colon < end && char_is_tchar(*colon); colon++)
                ;
        if (colon == line || colon == end || *colon != ':')
                return -EBADMSG;
        v = colon + 1;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if (!value_is_valid(v, (size_t) (end - v)))
                return -EBADMSG;
        *ret_name_len = (size_t) (colon - line);
        *ret_value = v;
        *ret_value_len = (size_t) (end - v);
        return 0;
}

#define HTTP_HEADERS_FIRST 8U

static int parse_header_line(const char *line, size_t n, HttpRequest *r, const HttpLimits *l, int *ret_status) {
        const char *v;
        size_t name_len, value_len;
        HttpHeader *h;

        if (field_line_split(line, n, &name_len, &v, &value_len) < 0)
                return fail(400, -EBADMSG, ret_status);
        if (r->n_headers >= l->headers_max)
                return fail(431, -E2BIG, ret_status);
        /* room for HTTP_HEADERS_FIRST, doubled when full (a power of two from there), up to headers_max:
         * a request has a few headers, and an array of headers_max (1 KiB for 64) is past malloc's small
         * sizes, where each allocation first consolidated its free lists (1,400 instructions a request) */
        if (!r->headers || (r->n_headers >= HTTP_HEADERS_FIRST && (r->n_headers & (r->n_headers - 1)) == 0)) {
                size_t room = r->headers ? MIN(2 * r->n_headers, l->headers_max) : MIN(HTTP_HEADERS_FIRST, l->headers_max);
                HttpHeader *a = reallocarray(r->headers, room, sizeof(HttpHeader));

                if (!a)
                        return fail(500, -ENOMEM, ret_status);
                r->headers = a;
        }
        h = &r->headers[r->n_headers];
        h->name = strndup(line, name_len);
        h->value = strndup(v, value_len);
        if (!h->name || !h->value) {
                free(h->name);
                free(h->value);
                *h = (HttpHeader) {};
                return fail(500, -ENOMEM, ret_status);
        }
        r->n_headers++;
        return 0;
}

const char *http_request_header(const HttpRequest *r, const char *name) {
        for (size_t i = 0; i < r->n_headers; i++)
                if (strcasecmp(r->headers[i].name, name) == 0)
                        return r->headers[i].value;
        return NULL;
}

static size_t http_request_header_count(const HttpRequest *r, const char *name) {
        size_t n = 0;
        for (size_t i = 0; i < r->n_headers; i++)
                n += strcasecmp(r->headers[i].name, name) == 0;
        return n;
}

enum {
        CHUNK_SIZE,             /* hex digits of a chunk size */
        CHUNK_SIZE_LF,          /* after the CR that ends the size line */
        CHUNK_DATA,
        CHUNK_DATA_CR,          /* the CRLF after a chunk's data */
        CHUNK_DATA_LF,
        CHUNK_LAST_CR,          /* after "0\r\n" (and after each trailer field): the empty line, or a trailer */
        CHUNK_LAST_LF,
        CHUNK_DONE,
        CHUNK_EXT,              /* after a size: extensions up to the CR, c->sub says where */
        CHUNK_TRAILER_NAME,
        CHUNK_TRAILER_VALUE,
        CHUNK_TRAILER_LF,
};

/* Where in a chunk extension (RFC 9112 7.1.1). */
enum {
        EXT_BWS_SEMI,           /* blanks, then ";" */
        EXT_BWS_NAME,           /* after ";": blanks, then a name */
        EXT_NAME,
        EXT_AFTER_NAME,         /* blanks after a name: "=" or ";" */
        EXT_BWS_VALUE,          /* after "=": blanks, then a token or a quoted string */
        EXT_TOKEN,
        EXT_QUOTED,
        EXT_QUOTED_PAIR,        /* after a backslash in a quoted string */
        EXT_AFTER_QUOTED,
};

static bool char_is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* RFC 9110 field-vchar and blanks: what a field value (or a quoted-pair) may hold */
static bool char_is_field_text(char c) {
        unsigned char u = (unsigned char) c;
        return char_is_blank(c) || (u >= 0x21 && u != 0x7f);
}

/* RFC 9110 qdtext */
static bool char_is_qdtext(char c) {
        return char_is_field_text(c) && c != '"' && c != '\\';
}

/* One byte of a chunk extension: 0, or -EBADMSG. CR ends the extensions (the size line's LF follows). */
static int chunk_ext_step(HttpChunked *c, char ch) {
        switch (c->sub) {
        case EXT_BWS_SEMI:
                if (ch == ';')
                        c->sub = EXT_BWS_NAME;
                else if (!char_is_blank(ch))
                        return -EBADMSG;
                return 0;
        case EXT_BWS_NAME:
                if (char_is_tchar(ch))
                        c->sub = EXT_NAME;
                else if (!char_is_blank(ch))
                        return -EBADMSG;
                return 0;
        case EXT_NAME:
        case EXT_TOKEN:
                if (char_is_tchar(ch))
                        return 0;
                if (ch == ';')
                        c->sub = EXT_BWS_NAME;
                else if (ch == '=' && c->sub == EXT_NAME)
                        c->sub = EXT_BWS_VALUE;
                else if (char_is_blank(ch))
                        c->sub = c->sub == EXT_NAME ? EXT_AFTER_NAME : EXT_BWS_SEMI;
                else if (ch == '\r')
                        c->state = CHUNK_SIZE_LF;
                else
                        return -EBADMSG;
                return 0;
        case EXT_AFTER_NAME:
                if (ch == '=')
                        c->sub = EXT_BWS_VALUE;
                else if (ch == ';')
                        c->sub = EXT_BWS_NAME;
                else if (!char_is_blank(ch))
                        return -EBADMSG;
                return 0;
        case EXT_BWS_VALUE:
                if (ch == '"')
                        c->sub = EXT_QUOTED;
                else if (char_is_tchar(ch))
                        c->sub = EXT_TOKEN;
                else if (!char_is_blank(ch))
                        return -EBADMSG;
                return 0;
        case EXT_QUOTED:
                if (ch == '"')
                        c->sub = EXT_AFTER_QUOTED;
                else if (ch == '\\')
                        c->sub = EXT_QUOTED_PAIR;
                else if (!char_is_qdtext(ch))
                        return -EBADMSG;
                return 0;
        case EXT_QUOTED_PAIR:
                if (!char_is_field_text(ch))
                        return -EBADMSG;
                c->sub = EXT_QUOTED;
                return 0;
        case EXT_AFTER_QUOTED:
                if (ch == ';')
                        c->sub = EXT_BWS_NAME;
                else if (char_is_blank(ch))
                        c->sub = EXT_BWS_SEMI;
                else if (ch == '\r')
                        c->state = CHUNK_SIZE_LF;
                else
                        return -EBADMSG;
                return 0;
        default:
                return -EBADMSG;
        }
}

int http_chunked_decode(HttpChunked *c, const char *in, size_t size, char *out, size_t *ret_out_size,
                        size_t *ret_consumed) {
        size_t i = 0, o = 0;

        while (i < size && c->state != CHUNK_DONE) {
                char ch = in[i];

                if (c->state == CHUNK_DATA) {
                        size_t n = (size_t) MIN((uint64_t) (size - i), c->remaining);
                        if (out)
                                memcpy(out + o, in + i, n);
                        o += n;
                        i += n;
                        c->remaining -= n;
                        if (c->remaining == 0)
                                c->state = CHUNK_DATA_CR;
                        continue;
                }

                if (++c->framing_total > HTTP_CHUNKED_FRAMING_MAX && !c->framing_unlimited)
                        return -EFBIG;
                i++;
                switch (c->state) {
                case CHUNK_SIZE: {
                        int v = unhexchar(ch);
                        if (v >= 0) {
                                if (++c->digits > HTTP_CHUNK_SIZE_DIGITS_MAX || c->remaining > (UINT64_MAX >> 4))
                                        return -EBADMSG;
                                c->remaining = (c->remaining << 4) | (uint64_t) v;
                        } else if (ch == '\r' && c->digits > 0)
                                c->state = CHUNK_SIZE_LF;
                        else if (c->extensions && c->digits > 0 && (ch == ';' || char_is_blank(ch))) {
                                c->state = CHUNK_EXT;
                                c->sub = ch == ';' ? EXT_BWS_NAME : EXT_BWS_SEMI;
                                c->line = 1;
                        } else  /* extensions unasked for, bare LF, an empty size */
                                return -EBADMSG;
                        break;
                }
                case CHUNK_EXT:
                        if (ch != '\r' && ++c->line > HTTP_CHUNK_EXT_MAX)     /* the line's end is not counted */
                                return -EFBIG;
                        if (chunk_ext_step(c, ch) < 0)
                                return -EBADMSG;
                        break;
                case CHUNK_SIZE_LF:
                        if (ch != '\n')
                                return -EBADMSG;
                        c->digits = 0;
                        if (c->remaining == 0) {
                                c->state = CHUNK_LAST_CR;
                                c->line = 0;
                                break;
                        }
                        if (c->data_max > 0 && c->remaining > c->data_max - c->data_total)
                                return -EFBIG;
                        c->data_total += c->remaining;
                        c->state = CHUNK_DATA;
                        break;
                case CHUNK_DATA_CR:
                        if (ch != '\r')
                                return -EBADMSG;
                        c->state++;
                        break;
                case CHUNK_LAST_CR:
                        if (ch == '\r') {
                                c->state = CHUNK_LAST_LF;
                                break;
                        }
                        /* a trailer field (a line beginning with a blank is obsolete folding: refused) */
                        if (!c->trailers || !char_is_tchar(ch))
                                return -EBADMSG;
                        if (++c->line > HTTP_CHUNK_TRAILERS_MAX)
                                return -EFBIG;
                        c->state = CHUNK_TRAILER_NAME;
                        break;
                case CHUNK_TRAILER_NAME:
                case CHUNK_TRAILER_VALUE:
                case CHUNK_TRAILER_LF:
                        if (++c->line > HTTP_CHUNK_TRAILERS_MAX)
                                return -EFBIG;
                        if (c->state == CHUNK_TRAILER_NAME && ch == ':')
                                c->state = CHUNK_TRAILER_VALUE;
                        else if (c->state == CHUNK_TRAILER_NAME && !char_is_tchar(ch))
                                return -EBADMSG;
                        else if (c->state == CHUNK_TRAILER_VALUE && ch == '\r')
                                c->state = CHUNK_TRAILER_LF;
                        else if (c->state == CHUNK_TRAILER_VALUE && !char_is_field_text(ch))
                                return -EBADMSG;
                        else if (c->state == CHUNK_TRAILER_LF) {
                                if (ch != '\n')
                                        return -EBADMSG;
                                c->state = CHUNK_LAST_CR;
                        }
                        break;
                case CHUNK_DATA_LF:
                        if (ch != '\n')
                                return -EBADMSG;
                        c->state = CHUNK_SIZE;
                        break;
                case CHUNK_LAST_LF:
                        if (ch != '\n')
                                return -EBADMSG;
                        c->state = CHUNK_DONE;
                        break;
                default:
                        return -EBADMSG;
                }
        }

        *ret_out_size = o;
        *ret_consumed = i;
        return c->state == CHUNK_DONE;
}

static void limits_fill(const HttpLimits *limits, HttpLimits *l) {
        *l = (HttpLimits) {
                .header_size_max = limits && limits->header_size_max ? limits->header_size_max : HTTP_HEADER_SIZE_MAX_DEFAULT,
                .headers_max = limits && limits->headers_max ? limits->headers_max : HTTP_HEADERS_MAX_DEFAULT,
                .body_size_max = limits && limits->body_size_max ? limits->body_size_max : HTTP_BODY_SIZE_MAX_DEFAULT,
                .chunked = limits && limits->chunked,
                .proxy_forms = limits && limits->proxy_forms,
                .head_only = limits && limits->head_only,
        };
}

/* Transfer-Encoding as a proxy must read it: one header, exactly "chunked", HTTP/1.1, no Content-Length.
 * Everything else is how request smuggling starts (a second parser that reads the framing differently). */
static int check_transfer_encoding(const HttpRequest *r, const HttpLimits *l, bool *ret_chunked, int *ret_status) {
        const char *te = http_request_header(r, "Transfer-Encoding");

        *ret_chunked = false;
        if (!te)
                return 0;
        if (!l->chunked)
                return fail(501, -EOPNOTSUPP, ret_status);
        if (r->version_minor == 0 || http_request_header_count(r, "Transfer-Encoding") > 1 ||
            http_request_header(r, "Content-Length"))
                return fail(400, -EBADMSG, ret_status);
        if (strcasecmp(te, "chunked") != 0)
                return fail(strchr(te, ',') ? 400 : 501, -EOPNOTSUPP, ret_status);
        *ret_chunked = true;
        return 0;
}

/* No NUL, and CR and LF only as CRLF, anywhere in a head. */
/* No NUL, every LF after a CR and every CR before an LF. memchr() looks a word at a time: this runs on
 * every head a proxy reads. */
static bool head_lines_are_valid(const char *buf, size_t head_size) {
        const char *end = buf + head_size, *p;

        if (memchr(buf, 0, head_size))
                return false;
        for (p = buf; (p = memchr(p, '\n', (size_t) (end - p))); p++)
                if (p == buf || p[-1] != '\r')
                        return false;
        for (p = buf; (p = memchr(p, '\r', (size_t) (end - p))); p++)
                if (p + 1 >= end || p[1] != '\n')
                        return false;
        return true;
}

/* The head: request line and headers, checked; *ret_skipped leading empty lines. */
static int parse_head(const char *buf, size_t size, const HttpLimits *l, HttpRequest *ret, size_t *ret_skipped,
                      size_t *ret_head_size, uint64_t *ret_body_size, int *ret_status) {
        _cleanup_(http_request_done) HttpRequest r = {};
        const char *end, *p, *line_end, *v;
        size_t head_size, body_size = 0, skipped = 0;
        bool chunked;
        int r_;

        /* RFC 9112 2.2: a few empty lines before the request line are ignored (clients that add one after
         * a body they sent, for instance). */
        for (size_t i = 0; i < HTTP_LEADING_EMPTY_LINES_MAX && size >= 2 && buf[0] == '\r' && buf[1] == '\n'; i++) {
                buf += 2;
                size -= 2;
                skipped += 2;
        }

        end = memmem_crlfcrlf(buf, MIN(size, l->header_size_max));
        if (!end) {
                /* A bare LF where a CRLF belongs is refused right away rather than waited on. */
                for (size_t i = 0; i < MIN(size, l->header_size_max); i++)
                        if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
                                return fail(400, -EBADMSG, ret_status);
                        else if (buf[i] == 0)
                                return fail(400, -EBADMSG, ret_status);
                if (size >= l->header_size_max)
                        return fail(431, -E2BIG, ret_status);
                return 0;
        }
        head_size = (size_t) (end - buf) + 4;

        if (!head_lines_are_valid(buf, head_size))
                return fail(400, -EBADMSG, ret_status);

        line_end = http_find_crlf(buf, head_size);
        r_ = parse_request_line(buf, (size_t) (line_end - buf), &r, l->proxy_forms, ret_status);
        if (r_ < 0)
                return r_;
        for (p = line_end + 2; p < end + 2; p = line_end + 2) {
                line_end = http_find_crlf(p, (size_t) (end + 2 - p));
                r_ = parse_header_line(p, (size_t) (line_end - p), &r, l, ret_status);
                if (r_ < 0)
                        return r_;
        }

        r_ = check_transfer_encoding(&r, l, &chunked, ret_status);
        if (r_ < 0)
                return r_;
        if (r.version_minor == 1 && http_request_header_count(&r, "Host") != 1)
                return fail(400, -EBADMSG, ret_status);
        if (http_request_header_count(&r, "Content-Length") > 1)
                return fail(400, -EBADMSG, ret_status);
        v = http_request_header(&r, "Content-Length");
        if (v) {
                r_ = parse_content_length(v, &body_size);
                if (r_ == -ERANGE)
                        return fail(413, -EFBIG, ret_status);
                if (r_ < 0)
                        return fail(400, -EBADMSG, ret_status);
        }

        v = http_request_header(&r, "Connection");
        if (r.version_minor == 1)
                r.keep_alive = !(v && http_token_list_contains(v, "close"));
        else
                r.keep_alive = v && http_token_list_contains(v, "keep-alive");
        r.chunked = chunked;

        r.content_length = body_size;
        *ret = r;
        r = (HttpRequest) {};
        *ret_skipped = skipped;
        *ret_head_size = head_size;
        *ret_body_size = body_size;
        return 1;
}

int http_request_parse_head(const char *buf, size_t size, const HttpLimits *limits,
                            HttpRequest *ret, size_t *ret_head_size, uint64_t *ret_body_size, int *ret_status) {
        HttpLimits l;
        size_t skipped, head_size;
        uint64_t body_size;
        int r;

        limits_fill(limits, &l);
        r = parse_head(buf, size, &l, ret, &skipped, &head_size, &body_size, ret_status);
        if (r <= 0)
                return r;
        ret->body = strdup("");
        if (!ret->body) {
                http_request_done(ret);
                return fail(500, -ENOMEM, ret_status);
        }
        *ret_head_size = skipped + head_size;
        *ret_body_size = body_size;
        return 1;
}

int http_request_parse(const char *buf, size_t size, const HttpLimits *limits,
                       HttpRequest *ret, size_t *ret_consumed, int *ret_status, HttpParseInfo *ret_info) {
        _cleanup_(http_request_done) HttpRequest r = {};
        HttpLimits l;
        size_t head_size, skipped, body_size, consumed;
        uint64_t content_length;
        const char *v;
        int r_;

        if (ret_info)
                *ret_info = (HttpParseInfo) {};
        limits_fill(limits, &l);

        r_ = parse_head(buf, size, &l, &r, &skipped, &head_size, &content_length, ret_status);
        if (r_ <= 0)
                return r_;
        buf += skipped;
        size -= skipped;

        if (l.head_only) {
                /* The body (content_length bytes) stays in the buffer for the caller to stream. */
                r.body = strdup("");
                if (!r.body)
                        return fail(500, -ENOMEM, ret_status);
                *ret = r;
                r = (HttpRequest) {};
                *ret_consumed = skipped + head_size;
                return 1;
        }

        if (r.chunked) {
                HttpChunked c = { .data_max = l.body_size_max };

                r.body = malloc(size - head_size + 1);
                if (!r.body)
                        return fail(500, -ENOMEM, ret_status);
                r_ = http_chunked_decode(&c, buf + head_size, size - head_size, r.body, &body_size, &consumed);
                if (r_ == -EFBIG)
                        return fail(413, -EFBIG, ret_status);
                if (r_ < 0)
                        return fail(400, -EBADMSG, ret_status);
                if (r_ == 0)
                        goto incomplete;
                r.body[body_size] = 0;
                r.body_size = body_size;
        } else {
                if (content_length > l.body_size_max)
                        return fail(413, -EFBIG, ret_status);
                body_size = consumed = (size_t) content_length;
                if (size - head_size < body_size)
                        goto incomplete;
                r.body = malloc(body_size + 1);
                if (!r.body)
                        return fail(500, -ENOMEM, ret_status);
                memcpy(r.body, buf + head_size, body_size);
                r.body[body_size] = 0;
                r.body_size = body_size;
        }

        *ret = r;
        r = (HttpRequest) {};
        *ret_consumed = skipped + head_size + consumed;
        return 1;

incomplete:
        if (ret_info) {
                v = http_request_header(&r, "Expect");
                ret_info->headers_complete = true;
                ret_info->head_size = skipped + head_size;
                ret_info->expect_continue = r.version_minor == 1 && v && strcasecmp(v, "100-continue") == 0;
        }
        return 0;
}

const char *http_status_reason(int status) {
        switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 201: return "Created";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default:  return "Unknown";
        }
}

int http_response_format(int status, const char *content_type, const void *body, size_t body_size,
                         bool keep_alive, char **ret, size_t *ret_size) {
        _cleanup_free_ char *head = NULL;
        char *buf;
        int n;

        if (!body)
                body_size = 0;
        n = asprintf(&head,
                     "HTTP/1.1 %d %s\r\n"
                     "%s%s%s"
                     "Content-Length: %zu\r\n"
                     "Connection: %s\r\n"
                     "\r\n",
                     status, http_status_reason(status),
                     body && content_type ? "Content-Type: " : "",
                     body && content_type ? content_type : "",
                     body && content_type ? "\r\n" : "",
                     body_size,
                     keep_alive ? "keep-alive" : "close");
        if (n < 0)
                return -ENOMEM;
        buf = malloc((size_t) n + body_size + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, head, (size_t) n);
        if (body_size > 0)
                memcpy(buf + n, body, body_size);
        buf[(size_t) n + body_size] = 0;
        *ret = buf;
        *ret_size = (size_t) n + body_size;
        return 0;
}

/* "HTTP/1.x SSS[ reason]": the version (1.0 or 1.1: -EPROTONOSUPPORT for another 1.x, as a request's
 * 505), a status 100-599, a reason of field text. */
static int parse_status_line(const char *line, size_t n, HttpResponseHead *h) {
        if (n < 12 || strncmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' || line[8] != ' ' ||
            line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9' || line[11] < '0' || line[11] > '9')
                return -EBADMSG;
        if (n > 12 && (line[12] != ' ' || !value_is_valid(line + 13, n - 13)))
                return -EBADMSG;
        if (line[7] > '1')
                return -EPROTONOSUPPORT;
        h->version_minor = (unsigned) (line[7] - '0');
        h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
        return 0;
}

static bool field_name_is(const char *line, size_t name_len, const char *name) {
        return strlen(name) == name_len && strncasecmp(line, name, name_len) == 0;
}

/* Whether the last element of a comma-separated list (a Transfer-Encoding) is token. */
static bool token_list_ends_with(const char *v, size_t n, const char *token) {
        size_t l = strlen(token);
        const char *comma = memrchr(v, ',', n), *last = comma ? comma + 1 : v;

        while (last < v + n && (*last == ' ' || *last == '\t'))
                last++;
        return (size_t) (v + n - last) == l && strncasecmp(last, token, l) == 0;
}

int http_response_head_parse(const char *buf, size_t size, size_t head_max, HttpResponseHead *ret) {
        const char *end = memmem_crlfcrlf(buf, MIN(size, head_max)), *p, *line_end;
        HttpResponseHead h = {};
        bool seen_close = false, seen_keep_alive = false;
        int q;

        if (!end)
                return size >= head_max ? -E2BIG : 0;
        h.head_size = (size_t) (end - buf) + 4;
        if (!head_lines_are_valid(buf, h.head_size))
                return -EBADMSG;
        line_end = http_find_crlf(buf, h.head_size);
        q = parse_status_line(buf, (size_t) (line_end - buf), &h);
        if (q < 0)
                return q;
        for (p = line_end + 2; p < end + 2; p = line_end + 2) {
                const char *v;
                size_t name_len, vl;

                line_end = http_find_crlf(p, (size_t) (end + 2 - p));
                if (field_line_split(p, (size_t) (line_end - p), &name_len, &v, &vl) < 0)
                        return -EBADMSG;
                if (field_name_is(p, name_len, "Transfer-Encoding")) {
                        /* RFC 9112 6.1: the codings of all the fields in order; the body is chunked
                         * when the last is */
                        if (vl == 0)
                                return -EBADMSG;
                        h.transfer_encoding = true;
                        h.chunked = token_list_ends_with(v, vl, "chunked");
                } else if (field_name_is(p, name_len, "Content-Length")) {
                        uint64_t n = 0;

                        if (h.has_length || vl == 0)
                                return -EBADMSG;
                        for (size_t i = 0; i < vl; i++) {
                                if (v[i] < '0' || v[i] > '9' || n > (UINT64_MAX - 9) / 10)
                                        return -EBADMSG;
                                n = n * 10 + (uint64_t) (v[i] - '0');
                        }
                        h.has_length = true;
                        h.length = n;
                } else if (field_name_is(p, name_len, "Content-Type"))
                        h.stream_type = (vl >= 33 && strncasecmp(v, "application/vnd.docker.raw-stream", 33) == 0) ||
                                (vl >= 41 && strncasecmp(v, "application/vnd.docker.multiplexed-stream", 41) == 0);
                else if (field_name_is(p, name_len, "Connection")) {
                        seen_close = seen_close || token_list_contains(v, vl, "close");
                        seen_keep_alive = seen_keep_alive || token_list_contains(v, vl, "keep-alive");
                }
        }
        /* HTTP/1.0 closes unless it says "keep-alive"; 1.1 keeps unless it says "close" */
        h.close = seen_close || (h.version_minor == 0 && !seen_keep_alive);
        *ret = h;
        return 1;
}

/* Asked for every header a proxy passes on: names of another length are not compared (a strcasecmp() each,
 * twelve names against each header, was 1,300 instructions a proxied request). */
bool http_request_header_is_hop_by_hop(const HttpRequest *r, const char *name, const char * const *extra) {
#define HOP(s) { s, sizeof(s) - 1 }
        static const struct {
                const char *name;
                size_t len;
        } hop[] = {
                HOP("Connection"), HOP("Proxy-Connection"), HOP("Keep-Alive"), HOP("TE"), HOP("Trailer"),
                HOP("Transfer-Encoding"), HOP("Upgrade"), HOP("Proxy-Authorization"), HOP("Proxy-Authenticate"),
        };
#undef HOP
        size_t n = strlen(name);

        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (hop[i].len == n && strcasecmp(name, hop[i].name) == 0)
                        return true;
        for (size_t i = 0; extra && extra[i]; i++)
                if (strcasecmp(name, extra[i]) == 0)
                        return true;
        /* every Connection header counts: a second one must not smuggle a header past the first */
        for (size_t i = 0; i < r->n_headers; i++)
                if (strlen(r->headers[i].name) == sizeof("Connection") - 1 && strcasecmp(r->headers[i].name, "Connection") == 0 &&
                    http_token_list_contains(r->headers[i].value, name))
                        return true;
        return false;
}
