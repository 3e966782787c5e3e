/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Image references normalised by the distribution reference grammar (see the header). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dockerproxy-image.h"
#include "dockerproxy-nested.h"
#include "macro.h"
#include "strv.h"

void proxy_image_ref_done(ProxyImageRef *r) {
        free(r->domain);
        free(r->path);
        free(r->tag);
        free(r->digest);
        *r = (ProxyImageRef) {};
}

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* path-component := [a-z0-9]+ (separator [a-z0-9]+)*, separator := [_.] | "__" | "-"+ */
static bool path_component_valid(const char *s, size_t n) {
        size_t i = 0;

        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        while (i < n) {
                if (is_lower_alnum(s[i])) {
                        i++;
                        continue;
                }
                size_t start = i;
                if (s[i] == '_' && i + 1 < n && s[i + 1] == '_')
                        i += 2;
                else if (s[i] == '_' || s[i] == '.')
                        i++;
                else if (s[i] == '-')
                        while (i < n && s[i] == '-')
                                i++;
                else
                        return false;
                if (i == start || i >= n || !is_lower_alnum(s[i]))
                        return false;
        }
        return true;
}

/* domain := host [":" port]; host := label ("." label)* or an IPv6 literal in brackets (refused here:
 * no agent needs one). Upper case is allowed in a domain (hosts are case-insensitive) and folded. */
static bool domain_valid(const char *s, size_t n) {
        const char *colon = memchr(s, ':', n);
        size_t host = colon ? (size_t) (colon - s) : n;

        if (host == 0)
                return false;
        for (size_t i = 0; i < host; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
                        return false;
        }
        if (s[0] == '.' || s[0] == '-' || s[host - 1] == '.' || s[host - 1] == '-')
                return false;
        if (colon) {
                size_t port = n - host - 1;
                if (port == 0 || port > 5 || strspn(colon + 1, "0123456789") < port)
                        return false;
        }
        return true;
}

static bool tag_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 128 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
                                   (s[0] >= '0' && s[0] <= '9') || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_' || s[i] == '.' || s[i] == '-'))
                        return false;
        return true;
}

static bool digest_valid(const char *s) {
        const char *colon = strchr(s, ':');

        if (!colon || colon == s || strlen(colon + 1) < 32)
                return false;
        for (const char *p = s; p < colon; p++)
                if (!is_lower_alnum(*p) && !strchr("+.-_", *p))
                        return false;
        return strspn(colon + 1, "0123456789abcdef") == strlen(colon + 1);
}

int proxy_image_ref_parse(const char *ref, ProxyImageRef *ret) {
        _cleanup_(proxy_image_ref_done) ProxyImageRef r = {};
        _cleanup_free_ char *s = NULL;
        char *at, *name, *slash, *last_slash, *colon;

        if (isempty(ref) || strlen(ref) > PROXY_IMAGE_REF_MAX)
                return -EINVAL;
        s = strdup(ref);
        if (!s)
                return -ENOMEM;
        at = strchr(s, '@');
        if (at) {
                *at = 0;
                if (!digest_valid(at + 1) || !(r.digest = strdup(at + 1)))
                        return r.digest || !digest_valid(at + 1) ? -EINVAL : -ENOMEM;
        }
        name = s;
        last_slash = strrchr(name, '/');
        colon = strrchr(last_slash ? last_slash : name, ':');
        if (colon) {
                *colon = 0;
                if (!tag_valid(colon + 1))
                        return -EINVAL;
                r.tag = strdup(colon + 1);
                if (!r.tag)
                        return -ENOMEM;
        }

        slash = strchr(name, '/');
        if (slash && (memchr(name, '.', (size_t) (slash - name)) || memchr(name, ':', (size_t) (slash - name)) ||
                      ((size_t) (slash - name) == strlen("localhost") && strncmp(name, "localhost", 9) == 0) ||
                      strcspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") < (size_t) (slash - name))) {
                if (!domain_valid(name, (size_t) (slash - name)))
                        return -EINVAL;
                r.domain = strndup(name, (size_t) (slash - name));
                if (!r.domain)
                        return -ENOMEM;
                for (char *p = r.domain; *p; p++)
                        if (*p >= 'A' && *p <= 'Z')
                                *p = (char) (*p - 'A' + 'a');
                name = slash + 1;
        } else if (!(r.domain = strdup("docker.io")))
                return -ENOMEM;
        if (streq(r.domain, "index.docker.io") || streq(r.domain, "registry-1.docker.io")) {
                free(r.domain);
                if (!(r.domain = strdup("docker.io")))
                        return -ENOMEM;
        }

        /* the path, component by component */
        size_t n_components = 0;
        for (const char *p = name;;) {
                size_t n = strcspn(p, "/");
                if (!path_component_valid(p, n))
                        return -EINVAL;
                n_components++;
                if (!p[n])
                        break;
                p += n + 1;
        }
        if (streq(r.domain, "docker.io") && n_components == 1) {
                if (asprintf(&r.path, "library/%s", name) < 0)
                        return -ENOMEM;
        } else if (!(r.path = strdup(name)))
                return -ENOMEM;
        if (strlen(r.domain) + 1 + strlen(r.path) > 255)
                return -EINVAL;
        if (!r.tag && !r.digest && !(r.tag = strdup("latest")))
                return -ENOMEM;

        *ret = r;
        r = (ProxyImageRef) {};
        return 0;
}

char *proxy_image_ref_format(const ProxyImageRef *r) {
        char *s = NULL;

        if (asprintf(&s, "%s/%s%s%s%s%s", r->domain, r->path, r->tag ? ":" : "", strempty(r->tag),
                     r->digest ? "@" : "", strempty(r->digest)) < 0)
                return NULL;
        return s;
}

/* The repository's path with docker.io's "library/" taken off: what names it on any domain. */
static const char *path_short(const ProxyImageRef *r) {
        const char *p = startswith(r->path, "library/");
        return p && !strchr(p, '/') ? p : r->path;
}

bool proxy_image_ref_is_protected(const char *ref, char * const *protected) {
        _cleanup_(proxy_image_ref_done) ProxyImageRef r = {};
        const char *shortname;

        if (proxy_image_ref_parse(ref, &r) < 0)
                return true;
        shortname = path_short(&r);
        if (startswith(shortname, "loop-") || strstr(shortname, "/loop-"))
                return true;
        STRV_FOREACH(x, protected) {
                _cleanup_(proxy_image_ref_done) ProxyImageRef o = {};
                if (proxy_image_ref_parse(*x, &o) < 0)
                        continue;
                if (strcasecmp(path_short(&o), shortname) == 0)
                        return true;
        }
        return false;
}

bool proxy_image_ref_is_channels(const char *ref, const char *channel) {
        _cleanup_(proxy_image_ref_done) ProxyImageRef r = {};
        _cleanup_free_ char *first = NULL;
        const char *shortname;

        if (isempty(channel) || proxy_image_ref_parse(ref, &r) < 0)
                return false;
        shortname = path_short(&r);
        first = strndup(shortname, strcspn(shortname, "/"));
        return first && proxy_name_is_channels(channel, first);
}

bool proxy_channel_names_images(const char *channel) {
        _cleanup_free_ char *probe = NULL;

        if (isempty(channel) || asprintf(&probe, "%s-x", channel) < 0)
                return false;
        return proxy_image_ref_is_channels(probe, channel);
}
