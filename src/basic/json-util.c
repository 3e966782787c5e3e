/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "text-escape.h"

int json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_add_string_or_null(json_object *o, const char *key, const char *s) {
        if (!s)
                return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
        return json_add(o, key, json_object_new_string(s));
}

int json_print(FILE *f, json_object *o, int flags) {
        _cleanup_free_ char *safe = NULL;
        const char *text = json_object_to_json_string_ext(o, flags);

        if (!text)
                return -ENOMEM;
        safe = text_escape_json(text);
        if (!safe)
                return -ENOMEM;
        if (fputs(safe, f) == EOF || fputc('\n', f) == EOF || fflush(f) == EOF)
                return -EIO;
        return 0;
}

int json_push(json_object *a, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

json_object *json_strings_new(const char * const *l, size_t n) {
        json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; l && i < n && (n != SIZE_MAX || l[i]); i++)
                if (json_push(a, json_object_new_string(l[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

json_object *json_copy(json_object *o) {
        json_object *c = NULL;

        if (!o)
                return NULL;
        if (json_object_deep_copy(o, &c, NULL) < 0)
                return NULL;
        return c;
}

int json_parse_untrusted(const char *text, size_t size, size_t size_max, int depth_max, bool strict,
                         json_object **ret, JsonParseError *ret_error) {
        json_object *o;
        json_tokener *tok;
        JsonParseError err = {};
        size_t end;

        if (size > size_max || size > INT_MAX)
                return -EFBIG;
        if (memchr(text, 0, size))
                return -EILSEQ;
        tok = json_tokener_new_ex(depth_max);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8 | (strict ? JSON_TOKENER_STRICT : 0));
        o = json_tokener_parse_ex(tok, text, (int) size);
        err.error = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);

        if (err.error == json_tokener_success && !o)
                err.error = json_tokener_error_parse_unexpected;        /* a bare null: no value to take */
        if (err.error == json_tokener_success)
                for (size_t i = end; i < size; i++)
                        if (!strchr(" \t\r\n", text[i])) {
                                err = (JsonParseError) { json_tokener_error_parse_unexpected, i, true };
                                break;
                        }
        if (err.error != json_tokener_success) {
                json_object_put(o);
                if (!err.trailing)
                        err.offset = end;
                if (ret_error)
                        *ret_error = err;
                return -EBADMSG;
        }
        *ret = o;
        return 0;
}

bool json_value_is_empty(json_object *v, bool strict) {
        switch (json_object_get_type(v)) {
        case json_type_null:
                return true;
        case json_type_boolean:
                return !json_object_get_boolean(v);
        case json_type_int:
                return json_object_get_int64(v) == 0;
        case json_type_double:
                return !strict && json_object_get_double(v) == 0;
        case json_type_string:
                return json_object_get_string_len(v) == 0;
        case json_type_array:
                if (!strict)
                        return json_object_array_length(v) == 0;
                for (size_t i = 0; i < json_object_array_length(v); i++)
                        if (!json_value_is_empty(json_object_array_get_idx(v, i), true))
                                return false;
                return true;
        case json_type_object:
                return json_object_object_length(v) == 0;
        }
        return false;
}
