/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "string-util.h"

const char *endswith(const char *s, const char *suffix) {
        size_t l = strlen(s), k = strlen(suffix);
        if (k > l)
                return NULL;
        return strcmp(s + l - k, suffix) == 0 ? s + l - k : NULL;
}

static char ascii_lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

char *ascii_strlower(char *s) {
        for (char *c = s; c && *c; c++)
                *c = ascii_lower(*c);
        return s;
}

bool ascii_strcaseeq(const char *a, const char *b) {
        for (;; a++, b++) {
                if (ascii_lower(*a) != ascii_lower(*b))
                        return false;
                if (*a == 0)
                        return true;
        }
}

bool ref_name_is_valid(const char *s, size_t max) {
        size_t n;

        if (!s)
                return false;
        n = strlen(s);
        if (n == 0 || n > max || s[0] == '.' || s[0] == '-')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '.' || *p == '-'))
                        return false;
        return true;
}

int string_table_lookup(const char * const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && strcmp(table[i], s) == 0)
                        return (int) i;
        return -EINVAL;
}

int strprintf_va(char **ret, const char *format, va_list ap) {
        char *s;

        if (vasprintf(&s, format, ap) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int strprintf(char **ret, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = strprintf_va(ret, format, ap);
        va_end(ap);
        return r;
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

bool comma_list_contains(const char *list, size_t n, const char *word) {
        size_t wl = strlen(word);

        if (!list)
                return false;
        if (n == SIZE_MAX)
                n = strlen(list);
        for (size_t i = 0; i <= n;) {
                const char *comma = memchr(list + i, ',', n - i);
                size_t k = comma ? (size_t) (comma - list) : n;

                if (k - i == wl && memcmp(list + i, word, wl) == 0)
                        return true;
                i = k + 1;
        }
        return false;
}

char *str_replace_all(const char *s, const char *what, const char *with) {
        size_t wl = strlen(what), rl = strlen(with), sl = strlen(s), n = 0, size;
        char *out, *o;

        if (wl == 0)
                return strdup(s);
        for (const char *p = s; (p = strstr(p, what)); p += wl)
                n++;
        /* sl + n * (rl - wl) + 1, refusing what would not fit a size_t */
        if (rl > wl && n > (SIZE_MAX - sl - 1) / (rl - wl))
                return NULL;
        size = rl >= wl ? sl + n * (rl - wl) + 1 : sl - n * (wl - rl) + 1;
        out = malloc(size);
        if (!out)
                return NULL;
        o = out;
        for (const char *p = s;;) {
                const char *f = strstr(p, what);
                if (!f) {
                        strcpy(o, p);
                        break;
                }
                memcpy(o, p, (size_t) (f - p));
                o += f - p;
                memcpy(o, with, rl);
                o += rl;
                p = f + wl;
        }
        return out;
}
