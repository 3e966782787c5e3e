/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <strings.h>

#include "egress-rewrite.h"

/* RFC 9110 7.6.1 and the proxy's own headers: never forwarded. */
static bool header_is_hop_by_hop(const char *name) {
        static const char * const hop[] = {
                "Host", "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate",
                "TE", "Trailer", "Upgrade", "Transfer-Encoding",
        };
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(hop[i], name) == 0)
                        return true;
        return false;
}

/* Whether the Connection header lists name (those headers are hop-by-hop as well). */
static bool header_named_by_connection(const HttpRequest *r, const char *name) {
        size_t n = strlen(name);

        for (size_t i = 0; i < r->n_headers; i++) {
                const char *v = r->headers[i].value;
                if (strcasecmp(r->headers[i].name, "Connection") != 0)
                        continue;
                for (const char *p = v; *p;) {
                        size_t len, l;
                        p += strspn(p, " \t,");
                        len = strcspn(p, ",");
                        l = len;
                        while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
                                l--;
                        if (l == n && strncasecmp(p, name, n) == 0)
                                return true;
                        p += len;
                }
        }
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

        if (api && strcasecmp(h->name, "x-api-key") == 0) {
                if (!streq(h->value, api->dummy))
                        return fail("unknown-dummy", -EACCES, ret_reason);
                if (isempty(api->api_key))
                        return fail("no-credential", -EACCES, ret_reason);
                *ret = strdup(api->api_key);
                return *ret ? 0 : -ENOMEM;
        }
        if (api && strcasecmp(h->name, "Authorization") == 0) {
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
        if (!api && strstr(h->value, EGRESS_DUMMY_KEY_BUILTIN))
                return fail("dummy-unbound", -EACCES, ret_reason);
        for (size_t i = 0; i < p->n_rules; i++)
                if (p->rules[i].decision == EGRESS_CREDENTIAL && strstr(h->value, p->rules[i].credential.dummy))
                        return fail("dummy-unbound", -EACCES, ret_reason);
        return 0;
}

int egress_upstream_head(const HttpRequest *r, const EgressPolicy *p, const EgressRule *rule, const EgressApiAuth *api,
                         const char *host_header, char **ret_head, size_t *ret_size, const char **ret_reason) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int q = 0;

        *ret_reason = NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s %s%s%s HTTP/1.1\r\nHost: %s\r\n", r->method, r->path, r->query ? "?" : "", strempty(r->query),
                host_header);
        for (size_t i = 0; i < r->n_headers; i++) {
                const HttpHeader *h = &r->headers[i];
                _cleanup_free_ char *v = NULL;

                if (header_is_hop_by_hop(h->name) || header_named_by_connection(r, h->name))
                        continue;
                q = header_value(h, p, rule, api, &v, ret_reason);
                if (q < 0)
                        break;
                fprintf(f, "%s: %s\r\n", h->name, v ?: h->value);
                if (v)
                        explicit_bzero(v, strlen(v));
        }
        if (q >= 0)
                fputs("Connection: close\r\n\r\n", f);
        if (fclose(f) != 0 && q >= 0)
                q = -ENOMEM;
        if (q < 0) {
                if (buf)
                        explicit_bzero(buf, size);
                return q;
        }
        if (size > EGRESS_UPSTREAM_HEAD_MAX) {
                explicit_bzero(buf, size);
                return fail("head-too-large", -E2BIG, ret_reason);
        }
        *ret_head = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}
