/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <strings.h>

#include "egress-rewrite.h"
#include "http-server.h"

/* RFC 9110 7.6.1 and the proxy's own headers: never forwarded. */
static bool header_is_hop_by_hop(const char *name) {
        static const char * const hop[] = {
                "Host", "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate",
                "TE", "Trailer", "Upgrade", "Transfer-Encoding",
                "Expect",       /* the gateway answers 100-continue itself */
        };
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(hop[i], name) == 0)
                        return true;
        return false;
}

/* value with every occurrence of what replaced by with. */
static char *replace_all(const char *value, const char *what, const char *with) {
        size_t wl = strlen(what), rl = strlen(with), n = 0;
        char *out, *o;

        for (const char *p = value; (p = strstr(p, what)); p += wl)
                n++;
        out = malloc(strlen(value) + n * rl + 1);
        if (!out)
                return NULL;
        o = out;
        for (const char *p = value;;) {
                const char *f = strstr(p, what);
                if (!f) {
                        strcpy(o, p);
                        break;
                }
                memcpy(o, p, (size_t) (f - p));
                o += f - p;
                memcpy(o, with, rl);
                o += rl;
                p = f + wl;
        }
        return out;
}

static int fail(const char *reason, int error, const char **ret_reason) {
        *ret_reason = reason;
        return error;
}

/* The value the upstream gets for one header, or an error. *ret is NULL when the value is unchanged. */
static int header_value(const HttpHeader *h, const EgressPolicy *p, const EgressRule *rule, const EgressApiAuth *api,
                        char **ret, const char **ret_reason) {
        *ret = NULL;

        if (api && api->pass_through && strcasecmp(h->name, "x-api-key") == 0) {
                if (!streq(h->value, api->dummy))
                        return fail("unknown-dummy", -EACCES, ret_reason);
                if (isempty(api->api_key))
                        return fail("no-credential", -EACCES, ret_reason);
                *ret = strdup(api->api_key);
                return *ret ? 0 : -ENOMEM;
        }
        if (api && api->pass_through && strcasecmp(h->name, "Authorization") == 0) {
                const char *t = startswith(h->value, "Bearer ");
                if (!t || !streq(t, api->dummy))
                        return fail("unknown-dummy", -EACCES, ret_reason);
                if (isempty(api->oauth_token))
                        return fail("no-credential", -EACCES, ret_reason);
                if (asprintf(ret, "Bearer %s", api->oauth_token) < 0)
                        return -ENOMEM;
                return 0;
        }

        /* The credential header of the host's credential rule: the dummy, and nothing else, is swapped. */
        if (rule && rule->decision == EGRESS_CREDENTIAL && strcasecmp(h->name, rule->credential.header) == 0) {
                if (!strstr(h->value, rule->credential.dummy))
                        return fail("unknown-dummy", -EACCES, ret_reason);
                *ret = replace_all(h->value, rule->credential.dummy, rule->credential.secret);
                return *ret ? 0 : -ENOMEM;
        }

        /* Any dummy we know, anywhere else, goes nowhere. */
        if (api && !api->pass_through && !isempty(api->dummy) && strstr(h->value, api->dummy))
                return fail("dummy-unbound", -EACCES, ret_reason);
        for (size_t i = 0; i < p->n_rules; i++)
                if (p->rules[i].decision == EGRESS_CREDENTIAL && strstr(h->value, p->rules[i].credential.dummy))
                        return fail("dummy-unbound", -EACCES, ret_reason);
        return 0;
}

/* A head being built: grown by copying, so that no stale copy of a secret stays behind in freed memory. */
typedef struct HeadBuffer {
        char *data;
        size_t size, allocated;
} HeadBuffer;

static int head_append(HeadBuffer *b, const char *s, size_t n) {
        if (b->size + n > b->allocated) {
                size_t want = MAX(b->allocated * 2, b->size + n);
                char *d = malloc(want);
                if (!d)
                        return -ENOMEM;
                if (b->data) {
                        memcpy(d, b->data, b->size);
                        explicit_bzero(b->data, b->size);
                        free(b->data);
                }
                b->data = d;
                b->allocated = want;
        }
        memcpy(b->data + b->size, s, n);
        b->size += n;
        return 0;
}

static int head_append_str(HeadBuffer *b, const char *s) {
        return head_append(b, s, strlen(s));
}

static void head_buffer_wipe(HeadBuffer *b) {
        if (b->data) {
                explicit_bzero(b->data, b->size);
                free(b->data);
        }
        *b = (HeadBuffer) {};
}

/* Whether s holds a real secret the gateway knows: the agent never had one, so one coming from it was
 * echoed back to it by some server, and goes nowhere. */
