/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Lexical path handling, one behaviour for all of loop. Nothing here touches the file system: symlinks
 * are the business of whoever opens the path (openat2 RESOLVE_*, realpath). A clean path is absolute,
 * has no "//", no "." or ".." component and no trailing '/' (but "/" itself). */

#include <stdbool.h>
#include <stddef.h>

static inline bool path_is_absolute(const char *p) {
        return p && p[0] == '/';
}

/* The last component: what follows the last '/' (all of s when there is none; "" after a trailing '/'). */
const char *path_basename(const char *s);

/* Lexical cleaning of an absolute path: "//", "/./", "/x/../" removed, ".." at the root stays at the
 * root, no trailing '/'. Returns a new string, or NULL with errno ENOMEM, or EINVAL when path is NULL
 * or not absolute. */
char *path_clean(const char *path);
/* The same in place (path must be absolute; it never grows). Returns path. */
char *path_simplify(char *path);
/* dir + "/" + rel, cleaned (dir absolute). NULL on ENOMEM. */
char *path_join_clean(const char *dir, const char *rel);

/* The building blocks, for callers that clean into a buffer of their own (a hot path keeping short paths
 * on the stack): path_clean_push() appends the components of s to buf[0..*n), cleaned, and needs room
 * for *n + strlen(s) + 1 bytes; path_clean_finish() terminates (needs room for n + 2 bytes). Pushing an
 * absolute base and then a relative path makes the relative path absolute against the base. */
void path_clean_push(char *buf, size_t *n, const char *s);
void path_clean_finish(char *buf, size_t n);

/* Cleans path (made absolute against base when relative) into *ret_buf, which is stack (of stack_size
 * bytes) unless the result may not fit; then *ret_heap owns a new buffer (else it is set to NULL).
 * -EINVAL when path is relative and base is not absolute; -ENOMEM. */
int path_resolve_clean(const char *base, const char *path, char *stack, size_t stack_size,
                       char **ret_buf, char **ret_heap);

/* Whether path equals dir or lies below it, component-wise ("/ab" is not inside "/a"). Both should be
 * clean (the answer is lexical). "/" contains every absolute path; a relative path is inside nothing
 * absolute. */
bool path_is_inside(const char *path, const char *dir);
