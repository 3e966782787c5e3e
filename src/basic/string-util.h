/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Strings beyond the small inlines of macro.h (streq(), startswith(), ...). */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* The start of suffix in s when s ends with it, else NULL. */
const char *endswith(const char *s, const char *suffix);
/* s with A-Z turned into a-z in place, whatever the locale, and returned (NULL stays NULL, so that
 * ascii_strlower(strdup(x)) needs one check). */
char *ascii_strlower(char *s);
/* Whether a and b are equal ignoring the case of A-Z, whatever the locale. */
bool ascii_strcaseeq(const char *a, const char *b);
/* Replaces *dst with a copy of src (NULL allowed); -ENOMEM leaves *dst as it was. */
int free_and_strdup(char **dst, const char *src);
/* Whether the comma-separated list[0..n) (n == SIZE_MAX: up to its NUL; NULL: empty) has word as one of
 * its elements, exactly: no blanks around elements, case counts (mount options: "rw,ro,nosuid"). */
bool comma_list_contains(const char *list, size_t n, const char *word);
/* A new copy of s with every occurrence of what (not empty) replaced by with, left to right, a
 * replacement never matched again; NULL when out of memory. An empty what gives a copy of s. */
char *str_replace_all(const char *s, const char *what, const char *with);
/* Whether s is 1..max characters of [A-Za-z0-9_.-] not starting with "." or "-": a name as the engines
 * take it for a container, a network or a volume, which can never be read as a path or an option. */
bool ref_name_is_valid(const char *s, size_t max);

/* The index of s in table[0..n) (NULL entries skipped), or -EINVAL when it is not there or s is NULL: the
 * _from_string() of an enum with a name table. */
int string_table_lookup(const char * const *table, size_t n, const char *s);

/* vasprintf() by our conventions: 0 and the new string in *ret, or -ENOMEM with *ret untouched (vasprintf()
 * leaves it undefined). errno is not changed before the format is read, so %m names the caller's errno. */
int strprintf_va(char **ret, const char *format, va_list ap) __attribute__((format(printf, 2, 0)));
int strprintf(char **ret, const char *format, ...) __attribute__((format(printf, 2, 3)));