static bool holds_secret(const char *s, const EgressPolicy *p, const EgressApiAuth *api) {
        if (isempty(s))
                return false;
        if (api && ((!isempty(api->api_key) && strstr(s, api->api_key)) ||
                    (!isempty(api->oauth_token) && strstr(s, api->oauth_token))))
                return true;
        for (size_t i = 0; i < p->n_rules; i++)
                if (p->rules[i].decision == EGRESS_CREDENTIAL && strstr(s, p->rules[i].credential.secret))
                        return true;
        return false;
}

int egress_upstream_head(const HttpRequest *r, const EgressPolicy *p, const EgressRule *rule, const EgressApiAuth *api,
                         const char *host_header, char **ret_head, size_t *ret_size, const char **ret_reason) {
        HeadBuffer b = {};
        size_t estimate = 64 + strlen(r->method) + strlen(r->path) + strlen(strempty(r->query)) + strlen(host_header);
        int q;

        *ret_reason = NULL;
        if (holds_secret(r->path, p, api) || holds_secret(r->query, p, api))
                return fail("secret-in-request", -EACCES, ret_reason);
        for (size_t i = 0; i < r->n_headers; i++)
                if (holds_secret(r->headers[i].value, p, api))
                        return fail("secret-in-request", -EACCES, ret_reason);
        /* One allocation for the usual head: the request's own, plus room for a longer secret. */
        for (size_t i = 0; i < r->n_headers; i++)
                estimate += strlen(r->headers[i].name) + strlen(r->headers[i].value) + 4;
        b.data = malloc(estimate + 256);
        if (!b.data)
                return -ENOMEM;
        b.allocated = estimate + 256;

        if ((q = head_append_str(&b, r->method)) < 0 || (q = head_append(&b, " ", 1)) < 0 ||
            (q = head_append_str(&b, r->path)) < 0 ||
            (r->query && ((q = head_append(&b, "?", 1)) < 0 || (q = head_append_str(&b, r->query)) < 0)) ||
            (q = head_append_str(&b, " HTTP/1.1\r\nHost: ")) < 0 || (q = head_append_str(&b, host_header)) < 0 ||
            (q = head_append(&b, "\r\n", 2)) < 0)
                goto fail;
        for (size_t i = 0; i < r->n_headers; i++) {
                const HttpHeader *h = &r->headers[i];
                _cleanup_free_ char *v = NULL;

                if (header_is_hop_by_hop(h->name) || http_request_connection_lists(r, h->name))
                        continue;
                q = header_value(h, p, rule, api, &v, ret_reason);
                if (q < 0)
                        goto fail;
                q = head_append_str(&b, h->name);
                if (q >= 0)
                        q = head_append(&b, ": ", 2);
                if (q >= 0)
                        q = head_append_str(&b, v ?: h->value);
                if (q >= 0)
                        q = head_append(&b, "\r\n", 2);
                if (v)
                        explicit_bzero(v, strlen(v));
                if (q < 0)
                        goto fail;
        }
        /* The body goes on re-chunked by the gateway, never as the client framed it. No "Connection:
         * close": the upstream connection is kept for the next request (the gateway frames every
         * message itself, so nothing of the client's reaches an upstream connection unchecked). */
        q = head_append_str(&b, r->chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "\r\n");
        if (q >= 0)
                q = head_append(&b, "", 1);     /* NUL-terminated, not counted */
        if (q < 0)
                goto fail;
        b.size--;
        if (b.size > EGRESS_UPSTREAM_HEAD_MAX) {
                head_buffer_wipe(&b);
                return fail("head-too-large", -E2BIG, ret_reason);
        }
        *ret_head = TAKE_PTR(b.data);
        *ret_size = b.size;
        return 0;
fail:
        head_buffer_wipe(&b);
        return q;
}

/* The "\r\n" ending the line at p, or NULL (memchr() is several times cheaper than memmem()). */
static const char *head_line_end(const char *p, const char *end) {
        while (p < end) {
                const char *cr = memchr(p, '\r', (size_t) (end - p));
                if (!cr || cr + 1 >= end)
                        return NULL;
                if (cr[1] == '\n')
                        return cr;
                p = cr + 1;
        }
        return NULL;
}

