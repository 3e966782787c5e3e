/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "tap.h"

static const char *plain(json_object *o) {
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

int main(void) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(), *a = json_object_new_array();
        static const char * const l[] = { "a", "b", NULL };

        is_int(json_add(o, "k", json_object_new_int(1)), 0, "json_add() adds a value");
        is_int(json_add(o, "k", json_object_new_int(2)), 0, "json_add() replaces an earlier value");
        is_int(json_add(o, "n", NULL), -ENOMEM, "json_add() takes a NULL value (a failed constructor) as -ENOMEM");
        is_str(plain(o), "{\"k\":2}", "the object holds the last value and nothing of the failed add");
        {
                _cleanup_(json_object_putp) json_object *n = json_object_new_object();
                ok(json_add_string_or_null(n, "s", "v") == 0 && json_add_string_or_null(n, "z", NULL) == 0,
                   "json_add_string_or_null() adds a string and a null");
                is_str(plain(n), "{\"s\":\"v\",\"z\":null}", "as a string and as null");
        }

        is_int(json_push(a, json_object_new_string("x")), 0, "json_push() appends a value");
        is_int(json_push(a, NULL), -ENOMEM, "json_push() takes a NULL value as -ENOMEM");
        is_str(plain(a), "[\"x\"]", "the array holds what was pushed");

        _cleanup_(json_object_putp) json_object *s1 = json_strings_new(l, 1), *s2 = json_strings_new(l, SIZE_MAX),
                *s3 = json_strings_new(NULL, SIZE_MAX);
        is_str(plain(s1), "[\"a\"]", "json_strings_new() takes n strings");
        is_str(plain(s2), "[\"a\",\"b\"]", "json_strings_new() with SIZE_MAX stops at the NULL");
        is_str(plain(s3), "[]", "json_strings_new() of no list is an empty array");

        _cleanup_(json_object_putp) json_object *c = json_copy(o);
        ok(c && c != o && json_object_equal(c, o), "json_copy() makes an equal, separate object");
        ok(!json_copy(NULL), "json_copy() of NULL is NULL");

        {
                json_object *v = NULL;
                JsonParseError e = {};
                static const char nul[] = "{\"a\":\"x\0y\"}", deep[] = "[[[[1]]]]", bad_utf8[] = "\"\xc3\x28\"";

                ok(json_parse_untrusted(" {\"a\": [1, 2]}\n", 15, 64, 8, true, &v, NULL) == 0 &&
                   json_object_is_type(v, json_type_object), "json_parse_untrusted() takes one value with blanks around it");
                json_object_put(v);
                is_int(json_parse_untrusted("{\"a\":1}", 7, 6, 8, false, &v, NULL), -EFBIG, "text beyond size_max is refused");
                is_int(json_parse_untrusted(nul, sizeof nul - 1, 64, 8, false, &v, NULL), -EILSEQ, "a NUL byte is refused");
                is_int(json_parse_untrusted(deep, strlen(deep), 64, 3, false, &v, &e), -EBADMSG, "nesting beyond depth_max is refused");
                ok(e.error == json_tokener_error_depth, "...as too deep");
                is_int(json_parse_untrusted(bad_utf8, strlen(bad_utf8), 64, 8, false, &v, NULL), -EBADMSG, "invalid UTF-8 is refused");
                is_int(json_parse_untrusted("{} x", 4, 64, 8, false, &v, &e), -EBADMSG, "data after the value is refused");
                ok(e.trailing && e.offset == 3, "...as trailing, where it starts");
                is_int(json_parse_untrusted("{\"a\":", 5, 64, 8, false, &v, &e), -EBADMSG, "text that ends inside a value is refused");
                ok(e.error == json_tokener_continue && !e.trailing, "...as incomplete");
                is_int(json_parse_untrusted("  ", 2, 64, 8, false, &v, &e), -EBADMSG, "blanks alone are no value");
                is_int(json_parse_untrusted("null", 4, 64, 8, false, &v, &e), -EBADMSG, "nor is a bare null");
                is_int(json_parse_untrusted("[1,]", 4, 64, 8, true, &v, NULL), -EBADMSG, "strict: a trailing comma is refused");
                ok(json_parse_untrusted("[1,]", 4, 64, 8, false, &v, NULL) == 0, "not strict: json-c takes it");
                json_object_put(v);
        }
        {
                static const char * const empty[] = { "null", "false", "0", "\"\"", "[]", "{}" };
                static const char * const full[] = { "true", "1", "\"x\"", "[1]", "{\"a\":null}" };
                bool all = true;
                for (size_t i = 0; i < ELEMENTSOF(empty); i++) {
                        _cleanup_(json_object_putp) json_object *v = json_tokener_parse(empty[i]);
                        all = all && json_value_is_empty(v, false) && json_value_is_empty(v, true);
                }
                ok(all, "null, false, 0, \"\", [] and {} are empty, strictly too");
                all = true;
                for (size_t i = 0; i < ELEMENTSOF(full); i++) {
                        _cleanup_(json_object_putp) json_object *v = json_tokener_parse(full[i]);
                        all = all && !json_value_is_empty(v, false) && !json_value_is_empty(v, true);
                }
                ok(all, "true, 1, \"x\", [1] and {\"a\":null} are not");
                _cleanup_(json_object_putp) json_object *d = json_tokener_parse("0.0"), *arr = json_tokener_parse("[0,\"\",null]");
                ok(json_value_is_empty(d, false) && !json_value_is_empty(d, true), "0.0 is empty, but not strictly");
                ok(!json_value_is_empty(arr, false) && json_value_is_empty(arr, true), "an array of empty values is strictly empty only");
        }
        return done_testing();
}
