/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* NULL-terminated string arrays. */

#include <stdbool.h>
#include <stddef.h>

char **strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))

size_t strv_length(char * const *l);
int strv_extend(char ***l, const char *value);          /* append a copy */
int strv_consume(char ***l, char *value);               /* append, taking ownership (freed on error) */
bool strv_contains(char * const *l, const char *s);
char *strv_join(char * const *l, const char *sep);
int strv_sort(char **l);

#define STRV_FOREACH(s, l) for (char * const *s = (l); s && *s; s++)
