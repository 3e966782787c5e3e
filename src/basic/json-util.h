/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* json-c helpers: the cleanup function, and building objects without leaking on a failed step. Every
 * adder takes ownership of the value it is given, also when it fails, and takes a NULL value (what a
 * json_object_new_*() returns out of memory) as -ENOMEM, so a chain of adds needs one check at its end. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

static inline void json_object_putp(json_object **j) {
        if (*j)
                (void) json_object_put(*j);
}

/* Adds v to the object o under key (replacing an earlier value); 0 or -ENOMEM. */
int json_add(json_object *o, const char *key, json_object *v);
/* Adds a copy of s under key, or JSON null for a NULL s; 0 or -ENOMEM. */
int json_add_string_or_null(json_object *o, const char *key, const char *s);
/* Appends v to the array a; 0 or -ENOMEM. */
int json_push(json_object *a, json_object *v);
/* A new array of strings: n of them from l, or up to l's NULL with n == SIZE_MAX (l NULL: an empty
 * array). NULL when out of memory. */
json_object *json_strings_new(const char * const *l, size_t n);
/* A deep copy of o (NULL: NULL), or NULL when out of memory. */
json_object *json_copy(json_object *o);

/* Prints o (json_object_to_json_string_ext() with flags) and a newline to f for a human's terminal: what
 * a sender or an agent wrote into its strings cannot act on the terminal (text_escape_json()). Flushes f.
 * 0, -ENOMEM, or -EIO when f fails. */
int json_print(FILE *f, json_object *o, int flags);

/* Where untrusted text stopped being what json_parse_untrusted() takes. */
typedef struct JsonParseError {
        enum json_tokener_error error;  /* json-c's; json_tokener_continue: the text ended inside the value */
        size_t offset;                  /* the byte where it went wrong */
        bool trailing;                  /* a whole value, then more than blanks */
} JsonParseError;

/* One JSON value from untrusted text, whole: at most size_max bytes (-EFBIG, and never more than json-c
 * takes), no NUL byte (-EILSEQ), nested at most depth_max deep, valid UTF-8, strict (json-c's
 * JSON_TOKENER_STRICT) when asked, and nothing after the value but blanks (" \t\r\n"); a bare null is
 * no value. -EBADMSG for anything else, with where and why in *ret_error (may be NULL); -ENOMEM. */
int json_parse_untrusted(const char *text, size_t size, size_t size_max, int depth_max, bool strict,
                         json_object **ret, JsonParseError *ret_error);

/* Whether v holds nothing: null, false, 0, "", [] or {}. strict is for a field a caller may not set, where
 * only what certainly sets nothing passes: a double is always a value (0.0 may be read as something), and
 * an array is nothing when each of its elements is (strictly) nothing. */
bool json_value_is_empty(json_object *v, bool strict);
