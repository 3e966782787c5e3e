/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "log.h"
#include "macro.h"

const char *endswith(const char *s, const char *suffix) {
        size_t l = strlen(s), k = strlen(suffix);
        if (k > l)
                return NULL;
        return strcmp(s + l - k, suffix) == 0 ? s + l - k : NULL;
}

int free_and_strdup(char **dst, const char *src) {
        char *c = NULL;
        if (src) {
                c = strdup(src);
                if (!c)
                        return -ENOMEM;
        }
        free(*dst);
        *dst = c;
        return 0;
}

int env_uint(const char *name, uint64_t def, uint64_t max, uint64_t *ret) {
        const char *v = getenv(name);
        unsigned long long n;
        char *end;

        if (isempty(v)) {
                *ret = def;
                return 0;
        }
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno != 0 || *end || end == v || *v == '-' || n > max)
                return log_error_errno(EINVAL, "%s=%s is not a number between 0 and %" PRIu64 ".", name, v, max);
        *ret = n;
        return 0;
}

uint64_t clock_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * UINT64_C(1000000) + (uint64_t) ts.tv_nsec / UINT64_C(1000);
}
