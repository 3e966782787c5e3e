/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: bytes as a Dockerfile (dockerproxy-build.h), as a build context (tar, or gzip when
 * they start so), and as a dockerfile parameter. Every answer is allowed, refused with a reason, or
 * out of memory; nothing else. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockerproxy-build.h"
#include "macro.h"

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
        if (size < 4096) {
                _cleanup_free_ char *s = strndup((const char *) data, size), *n = NULL;
                if (!s)
                        return 0;
                r = proxy_build_dockerfile_name(s, &n);
                if (r != 0 && r != -EINVAL && r != -ENOMEM)
                        abort();
                if (r == 0 && (n[0] == '/' || strstr(n, "..") == n || strstr(n, "/../") || strstr(n, "//")))
                        abort();
        }
        return 0;
}
