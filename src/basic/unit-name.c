/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "macro.h"
#include "unit-name.h"

static bool char_is_plain(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == ':' || c == '_' || c == '.';
}

char *unit_name_escape(const char *s) {
        char *r = malloc(strlen(s) * 4 + 1), *t = r;
        static const char hex[] = "0123456789abcdef";

        if (!r)
                return NULL;
        /* A leading dot would make a hidden file. */
        for (const char *f = s; *f; f++) {
                if (*f == '/')
                        *t++ = '-';
                else if (!char_is_plain(*f) || (f == s && *f == '.')) {
                        *t++ = '\\';
                        *t++ = 'x';
                        *t++ = hex[(unsigned char) *f >> 4];
                        *t++ = hex[(unsigned char) *f & 15];
                } else
                        *t++ = *f;
        }
        *t = 0;
        return r;
}

char *channel_slice_name(const char *channel) {
        _cleanup_free_ char *e = unit_name_escape(channel);
        char *r;

        if (!e || asprintf(&r, "loop-%s.slice", e) < 0)
                return NULL;
        return r;
}
