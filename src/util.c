/* SPDX-License-Identifier: LGPL-2.1-or-later */

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
