/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The gate's globs (see gate-glob.h): a matcher that runs in pattern x path steps, and a compiled form
 * whose cheap comparisons refuse most paths before the matcher runs. */

#include <ctype.h>
#include <stdint.h>

#include "gate-glob.h"
#include "macro.h"

/* Parses the bracket expression at p ('['), reports whether c is in it; returns the pointer after the
 * closing ']', or NULL when it is not closed. */
static const char *glob_bracket(const char *p, char c, bool *ret_match) {
        bool negate = false, match = false, first = true;

        p++;
        if (*p == '!' || *p == '^') {
                negate = true;
                p++;
        }
        for (;; first = false) {
                unsigned char lo, hi;

                if (!*p)
                        return NULL;
                if (*p == ']' && !first)
                        break;
                if (p[0] == '[' && p[1] == ':') {
                        static const struct {
                                const char *name;
                                int (*is)(int);
                        } classes[] = {
                                { "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
                                { "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
                                { "lower", islower }, { "print", isprint }, { "punct", ispunct },
                                { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
                        };
                        const char *e = strstr(p + 2, ":]");
                        size_t l;
                        bool known = false;

                        if (!e)
                                return NULL;
                        l = (size_t) (e - (p + 2));
                        for (size_t i = 0; i < ELEMENTSOF(classes); i++)
                                if (strlen(classes[i].name) == l && strncmp(classes[i].name, p + 2, l) == 0) {
                                        known = true;
                                        if (classes[i].is((unsigned char) c))
                                                match = true;
                                }
                        if (!known)
                                return NULL;
                        p = e + 2;
                        continue;
                }
                if (*p == '\\' && p[1])
                        p++;
                lo = hi = (unsigned char) *p++;
                if (p[0] == '-' && p[1] && p[1] != ']') {
                        p++;
                        if (*p == '\\' && p[1])
                                p++;
                        hi = (unsigned char) *p++;
                }
                if ((unsigned char) c >= lo && (unsigned char) c <= hi)
                        match = true;
        }
        *ret_match = match != negate;
        return p + 1;
}

/* NULL when pattern is a valid glob, else why not. */
const char *gate_glob_check(const char *pattern) {
        if (isempty(pattern))
                return "empty pattern";
        if (strlen(pattern) > GATE_GLOB_PATTERN_MAX)
                return "pattern too long";
        for (const char *p = pattern; *p; p++) {
                bool m;

                if (*p == '\\') {
                        if (!p[1])
                                return "invalid glob (trailing '\\')";
                        p++;
                } else if (*p == '[') {
                        const char *e = glob_bracket(p, 'a', &m);
                        if (!e)
                                return "invalid glob (unclosed '[')";
                        p = e - 1;
                }
        }
        return NULL;
}

const char *gate_glob_check_path(const char *pattern) {
        const char *why = gate_glob_check(pattern), *c;

        if (why)
                return why;
        if (pattern[0] != '/' && pattern[0] != '*')
                return "never matches: paths are checked absolute (start it with / or **; ~ is not expanded)";
        if (streq(pattern, "/"))
                return NULL;
        /* Each component between slashes: none empty ("//", a trailing "/"), none "." or "..". */
        for (c = pattern + (pattern[0] == '/'); ; ) {
                size_t n = strcspn(c, "/");

                if (n == 0)
                        return c[0] == 0 ? "never matches: paths are checked without a trailing / (end it with /** for "
                                           "what is below a directory)" :
                                           "never matches: paths are checked clean, without //";
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return "never matches: paths are checked clean, without . or .. components";
                if (c[n] == 0)
                        return NULL;
                c += n + 1;
        }
}

enum {
        GLOB_MATCH,
        GLOB_NOMATCH,
        GLOB_ABORT_ALL,                 /* the text ran out under a star: no outer star can do better */
        GLOB_ABORT_TO_STARSTAR,         /* a "*" met a '/': only an outer "**" can still help */
        GLOB_OVER_BUDGET,               /* too much backtracking: the automaton decides */
};

#define GLOB_BACKTRACK_STEPS_MAX 16384U /* pattern bytes compared; the usual patterns take a few hundred */

/* The wildmatch idea (as in rsync and git): a star that has tried every position up to the end of the
 * text tells the stars around it to stop. That is fast for the usual patterns, but not bounded: every
 * zero-width "/" "**" component doubles the work, and long runs of stars and '?' take long too
 * (fuzz-gate-glob found inputs taking seconds). Hence the budget of steps. */
static int glob_match_at(const char *p, const char *t, unsigned *budget) {
        for (;; p++, t++) {
                if (*budget == 0)
                        return GLOB_OVER_BUDGET;
                (*budget)--;
                switch (*p) {
                case 0:
                        return *t ? GLOB_NOMATCH : GLOB_MATCH;

                case '/':
                        /* A "**" component after this '/' may stand for no component at all. */
                        if (p[1] == '*' && p[2] == '*' && (p[3] == '/' || p[3] == 0)) {
                                int r = glob_match_at(p + 3, t, budget);
                                if (r == GLOB_MATCH || r == GLOB_OVER_BUDGET)
                                        return r;
                        }
                        if (*t != '/')
                                return GLOB_NOMATCH;
                        break;

                case '?':
                        if (!*t || *t == '/')
                                return GLOB_NOMATCH;
                        break;

                case '[': {
                        bool m = false;
                        const char *e = glob_bracket(p, *t, &m);
                        if (!e) {               /* not a class: a literal '[' (compile refuses these) */
                                if (*t != '[')
                                        return GLOB_NOMATCH;
                                break;
                        }
                        if (!*t || *t == '/' || !m)
                                return GLOB_NOMATCH;
                        p = e - 1;
                        break;
                }

                case '*': {
                        bool cross = p[1] == '*';

                        while (*p == '*')
                                p++;
                        if (!*p)
                                return cross || !strchr(t, '/') ? GLOB_MATCH : GLOB_NOMATCH;
                        for (;;) {
                                int r = glob_match_at(p, t, budget);
                                if (r != GLOB_NOMATCH && (!cross || r != GLOB_ABORT_TO_STARSTAR))
                                        return r;
                                if (!*t)
                                        return GLOB_ABORT_ALL;
                                if (!cross && *t == '/')
                                        return GLOB_ABORT_TO_STARSTAR;
                                t++;
                        }
                }

                case '\\':
                        if (p[1])
                                p++;
                        __attribute__((fallthrough));
                default:
                        if (*t != *p)
                                return GLOB_NOMATCH;
                        break;
                }
        }
}

/* The same answers from a nondeterministic automaton run over the path one byte at a time: the states are
 * positions in the pattern, a set of them is carried along (a bitset), so a match costs at most pattern
 * length x path length steps, whatever the stars. The backtracking matcher above is about twice as fast
 * on the usual patterns; this one decides where that one runs out of budget.
 *
 * A position holds one element: a plain byte, '?', a bracket expression, an escape, a '/' or a run of
 * stars (entered only at its first star; two or more cross '/'). Besides what it consumes, a position may
 * stand for nothing: a run of stars, and a '/' before a "**" component ('/' "**" then '/' or the end). */

typedef struct GlobStates {
        uint64_t bits[(GATE_GLOB_PATTERN_MAX + 1 + 63) / 64];
} GlobStates;

static void states_add(GlobStates *s, const char *p, size_t i) {
        for (;;) {
                size_t j;

                if (s->bits[i / 64] & (UINT64_C(1) << (i % 64)))
                        return;
                s->bits[i / 64] |= UINT64_C(1) << (i % 64);
                if (p[i] == '*') {
                        for (j = i; p[j] == '*'; j++)
                                ;
                        i = j;
                } else if (p[i] == '/' && p[i + 1] == '*' && p[i + 2] == '*' && (p[i + 3] == '/' || p[i + 3] == 0))
                        i += 3;
                else
                        return;
        }
}

/* Where position i goes when it consumes c (not NUL), or SIZE_MAX when it cannot. */
static size_t glob_step(const char *p, size_t i, char c) {
        switch (p[i]) {
        case 0:
                return SIZE_MAX;
        case '*':
                return p[i + 1] == '*' || c != '/' ? i : SIZE_MAX;
        case '?':
                return c != '/' ? i + 1 : SIZE_MAX;
        case '[': {
                bool m = false;
                const char *e = glob_bracket(p + i, c, &m);
                if (!e)                 /* not a class: a literal '[' (compile refuses these) */
                        return c == '[' ? i + 1 : SIZE_MAX;
                return c != '/' && m ? (size_t) (e - p) : SIZE_MAX;
        }
        case '\\':
                if (p[i + 1])
                        return c == p[i + 1] ? i + 2 : SIZE_MAX;
                return c == '\\' ? i + 1 : SIZE_MAX;
        default:
                return c == p[i] ? i + 1 : SIZE_MAX;
        }
}

bool gate_glob_match_automaton(const char *pattern, const char *path) {
        GlobStates a = {}, b, *cur = &a, *next = &b;
        size_t n, words;

        if (!pattern || !path)
                return false;
        n = strlen(pattern);
        if (n > GATE_GLOB_PATTERN_MAX)
                return false;
        words = n / 64 + 1;
        states_add(cur, pattern, 0);
        for (const char *t = path; *t; t++) {
                bool any = false;

                memset(next->bits, 0, words * sizeof(uint64_t));
                for (size_t w = 0; w < words; w++)
                        for (uint64_t bits = cur->bits[w]; bits; bits &= bits - 1) {
                                size_t i = w * 64 + (size_t) __builtin_ctzll(bits), j = glob_step(pattern, i, *t);
                                if (j != SIZE_MAX) {
                                        states_add(next, pattern, j);
                                        any = true;
                                }
                        }
                if (!any)
                        return false;
                {
                        GlobStates *x = cur;
                        cur = next;
                        next = x;
                }
        }
        return cur->bits[n / 64] & (UINT64_C(1) << (n % 64));
}

bool gate_glob_match(const char *pattern, const char *path) {
        unsigned budget = GLOB_BACKTRACK_STEPS_MAX;
        int r;

        if (!pattern || !path)
                return false;
        r = glob_match_at(pattern, path, &budget);
        if (r == GLOB_OVER_BUDGET)
                return gate_glob_match_automaton(pattern, path);
        return r == GLOB_MATCH;
}

/* The longest run of plain characters of pattern; a '/' that may stand for nothing (before "**") ends
 * a run. *ret is NULL when there is none worth a strstr(). */
static int glob_literal(const char *pattern, char **ret) {
        const char *best = NULL, *run = NULL;
        size_t best_len = 0;

        for (const char *p = pattern;; p++) {
                bool plain = *p && !strchr("*?[\\", *p) && !(p[0] == '/' && p[1] == '*' && p[2] == '*');

                if (plain && !run)
                        run = p;
                if (!plain && run) {
                        if ((size_t) (p - run) > best_len) {
                                best = run;
                                best_len = (size_t) (p - run);
                        }
                        run = NULL;
                }
                if (!*p)
                        break;
                if (*p == '\\' && p[1])
                        p++;
                else if (*p == '[') {
                        bool m;
                        const char *e = glob_bracket(p, 'a', &m);
                        if (e)
                                p = e - 1;
                }
        }
        *ret = NULL;
        if (best_len < 2)
                return 0;
        *ret = strndup(best, best_len);
        return *ret ? 0 : -ENOMEM;
}

/* The plain characters a pattern starts and ends with, which every path it matches starts and ends with:
 * most rules are then refused by two comparisons. The prefix ends at the first wildcard, and before a '/'
 * that a star follows (a "**" after "/etc/" may stand for nothing: it matches "/etc" too); the suffix
 * starts after the last wildcard (a star, a '?' or a bracket expression). A pattern with escapes gets
 * neither. */
static void glob_ends(const char *pattern, size_t *ret_prefix, size_t *ret_suffix) {
        size_t n = strlen(pattern), prefix = n, wild_end = 0;

        *ret_prefix = *ret_suffix = 0;
        if (strchr(pattern, '\\'))
                return;
        for (size_t i = 0; i < n; i++) {
                bool m;

                if (pattern[i] == '*' || pattern[i] == '?' || (pattern[i] == '/' && pattern[i + 1] == '*'))
                        prefix = MIN(prefix, i);
                if (pattern[i] == '*' || pattern[i] == '?')
                        wild_end = i + 1;
                else if (pattern[i] == '[') {
                        const char *e = glob_bracket(pattern + i, 'a', &m);

                        prefix = MIN(prefix, i);
                        if (e) {
                                wild_end = (size_t) (e - pattern);
                                i = wild_end - 1;
                        }
                }
        }
        *ret_prefix = prefix;
        *ret_suffix = n - wild_end;
}

int gate_glob_compile(const char *pattern, GateGlob *ret) {
        _cleanup_free_ char *copy = strdup(pattern), *literal = NULL;
        size_t prefix, suffix;

        if (!copy)
                return -ENOMEM;
        /* Only a leading wildcard needs the hint: otherwise the first characters already decide. */
        if (strchr("*?[", pattern[0]) && glob_literal(pattern, &literal) < 0)
                return -ENOMEM;
        glob_ends(pattern, &prefix, &suffix);
        *ret = (GateGlob) {
                .plain = !strpbrk(pattern, "*?[\\"),
                .pattern = TAKE_PTR(copy),
                .literal = TAKE_PTR(literal),
                .prefix_len = prefix,
                .suffix_len = suffix,
        };
        return 0;
}

bool gate_glob_matches(const GateGlob *g, const char *path, size_t path_len) {
        if (g->plain)
                return streq(g->pattern, path);
        if (g->prefix_len > 0 && strncmp(path, g->pattern, g->prefix_len) != 0)
                return false;
        if (g->suffix_len > 0 &&
            (path_len < g->suffix_len ||
             memcmp(path + path_len - g->suffix_len, g->pattern + strlen(g->pattern) - g->suffix_len, g->suffix_len) != 0))
                return false;
        if (g->literal && !strstr(path, g->literal))
                return false;
        return gate_glob_match(g->pattern, path);
}

void gate_glob_done(GateGlob *g) {
        if (!g)
                return;
        g->pattern = mfree(g->pattern);
        g->literal = mfree(g->literal);
}

/* dir with glob characters escaped, followed by suffix. */
char *gate_glob_escape_join(const char *dir, const char *suffix) {
        size_t n = 0;
        char *s = malloc(strlen(dir) * 2 + strlen(suffix) + 1);

        if (!s)
                return NULL;
        for (const char *p = dir; *p; p++) {
                if (strchr("*?[]\\", *p))
                        s[n++] = '\\';
                s[n++] = *p;
        }
        strcpy(s + n, suffix);
        return s;
}
