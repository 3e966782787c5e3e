/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dockerproxy-image.h"
#include "dockerproxy-registry.h"
#include "macro.h"
#include "json-util.h"

#define PROXY_DOCKER_HUB_REGISTRY "registry-1.docker.io"

int proxy_registry_of_domain(const char *domain, char **ret_host, uint16_t *ret_port) {
        _cleanup_free_ char *host = NULL, *normalized = NULL;
        const char *colon;
        unsigned long port = 443;
        int r;

        if (!domain || !*domain)
                return -EINVAL;
        if (streq(domain, "docker.io"))
                domain = PROXY_DOCKER_HUB_REGISTRY;
        if (domain[0] == '[') {
                const char *end = strchr(domain, ']');
                if (!end)
                        return -EINVAL;
                host = strndup(domain + 1, end - domain - 1);
                colon = end[1] == ':' ? end + 1 : NULL;
                if (!colon && end[1])
                        return -EINVAL;
        } else {
                colon = strrchr(domain, ':');
                host = strndup(domain, colon ? (size_t) (colon - domain) : strlen(domain));
        }
        if (!host)
                return -ENOMEM;
        if (colon) {
                char *end;
                if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
                        return -EINVAL;
                errno = 0;
                port = strtoul(colon + 1, &end, 10);
                if (errno != 0 || *end || port == 0 || port > 65535)
                        return -EINVAL;
        }
        r = egress_host_normalize(host, &normalized);
        if (r < 0)
                return r;
        *ret_host = TAKE_PTR(normalized);
        *ret_port = (uint16_t) port;
        return 0;
}

int proxy_registry_policy_document(json_object *egress, json_object **ret) {
        _cleanup_(json_object_putp) json_object *doc = json_object_new_object(), *rules = json_object_new_array();
        json_object *v;

        if (!doc || !rules)
                return -ENOMEM;
        if (egress && !json_object_is_type(egress, json_type_object))
                return -EINVAL;
        if (egress && json_object_object_get_ex(egress, "rules", &v) && json_object_is_type(v, json_type_array))
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *rule = json_object_array_get_idx(v, i), *copy = NULL, *d;
                        if (json_object_deep_copy(rule, &copy, NULL) < 0 || json_object_array_add(rules, copy) < 0) {
                                json_object_put(copy);
                                return -ENOMEM;
                        }
                        if (!json_object_is_type(copy, json_type_object))
                                continue;       /* refused when compiled, as the gateway refuses it */
                        json_object_object_del(copy, "credential");
                        if (json_object_object_get_ex(copy, "decision", &d) &&
                            streq_ptr(json_object_get_string(d), "credential") &&
                            json_object_object_add(copy, "decision", json_object_new_string("allow")) < 0)
                                return -ENOMEM;
                }
        if (json_object_object_add(doc, "rules", TAKE_PTR(rules)) < 0)
                return -ENOMEM;
        if (egress && json_object_object_get_ex(egress, "registries", &v)) {
                json_object *copy = NULL;
                if (json_object_deep_copy(v, &copy, NULL) < 0 || json_object_object_add(doc, "registries", copy) < 0) {
                        json_object_put(copy);
                        return -ENOMEM;
                }
        }
        if (json_object_object_add(doc, "allow_api", json_object_new_boolean(false)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}

int proxy_registry_allows(const EgressPolicy *policy, const char *ref, char **ret_registry, const char **ret_rule) {
        _cleanup_(proxy_image_ref_done) ProxyImageRef r = {};
        _cleanup_free_ char *host = NULL, *registry = NULL;
        const EgressRule *rule;
        uint16_t port;
        int k;

        k = proxy_image_ref_parse(ref, &r);
        if (k < 0)
                return k;
        k = proxy_registry_of_domain(r.domain, &host, &port);
        if (k < 0)
                return k;
        if (asprintf(&registry, strchr(host, ':') ? "[%s]:%" PRIu16 : "%s:%" PRIu16, host, port) < 0)
                return -ENOMEM;
        if (!policy) {
                *ret_registry = TAKE_PTR(registry);
                *ret_rule = "no-egress-policy";
                return 0;
        }
        rule = egress_policy_match(policy, EGRESS_SCHEME_HTTPS, host, port, NULL, NULL);
        *ret_registry = TAKE_PTR(registry);
        *ret_rule = rule->id;
        return rule->decision == EGRESS_ALLOW || rule->decision == EGRESS_CREDENTIAL;
}
