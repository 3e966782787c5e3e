/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: bytes as a Dockerfile (dockerproxy-build.h), as a build context (tar, or gzip when
 * they start so), for the base images it names, as a base image's ONBUILD triggers, as a registry's
 * domain, and as a dockerfile parameter. Every answer is allowed, refused with a reason, or
 * out of memory; nothing else. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockerproxy-build.h"
#include "dockerproxy-registry.h"
#include "macro.h"
#include "strv.h"
#include "json-util.h"
#include "string-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, char *reason) {
        if (r == -EPERM ? !reason : r != 0 && r != -ENOMEM)
                abort();
        free(reason);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *reason = NULL;
        int r;

        r = proxy_dockerfile_check((const char *) data, size, "chan", &reason);
        check(r, reason);
        r = proxy_build_context_check(data, size, "Dockerfile", true, "chan", &reason);
        check(r, reason);
        {
                /* the bases a Dockerfile names: each a non-empty word without a variable */
                char **bases = NULL;
                r = proxy_dockerfile_check_bases((const char *) data, size, "chan", &bases, &reason);
                check(r, reason);
                for (size_t i = 0; r == 0 && bases && bases[i]; i++)
                        if (!*bases[i] || strchr(bases[i], '$') || strchr(bases[i], ' '))
                                abort();
                strv_free(bases);
        }
        if (size < 4096) {
                /* the bytes as a base image's ONBUILD triggers, one per line */
                _cleanup_(json_object_putp) json_object *triggers = json_object_new_array();
                if (!triggers)
                        return 0;
                for (size_t off = 0; off < size;) {
                        const char *line = (const char *) data + off, *nl = memchr(line, '\n', size - off);
                        size_t n = nl ? (size_t) (nl - line) : size - off;
                        json_object_array_add(triggers, json_object_new_string_len(line, (int) n));
                        off += n + 1;
                }
                r = proxy_build_onbuild_check(triggers, "chan", &reason);
                check(r, reason);
                /* and as a registry's domain */
                _cleanup_free_ char *d = strndup((const char *) data, size), *host = NULL;
                uint16_t port = 0;
                if (!d)
                        return 0;
                r = proxy_registry_of_domain(d, &host, &port);
                if (r == 0 && (!host || !*host || port == 0))
                        abort();
                if (r != 0 && r != -EINVAL && r != -ENOMEM)
                        abort();
        }
        if (size < 4096) {
                _cleanup_free_ char *s = strndup((const char *) data, size), *n = NULL;
                if (!s)
                        return 0;
                r = proxy_build_dockerfile_name(s, &n);
                if (r != 0 && r != -EINVAL && r != -ENOMEM)
                        abort();
                /* "..x" is a name like any other; ".." and "../" lead out of the context */
                if (r == 0 && (n[0] == '/' || streq(n, "..") || startswith(n, "../") || strstr(n, "/../") ||
                               endswith(n, "/..") || strstr(n, "//")))
                        abort();
        }
        return 0;
}
