/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>
#include <openssl/evp.h>

#include "egress-policy.h"
#include "egress-upstream.h"
#include "macro.h"
#include "parse-util.h"

static void curl_freep(char **p) {
        curl_free(*p);
}

static void curl_url_cleanupp(CURLU **u) {
        if (*u)
                curl_url_cleanup(*u);
}

static void wipe_curl_freep(char **p) {
        if (*p)
                explicit_bzero(*p, strlen(*p));
        curl_free(*p);
}

void egress_upstream_done(EgressUpstream *u) {
        free(u->host);
        free(u->base_path);
        if (u->authorization) {
                explicit_bzero(u->authorization, strlen(u->authorization));
                free(u->authorization);
        }
        *u = (EgressUpstream) {};
}

/* A percent-encoded part of the userinfo, decoded; a NUL in it is refused. */
static int userinfo_decode(const char *encoded, char **ret, size_t *ret_size) {
        char *d;
        int n = 0;

        /* curl passes a malformed escape on as it is: refused here */
        for (const char *e = strchr(encoded, '%'); e; e = strchr(e + 1, '%'))
                if (unhexchar(e[1]) < 0 || unhexchar(e[2]) < 0)
                        return -EINVAL;
        d = curl_easy_unescape(NULL, encoded, 0, &n);
        if (!d)
                return -ENOMEM;
        if (memchr(d, 0, (size_t) n)) {
                explicit_bzero(d, (size_t) n);
                curl_free(d);
                return -EINVAL;
        }
        *ret = d;
        *ret_size = (size_t) n;
        return 0;
}

/* "Basic base64(user:password)" of the encoded user and password (RFC 3986 3.2.1, RFC 7617). */
static int basic_authorization(const char *user, const char *password, char **ret) {
        _cleanup_(wipe_curl_freep) char *u = NULL, *p = NULL;
        _cleanup_free_ char *plain = NULL, *out = NULL;
        size_t un, pn, n;
        int r, l;

        if (strlen(user) + 1 + strlen(password) > EGRESS_UPSTREAM_USERINFO_MAX)
                return -EINVAL;
        if ((r = userinfo_decode(user, &u, &un)) < 0 || (r = userinfo_decode(password, &p, &pn)) < 0)
                return r;
        n = un + 1 + pn;
        plain = malloc(n);
        out = malloc(strlen("Basic ") + 4 * ((n + 2) / 3) + 1);
        if (!plain || !out)
                return -ENOMEM;
        memcpy(plain, u, un);
        plain[un] = ':';
        memcpy(plain + un + 1, p, pn);
        memcpy(out, "Basic ", 6);
        l = EVP_EncodeBlock((unsigned char *) out + 6, (const unsigned char *) plain, (int) n);
        explicit_bzero(plain, n);
        if (l < 0)
                return -EINVAL;
        *ret = TAKE_PTR(out);
        return 0;
}

int egress_upstream_parse(const char *url, EgressUpstream *ret) {
        _cleanup_(curl_url_cleanupp) CURLU *h = NULL;
        _cleanup_(curl_freep) char *host = NULL, *port = NULL, *path = NULL, *query = NULL, *fragment = NULL;
        _cleanup_(wipe_curl_freep) char *user = NULL, *password = NULL;
        EgressUpstream u = {};
        size_t host_len, path_len;
        CURLUcode rc;
        int r;

        /* the scheme as written: curl would also take "HTTP:" or "http:/host" */
        if (startswith(url, "https://"))
                u.tls = true;
        else if (!startswith(url, "http://"))
                return -EINVAL;

        h = curl_url();
        if (!h)
                return -ENOMEM;
        /* the path as written: curl would remove dot segments */
        rc = curl_url_set(h, CURLUPART_URL, url, CURLU_PATH_AS_IS);
        if (rc == CURLUE_OUT_OF_MEMORY)
                return -ENOMEM;
        if (rc != CURLUE_OK)
                return -EINVAL;
        if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(h, CURLUPART_PATH, &path, 0) != CURLUE_OK)
                return -EINVAL;
        if (curl_url_get(h, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
            curl_url_get(h, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_OK)
                return -EINVAL;

        rc = curl_url_get(h, CURLUPART_USER, &user, 0);
        if (rc == CURLUE_OK) {
                /* a user without a password is no credential the proxy could take */
                if (curl_url_get(h, CURLUPART_PASSWORD, &password, 0) != CURLUE_OK)
                        return -EINVAL;
                r = basic_authorization(user, password, &u.authorization);
                if (r < 0)
                        return r;
        }

        host_len = strlen(host);
        if (host[0] == '[' && host_len >= 2 && host[host_len - 1] == ']') {
                memmove(host, host + 1, host_len - 2);
                host[host_len - 2] = 0;
        }
        r = egress_host_normalize(host, &u.host);
        if (r < 0)
                goto fail;

        rc = curl_url_get(h, CURLUPART_PORT, &port, 0);
        if (rc == CURLUE_OK) {
                r = parse_port(port, &u.port);
                if (r < 0)
                        goto fail;
        } else
                u.port = u.tls ? 443 : 80;

        path_len = strlen(path);
        if (path_len > 0 && path[path_len - 1] == '/')
                path_len--;
        u.base_path = strndup(path, path_len);
        if (!u.base_path) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = u;
        return 0;
fail:
        egress_upstream_done(&u);
        return r == -ENOMEM ? r : -EINVAL;
}

int egress_authority_format(const char *host, uint16_t port, uint16_t default_port, char **ret) {
        bool brackets = strchr(host, ':');
        char *s;
        int r;

        if (port == default_port)
                r = asprintf(&s, brackets ? "[%s]" : "%s", host);
        else
                r = asprintf(&s, brackets ? "[%s]:%u" : "%s:%u", host, port);
        if (r < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}
