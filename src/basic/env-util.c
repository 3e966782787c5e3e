/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "env-util.h"
#include "log.h"
#include "macro.h"

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
