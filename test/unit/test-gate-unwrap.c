/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Exec-wrapper unwrapping as a module: every reading of an argv, and the caps that keep an argv from
 * inside the container cheap. The primary reading (gate_unwrap_argv()) and what the policy makes of the
 * readings are specified in test-gate-policy. */

#include "gate-unwrap.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

#define ARGV(...) ((char **) ((const char *[]) { __VA_ARGS__, NULL }))

/* The command of each reading, joined with ',' ("" for a reading past the end). */
static char *readings(char **argv, int *ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        GateUnwrap u;
        char *s;

        gate_unwrap_all(&u, argv, false);
        *ret_error = u.error;
        for (size_t i = 0; u.error >= 0 && i < u.n; i++)
                if (strv_extend(&names, u.items[i].argv[u.items[i].index] ?: "") < 0)
                        abort();
        gate_unwrap_done(&u);
        s = names ? strv_join(names, ",") : strdup("");
        if (!s)
                abort();
        return s;
}

static void readings_are(char **argv, const char *want, const char *what) {
        int error;
        _cleanup_free_ char *got = readings(argv, &error);
        is_str(error >= 0 ? got : NULL, want, "readings: %s", what);
}

static void test_readings(void) {
        readings_are(ARGV("rm", "-rf", "/"), "rm", "a plain command is its one reading");
        readings_are(ARGV("env", "-i", "A=1", "rm"), "rm", "env's options and assignments are not readings");
        readings_are(ARGV("script", "-c", "ls; rm -rf /", "log"), "ls,rm", "script -c: each simple command of the string");
        readings_are(ARGV("script", "-c", "A=1 exec rm x"), "rm", "script -c: assignments and exec are skipped");
        readings_are(ARGV("env", "-S", "nice rm -rf /"), "rm", "env -S: the split words are unwrapped again");
        readings_are(ARGV("sudo", "-h", "rm"), "sudo,rm",
                     "an option of unknown shape is read both ways (taking rm as its value: nothing runs but sudo)");
        readings_are(ARGV("env"), "env", "a bare wrapper is read as itself");
        readings_are(ARGV("script", "-c", ""), "script", "an empty command string leaves the wrapper");
        readings_are(NULL, "", "a NULL argv is one reading of \"\"");
}

static void test_caps(void) {
        _cleanup_strv_free_ char **many = NULL;
        _cleanup_free_ char *got = NULL;
        int error;

        /* sudo -h read both ways at every step doubles the readings. */
        if (strv_extend(&many, "sudo") < 0)
                abort();
        for (unsigned i = 0; i < 10; i++)
                if (strv_extend(&many, "-h") < 0 || strv_extend(&many, "sudo") < 0)
                        abort();
        if (strv_extend(&many, "rm") < 0)
                abort();
        got = readings(many, &error);
        ok(error == -E2BIG, "more readings than GATE_UNWRAP_CANDIDATES_MAX (or steps past the cap) are -E2BIG");

        {
                GateUnwrap u;
                char *deep[] = { (char *) "env", (char *) "-S", NULL, NULL };
                _cleanup_free_ char *s = strdup("rm");
                /* GATE_UNWRAP_DEPTH_MAX strings, each inside the one before (escaped), inside the argv's. */
                for (unsigned i = 0; i < GATE_UNWRAP_DEPTH_MAX; i++) {
                        char *next = malloc(strlen(s) * 2 + 16), *q;
                        if (!next)
                                abort();
                        q = stpcpy(next, "env -S ");
                        for (const char *c = s; *c; c++) {
                                if (*c == ' ' || *c == '\\')
                                        *q++ = '\\';
                                *q++ = *c;
                        }
                        *q = 0;
                        free(s);
                        s = next;
                }
                deep[2] = s;
                gate_unwrap_all(&u, deep, false);
                ok(u.error == -ELOOP, "env -S strings nested deeper than GATE_UNWRAP_DEPTH_MAX are -ELOOP");
                gate_unwrap_done(&u);
                ok(u.n_allocs == 0, "gate_unwrap_done() releases every split string");
        }
}

int main(void) {
        test_readings();
        test_caps();
        return done_testing();
}
