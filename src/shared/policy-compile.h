/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the policy compilers of the gate (gate-policy) and the Docker proxy (dockerproxy-policy) share:
 * the first error, said with where it is ("http_rules[2].decision: ..."), and the fields every rule of
 * either has, checked the same way. */

#include <stddef.h>

#include "config.h"
#include "json-util.h"
#include "macro.h"

typedef struct PolicyCompiler {
        char *error;                    /* the first error; the caller frees it */
} PolicyCompiler;

/* s in double quotes for an error message, control bytes, quotes and backslashes escaped, cut with "..."
 * to fit size (at least 16). */
const char *policy_quote(const char *s, char *buf, size_t size);
#define POLICY_QUOTE(s) policy_quote((s), (char[96]) {}, 96)

/* Keeps the first error and returns -EINVAL (-ENOMEM when it cannot be said). */
_printf_(2, 3)
int policy_compile_fail(PolicyCompiler *c, const char *format, ...);

/* The rule's "decision": allow, deny or approve, required. */
int policy_compile_decision(PolicyCompiler *c, json_object *o, const char *where, Decision *ret);
/* The rule's "message": a string, or absent or null (*ret NULL). */
int policy_compile_message(PolicyCompiler *c, json_object *o, const char *where, char **ret);
/* The array of strings (none with a NUL) at key: absent or null is empty; *ret_array is NULL when empty,
 * else borrowed from o. */
int policy_compile_strings(PolicyCompiler *c, json_object *o, const char *where, const char *key,
                           json_object **ret_array, size_t *ret_n);
