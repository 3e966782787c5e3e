/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>

#include "json-util.h"

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
