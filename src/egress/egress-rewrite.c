/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <strings.h>

#include "egress-rewrite.h"
#include "http-server.h"
#include "secret-buffer.h"
#include "string-util.h"

/* Besides RFC 9110 7.6.1's and the proxy's own: the headers the gateway writes itself, and Expect (it
 * answers 100-continue itself). */
static const char * const gateway_own_headers[] = { "Host", "Expect", NULL };

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
                *ret = str_replace_all(h->value, rule->credential.dummy, rule->credential.secret);
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
        SecretBuffer b = {};
        /* the answer is scrubbed of the secret: it must come without a content coding */
        bool injects = (rule && rule->decision == EGRESS_CREDENTIAL) || (api && api->pass_through);
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

        if ((q = secret_buffer_append_str(&b, r->method)) < 0 || (q = secret_buffer_append(&b, " ", 1)) < 0 ||
            (q = secret_buffer_append_str(&b, r->path)) < 0 ||
            (r->query && ((q = secret_buffer_append(&b, "?", 1)) < 0 || (q = secret_buffer_append_str(&b, r->query)) < 0)) ||
            (q = secret_buffer_append_str(&b, " HTTP/1.1\r\nHost: ")) < 0 || (q = secret_buffer_append_str(&b, host_header)) < 0 ||
            (q = secret_buffer_append(&b, "\r\n", 2)) < 0)
                goto fail;
        for (size_t i = 0; i < r->n_headers; i++) {
                const HttpHeader *h = &r->headers[i];
                _cleanup_free_ char *v = NULL;

                if (http_request_header_is_hop_by_hop(r, h->name, gateway_own_headers) ||
                    (injects && strcasecmp(h->name, "Accept-Encoding") == 0))
                        continue;
                q = header_value(h, p, rule, api, &v, ret_reason);
                if (q < 0)
                        goto fail;
                q = secret_buffer_append_str(&b, h->name);
                if (q >= 0)
                        q = secret_buffer_append(&b, ": ", 2);
                if (q >= 0)
                        q = secret_buffer_append_str(&b, v ?: h->value);
                if (q >= 0)
                        q = secret_buffer_append(&b, "\r\n", 2);
                if (v)
                        explicit_bzero(v, strlen(v));
                if (q < 0)
                        goto fail;
        }
        /* The body goes on re-chunked by the gateway, never as the client framed it. No "Connection:
         * close": the upstream connection is kept for the next request (the gateway frames every
         * message itself, so nothing of the client's reaches an upstream connection unchecked). */
        q = injects ? secret_buffer_append_str(&b, "Accept-Encoding: identity\r\n") : 0;
        if (q >= 0)
                q = secret_buffer_append_str(&b, r->chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "\r\n");
        if (q >= 0)
                q = secret_buffer_append(&b, "", 1);     /* NUL-terminated, not counted */
        if (q < 0)
                goto fail;
        b.size--;
        if (b.size > EGRESS_UPSTREAM_HEAD_MAX) {
                secret_buffer_wipe(&b);
                return fail("head-too-large", -E2BIG, ret_reason);
        }
        *ret_head = TAKE_PTR(b.data);
        *ret_size = b.size;
        return 0;
fail:
        secret_buffer_wipe(&b);
        return q;
}

int egress_response_framing(const char *buf, size_t size, const char *request_method, EgressResponseFraming *ret) {
        HttpResponseHead h;
        EgressResponseFraming f = {};
        int q;

        q = http_response_head_parse(buf, size, EGRESS_RESPONSE_HEAD_MAX, &h);
        if (q == -EPROTONOSUPPORT)
                q = -EBADMSG;
        if (q <= 0)
                return q;
        f.head_size = h.head_size;
        f.status = h.status;

        if (h.status >= 100 && h.status < 200 && h.status != 101) {
                f.interim = true;
                f.reusable = true;
        } else if (h.status == 101) {
                /* another protocol from here on (the gateway forwards no Upgrade, so this is the
                 * server's doing): bytes until it closes */
                f.until_close = true;
        } else if (streq(request_method, "HEAD") || h.status == 204 || h.status == 304) {
                f.reusable = !h.close;
        } else if (h.transfer_encoding) {
                /* RFC 9112 6.3: Transfer-Encoding wins over Content-Length; a final coding other than
                 * chunked (or both headers, a smuggling shape) means the body ends at the close */
                f.chunked = h.chunked;
                f.until_close = !h.chunked;
                f.reusable = h.chunked && !h.has_length && !h.close;
                f.ambiguous = h.has_length;
        } else if (h.has_length) {
                f.length = h.length;
                f.reusable = !h.close;
        } else
                f.until_close = true;
        *ret = f;
        return 1;
}

bool egress_response_is_encoded(const char *head, size_t size) {
        const char *end = head + size, *line = http_find_crlf(head, size);

        /* the lines after the status line; the head ends with an empty one */
        for (const char *p = line ? line + 2 : end; p < end;) {
                const char *eol = http_find_crlf(p, (size_t) (end - p)), *v;
                size_t n;

                if (!eol || eol == p)
                        break;
                n = (size_t) (eol - p);
                if (n >= 17 && strncasecmp(p, "Content-Encoding:", 17) == 0) {
                        v = p + 17;
                        while (v < eol && (*v == ' ' || *v == '\t'))
                                v++;
                        while (eol > v && (eol[-1] == ' ' || eol[-1] == '\t'))
                                eol--;
                        if (eol > v && !((size_t) (eol - v) == 8 && strncasecmp(v, "identity", 8) == 0))
                                return true;
                }
                p += n + 2;
        }
        return false;
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

const char *egress_credential_refusal_text(const char *reason) {
        if (streq_ptr(reason, "no-credential"))
                return "loop holds no credential for the model API of this channel: its operator sets "
                       "anthropic_api_key or claude_code_oauth_token (a systemd credential under systemd)";
        if (streq_ptr(reason, "unknown-dummy"))
                return "the credential is not the one this container was given";
        if (streq_ptr(reason, "dummy-unbound"))
                return "a credential this container was given may not be sent to this host";
        return "the request carries a credential it may not send";
}
