/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: a body through the proxy's parser, the rebuild of every body kind
 * (dockerproxy-body.h), the default policy's body rules and the nested-container rewrite. */

#include <stdint.h>

#include "dockerproxy-body.h"
#include "dockerproxy-nested.h"
#include "dockerproxy-policy.h"
#include "json-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static ProxyPolicy *policy = NULL;
        _cleanup_(json_object_putp) json_object *body = NULL;
        ProxyVerdict v;
        int r;

        if (!policy) {
                _cleanup_(json_object_putp) json_object *doc = NULL;
                if (proxy_policy_document(NULL, "/tmp", &doc) < 0 || proxy_policy_compile(doc, &policy, NULL) < 0)
                        abort();
        }
        r = proxy_body_parse((const char *) data, size, &body);
        if (r < 0) {
                if (r != -EBADMSG && r != -EFBIG && r != -ENOMEM)
                        abort();
                return 0;
        }
        for (ProxyBodyKind k = 0; k < _PROXY_BODY_KIND_MAX; k++) {
                _cleanup_(json_object_putp) json_object *rebuilt = NULL;
                _cleanup_free_ char *fields = NULL;
                ProxyBodyRefusal refusal = {};
                if (k == PROXY_BODY_STREAM)
                        continue;
                r = proxy_body_rebuild(k, body, &rebuilt, &fields, &refusal);
                if (r < 0 && r != -EPERM && r != -EBADMSG && r != -ENOMEM)
                        abort();
                if (r >= 0 && (!json_object_is_type(rebuilt, json_type_object) || !fields))
                        abort();
                if (r >= 0 && k == PROXY_BODY_CONTAINER_CREATE)
                        (void) proxy_container_force(rebuilt, &(ProxyNestedPolicy) { .channel = "fuzz", .podman = true });
        }
        proxy_policy_check_body(policy, "POST", "/containers/create", "application/json", body, NULL, &v);
        if (v.decision < 0 || v.decision >= _DECISION_MAX)
                abort();
        if (json_object_is_type(body, json_type_object))
                (void) proxy_container_force(body, &(ProxyNestedPolicy) { .channel = "fuzz", .cgroup_parent = "loop-fuzz.slice",
                                                                         .network_none = true });
        return 0;
}