/* The value of header name in a response head (the first), without surrounding whitespace, into buf. */
static bool response_header(const char *head, size_t head_size, const char *name, char *buf, size_t size) {
        size_t n = strlen(name);
        const char *end = head + head_size, *p = head_line_end(head, end);

        for (; p && p + 2 < end; p = head_line_end(p + 2, end)) {
                const char *line = p + 2, *line_end = head_line_end(line, end), *v;
                size_t vl;

                if (!line_end || line_end == line)
                        break;
                if ((size_t) (line_end - line) <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
                        continue;
                for (v = line + n + 1; v < line_end && (*v == ' ' || *v == '\t'); v++)
                        ;
                vl = (size_t) (line_end - v);
                while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                        vl--;
                if (vl >= size)
                        vl = size - 1;
                memcpy(buf, v, vl);
                buf[vl] = 0;
                return true;
        }
        return false;
}

int egress_response_framing(const char *buf, size_t size, const char *request_method, EgressResponseFraming *ret) {
        HttpResponseHead h;
        EgressResponseFraming f = {};
        char value[256];
        bool te = false, te_chunked = false, close;
        int q;

        q = http_response_head_parse(buf, size, EGRESS_RESPONSE_HEAD_MAX, &h);
        if (q <= 0)
                return q;
        f.head_size = h.head_size;
        f.status = h.status;
        /* HTTP/1.0 closes unless it says "keep-alive"; 1.1 keeps unless it says "close" */
        if (response_header(buf, h.head_size, "Connection", value, sizeof value))
                close = http_token_list_contains(value, "close") ||
                        (buf[7] == '0' && !http_token_list_contains(value, "keep-alive"));
        else
                close = buf[7] == '0';
        if (response_header(buf, h.head_size, "Transfer-Encoding", value, sizeof value)) {
                const char *last = strrchr(value, ',');
                last = last ? last + 1 : value;
                last += strspn(last, " \t");
                te = true;
                te_chunked = strcasecmp(last, "chunked") == 0;
        }

        if (h.status >= 100 && h.status < 200 && h.status != 101) {
                f.interim = true;
                f.reusable = true;
        } else if (h.status == 101) {
                /* another protocol from here on (the gateway forwards no Upgrade, so this is the
                 * server's doing): bytes until it closes */
                f.until_close = true;
        } else if (streq(request_method, "HEAD") || h.status == 204 || h.status == 304) {
                f.reusable = !close;
        } else if (te) {
                /* RFC 9112 6.3: Transfer-Encoding wins over Content-Length; a final coding other than
                 * chunked (or both headers, a smuggling shape) means the body ends at the close */
                f.chunked = te_chunked;
                f.until_close = !te_chunked;
                f.reusable = te_chunked && !h.has_length && !close;
                f.ambiguous = h.has_length;
        } else if (h.has_length) {
                f.length = h.length;
                f.reusable = !close;
        } else
                f.until_close = true;
        *ret = f;
        return 1;
}

int egress_scrub_add(EgressScrub *s, const char *secret, const char *dummy) {
        size_t l = secret ? strlen(secret) : 0;

        if (l == 0 || l > EGRESS_SCRUB_HOLD_MAX || !dummy)
                return -EINVAL;
        if (s->n >= EGRESS_SCRUB_PAIRS_MAX)
                return -E2BIG;
        s->secret[s->n] = secret;
        s->dummy[s->n++] = dummy;
        return 0;
}

void egress_scrub_reset(EgressScrub *s) {
        explicit_bzero(s->hold, s->held);
        s->held = 0;
        s->n = 0;
}

int egress_scrub(EgressScrub *s, const char *in, size_t n, bool final, size_t room_before, size_t room_after,
                 char **ret, size_t *ret_size) {
        _cleanup_free_ char *all = NULL;
        size_t total = s->held + n, grow = 0, o, i = 0, hold_from = SIZE_MAX;
        char *out;

        /* the output grows by at most (dummy - secret) bytes per occurrence */
        for (size_t k = 0; k < s->n; k++) {
                size_t sl = strlen(s->secret[k]), dl = strlen(s->dummy[k]);
                if (dl > sl)
                        grow = MAX(grow, (dl - sl) * (total / sl + 1));
        }
        all = malloc(total + 1);
        out = malloc(room_before + total + grow + room_after + 1);
        if (!all || !out) {
                free(out);
                return -ENOMEM;
        }
        memcpy(all, s->hold, s->held);
        memcpy(all + s->held, in, n);
        explicit_bzero(s->hold, s->held);
        s->held = 0;

        o = room_before;
        while (i < total) {
                bool done = false;
                for (size_t k = 0; k < s->n && !done; k++) {
                        size_t sl = strlen(s->secret[k]);
                        if (all[i] != s->secret[k][0])
                                continue;
                        if (i + sl <= total && memcmp(all + i, s->secret[k], sl) == 0) {
                                size_t dl = strlen(s->dummy[k]);
                                memcpy(out + o, s->dummy[k], dl);
                                o += dl;
                                i += sl;
                                done = true;
                        } else if (!final && i + sl > total && memcmp(all + i, s->secret[k], total - i) == 0) {
                                hold_from = i;  /* the rest may start a secret: wait for more */
                                break;
                        }
                }
                if (hold_from != SIZE_MAX)
                        break;
                if (!done)
                        out[o++] = all[i++];
        }
        if (hold_from != SIZE_MAX) {
                s->held = total - hold_from;
                memcpy(s->hold, all + hold_from, s->held);
        }
        explicit_bzero(all, total);
        *ret = out;
        *ret_size = o - room_before;
        return 0;
}
