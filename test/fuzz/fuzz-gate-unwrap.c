/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: exec-wrapper unwrapping (gate-unwrap.h) and the exec checks of the default policy,
 * on an argv from inside the container. The input is the argv's words separated by NUL bytes. */

#include <stdint.h>

#include "gate-policy.h"
#include "gate-unwrap.h"
#include "strv.h"

#define FUZZ_ARGV_MAX 256U
#define FUZZ_INPUT_BYTES_MAX (1024U * 1024U)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_readings(char * const *argv, bool primary) {
        GateUnwrap u;

        gate_unwrap_all(&u, argv, primary);
        if (u.error >= 0) {
                if (u.n == 0 || u.n > GATE_UNWRAP_CANDIDATES_MAX)
                        abort();
                for (size_t i = 0; i < u.n; i++) {
                        const GateUnwrapCandidate *c = &u.items[i];
                        /* Split words come in segments separated by NULL: only the caller's argv has a length. */
                        if (!c->argv || (c->argv == argv && c->index > strv_length(argv)))
                                abort();
                        if (c->argv[c->index] && strlen(c->argv[c->index]) > FUZZ_INPUT_BYTES_MAX)
                                abort();        /* reads the word: ASan sees a reading out of bounds */
                }
        } else if (u.error != -E2BIG && u.error != -ELOOP && u.error != -ENOMEM)
                abort();
        if (primary && u.error >= 0 && u.n != 1)
                abort();
        gate_unwrap_done(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static GatePolicy *policy = NULL;
        _cleanup_free_ char *text = NULL;
        char *argv[FUZZ_ARGV_MAX + 1];
        size_t n = 0, index;
        GateVerdict v;

        if (!policy) {
                _cleanup_(json_object_putp) json_object *doc = NULL;
                if (gate_policy_document_home(NULL, "/work", "/home/agent", &doc) < 0 ||
                    gate_policy_compile(doc, &policy, NULL) < 0)
                        abort();
        }

        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        for (char *p = text; n < FUZZ_ARGV_MAX && p <= text + size; p += strlen(p) + 1)
                argv[n++] = p;
        argv[n] = NULL;

        check_readings(argv, false);
        check_readings(argv, true);
        index = gate_unwrap_argv(argv);
        if (index > n)
                abort();

        gate_policy_check_exec(policy, argv, "/work/sub", &v);
        if (v.decision < 0 || v.decision >= _DECISION_MAX)
                abort();
        gate_policy_check_execve(policy, "/usr/bin/env", argv, NULL, &v);
        if (v.decision < 0 || v.decision >= _DECISION_MAX)
                abort();
        /* The gate's promise: wrapping a command never makes its check less strict. ("env --" makes the
         * next word the command unless it has a '=': env reads that as an assignment.) */
        if (index < n && !strchr(argv[index], '=')) {
                char *wrapped[FUZZ_ARGV_MAX + 3] = { (char *) "env", (char *) "--" };
                GateVerdict plain;

                memcpy(wrapped + 2, argv + index, (n - index + 1) * sizeof(char *));
                gate_policy_check_exec(policy, argv + index, "/work/sub", &plain);
                gate_policy_check_exec(policy, wrapped, "/work/sub", &v);
                if (plain.decision == DECISION_DENY && v.decision != DECISION_DENY)
                        abort();
        }
        return 0;
}
