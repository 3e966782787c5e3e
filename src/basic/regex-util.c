/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <stdint.h>

#include "macro.h"
#include "regex-util.h"

/* The bound at p ("{m}", "{m,}", "{m,n}"): its largest count (m + 1 for "{m,}") and the length of the
 * bound; 0 when p starts no bound (glibc then takes the '{' as a literal). */
static size_t parse_bound(const char *p, uint64_t *ret_count) {
        const char *s = p + 1;
        uint64_t m = 0, n = 0;
        bool comma = false, digits = false;

        for (; isdigit((unsigned char) *s); s++, digits = true)
                m = MIN(m * 10 + (uint64_t) (*s - '0'), (uint64_t) UINT32_MAX);
        if (*s == ',') {                /* glibc takes "{,n}" as "{0,n}" */
                comma = true;
                for (s++; isdigit((unsigned char) *s); s++, digits = true)
                        n = MIN(n * 10 + (uint64_t) (*s - '0'), (uint64_t) UINT32_MAX);
        }
        if (!digits || *s != '}')
                return 0;
        *ret_count = !comma ? m : n > 0 ? MAX(m, n) : m + 1;
        return (size_t) (s - p) + 1;
}

/* The end of the bracket expression at p ('['): past its ']', or at the terminating NUL. */
static const char *skip_bracket(const char *p) {
        const char *s = p + 1;

        if (*s == '^')
                s++;
        if (*s == ']')
                s++;
        for (; *s && *s != ']'; s++)
                if (*s == '[' && (s[1] == ':' || s[1] == '.' || s[1] == '=')) {
                        char close = s[1];
                        const char *e = s + 2;
                        while (*e && !(e[0] == close && e[1] == ']'))
                                e++;
                        if (!*e)
                                return e;
                        s = e + 1;
                }
        return *s ? s + 1 : s;
}

bool regex_too_large(const char *pattern) {
        /* per open group: the atoms so far; last: the size of the atom a bound would apply to */
        uint64_t total[REGEX_NESTING_MAX + 1] = {}, last = 0;
        size_t depth = 0;

        for (const char *p = pattern; *p;) {
                uint64_t count;
                size_t n;

                switch (*p) {
                case '(':
                        if (++depth > REGEX_NESTING_MAX)
                                return true;
                        total[depth] = 0;
                        last = 0;
                        p++;
                        continue;
                case ')':
                        if (depth == 0) {       /* a literal ')' in ERE */
                                last = 1;
                                break;
                        }
                        last = MAX(total[depth], (uint64_t) 1);
                        depth--;
                        total[depth] += last;
                        p++;
                        goto check;
                case '|':
                        last = 0;
                        p++;
                        continue;
                case '{':
                        n = parse_bound(p, &count);
                        if (n == 0) {
                                last = 1;
                                break;
                        }
                        /* the atom once more for each further repetition */
                        total[depth] += last * (count > 0 ? count - 1 : 0);
                        last *= MAX(count, (uint64_t) 1);
                        p += n;
                        goto check;
                case '*':
                case '+':
                case '?':
                        total[depth] += last;
                        last *= 2;
                        p++;
                        goto check;
                case '[':
                        total[depth] += 1;
                        last = 1;
                        p = skip_bracket(p);
                        goto check;
                case '\\':
                        if (p[1])
                                p++;
                        last = 1;
                        break;
                default:
                        last = 1;
                        break;
                }
                total[depth] += 1;
                p++;
        check:
                if (total[depth] > REGEX_EXPANDED_MAX || last > REGEX_EXPANDED_MAX)
                        return true;
        }
        return false;
}

bool regex_has_backreference(const char *pattern) {
        for (const char *p = pattern; *p;) {
                if (*p == '[') {
                        p = skip_bracket(p);
                        continue;
                }
                if (*p == '\\') {
                        if (p[1] >= '1' && p[1] <= '9')
                                return true;
                        if (p[1])
                                p++;
                }
                p++;
        }
        return false;
}

int regcomp_bounded(regex_t *re, const char *pattern, int cflags) {
        if (regex_too_large(pattern))
                return REG_ESIZE;
        if (regex_has_backreference(pattern))
                return REG_ESUBREG;
        return regcomp(re, pattern, cflags);
}
