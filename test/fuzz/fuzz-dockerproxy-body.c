/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: a container create body through the proxy's parser, the default policy's body
 * rules and the nested-container rewrite. */

#include <stdint.h>

#include "dockerproxy-nested.h"
#include "dockerproxy-policy.h"

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
        proxy_policy_check_body(policy, "POST", "/containers/create", "application/json", body, NULL, &v);
        if (v.decision < 0 || v.decision >= _DECISION_MAX)
                abort();
        if (json_object_is_type(body, json_type_object))
                (void) proxy_container_force(body, &(ProxyNestedPolicy) { .channel = "fuzz", .cgroup_parent = "loop-fuzz.slice",
                                                                         .network_none = true });
        return 0;
}
