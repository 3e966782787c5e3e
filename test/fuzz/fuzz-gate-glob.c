/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the gate's globs (gate-glob.h) and lexical path cleaning (path-util.h). The input is
 * a pattern, a NUL byte, and a subject (a path or a command name from inside the container). */

#include <stdint.h>

#include "gate-glob.h"
#include "macro.h"
#include "path-util.h"
#include "string-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *s) {
        _cleanup_free_ char *clean = path_clean(s), *again = NULL, *copy = NULL;

        if (!path_is_absolute(s)) {
                if (clean)
                        abort();
                return;
        }
        if (!clean)
                return;         /* ENOMEM */
        again = path_clean(clean);
        copy = strdup(s);
        if (!again || !copy)
                return;
        if (!streq(again, clean) || !streq(path_simplify(copy), clean))
                abort();        /* cleaning is idempotent and in place gives the same answer */
        if (strstr(clean, "//") || strstr(clean, "/./") || strstr(clean, "/../") ||
            (!streq(clean, "/") && (endswith(clean, "/") || endswith(clean, "/.") || endswith(clean, "/.."))))
                abort();
        if (!path_is_inside(clean, "/") || !path_is_inside(clean, clean))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL;
        const char *pattern, *subject;
        GateGlob g;
        bool m;

        text = malloc(size + 2);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = text[size + 1] = 0;
        pattern = text;
        subject = memchr(text, 0, size) ? text + strlen(text) + 1 : text + size + 1;

        m = gate_glob_match(pattern, subject);         /* any pattern, valid or not, must not crash */
        if (strlen(pattern) <= GATE_GLOB_PATTERN_MAX && gate_glob_match_automaton(pattern, subject) != m)
                abort();        /* the two matchers agree */
        if (!gate_glob_check(pattern)) {
                if (gate_glob_compile(pattern, &g) < 0)
                        return 0;
                if (gate_glob_matches(&g, subject, strlen(subject)) != m)
                        abort();        /* the compiled shortcuts decide as the matcher */
                gate_glob_done(&g);

                _cleanup_free_ char *escaped = gate_glob_escape_join(subject, "");
                if (escaped && !isempty(subject) && !gate_glob_match(escaped, subject))
                        abort();        /* an escaped name matches itself */
        }
        check_path(subject);
        return 0;
}
