/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The checks the gate's and the Docker proxy's policy compilers share. */

#include <errno.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "policy-compile.h"
#include "tap.h"

static json_object *doc(const char *text) {
        json_object *o = json_tokener_parse(text);
        if (!o)
                abort();
        return o;
}

int main(void) {
        _cleanup_(json_object_putp) json_object *good = doc("{\"decision\":\"approve\",\"message\":\"ask\",\"l\":[\"a\",\"b\"]}");
        _cleanup_(json_object_putp) json_object *bad = doc("{\"decision\":\"Deny\",\"message\":1,\"l\":[\"a\",2],\"s\":\"x\"}");
        _cleanup_(json_object_putp) json_object *none = doc("{\"message\":null,\"l\":null}");
        _cleanup_(json_object_putp) json_object *nul = json_object_new_object();
        PolicyCompiler c = {};
        json_object *a = NULL;
        char *m = NULL;
        Decision d;
        size_t n = 9;

        ok(policy_compile_decision(&c, good, "r[0]", &d) == 0 && d == DECISION_APPROVE, "a known decision is taken");
        ok(policy_compile_message(&c, good, "r[0]", &m) == 0 && streq_ptr(m, "ask"), "a message is taken");
        free(m);
        ok(policy_compile_strings(&c, good, "r[0]", "l", &a, &n) == 0 && a && n == 2, "an array of strings is taken");
        ok(!c.error, "and nothing is said");

        is_int(policy_compile_decision(&c, bad, "r[1]", &d), -EINVAL, "an unknown decision is refused");
        is_str(c.error, "r[1].decision: unknown decision \"Deny\" (allow, deny or approve)", "...saying where and what");
        is_int(policy_compile_message(&c, bad, "r[1]", &m), -EINVAL, "a message that is no string is refused");
        is_str(c.error, "r[1].decision: unknown decision \"Deny\" (allow, deny or approve)", "the first error is kept");
        c.error = mfree(c.error);
        is_int(policy_compile_strings(&c, bad, "r[1]", "l", &a, &n), -EINVAL, "an array with a number in it is refused");
        is_str(c.error, "r[1].l[1]: must be a string, not int", "...naming the element");
        c.error = mfree(c.error);
        is_int(policy_compile_strings(&c, bad, "r[1]", "s", &a, &n), -EINVAL, "a string where an array belongs is refused");
        is_str(c.error, "r[1].s: must be an array of strings, not string", "...naming the type");
        c.error = mfree(c.error);
        is_int(policy_compile_decision(&c, none, "r[2]", &d), -EINVAL, "a missing decision is refused");
        is_str(c.error, "r[2].decision: missing", "...as missing");
        c.error = mfree(c.error);
        ok(policy_compile_message(&c, none, "r[2]", &m) == 0 && !m, "a null message is none");
        ok(policy_compile_strings(&c, none, "r[2]", "l", &a, &n) == 0 && !a && n == 0, "a null array is empty");

        json_object_object_add(nul, "l", json_object_new_array());
        json_object_array_add(json_object_object_get(nul, "l"), json_object_new_string_len("a\0b", 3));
        is_int(policy_compile_strings(&c, nul, "r[3]", "l", &a, &n), -EINVAL, "a string with a NUL byte is refused");
        c.error = mfree(c.error);

        is_str(POLICY_QUOTE("a\"b\n"), "\"a\\\"b\\x0a\"", "a quoted value has its quotes and control bytes escaped");
        return done_testing();
}
