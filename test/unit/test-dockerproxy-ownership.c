/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Answers about other channels' objects and the ids acted on (src/dockerproxy/dockerproxy-ownership.h). */

#include <stdlib.h>
#include <string.h>

#include "dockerproxy-ownership.h"
#include "dockerproxy-path.h"
#include "json-util.h"
#include "macro.h"
#include "tap.h"

static void test_not_found(void) {
        static const char podman[] = "{\"cause\":\"no such container\",\"message\":\"no container with name or ID \\\""
                PROXY_PROBE_REF "\\\" found: no such container\",\"response\":404}\n";
        _cleanup_free_ char *mine = NULL, *theirs = NULL, *fallback = NULL;

        ok(proxy_not_found_is_template(podman), "Podman's answer about the probe is a template");
        ok(!proxy_not_found_is_template("{\"message\":\"page not found\"}"), "an answer that does not name the probe is not");
        ok(!proxy_not_found_is_template("no such container: " PROXY_PROBE_REF), "an answer that is no JSON object is not");
        is_int(proxy_not_found_format(podman, "nosuch", &mine), 0, "the answer for a missing container is made");
        is_int(proxy_not_found_format(podman, "foreign", &theirs), 0, "the answer for another's container is made");
        ok(mine && strstr(mine, "\\\"nosuch\\\" found") && !strstr(mine, PROXY_PROBE_REF), "it names the reference asked about");
        ok(mine && theirs && strlen(mine) - strlen("nosuch") == strlen(theirs) - strlen("foreign") &&
           strncmp(mine, theirs, strstr(mine, "nosuch") - mine) == 0, "the two differ only in the reference");
        is_int(proxy_not_found_format(podman, "a\"b", &fallback), -EINVAL, "a reference with a quote is refused");
        free(fallback);
        fallback = NULL;
        is_int(proxy_not_found_format(proxy_not_found_fallback(PROXY_OBJECT_VOLUME), "v1", &fallback), 0, "the fallback is a template too");
        is_str(fallback, "{\"message\":\"get v1: no such volume\"}\n", "...in Docker's words");
        is_str(proxy_probe_path(PROXY_OBJECT_EXEC), "/exec/" PROXY_PROBE_REF "/json", "an exec is probed by its inspect");
}

static void test_ids(void) {
        _cleanup_(json_object_putp) json_object *c = json_tokener_parse("{\"Id\":\"abc123\",\"Name\":\"/x\"}"),
                *e = json_tokener_parse("{\"ID\":\"e1\",\"ContainerID\":\"abc\"}"),
                *v = json_tokener_parse("{\"Name\":\"web-data\"}"),
                *bad = json_tokener_parse("{\"Id\":\"../x\"}");

        is_str(proxy_inspect_id(PROXY_OBJECT_CONTAINER, c), "abc123", "a container's id is its Id");
        is_str(proxy_inspect_id(PROXY_OBJECT_EXEC, e), "e1", "an exec's id is its ID");
        is_str(proxy_inspect_id(PROXY_OBJECT_VOLUME, v), "web-data", "a volume's id is its name");
        ok(proxy_inspect_id(PROXY_OBJECT_NETWORK, v) == NULL, "an answer without the key gives none");
        ok(proxy_inspect_id(PROXY_OBJECT_CONTAINER, bad) == NULL, "an id of other bytes is not taken");
        ok(proxy_ref_is_valid("web_1.x-y"), "names and ids of [A-Za-z0-9_.-] are references");
        ok(!proxy_ref_is_valid("-x"), "a leading dash is not");
        ok(!proxy_ref_is_valid("a/b"), "a slash is not");
}

static void test_replace(void) {
        _cleanup_(proxy_target_done) ProxyTarget t = {};

        is_int(proxy_target_parse("/v1.41/containers/web/start", "t=5", NULL, &t), 0, "a start by name parses");
        is_int(proxy_target_replace_ref(&t, "/containers/", "web", "abc123"), 0, "the name is replaced by the id");
        is_str(t.path, "/v1.41/containers/abc123/start", "the forwarded path names the id");
        is_str(t.unversioned, "/containers/abc123/start", "...and so does the one the record and rules see");
        is_int(proxy_target_replace_ref(&t, "/containers/", "ab", "x"), -EINVAL, "a reference that is only a prefix of the segment is not replaced");
        is_int(proxy_target_replace_ref(&t, "/containers/", "abc123", "a/b"), -EINVAL, "an id with a slash is refused");
}

static const char *reserved(const char *method, const char *path, const char *query) {
        static char buf[256];
        _cleanup_(proxy_target_done) ProxyTarget t = {};
        const char *r;

        if (proxy_target_parse(path, query, NULL, &t) < 0)
                return "(unparsed)";
        r = proxy_container_name_reserved(method, &t);
        if (!r)
                return NULL;
        snprintf(buf, sizeof buf, "%s", r);
        return buf;
}

/* Another channel's agent making loop-chrome-CHANNEL first kept that channel's Chrome from starting. */
static void test_reserved_names(void) {
        is_str(reserved("POST", "/v1.41/containers/create", "name=loop-chrome-web"), "loop-chrome-web",
               "a create named like a channel's Chrome container is refused");
        is_str(reserved("POST", "/containers/create", "name=loop-shell-web"), "loop-shell-web", "...like its shell container");
        is_str(reserved("POST", "/containers/create", "name=%2Floop-web-abcdef"), "loop-web-abcdef",
               "...with the leading '/' Docker drops");
        is_str(reserved("POST", "/containers/create", "NAME=loop-chrome-web"), "loop-chrome-web",
               "...with the key in another case (Podman reads it so)");
        is_str(reserved("POST", "/containers/create", "name=LOOP-chrome-web"), "LOOP-chrome-web", "...in any case of the prefix");
        is_str(reserved("POST", "/v1.41/containers/abc123/rename", "name=loop-chrome-web"), "loop-chrome-web",
               "a rename to such a name is refused");
        is_str(reserved("POST", "/Containers/abc123/Rename", "name=loop-shell-x"), "loop-shell-x", "...the path in any case");
        ok(!reserved("POST", "/containers/create", "name=web-app"), "a create named otherwise passes");
        ok(!reserved("POST", "/containers/create", "name=loopy"), "...loopy too (no \"loop-\")");
        ok(!reserved("POST", "/containers/create", NULL), "...and one without a name");
        ok(!reserved("POST", "/containers/abc/rename", "name=web-2"), "a rename to another name passes");
        ok(!reserved("GET", "/containers/json", "name=loop-chrome-web"), "a list filtered by such a name is no create");
        ok(!reserved("POST", "/containers/abc/start", "name=loop-x"), "a start names no new name");
}

int main(void) {
        test_reserved_names();
        test_replace();
        test_not_found();
        test_ids();
        return done_testing();
}
