/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <stdint.h>
#include <strings.h>

#include "dockerproxy-path.h"

void proxy_target_done(ProxyTarget *t) {
        free(t->path);
        free(t->unversioned);
        free(t->version);
        json_object_put(t->query);
        *t = (ProxyTarget) {};
}

/* Decodes s[0..n) into a new string. plus: '+' is a space (query strings). A byte is refused when
 * refuse() says so; the escape must be two hex digits. */
static int percent_decode(const char *s, size_t n, bool plus, bool (*refuse)(unsigned char c), char **ret) {
        _cleanup_free_ char *out = malloc(n + 1);
        size_t o = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];

                if (c == '%') {
                        int hi, lo;
                        if (i + 2 >= n)
                                return -EBADMSG;
                        hi = unhexchar(s[i + 1]);
                        lo = unhexchar(s[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EBADMSG;
                        c = (unsigned char) (hi << 4 | lo);
                        i += 2;
                } else if (plus && c == '+')
                        c = ' ';
                if (refuse(c))
                        return -EBADMSG;
                out[o++] = (char) c;
        }
        out[o] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

static bool path_byte_refused(unsigned char c) {
        return c <= 0x20 || c >= 0x7f || c == '%' || c == '?' || c == '#' || c == '\\';
}

static bool query_byte_refused(unsigned char c) {
        return c < 0x20 || c == 0x7f;
}

/* Whether the first segment is an API version: 1 when it is one as both engines read it ("v1.41"), 0
 * when neither engine reads it as one, -EBADMSG when one of them might (Docker's router takes
 * "v[0-9.]+", Podman's "v[0-9][0-9A-Za-z.-]*"; "V1.41" is refused too, so that no case folding of
 * either side can make it one): such a request would name one endpoint for the rules and another
 * for the engine. */
static int segment_version(const char *s, size_t n) {
        size_t i = 1, dots = 0, digits_before = 0, digits_after = 0;

        if (n < 2 || (s[0] != 'v' && s[0] != 'V') || !((s[1] >= '0' && s[1] <= '9') || s[1] == '.'))
                return 0;
        if (s[0] != 'v' || n > PROXY_API_VERSION_MAX)
                return -EBADMSG;
        for (; i < n; i++) {
                if (s[i] >= '0' && s[i] <= '9') {
                        if (dots == 0)
                                digits_before++;
                        else
                                digits_after++;
                } else if (s[i] == '.')
                        dots++;
                else
                        return -EBADMSG;
        }
        return dots == 1 && digits_before > 0 && digits_after > 0 ? 1 : -EBADMSG;
}

static int path_normalize(const char *raw, ProxyTarget *t) {
        _cleanup_free_ char *decoded = NULL, *out = NULL;
        size_t starts[PROXY_PATH_SEGMENTS_MAX], n_segments = 0, o = 0;
        const char *rest;
        int r;

        if (!raw || raw[0] != '/')
                return -EBADMSG;
        if (strlen(raw) > 3 * PROXY_PATH_MAX)
                return -E2BIG;
        r = percent_decode(raw, strlen(raw), false, path_byte_refused, &decoded);
        if (r < 0)
                return r;
        if (strlen(decoded) > PROXY_PATH_MAX)
                return -E2BIG;

        out = malloc(strlen(decoded) + 2);
        if (!out)
                return -ENOMEM;
        for (const char *p = decoded; *p;) {
                size_t len;

                p += strspn(p, "/");
                len = strcspn(p, "/");
                if (len == 0)
                        break;
                if (len == 1 && p[0] == '.') {
                        p += len;
                        continue;
                }
                if (len == 2 && p[0] == '.' && p[1] == '.') {
                        if (n_segments > 0)
                                o = starts[--n_segments];
                        p += len;
                        continue;
                }
                if (n_segments >= PROXY_PATH_SEGMENTS_MAX)
                        return -E2BIG;
                starts[n_segments++] = o;
                out[o++] = '/';
                memcpy(out + o, p, len);
                o += len;
                p += len;
        }
        if (o == 0)
                out[o++] = '/';
        out[o] = 0;

        rest = out;
        if (n_segments > 0) {
                size_t len = strcspn(out + 1, "/");
                r = segment_version(out + 1, len);
                if (r < 0)
                        return r;
                if (r > 0) {
                        t->version = strndup(out + 1, len);
                        if (!t->version)
                                return -ENOMEM;
                        rest = out + 1 + len;
                }
        }
        t->unversioned = strdup(*rest ? rest : "/");
        if (!t->unversioned)
                return -ENOMEM;
        t->path = TAKE_PTR(out);
        return 0;
}

/* Parameters the API reads as lists (build tags, import and commit changes, build cache sources): they
 * may repeat and are kept as arrays. Any other parameter given twice is refused: the engine would read
 * one of them, the rules maybe the other. */
static bool query_key_is_list(const char *key) {
        static const char * const lists[] = { "t", "changes", "cachefrom" };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                if (streq(key, lists[i]))
                        return true;
        return false;
}

static int query_parse(const char *query, json_object *into) {
        size_t n_params = 0;

        if (!query)
                return 0;
        if (strlen(query) > PROXY_QUERY_MAX)
                return -E2BIG;
        if (strchr(query, ';') || strchr(query, '#'))
                return -EBADMSG;
        for (const char *p = query; *p;) {
                _cleanup_free_ char *key = NULL, *value = NULL;
                size_t len = strcspn(p, "&"), klen;
                const char *eq;
                int r;

                if (len == 0) {         /* "a=1&&b=2": an empty pair means nothing */
                        p++;
                        continue;
                }
                if (++n_params > PROXY_QUERY_PARAMS_MAX)
                        return -E2BIG;
                eq = memchr(p, '=', len);
                klen = eq ? (size_t) (eq - p) : len;
                r = percent_decode(p, klen, true, query_byte_refused, &key);
                if (r < 0)
                        return r;
                r = percent_decode(eq ? eq + 1 : "", eq ? len - klen - 1 : 0, true, query_byte_refused, &value);
                if (r < 0)
                        return r;
                /* NUL is among the refused bytes, so key and value are what the engine decodes */
                if (isempty(key))
                        return -EBADMSG;
                /* Podman decodes parameters ignoring case (gorilla/schema): "REPO" is its "repo", so two
                 * keys equal but for case would be one parameter of which either value may win */
                json_object_object_foreach(into, k, e) {
                        (void) e;
                        if (strcasecmp(k, key) == 0 && !streq(k, key))
                                return -EBADMSG;
                }
                json_object *v = json_object_new_string(value), *list = NULL;
                if (!v)
                        return -ENOMEM;
                if (query_key_is_list(key)) {
                        if (!json_object_object_get_ex(into, key, &list)) {
                                list = json_object_new_array();
                                if (!list || json_object_object_add(into, key, list) < 0) {
                                        json_object_put(list);
                                        json_object_put(v);
                                        return -ENOMEM;
                                }
                        }
                        if (json_object_array_add(list, v) < 0) {
                                json_object_put(v);
                                return -ENOMEM;
                        }
                } else {
                        if (json_object_object_get_ex(into, key, NULL)) {
                                json_object_put(v);
                                return -EBADMSG;
                        }
                        if (json_object_object_add(into, key, v) < 0) {
                                json_object_put(v);
                                return -ENOMEM;
                        }
                }
                p += len;
                if (*p == '&')
                        p++;
        }
        return 0;
}

int proxy_target_parse(const char *path, const char *query, json_object *spare_query, ProxyTarget *ret) {
        _cleanup_(proxy_target_done) ProxyTarget t = { .query = spare_query };
        int r;

        assert(!t.query || (json_object_is_type(t.query, json_type_object) && json_object_object_length(t.query) == 0));
        if (!t.query)
                t.query = json_object_new_object();
        if (!t.query)
                return -ENOMEM;
        r = path_normalize(path, &t);
        if (r < 0)
                return r;
        r = query_parse(query, t.query);
        if (r < 0)
                return r;
        *ret = t;
        t = (ProxyTarget) {};
        return 0;
}

static bool byte_is_plain(unsigned char c, bool in_path) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                return true;
        if (strchr("-._~", c) && c)
                return true;
        return in_path && c && strchr("/:@!$'()*,=", c);
}

