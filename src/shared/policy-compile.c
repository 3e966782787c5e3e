/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-compile.h"
#include "string-util.h"

int policy_compile_fail(PolicyCompiler *c, const char *format, ...) {
        va_list ap;
        int r;

        if (c->error)
                return -EINVAL;
        va_start(ap, format);
        r = strprintf_va(&c->error, format, ap);
        va_end(ap);
        return r < 0 ? r : -EINVAL;
}

static const char *type_name(json_object *o) {
        return json_type_to_name(json_object_get_type(o));
}

const char *policy_quote(const char *s, char *buf, size_t size) {
        size_t n = 0, i = 0;

        buf[n++] = '"';
        for (; s[i] && n + 8 < size; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        buf[n++] = '\\';
                        buf[n++] = (char) c;
                } else if (c < 0x20 || c == 0x7f)
                        n += (size_t) snprintf(buf + n, size - n, "\\x%02x", c);
                else
                        buf[n++] = (char) c;
        }
        if (s[i]) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n++] = '"';
        buf[n] = 0;
        return buf;
}

int policy_compile_decision(PolicyCompiler *c, json_object *o, const char *where, Decision *ret) {
        json_object *v;
        Decision d;

        if (!json_object_object_get_ex(o, "decision", &v))
                return policy_compile_fail(c, "%s.decision: missing", where);
        if (!json_object_is_type(v, json_type_string))
                return policy_compile_fail(c, "%s.decision: must be a string, not %s", where, type_name(v));
        d = decision_from_string(json_object_get_string(v));
        if (d < 0)
                return policy_compile_fail(c, "%s.decision: unknown decision %s (allow, deny or approve)", where,
                                           POLICY_QUOTE(json_object_get_string(v)));
        *ret = d;
        return 0;
}

int policy_compile_message(PolicyCompiler *c, json_object *o, const char *where, char **ret) {
        json_object *v;
        char *m;

        if (!json_object_object_get_ex(o, "message", &v) || json_object_is_type(v, json_type_null)) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return policy_compile_fail(c, "%s.message: must be a string, not %s", where, type_name(v));
        m = strdup(json_object_get_string(v));
        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

int policy_compile_strings(PolicyCompiler *c, json_object *o, const char *where, const char *key,
                           json_object **ret_array, size_t *ret_n) {
        json_object *v;
        size_t n;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
                *ret_array = NULL;
                *ret_n = 0;
                return 0;
        }
        if (!json_object_is_type(v, json_type_array))
                return policy_compile_fail(c, "%s.%s: must be an array of strings, not %s", where, key, type_name(v));
        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!json_object_is_type(e, json_type_string))
                        return policy_compile_fail(c, "%s.%s[%zu]: must be a string, not %s", where, key, i,
                                                   type_name(e));
                if (strlen(json_object_get_string(e)) != (size_t) json_object_get_string_len(e))
                        return policy_compile_fail(c, "%s.%s[%zu]: must not contain a NUL byte", where, key, i);
        }
        *ret_array = n > 0 ? v : NULL;
        *ret_n = n;
        return 0;
}
