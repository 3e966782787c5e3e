/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's endpoint table (see the header). */

#include <stdlib.h>
#include <string.h>

#include "dockerproxy-endpoint.h"
#include "macro.h"

/* What the docker CLI (run, create, start, stop, kill, rm, ps, logs, exec, cp, inspect, wait, top,
 * stats, rename, update, pause, commit, tag, rmi, images, import, pull, push, build, volume, network,
 * events, version, info), compose and Testcontainers send. Not here, so refused: Podman's /libpod API,
 * swarm, nodes, services, tasks, secrets, configs, plugins, distribution, /auth, search,
 * load and prune, build prune and BuildKit's /session and /grpc, /system/df, websocket attach. */
static const ProxyEndpoint table[] = {
        { "GET",    "/_ping",                   PROXY_BODY_NONE },
        { "HEAD",   "/_ping",                   PROXY_BODY_NONE },
        { "GET",    "/version",                 PROXY_BODY_NONE },
        { "GET",    "/info",                    PROXY_BODY_NONE },
        { "GET",    "/events",                  PROXY_BODY_NONE },

        { "GET",    "/containers/json",         PROXY_BODY_NONE },
        { "POST",   "/containers/create",       PROXY_BODY_CONTAINER_CREATE },
        { "POST",   "/containers/prune",        PROXY_BODY_NONE },
        { "GET",    "/containers/*/json",       PROXY_BODY_NONE },
        { "GET",    "/containers/*/top",        PROXY_BODY_NONE },
        { "GET",    "/containers/*/logs",       PROXY_BODY_NONE },
        { "GET",    "/containers/*/changes",    PROXY_BODY_NONE },
        { "GET",    "/containers/*/export",     PROXY_BODY_NONE },
        { "GET",    "/containers/*/stats",      PROXY_BODY_NONE },
        { "POST",   "/containers/*/resize",     PROXY_BODY_NONE },
        { "POST",   "/containers/*/start",      PROXY_BODY_NONE },
        { "POST",   "/containers/*/stop",       PROXY_BODY_NONE },
        { "POST",   "/containers/*/restart",    PROXY_BODY_NONE },
        { "POST",   "/containers/*/kill",       PROXY_BODY_NONE },
        { "POST",   "/containers/*/update",     PROXY_BODY_CONTAINER_UPDATE },
        { "POST",   "/containers/*/rename",     PROXY_BODY_NONE },
        { "POST",   "/containers/*/pause",      PROXY_BODY_NONE },
        { "POST",   "/containers/*/unpause",    PROXY_BODY_NONE },
        { "POST",   "/containers/*/attach",     PROXY_BODY_NONE },
        { "POST",   "/containers/*/wait",       PROXY_BODY_NONE },
        { "DELETE", "/containers/*",            PROXY_BODY_NONE },
        { "HEAD",   "/containers/*/archive",    PROXY_BODY_NONE },
        { "GET",    "/containers/*/archive",    PROXY_BODY_NONE },
        { "PUT",    "/containers/*/archive",    PROXY_BODY_STREAM },
        { "POST",   "/containers/*/exec",       PROXY_BODY_EXEC_CREATE },

        { "POST",   "/exec/*/start",            PROXY_BODY_EXEC_START },
        { "POST",   "/exec/*/resize",           PROXY_BODY_NONE },
        { "GET",    "/exec/*/json",             PROXY_BODY_NONE },

        { "GET",    "/images/json",             PROXY_BODY_NONE },
        { "POST",   "/images/create",           PROXY_BODY_STREAM },    /* a pull, or an import of the body */
        { "GET",    "/images/get",              PROXY_BODY_NONE },
        { "GET",    "/images/**/json",          PROXY_BODY_NONE },
        { "GET",    "/images/**/history",       PROXY_BODY_NONE },
        { "GET",    "/images/**/get",           PROXY_BODY_NONE },
        { "POST",   "/images/**/tag",           PROXY_BODY_NONE },
        { "POST",   "/images/**/push",          PROXY_BODY_NONE },      /* the channel's images, allowed registries */
        { "DELETE", "/images/**",               PROXY_BODY_NONE },
        { "POST",   "/commit",                  PROXY_BODY_CONTAINER_CONFIG },
        { "POST",   "/build",                   PROXY_BODY_STREAM },    /* gates.docker_proxy.build */

        { "GET",    "/networks",                PROXY_BODY_NONE },
        { "POST",   "/networks/create",         PROXY_BODY_NETWORK_CREATE },
        { "POST",   "/networks/prune",          PROXY_BODY_NONE },
        { "GET",    "/networks/*",              PROXY_BODY_NONE },
        { "DELETE", "/networks/*",              PROXY_BODY_NONE },
        { "POST",   "/networks/*/connect",      PROXY_BODY_NETWORK_CONNECT },
        { "POST",   "/networks/*/disconnect",   PROXY_BODY_NETWORK_DISCONNECT },

        { "GET",    "/volumes",                 PROXY_BODY_NONE },
        { "POST",   "/volumes/create",          PROXY_BODY_VOLUME_CREATE },
        { "POST",   "/volumes/prune",           PROXY_BODY_NONE },
        { "GET",    "/volumes/*",               PROXY_BODY_NONE },
        { "DELETE", "/volumes/*",               PROXY_BODY_NONE },
};

