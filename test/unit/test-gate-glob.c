/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The gate's globs as a module: which patterns are valid, the compiled form deciding exactly as the
 * matcher does, escaping a directory into a pattern. The matcher's own specification (against a naive
 * backtracking matcher) is in test-gate-policy. */

#include "gate-glob.h"
#include "macro.h"
#include "tap.h"

static void check_is(const char *pattern, const char *want) {
        is_str(gate_glob_check(pattern), want, "glob %s is %s", pattern, want ?: "valid");
}

static void test_check(void) {
        check_is("/a/**", NULL);
        check_is("/x/[[:digit:]]", NULL);
        check_is("/a/\\*", NULL);
        check_is("", "empty pattern");
        check_is(NULL, "empty pattern");
        check_is("/a\\", "invalid glob (trailing '\\')");
        check_is("/a/[bc", "invalid glob (unclosed '[')");
        check_is("/a/[[:nope:]]", "invalid glob (unclosed '[')");
}

static void test_compiled_agrees(void) {
        static const char * const parts[] = { "a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "/**/", "/**", "\\*", ".c" };
        static const char * const texts[] = { "a", "b", "/", "*", ".c", "ab" };
        unsigned seed = 4242, disagree = 0, compiled = 0;

        for (unsigned i = 0; i < 20000; i++) {
                char pattern[80] = "", text[40] = "";
                size_t np = 1 + rand_r(&seed) % 6, nt = rand_r(&seed) % 8;
                GateGlob g;

                for (size_t k = 0; k < np; k++)
                        strcat(pattern, parts[rand_r(&seed) % ELEMENTSOF(parts)]);
                for (size_t k = 0; k < nt; k++)
                        strcat(text, texts[rand_r(&seed) % ELEMENTSOF(texts)]);
                if (gate_glob_check(pattern) || gate_glob_compile(pattern, &g) < 0)
                        continue;
                compiled++;
                if (gate_glob_matches(&g, text, strlen(text)) != gate_glob_match(pattern, text) && disagree++ < 5)
                        printf("#   disagree: pattern %s text %s\n", pattern, text);
                gate_glob_done(&g);
        }
        ok(compiled > 10000 && disagree == 0,
           "a compiled glob decides as the matcher on %u random patterns and texts", compiled);

        GateGlob g;
        ok(gate_glob_compile("/etc/passwd", &g) == 0 && g.plain && gate_glob_matches(&g, "/etc/passwd", 11) &&
           !gate_glob_matches(&g, "/etc/passwdx", 12), "a pattern without wildcards compiles to a plain comparison");
        gate_glob_done(&g);
        ok(g.pattern == NULL && g.literal == NULL, "gate_glob_done() releases the compiled pattern");
        ok(gate_glob_compile("**/.ssh/**", &g) == 0 && g.literal && streq(g.literal, "/.ssh") &&
           gate_glob_matches(&g, "/home/u/.ssh/id", 15), "a leading wildcard keeps a literal run every match contains");
        gate_glob_done(&g);
}

/* Both matchers give the same answers: the backtracking one and the automaton it falls back to. */
static void test_matchers_agree(void) {
        static const char * const parts[] = { "a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "/**/", "/**", "\\*", "[" };
        static const char * const texts[] = { "a", "b", "/", "*", "[", "ab" };
        unsigned seed = 777, disagree = 0;

        for (unsigned i = 0; i < 30000; i++) {
                char pattern[80] = "", text[40] = "";
                size_t np = 1 + rand_r(&seed) % 7, nt = rand_r(&seed) % 9;

                for (size_t k = 0; k < np; k++)
                        strcat(pattern, parts[rand_r(&seed) % ELEMENTSOF(parts)]);
                for (size_t k = 0; k < nt; k++)
                        strcat(text, texts[rand_r(&seed) % ELEMENTSOF(texts)]);
                if (gate_glob_match_automaton(pattern, text) != gate_glob_match(pattern, text) && disagree++ < 5)
                        printf("#   disagree: pattern %s text %s\n", pattern, text);
        }
        ok(disagree == 0, "the automaton and the backtracking matcher agree on 30000 random cases");
}

/* Every zero-width component doubled a backtracking matcher's work: 12 took it seconds, these 40 would take
 * it longer than the test's timeout (no timing assertion: test/bench measures speed). */
static void test_zero_width_components(void) {
        char pattern[512] = "", path[1024] = "";

        for (unsigned i = 0; i < 40; i++)
                strcat(pattern, "/**/**");
        strcat(pattern, "/x");
        for (unsigned i = 0; i < 200; i++)
                strcat(path, "/a");
        ok(!gate_glob_match(pattern, path), "a pattern of 80 zero-width components against 200 components does not match");
        strcat(path, "/x");
        ok(gate_glob_match(pattern, path), "and matches once the path ends in /x");

        char *long_pattern = malloc(GATE_GLOB_PATTERN_MAX + 16);
        if (!long_pattern)
                abort();
        strcpy(long_pattern, "/**/**/");
        memset(long_pattern + 7, 'a', GATE_GLOB_PATTERN_MAX);
        long_pattern[GATE_GLOB_PATTERN_MAX + 7] = 0;
        is_str(gate_glob_check(long_pattern), "pattern too long", "a pattern beyond GATE_GLOB_PATTERN_MAX is refused");
        long_pattern[GATE_GLOB_PATTERN_MAX] = 0;
        ok(!gate_glob_check(long_pattern), "a pattern of GATE_GLOB_PATTERN_MAX bytes is not");
        free(long_pattern);
}

static void test_escape_join(void) {
        _cleanup_free_ char *a = gate_glob_escape_join("/w/[x]*?\\", "/**"), *b = gate_glob_escape_join("/plain", "");

        is_str(a, "/w/\\[x\\]\\*\\?\\\\/**", "glob characters of the directory are escaped, the suffix is not");
        ok(a && gate_glob_match(a, "/w/[x]*?\\/f") && !gate_glob_match(a, "/w/x-y\\/f"),
           "an escaped directory matches only itself");
        is_str(b, "/plain", "a plain directory stays as it is");
}

int main(void) {
        test_check();
        test_compiled_agrees();
        test_matchers_agree();
        test_zero_width_components();
        test_escape_join();
        return done_testing();
}
