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
        test_escape_join();
        return done_testing();
}
