/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Which registries a pull or a push through the Docker API proxy may reach (src/dockerproxy/dockerproxy-registry.h). */

#include <errno.h>
#include <stdlib.h>

#include "dockerproxy-registry.h"
#include "macro.h"
#include "tap.h"
#include "json-util.h"

static void test_domain(void) {
        _cleanup_free_ char *h1 = NULL, *h2 = NULL, *h3 = NULL, *h4 = NULL, *h5 = NULL;
        uint16_t port = 0;

        ok(proxy_registry_of_domain("docker.io", &h1, &port) == 0 && streq(h1, "registry-1.docker.io") && port == 443,
           "docker.io is pulled from registry-1.docker.io:443");
        ok(proxy_registry_of_domain("Quay.IO", &h2, &port) == 0 && streq(h2, "quay.io") && port == 443,
           "a domain is normalised as the gateway normalises hosts, on 443");
        ok(proxy_registry_of_domain("127.0.0.1:5000", &h3, &port) == 0 && streq(h3, "127.0.0.1") && port == 5000,
           "a domain's port is the registry's");
        ok(proxy_registry_of_domain("[::1]:5000", &h4, &port) == 0 && streq(h4, "::1") && port == 5000,
           "an IPv6 literal with a port");
        ok(proxy_registry_of_domain("localhost", &h5, &port) == 0 && streq(h5, "localhost") && port == 443,
           "localhost without a port is on 443");
        is_int(proxy_registry_of_domain("x:0", &(char *){ NULL }, &port), -EINVAL, "port 0 is refused");
        is_int(proxy_registry_of_domain("x:99999", &(char *){ NULL }, &port), -EINVAL, "a port beyond 65535 is refused");
        is_int(proxy_registry_of_domain("x:", &(char *){ NULL }, &port), -EINVAL, "an empty port is refused");
}

static void test_policy(void) {
        _cleanup_(json_object_putp) json_object *egress = json_tokener_parse(
                "{\"rules\":[{\"host\":\"bad.example.com\",\"decision\":\"deny\"},"
                "{\"host\":\"ghcr.io\",\"decision\":\"credential\",\"credential\":{\"header\":\"Authorization\","
                "\"dummy\":\"dummy-token-1\",\"secret\":\"real-secret-1\"}},"
                "{\"host\":\"127.0.0.1\",\"ports\":[5000],\"decision\":\"allow\"}],"
                "\"registries\":[\"*.example.com\",\"registry-1.docker.io\"],\"allow_api\":true}");
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;
        _cleanup_free_ char *error = NULL;
        const char *rule = NULL;

        is_int(proxy_registry_policy_document(egress, &doc), 0, "the proxy's copy of the egress policy is made");
        ok(!strstr(json_object_to_json_string(doc), "real-secret-1"), "...without the credential's secret");
        {
                json_object *v;
                ok(json_object_object_get_ex(doc, "allow_api", &v) && !json_object_get_boolean(v),
                   "...and without the model API host");
        }
        is_int(egress_policy_compile(doc, NULL, &p, &error), 0, "...and it compiles");

#define ALLOWS(ref, want, name) do {                                                                    \
                _cleanup_free_ char *reg = NULL;                                                        \
                is_int(proxy_registry_allows(p, ref, &reg, &rule), want, name);                         \
        } while (0)
        ALLOWS("busybox", 1, "docker.io is allowed when registry-1.docker.io is listed");
        ALLOWS("index.docker.io/library/busybox:1", 1, "...spelt as index.docker.io too (normalised)");
        ALLOWS("registry.example.com/x/y:1", 1, "a host under a *.suffix of egress.registries is allowed");
        ALLOWS("bad.example.com/x", 0, "a host an earlier deny rule names is refused, though registries match it");
        ALLOWS("ghcr.io/chan-x/y", 1, "a credential rule's host is allowed");
        ALLOWS("127.0.0.1:5000/chan-app", 1, "an allowed host and port");
        ALLOWS("127.0.0.1:5001/chan-app", 0, "...not on another port");
        ALLOWS("quay.io/x", 0, "a registry no rule names is refused");
        ok(streq_ptr(rule, "default"), "...by the default rule");
        ALLOWS("api.anthropic.com/x", 0, "the model API host is no registry");
        is_int(proxy_registry_allows(p, "x/UPPER", &(char *){ NULL }, &rule), -EINVAL, "a reference that does not parse is refused");
        {
                _cleanup_free_ char *reg = NULL;
                is_int(proxy_registry_allows(NULL, "busybox", &reg, &rule), 0, "without an egress policy nothing is allowed");
                ok(streq_ptr(reg, "registry-1.docker.io:443"), "...and the registry is named");
        }
}

int main(void) {
        test_domain();
        test_policy();
        return done_testing();
}
