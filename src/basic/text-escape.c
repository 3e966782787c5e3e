/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdint.h>
#include <stdio.h>

#include "macro.h"
#include "text-escape.h"

/* Controls, bidi overrides and line separators, and what prints as nothing or as a blank: two targets
 * that differ only in those must not look alike (soft hyphen, combining grapheme joiner, Hangul fillers,
 * Mongolian vowel separator, zero-width spaces and joiners, word joiner and invisible operators, the byte
 * order mark, the interlinear annotation marks, the language tags). */
static bool codepoint_needs_escape(uint32_t c) {
        return c < 0x20 || c == 0x7f ||
                (c >= 0x80 && c <= 0x9f) ||
                c == 0x00ad || c == 0x034f || c == 0x061c || c == 0x115f || c == 0x1160 || c == 0x17b4 ||
                c == 0x17b5 || c == 0x180e || c == 0x3164 || c == 0xfeff || c == 0xffa0 ||
                (c >= 0x200b && c <= 0x200f) ||
                (c >= 0x202a && c <= 0x202e) ||
                (c >= 0x2060 && c <= 0x2064) ||
                (c >= 0x2066 && c <= 0x2069) ||
                (c >= 0xfff9 && c <= 0xfffb) ||
                (c >= 0xe0000 && c <= 0xe007f) ||
                c == 0x2028 || c == 0x2029;
}

/* Decodes one strict UTF-8 sequence (no overlong forms, no surrogates, nothing above U+10FFFF) of at
 * most n bytes; returns its length, or 0 when p does not start a valid one. */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *ret) {
        uint32_t c, min;
        size_t len;

        if (p[0] < 0x80) {
                *ret = p[0];
                return 1;
        }
        if ((p[0] & 0xe0) == 0xc0)
                len = 2, c = p[0] & 0x1f, min = 0x80;
        else if ((p[0] & 0xf0) == 0xe0)
                len = 3, c = p[0] & 0x0f, min = 0x800;
        else if ((p[0] & 0xf8) == 0xf0)
                len = 4, c = p[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (p[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return len;
}

static char *text_escape(const char *s, size_t max_bytes, bool prose) {
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s), in, cap;
        bool cut;
        char *r, *t;

        in = max_bytes > 0 ? MIN(n, max_bytes) : n;
        cut = in < n;
        if (cut)        /* on a character boundary */
                while (in > 0 && (p[in] & 0xc0) == 0x80)
                        in--;
        /* Worst case: every byte becomes \xNN (4 bytes); "\uNNNN" (6) replaces at least 2 bytes. */
        cap = in * 4 + 4;
        r = t = malloc(cap);
        if (!r)
                return NULL;

        for (size_t i = 0; i < in;) {
                uint32_t c;
                size_t len = utf8_decode(p + i, in - i, &c);

                if (len == 0) {
                        t += sprintf(t, "\\x%02x", p[i]);
                        i++;
                        continue;
                }
                if (prose && (c == '\\' || c == '\n' || c == '\t')) {
                        *t++ = (char) c;
                        i++;
                        continue;
                }
                if (c == '\\')
                        t = stpcpy(t, "\\\\");
                else if (c == '\n')
                        t = stpcpy(t, "\\n");
                else if (c == '\t')
                        t = stpcpy(t, "\\t");
                else if (c == '\r')
                        t = stpcpy(t, "\\r");
                else if (c < 0x80 && codepoint_needs_escape(c))
                        t += sprintf(t, "\\x%02x", (unsigned) c);
                else if (codepoint_needs_escape(c))
                        t += sprintf(t, "\\u%04x", (unsigned) c);
                else {
                        memcpy(t, p + i, len);
                        t += len;
                }
                i += len;
        }
        if (cut)
                t = stpcpy(t, "...");
        *t = 0;
        return r;
}

char *text_escape_display(const char *s, size_t max_bytes) {
        return text_escape(s, max_bytes, false);
}

char *text_escape_prose(const char *s, size_t max_bytes) {
        return text_escape(s, max_bytes, true);
}

char *text_escape_json(const char *json) {
        const unsigned char *p = (const unsigned char *) json;
        size_t n = strlen(json);
        char *r, *t;

        /* Worst case: each byte becomes "\ufffd" (6), or four bytes a surrogate pair (12). */
        r = t = malloc(n * 6 + 1);
        if (!r)
                return NULL;
        for (size_t i = 0; i < n;) {
                uint32_t c;
                size_t len = utf8_decode(p + i, n - i, &c);

                if (len == 0) {
                        t = stpcpy(t, "\\ufffd");
                        i++;
                        continue;
                }
                if (c >= 0x10000 && codepoint_needs_escape(c))
                        t += sprintf(t, "\\u%04x\\u%04x", (unsigned) (0xd800 + ((c - 0x10000) >> 10)),
                                     (unsigned) (0xdc00 + ((c - 0x10000) & 0x3ff)));
                else if (c >= 0x7f && codepoint_needs_escape(c))
                        t += sprintf(t, "\\u%04x", (unsigned) c);
                else {
                        memcpy(t, p + i, len);
                        t += len;
                }
                i += len;
        }
        *t = 0;
        return r;
}