const ProxyEndpoint *proxy_endpoint_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(table);
        return table;
}

/* The next segment of s (after its '/'), its length in *n; NULL at the end. */
static const char *segment_next(const char *s, size_t *n) {
        if (!s || *s != '/' || s[1] == 0)
                return NULL;
        s++;
        *n = strcspn(s, "/");
        return s;
}

static bool pattern_matches(const char *pattern, const char *path) {
        const char *p = pattern, *s = path;
        size_t pn = 0, sn = 0;

        for (;;) {
                const char *ps = segment_next(p, &pn), *ss = segment_next(s, &sn);

                if (!ps || !ss)
                        return !ps && !ss;
                if (pn == 2 && strncmp(ps, "**", 2) == 0) {
                        /* one or more segments, then the pattern's rest (literals only) must end the path */
                        const char *rest = ps + 2;
                        size_t rest_len = strlen(rest), path_len = strlen(ss);
                        if (rest_len == 0)
                                return sn > 0;
                        if (path_len <= rest_len || strcmp(ss + path_len - rest_len, rest) != 0)
                                return false;
                        return path_len - rest_len > 0 && ss[0] != '/';
                }
                if (sn == 0)
                        return false;
                if (!(pn == 1 && ps[0] == '*') && (pn != sn || strncmp(ps, ss, pn) != 0))
                        return false;
                p = ps + pn;
                s = ss + sn;
        }
}

const ProxyEndpoint *proxy_endpoint_lookup(const char *method, const char *path) {
        if (!method || !path)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].method, method) && pattern_matches(table[i].pattern, path))
                        return &table[i];
        return NULL;
}

static bool parse_number(const char **p, unsigned *ret) {
        unsigned v = 0;
        const char *s = *p;

        if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
                return false;
        for (; *s >= '0' && *s <= '9'; s++) {
                v = v * 10 + (unsigned) (*s - '0');
                if (v > 9999)
                        return false;
        }
        *p = s;
        *ret = v;
        return true;
}

bool proxy_api_version_is_supported(const char *version) {
        unsigned major, minor;
        const char *p;

        if (!version)
                return true;
        if (version[0] != 'v')
                return false;
        p = version + 1;
        if (!parse_number(&p, &major) || *p++ != '.' || !parse_number(&p, &minor) || *p)
                return false;
        return major > PROXY_API_VERSION_MIN_MAJOR ||
                (major == PROXY_API_VERSION_MIN_MAJOR && minor >= PROXY_API_VERSION_MIN_MINOR);
}
