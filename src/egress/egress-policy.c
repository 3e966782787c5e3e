/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <assert.h>
#include <stdarg.h>
#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#include "egress-policy.h"
#include "string-util.h"
#include "strv.h"
#include "regex-util.h"

static const char * const egress_decision_table[_EGRESS_DECISION_MAX] = {
        [EGRESS_ALLOW] = "allow",
        [EGRESS_DENY] = "deny",
        [EGRESS_CREDENTIAL] = "credential",
};

const char *egress_decision_to_string(EgressDecision d) {
        if (d < 0 || d >= _EGRESS_DECISION_MAX)
                return NULL;
        return egress_decision_table[d];
}

EgressDecision egress_decision_from_string(const char *s) {
        return (EgressDecision) string_table_lookup(egress_decision_table, _EGRESS_DECISION_MAX, s);
}

static void egress_rule_done(EgressRule *r) {
        free(r->host);
        free(r->ports);
        strv_free(r->methods);
        for (size_t i = 0; i < r->n_paths; i++)
                regfree(&r->paths[i]);
        free(r->paths);
        free(r->credential.header);
        free(r->credential.dummy);
        if (r->credential.secret) {
                explicit_bzero(r->credential.secret, strlen(r->credential.secret));
                free(r->credential.secret);
        }
        *r = (EgressRule) {};
}

EgressPolicy *egress_policy_free(EgressPolicy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_rules; i++)
                egress_rule_done(&p->rules[i]);
        free(p->rules);
        return mfree(p);
}

/* A dotted quad of decimal numbers 0..255 without leading zeros, and nothing else. */
static bool ipv4_is_strict_quad(const char *s) {
        unsigned labels = 0;

        for (const char *p = s;; p++) {
                size_t n = strspn(p, "0123456789");
                if (n == 0 || n > 3 || (n > 1 && p[0] == '0') || strtoul(p, NULL, 10) > 255)
                        return false;
                labels++;
                p += n;
                if (*p == 0)
                        break;
                if (*p != '.')
                        return false;
        }
        return labels == 4;
}

/* Whether inet_aton() (or a browser) would take the name for an IPv4 address: its last label is a
 * number, decimal or 0x hex. */
static bool host_looks_numeric(const char *s) {
        const char *last = strrchr(s, '.');

        last = last ? last + 1 : s;
        if (startswith(last, "0x"))
                return true;
        return *last && strspn(last, "0123456789") == strlen(last);
}

int egress_host_normalize(const char *host, char **ret) {
        _cleanup_free_ char *h = NULL;
        struct in6_addr a6;
        size_t n;

        if (!host)
                return -EINVAL;
        n = strlen(host);
        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
                h = strndup(host + 1, n - 2);
                n -= 2;
        } else
                h = strdup(host);
        if (!h)
                return -ENOMEM;
        if (n == 0 || n > EGRESS_HOST_MAX + 1)
                return -EINVAL;
        for (char *c = h; *c; c++) {
                if ((unsigned char) *c >= 0x80)
                        return -EINVAL;         /* a U-label: only A-labels (xn--) are names here */
                *c = (char) tolower((unsigned char) *c);
        }
        if (n > 1 && h[n - 1] == '.')
                h[--n] = 0;

        if (strchr(h, ':')) {
                char buf[INET6_ADDRSTRLEN];
                if (inet_pton(AF_INET6, h, &a6) != 1)
                        return -EINVAL;
                if (IN6_IS_ADDR_V4MAPPED(&a6)) {
                        if (!inet_ntop(AF_INET, &a6.s6_addr[12], buf, sizeof buf))
                                return -EINVAL;
                } else if (!inet_ntop(AF_INET6, &a6, buf, sizeof buf))
                        return -EINVAL;
                *ret = strdup(buf);
                return *ret ? 0 : -ENOMEM;
        }
        if (host_looks_numeric(h) && !ipv4_is_strict_quad(h))
                return -EINVAL;
        if (!egress_host_is_valid(h))
                return -EINVAL;
        for (const char *l = h; *l;) {
                size_t k = strcspn(l, ".");
                if (k > 63)
                        return -EINVAL;
                l += k + (l[k] == '.');
        }
        *ret = TAKE_PTR(h);
        return 0;
}

