/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "parse-util.h"

int parse_port_full(const char *s, size_t n, bool allow_zero, uint16_t *ret) {
        unsigned v = 0;

        if (!s)
                return -EINVAL;
        if (n == SIZE_MAX)
                n = strlen(s);
        if (n == 0 || n > 5)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        if (v > 65535 || (v == 0 && !allow_zero))
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}