/* Appends s percent-encoded at p (room for 3 bytes a byte); returns the new end. */
static char *append_encoded(char *p, const char *s, bool in_path) {
        static const char hex[] = "0123456789ABCDEF";

        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if (byte_is_plain(*c, in_path))
                        *p++ = (char) *c;
                else {
                        *p++ = '%';
                        *p++ = hex[*c >> 4];
                        *p++ = hex[*c & 15];
                }
        return p;
}

/* One allocation sized for the worst case (every byte encoded): this runs for every request. */
char *proxy_target_format(const ProxyTarget *t) {
        size_t size = strlen(t->path) * 3 + 1;
        char *buf, *p;

        json_object_object_foreach(t->query, k, v) {
                bool list = json_object_is_type(v, json_type_array);
                size_t n = list ? json_object_array_length(v) : 1;
                for (size_t i = 0; i < n; i++)
                        size += 2 + 3 * (strlen(k) + strlen(strempty(json_object_get_string(list ? json_object_array_get_idx(v, i) : v))));
        }
        buf = malloc(size);
        if (!buf)
                return NULL;
        p = append_encoded(buf, t->path, true);
        bool first = true;
        json_object_object_foreach(t->query, k2, v2) {
                bool list = json_object_is_type(v2, json_type_array);
                size_t n = list ? json_object_array_length(v2) : 1;
                for (size_t i = 0; i < n; i++) {
                        *p++ = first ? '?' : '&';
                        first = false;
                        p = append_encoded(p, k2, false);
                        *p++ = '=';
                        p = append_encoded(p, strempty(json_object_get_string(list ? json_object_array_get_idx(v2, i) : v2)), false);
                }
        }
        *p = 0;
        return buf;
}

int proxy_target_replace_ref(ProxyTarget *t, const char *prefix, const char *ref, const char *id) {
        const char *rest = startswith(t->unversioned, prefix);
        _cleanup_free_ char *unversioned = NULL, *path = NULL;
        size_t n = strlen(ref);

        if (!rest || strncmp(rest, ref, n) != 0 || (rest[n] != 0 && rest[n] != '/') || isempty(id) || strchr(id, '/'))
                return -EINVAL;
        if (asprintf(&unversioned, "%s%s%s", prefix, id, rest + n) < 0 ||
            asprintf(&path, "%s%s%s", t->version ? "/" : "", strempty(t->version), unversioned) < 0)
                return -ENOMEM;
        free(t->unversioned);
        free(t->path);
        t->unversioned = TAKE_PTR(unversioned);
        t->path = TAKE_PTR(path);
        return 0;
}

json_object *proxy_query_get(const ProxyTarget *t, const char *key, const char **ret_key) {
        json_object_object_foreach(t->query, k, v)
                if (strcasecmp(k, key) == 0) {
                        if (ret_key)
                                *ret_key = k;
                        return v;
                }
        return NULL;
}

bool proxy_query_only(const ProxyTarget *t, const char * const *known, size_t n_known) {
        json_object_object_foreach(t->query, k, v) {
                bool found = false;

                (void) v;
                for (size_t i = 0; i < n_known && !found; i++)
                        found = streq(k, known[i]);
                if (!found)
                        return false;
        }
        return true;
}