static bool char_is_unreserved(char c) {
        return isalnum((unsigned char) c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 3986 3.3: a path segment's characters (pchar) besides the escape; anything else ("\\", which
 * WHATWG URL parsers read as "/", "\"", "<", "{", "|", "^", a blank...) is no path a server agrees on. */
static bool char_is_pchar(char c) {
        return char_is_unreserved(c) || (c && strchr("!$&'()*+,;=:@", c));
}

/* "." or "..", or either with parameters (".;x", "..;x": Tomcat and Jetty read the segment as the
 * dot-segment): seg[0..len) as the path had it. */
static bool segment_is_dot(const char *seg, size_t len) {
        const char *semi = memchr(seg, ';', len);
        size_t name = semi ? (size_t) (semi - seg) : len;

        return (name == 1 && seg[0] == '.') || (name == 2 && seg[0] == '.' && seg[1] == '.');
}

int egress_path_normalize(const char *path, char **ret) {
        _cleanup_free_ char *d = NULL, *out = NULL;
        size_t n, o = 0, seg_start = 0;
        bool seg_encoded = false;

        if (!path)
                return -EINVAL;
        if (streq(path, "*")) {
                *ret = strdup(path);
                return *ret ? 0 : -ENOMEM;
        }
        n = strlen(path);
        if (path[0] != '/' || n > EGRESS_PATH_MAX)
                return -EINVAL;
        d = malloc(n + 1);
        out = malloc(n + 2);
        if (!d || !out)
                return -ENOMEM;

        /* 1: escapes of unreserved characters decoded, the others in upper case; a segment that becomes
         * "." or ".." by decoding is refused, as is an encoded separator. */
        for (size_t i = 0; i < n; i++) {
                char c = path[i];
                if (c == '/') {
                        const char *seg = d + seg_start;
                        size_t len = o - seg_start;
                        if ((seg_encoded || memchr(seg, ';', len)) && segment_is_dot(seg, len))
                                return -EINVAL;
                        d[o++] = c;
                        seg_start = o;
                        seg_encoded = false;
                        continue;
                }
                if (c == '%') {
                        int hi, lo;
                        if (i + 2 >= n)
                                return -EINVAL;
                        hi = unhexchar(path[i + 1]);
                        lo = unhexchar(path[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EINVAL;
                        c = (char) (hi << 4 | lo);
                        i += 2;
                        if (c == 0 || c == '/' || c == '\\')
                                return -EINVAL;
                        if (char_is_unreserved(c)) {
                                d[o++] = c;
                                seg_encoded = true;
                        } else {
                                static const char hex[] = "0123456789ABCDEF";
                                /* an escape is as long as its source: d never outgrows path */
                                d[o++] = '%';
                                d[o++] = hex[(unsigned char) c >> 4];
                                d[o++] = hex[(unsigned char) c & 15];
                        }
                        continue;
                }
                if (!char_is_pchar(c))
                        return -EINVAL;
                d[o++] = c;
        }
        {
                const char *seg = d + seg_start;
                size_t len = o - seg_start;
                if ((seg_encoded || memchr(seg, ';', len)) && segment_is_dot(seg, len))
                        return -EINVAL;
        }
        d[o] = 0;

        /* 2: RFC 3986 5.2.4, on an absolute path: the output keeps its leading "/". */
        n = 0;
        for (const char *in = d; *in;) {
                if (startswith(in, "/./")) {
                        in += 2;
                } else if (streq(in, "/.")) {
                        in = "/";
                } else if (startswith(in, "/../") || streq(in, "/..")) {
                        while (n > 0 && out[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--;            /* the "/" before the removed segment */
                        in = in[3] ? in + 3 : "/";
                } else {
                        size_t k = 1 + strcspn(in + 1, "/");
                        memcpy(out + n, in, k);
                        n += k;
                        in += k;
                }
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

bool egress_host_is_valid(const char *host) {
        struct in6_addr a6;
        size_t n;

        if (isempty(host))
                return false;
        n = strlen(host);
        if (n > EGRESS_HOST_MAX)
                return false;
        if (strchr(host, ':'))
                return inet_pton(AF_INET6, host, &a6) == 1;
        for (const char *c = host; *c; c++)
                if (!(isalnum((unsigned char) *c) || *c == '-' || *c == '.' || *c == '_'))
                        return false;
        /* no empty labels: ".", "a..b", ".a", "a." */
        if (host[0] == '.' || host[n - 1] == '.' || strstr(host, ".."))
                return false;
        return true;
}

/* "*", "*.suffix" or a name. */
bool egress_host_pattern_is_valid(const char *pattern) {
        if (streq(pattern, "*"))
                return true;
        if (startswith(pattern, "*."))
                return egress_host_is_valid(pattern + 2) && !strchr(pattern + 2, '*');
        return egress_host_is_valid(pattern);
}

bool egress_host_match(const char *pattern, const char *host) {
        const char *suffix;
        size_t hn, sn;

        if (streq(pattern, "*"))
                return true;
        suffix = startswith(pattern, "*.");
        if (!suffix)
                return streq(pattern, host);
        /* "*.example.com" matches "a.example.com" and "a.b.example.com", never "example.com" or
         * "badexample.com". */
        hn = strlen(host);
        sn = strlen(suffix);
        return hn > sn + 1 && host[hn - sn - 1] == '.' && streq(host + hn - sn, suffix);
}

_printf_(2, 3)
static int compile_error(char **ret_error, const char *format, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, format);
                if (strprintf_va(ret_error, format, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

static const char *json_string_of(json_object *o, const char *key) {
        json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int egress_host_pattern_normalize(const char *pattern, char **ret) {
        _cleanup_free_ char *h = NULL;
        const char *suffix;
        int r;

        if (streq(pattern, "*")) {
                *ret = strdup("*");
                return *ret ? 0 : -ENOMEM;
        }
        suffix = startswith(pattern, "*.");
        r = egress_host_normalize(suffix ?: pattern, &h);
        if (r < 0)
                return r;
        if (!suffix) {
                *ret = TAKE_PTR(h);
                return 0;
        }
        if (strchr(h, ':') || ipv4_is_strict_quad(h))
                return -EINVAL;         /* "*.1.2.3.4" names nothing */
        return asprintf(ret, "*.%s", h) < 0 ? -ENOMEM : 0;
}

static int rule_set_host(EgressRule *r, const char *host, const char *where, char **ret_error) {
        _cleanup_free_ char *h = NULL;
        int q;

        if (isempty(host))
                return compile_error(ret_error, "%s: host is missing", where);
        q = egress_host_pattern_normalize(host, &h);
        if (q == -ENOMEM)
                return q;
        if (q < 0 || !egress_host_pattern_is_valid(h))
                return compile_error(ret_error, "%s: host \"%s\" is not a name, an IP address (a dotted quad, or IPv6), *.suffix or *",
                                     where, host);
        r->host = TAKE_PTR(h);
        return 0;
}

static int rule_set_schemes(EgressRule *r, json_object *schemes, const char *where, char **ret_error) {
        size_t n;

        r->schemes = EGRESS_SCHEME_HTTPS;
        if (!schemes)
                return 0;
        if (!json_object_is_type(schemes, json_type_array) || (n = json_object_array_length(schemes)) == 0 || n > 2)
                return compile_error(ret_error, "%s: schemes must be an array of \"https\" and/or \"http\"", where);
        r->schemes = 0;
        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(schemes, i);
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
                if (streq_ptr(s, "https"))
                        r->schemes |= EGRESS_SCHEME_HTTPS;
                else if (streq_ptr(s, "http"))
                        r->schemes |= EGRESS_SCHEME_HTTP;
                else
                        return compile_error(ret_error, "%s: schemes[%zu] is not \"https\" or \"http\"", where, i);
        }
        return 0;
}

static int rule_set_ports(EgressRule *r, json_object *ports, const char *where, char **ret_error) {
        size_t n;

        if (!ports)
                return 0;
        if (!json_object_is_type(ports, json_type_array))
                return compile_error(ret_error, "%s: ports must be an array of port numbers", where);
        n = json_object_array_length(ports);
        if (n > EGRESS_PORTS_MAX)
                return compile_error(ret_error, "%s: more than %u ports", where, EGRESS_PORTS_MAX);
        if (n == 0)
                return 0;
        r->ports = calloc(n, sizeof(uint16_t));
        if (!r->ports)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(ports, i);
                int64_t v;

                if (!json_object_is_type(p, json_type_int))
                        return compile_error(ret_error, "%s: ports[%zu] is not an integer", where, i);
                v = json_object_get_int64(p);
                if (v < 1 || v > 65535)
                        return compile_error(ret_error, "%s: ports[%zu] is not in 1..65535", where, i);
                r->ports[r->n_ports++] = (uint16_t) v;
        }
        return 0;
}

static int rule_set_methods(EgressRule *r, json_object *methods, const char *where, char **ret_error) {
        size_t n;

        if (!methods)
                return 0;
        if (!json_object_is_type(methods, json_type_array))
                return compile_error(ret_error, "%s: methods must be an array of strings", where);
        n = json_object_array_length(methods);
        if (n > EGRESS_METHODS_MAX)
                return compile_error(ret_error, "%s: more than %u methods", where, EGRESS_METHODS_MAX);
        if (n == 0)
                return 0;
        r->methods = calloc(n + 1, sizeof(char *));
        if (!r->methods)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *m = json_object_array_get_idx(methods, i);
                const char *s = json_object_is_type(m, json_type_string) ? json_object_get_string(m) : NULL;

                if (isempty(s) || strlen(s) > 32)
                        return compile_error(ret_error, "%s: methods[%zu] is not an HTTP method", where, i);
                for (const char *c = s; *c; c++)
                        if (!(*c >= 'A' && *c <= 'Z'))
                                return compile_error(ret_error, "%s: methods[%zu] is not an HTTP method (upper case letters)", where, i);
                r->methods[i] = strdup(s);
                if (!r->methods[i])
                        return -ENOMEM;
        }
        return 0;
}

static int rule_set_paths(EgressRule *r, json_object *paths, const char *where, char **ret_error) {
        size_t n;

        if (!paths)
                return 0;
        if (!json_object_is_type(paths, json_type_array))
                return compile_error(ret_error, "%s: paths must be an array of regular expressions", where);
        n = json_object_array_length(paths);
        if (n > EGRESS_PATHS_MAX)
                return compile_error(ret_error, "%s: more than %u paths", where, EGRESS_PATHS_MAX);
        if (n == 0)
                return 0;
        r->paths = calloc(n, sizeof(regex_t));
        if (!r->paths)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *p = json_object_array_get_idx(paths, i);
                const char *s = json_object_is_type(p, json_type_string) ? json_object_get_string(p) : NULL;

                if (isempty(s))
                        return compile_error(ret_error, "%s: paths[%zu] is an empty pattern", where, i);
                if (regcomp_bounded(&r->paths[i], s, REG_EXTENDED | REG_NOSUB) != 0)
                        return compile_error(ret_error, "%s: paths[%zu] is not a valid extended regular expression", where, i);
                r->n_paths++;
        }
        return 0;
}

static bool header_name_is_valid(const char *s) {
        if (isempty(s) || strlen(s) > 64)
                return false;
        for (const char *c = s; *c; c++)
                if (!(isalnum((unsigned char) *c) || *c == '-' || *c == '_'))
                        return false;
        return true;
}

static bool header_value_is_valid(const char *s, size_t min) {
        size_t n = strlen(s);

        if (n < min || n > 4096)
                return false;
        for (const char *c = s; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return false;
        return true;
}

static int rule_set_credential(EgressRule *r, json_object *cred, const char *where, char **ret_error) {
        const char *header = json_string_of(cred, "header"), *dummy = json_string_of(cred, "dummy"),
                   *secret = json_string_of(cred, "secret");

        if (!cred || !json_object_is_type(cred, json_type_object))
                return compile_error(ret_error, "%s: decision \"credential\" needs a credential object", where);
        if (!header_name_is_valid(header))
                return compile_error(ret_error, "%s: credential.header is not a header name", where);
        /* A short dummy would be found inside ordinary values; a short secret would be redacted from every
         * log line that happens to contain it (and is no secret). */
        if (!dummy || !header_value_is_valid(dummy, 8))
                return compile_error(ret_error, "%s: credential.dummy must be 8..4096 printable characters", where);
        if (!secret || !header_value_is_valid(secret, 8))
                return compile_error(ret_error, "%s: credential.secret must be 8..4096 printable characters", where);
        if (strstr(secret, dummy) || strstr(dummy, secret))
                return compile_error(ret_error, "%s: credential.dummy and credential.secret must differ", where);
        r->credential.header = strdup(header);
        r->credential.dummy = strdup(dummy);
        r->credential.secret = strdup(secret);
        if (!r->credential.header || !r->credential.dummy || !r->credential.secret)
                return -ENOMEM;
        return 0;
}

static int rule_compile(EgressRule *r, json_object *o, size_t index, char **ret_error) {
        char where[EGRESS_RULE_ID_MAX];
        json_object *v;
        const char *d;
        int q;

        (void) snprintf(where, sizeof where, "rule[%zu]", index);
        memcpy(r->id, where, sizeof where);
        if (!json_object_is_type(o, json_type_object))
                return compile_error(ret_error, "%s: is not an object", where);

        json_object_object_foreach(o, key, val) {
                (void) val;
                if (!streq(key, "host") && !streq(key, "ports") && !streq(key, "methods") && !streq(key, "paths") &&
                    !streq(key, "decision") && !streq(key, "credential") && !streq(key, "message") &&
                    !streq(key, "schemes") && !streq(key, "intercept"))
                        return compile_error(ret_error, "%s: unknown key \"%s\"", where, key);
        }

        q = rule_set_host(r, json_string_of(o, "host"), where, ret_error);
        if (q < 0)
                return q;
        q = rule_set_schemes(r, json_object_object_get_ex(o, "schemes", &v) ? v : NULL, where, ret_error);
        if (q < 0)
                return q;
        q = rule_set_ports(r, json_object_object_get_ex(o, "ports", &v) ? v : NULL, where, ret_error);
        if (q < 0)
                return q;
        q = rule_set_methods(r, json_object_object_get_ex(o, "methods", &v) ? v : NULL, where, ret_error);
        if (q < 0)
                return q;
        q = rule_set_paths(r, json_object_object_get_ex(o, "paths", &v) ? v : NULL, where, ret_error);
        if (q < 0)
                return q;
        d = json_string_of(o, "decision");
        r->decision = egress_decision_from_string(d);
        if (r->decision < 0)
                return compile_error(ret_error, "%s: decision must be one of \"allow\", \"deny\", \"credential\"", where);
        if (json_object_object_get_ex(o, "intercept", &v)) {
                const char *i = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
                if (streq_ptr(i, "always"))
                        r->intercept = true;
                else if (!streq_ptr(i, "auto"))
                        return compile_error(ret_error, "%s: intercept must be \"always\" or \"auto\"", where);
                if (r->intercept && !(r->schemes & EGRESS_SCHEME_HTTPS))
                        return compile_error(ret_error, "%s: intercept \"always\" needs the https scheme", where);
        }
        if (r->decision == EGRESS_CREDENTIAL) {
                /* A real secret only goes into TLS the gateway made and verified. */
                if (r->schemes & EGRESS_SCHEME_HTTP)
                        return compile_error(ret_error, "%s: a credential rule is https only (a secret never goes out in clear text)", where);
                return rule_set_credential(r, json_object_object_get_ex(o, "credential", &v) ? v : NULL, where, ret_error);
        }
        if (json_object_object_get_ex(o, "credential", &v))
                return compile_error(ret_error, "%s: a credential only belongs to a \"credential\" rule", where);
        return 0;
}

static int rule_fixed(EgressRule *r, const char *id, const char *host, unsigned schemes, const uint16_t *ports,
                      size_t n_ports, EgressDecision decision) {
        int q;

        (void) snprintf(r->id, sizeof r->id, "%s", id);
        q = egress_host_pattern_normalize(host, &r->host);
        if (q < 0)
                return q;
        r->schemes = schemes;
        if (n_ports > 0) {
                r->ports = calloc(n_ports, sizeof(uint16_t));
                if (!r->ports)
                        return -ENOMEM;
                memcpy(r->ports, ports, n_ports * sizeof(uint16_t));
                r->n_ports = n_ports;
        }
        r->decision = decision;
        return 0;
}

int egress_policy_compile(json_object *egress, const char *api_host, EgressPolicy **ret, char **ret_error) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;

        json_object *rules = NULL, *registries = NULL, *v;
        size_t n_rules = 0, n_registries = 0, n;
        bool allow_api = true;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (egress && !json_object_is_type(egress, json_type_object))
                return compile_error(ret_error, "egress is not an object");
        if (egress && json_object_object_get_ex(egress, "rules", &rules)) {
                if (!json_object_is_type(rules, json_type_array))
                        return compile_error(ret_error, "egress.rules is not an array");
                n_rules = json_object_array_length(rules);
                if (n_rules > EGRESS_RULES_MAX)
                        return compile_error(ret_error, "egress.rules has more than %u rules", EGRESS_RULES_MAX);
        }
        if (egress && json_object_object_get_ex(egress, "registries", &registries)) {
                if (!json_object_is_type(registries, json_type_array))
                        return compile_error(ret_error, "egress.registries is not an array");
                n_registries = json_object_array_length(registries);
                if (n_registries > EGRESS_REGISTRIES_MAX)
                        return compile_error(ret_error, "egress.registries has more than %u hosts", EGRESS_REGISTRIES_MAX);
        }
        if (egress && json_object_object_get_ex(egress, "allow_api", &v)) {
                if (!json_object_is_type(v, json_type_boolean))
                        return compile_error(ret_error, "egress.allow_api is not true or false");
                allow_api = json_object_get_boolean(v);
        }
        api_host = api_host ?: EGRESS_API_HOST_DEFAULT;
        if (!egress_host_is_valid(api_host))
                return compile_error(ret_error, "the API host \"%s\" is not a host name", api_host);

        p = calloc(1, sizeof(EgressPolicy));
        if (!p)
                return -ENOMEM;
        p->allow_api = allow_api;
        n = n_rules + allow_api + n_registries + 1;
        p->rules = calloc(n, sizeof(EgressRule));
        if (!p->rules)
                return -ENOMEM;

        for (size_t i = 0; i < n_rules; i++) {
                r = rule_compile(&p->rules[p->n_rules++], json_object_array_get_idx(rules, i), i, ret_error);
                if (r < 0)
                        return r;
        }
        if (allow_api) {
                r = rule_fixed(&p->rules[p->n_rules++], "api", api_host, EGRESS_SCHEME_HTTPS, NULL, 0, EGRESS_ALLOW);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n_registries; i++) {
                json_object *h = json_object_array_get_idx(registries, i);
                const char *s = json_object_is_type(h, json_type_string) ? json_object_get_string(h) : NULL;
                char id[EGRESS_RULE_ID_MAX];

                (void) snprintf(id, sizeof id, "registry[%zu]", i);
                if (!s || streq(s, "*"))
                        return compile_error(ret_error, "egress.registries[%zu] is not a host name or *.suffix", i);
                r = rule_fixed(&p->rules[p->n_rules++], id, s, EGRESS_SCHEME_HTTP | EGRESS_SCHEME_HTTPS, NULL, 0, EGRESS_ALLOW);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return compile_error(ret_error, "egress.registries[%zu] is not a host name or *.suffix", i);
        }
        r = rule_fixed(&p->rules[p->n_rules++], "default", "*", EGRESS_SCHEME_HTTP | EGRESS_SCHEME_HTTPS, NULL, 0, EGRESS_DENY);
        if (r < 0)
                return r;

        /* A dummy must name one credential: two rules with the same dummy and different secrets would make
         * the injected value depend on rule order in a way nobody reads out of the config. */
        for (size_t i = 0; i < p->n_rules; i++)
                for (size_t j = i + 1; j < p->n_rules; j++)
                        if (p->rules[i].decision == EGRESS_CREDENTIAL && p->rules[j].decision == EGRESS_CREDENTIAL &&
                            streq(p->rules[i].credential.dummy, p->rules[j].credential.dummy) &&
                            !streq(p->rules[i].credential.secret, p->rules[j].credential.secret))
                                return compile_error(ret_error, "%s and %s use the same dummy for different secrets",
                                                     p->rules[i].id, p->rules[j].id);

        *ret = TAKE_PTR(p);
        return 0;
}

static bool rule_matches_host_port(const EgressRule *r, EgressScheme scheme, const char *host, uint16_t port) {
        bool found;

        if (!(r->schemes & scheme) || !egress_host_match(r->host, host))
                return false;
        /* without ports: the scheme's own port only */
        if (r->n_ports == 0)
                return port == (scheme == EGRESS_SCHEME_HTTPS ? 443 : 80);
        found = false;
        for (size_t i = 0; i < r->n_ports && !found; i++)
                found = r->ports[i] == port;
        return found;
}

static bool rule_matches(const EgressRule *r, EgressScheme scheme, const char *host, uint16_t port, const char *method,
                         const char *path) {
        bool found;

        if (!rule_matches_host_port(r, scheme, host, port))
                return false;
        if (r->methods) {
                if (!method || !strv_contains(r->methods, method))
                        return false;
        }
        if (r->n_paths > 0) {
                found = false;
                if (!path)
                        return false;
                for (size_t i = 0; i < r->n_paths && !found; i++)
                        found = regexec(&r->paths[i], path, 0, NULL, 0) == 0;
                if (!found)
                        return false;
        }
        return true;
}

const EgressRule *egress_policy_match(const EgressPolicy *p, EgressScheme scheme, const char *host, uint16_t port,
                                      const char *method, const char *path) {
        assert(p && p->n_rules > 0);

        for (size_t i = 0; i < p->n_rules; i++)
                if (rule_matches(&p->rules[i], scheme, host, port, method, path))
                        return &p->rules[i];
        return &p->rules[p->n_rules - 1];
}

bool egress_policy_host_intercepted(const EgressPolicy *p, const char *host, uint16_t port) {
        for (size_t i = 0; i < p->n_rules; i++)
                if ((p->rules[i].decision == EGRESS_CREDENTIAL || p->rules[i].intercept) &&
                    rule_matches_host_port(&p->rules[i], EGRESS_SCHEME_HTTPS, host, port))
                        return true;
        return false;
}

const EgressRule *egress_policy_find_dummy(const EgressPolicy *p, const char *dummy) {
        for (size_t i = 0; i < p->n_rules; i++)
                if (p->rules[i].decision == EGRESS_CREDENTIAL && streq(p->rules[i].credential.dummy, dummy))
                        return &p->rules[i];
        return NULL;
}

static json_object *egress_object(json_object *config) {
        json_object *e;

        if (!config || !json_object_object_get_ex(config, "egress", &e) || !json_object_is_type(e, json_type_object))
                return NULL;
        return e;
}

bool egress_config_enabled(json_object *config) {
        json_object *e = egress_object(config), *v;

        if (!e || !json_object_object_get_ex(e, "enabled", &v) || !json_object_is_type(v, json_type_boolean))
                return EGRESS_ENABLED_DEFAULT;
        return json_object_get_boolean(v);
}

int egress_config_api_host(json_object *config, char **ret) {
        const char *url = json_string_of(egress_object(config), "api_upstream"), *rest;
        char *h;
        int r;

        if (isempty(url))
                url = EGRESS_API_UPSTREAM_DEFAULT;
        rest = startswith(url, "https://") ?: startswith(url, "http://");
        if (!rest)
                return -EINVAL;
        if (rest[0] == '[') {
                size_t n = strcspn(rest + 1, "]");
                h = strndup(rest + 1, n);
        } else
                h = strndup(rest, strcspn(rest, ":/"));
        if (!h)
                return -ENOMEM;
        r = egress_host_normalize(h, ret);
        free(h);
        return r;
}
