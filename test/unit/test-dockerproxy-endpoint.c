/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's endpoint allow-list and API versions (src/dockerproxy/dockerproxy-endpoint.h). */

#include <stdlib.h>

#include "dockerproxy-endpoint.h"
#include "dockerproxy-path.h"
#include "macro.h"
#include "tap.h"

#define known(m, p) (proxy_endpoint_lookup(m, p) != NULL)

static void test_table(void) {
        ok(known("GET", "/_ping"), "GET /_ping is served");
        ok(known("POST", "/containers/create"), "POST /containers/create is served");
        ok(known("GET", "/containers/abc123/json"), "a container inspect is served");
        ok(known("POST", "/exec/abc/start"), "an exec start is served");
        ok(known("GET", "/images/docker.io/library/busybox:latest/json"), "an image inspect with slashes in the name is served");
        ok(known("DELETE", "/images/quay.io/x/y:1"), "an image removal with slashes in the name is served");
        ok(known("POST", "/images/a/b/tag"), "a tag of an image with a slash is served");
        ok(known("GET", "/images/json"), "the image list is served");
        is_int(proxy_endpoint_lookup("POST", "/containers/x/update")->body, PROXY_BODY_CONTAINER_UPDATE, "an update takes the update body");
        is_int(proxy_endpoint_lookup("POST", "/containers/x/start")->body, PROXY_BODY_NONE, "a start takes no body");

        ok(!known("GET", "/libpod/info"), "Podman's /libpod API is refused");
        ok(!known("POST", "/libpod/containers/create"), "Podman's libpod create is refused");
        ok(!known("POST", "/swarm/init"), "swarm is refused");
        ok(!known("GET", "/plugins"), "plugins are refused");
        ok(known("POST", "/images/localhost:5000/chan-app/push"), "a push is served (its image and registry are checked)");
        ok(!known("POST", "/images/load"), "an image load is refused (it may name any image)");
        ok(!known("POST", "/images/prune"), "an image prune is refused");
        ok(!known("GET", "/images/search"), "an image search is refused");
        ok(!known("POST", "/auth"), "/auth is refused");
        ok(!known("POST", "/session"), "BuildKit's session is refused");
        ok(!known("GET", "/system/df"), "/system/df is refused");
        ok(!known("GET", "/distribution/busybox/json"), "distribution is refused");
        ok(!known("GET", "/containers/x/attach/ws"), "a websocket attach is refused");
        ok(!known("GET", "/Containers/json"), "paths match case-sensitively, as the routers do");
        ok(!known("PUT", "/containers/create"), "a known path with another method is refused");
        ok(!known("GET", "/containers/a/b/json"), "a container reference is one segment");
        ok(!known("GET", "/containers//json"), "an empty reference matches nothing");
        ok(!known("DELETE", "/images"), "a removal without an image name is refused");
        ok(!known("GET", "/images//json"), "an image inspect without a name is refused");
}

/* Property: no path outside the table is served, whatever it is made of. Paths are drawn from the
 * table's own words and some others, with references in between; each one served must be matched by
 * a pattern that a reader can check by hand: its literal segments equal, its "*" one segment. */
static bool pattern_accepts_by_hand(const char *pattern, const char *path) {
        char pat[256], pth[256], *sp = NULL, *st = NULL;
        char *a, *b;

        snprintf(pat, sizeof(pat), "%s", pattern);
        snprintf(pth, sizeof(pth), "%s", path);
        if (strstr(pat, "**"))
                return true;    /* image names: checked by the examples above */
        a = strtok_r(pat, "/", &sp);
        b = strtok_r(pth, "/", &st);
        for (; a && b; a = strtok_r(NULL, "/", &sp), b = strtok_r(NULL, "/", &st))
                if (!streq(a, "*") && !streq(a, b))
                        return false;
        return !a && !b;
}

static void test_unknown_refused_property(void) {
        static const char * const words[] = {
                "containers", "images", "exec", "volumes", "networks", "json", "create", "start", "libpod",
                "swarm", "build", "x", "abc", "archive", "update", "attach", "info", "events", "prune", "tag",
                "system", "df", "push", "load", "commit", "_ping", "version", "plugins", "session", "wait",
        };
        static const char * const methods[] = { "GET", "POST", "PUT", "DELETE", "HEAD", "PATCH" };
        size_t n_table, bad = 0, served = 0;
        const ProxyEndpoint *table = proxy_endpoint_table(&n_table);
        unsigned seed = 1;

        for (unsigned i = 0; i < 200000; i++) {
                char path[256] = "";
                size_t len = 0;
                unsigned n = 1 + (seed = seed * 1103515245 + 12345) / 65536 % 4;
                for (unsigned j = 0; j < n; j++)
                        len += (size_t) snprintf(path + len, sizeof(path) - len, "/%s",
                                                 words[(seed = seed * 1103515245 + 12345) / 65536 % ELEMENTSOF(words)]);
                const char *m = methods[(seed = seed * 1103515245 + 12345) / 65536 % ELEMENTSOF(methods)];
                const ProxyEndpoint *e = proxy_endpoint_lookup(m, path);
                if (!e)
                        continue;
                served++;
                bool listed = false;
                for (size_t k = 0; k < n_table; k++)
                        if (streq(table[k].method, m) && pattern_accepts_by_hand(table[k].pattern, path) &&
                            (strstr(table[k].pattern, "**") == NULL || startswith(path, "/images/")))
                                listed = true;
                if (!listed || startswith(path, "/libpod") || startswith(path, "/swarm") || startswith(path, "/plugins") ||
                    startswith(path, "/session") || startswith(path, "/system") || startswith(path, "/build/")) {
                        if (bad++ < 5)
                                diag(path);
                }
        }
        ok(served > 0, "some random paths are served (%zu)", served);
        is_int((int) bad, 0, "every random path served is one the table lists, none of the refused families");
}

static void test_versions(void) {
        ok(proxy_api_version_is_supported(NULL), "no version (the engine's own) is served");
        ok(proxy_api_version_is_supported("v1.41"), "v1.41 is served");
        ok(proxy_api_version_is_supported("v1.24"), "v1.24, the oldest shape checked, is served");
        ok(proxy_api_version_is_supported("v2.0"), "a later major is served");
        ok(!proxy_api_version_is_supported("v1.23"), "v1.23 is refused (a start then took a HostConfig)");
        ok(!proxy_api_version_is_supported("v1.9"), "v1.9 is refused");
        ok(!proxy_api_version_is_supported("v1.024"), "a minor with a leading zero is refused");
        ok(!proxy_api_version_is_supported("v1"), "a one-number version is refused");
        ok(!proxy_api_version_is_supported("V1.41"), "a capital V is refused");
        ok(!proxy_api_version_is_supported("v1.41a"), "a version with letters is refused");
}

int main(void) {
        test_table();
        test_unknown_refused_property();
        test_versions();
        return done_testing();
}
