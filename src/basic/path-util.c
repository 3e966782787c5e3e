/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path-util.h"

const char *path_basename(const char *s) {
        const char *b = strrchr(s, '/');
        return b ? b + 1 : s;
}

/* In place (buf == s) this is safe: the output never overtakes the input, since every component written
 * was preceded by at least one '/' that was read; hence memmove(). */
void path_clean_push(char *buf, size_t *n, const char *s) {
        while (*s) {
                size_t l;

                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                l = strcspn(s, "/");
                if (l == 1 && s[0] == '.')
                        ;
                else if (l == 2 && s[0] == '.' && s[1] == '.') {
                        while (*n > 0 && buf[*n - 1] != '/')
                                (*n)--;
                        if (*n > 0)
                                (*n)--;
                } else {
                        buf[(*n)++] = '/';
                        memmove(buf + *n, s, l);
                        *n += l;
                }
                s += l;
        }
}

void path_clean_finish(char *buf, size_t n) {
        if (n == 0)
                buf[n++] = '/';
        buf[n] = 0;
}

char *path_clean(const char *path) {
        char *buf;
        size_t n = 0;

        if (!path_is_absolute(path)) {
                errno = EINVAL;
                return NULL;
        }
        buf = malloc(strlen(path) + 2);
        if (!buf)
                return NULL;
        path_clean_push(buf, &n, path);
        path_clean_finish(buf, n);
        return buf;
}

char *path_simplify(char *path) {
        size_t n = 0;

        assert(path_is_absolute(path));        /* relative, the first '/' written would overwrite input */
        path_clean_push(path, &n, path);
        path_clean_finish(path, n);
        return path;
}

char *path_join_clean(const char *dir, const char *rel) {
        char *p;

        assert(path_is_absolute(dir));
        if (asprintf(&p, "%s/%s", dir, rel) < 0)
                return NULL;
        return path_simplify(p);
}

int path_resolve_clean(const char *base, const char *path, char *stack, size_t stack_size,
                       char **ret_buf, char **ret_heap) {
        bool relative = path[0] != '/';
        size_t need = strlen(path) + 2 + (relative ? strlen(base ?: "") + 1 : 0), n = 0;
        char *buf = stack;

        if (relative && !path_is_absolute(base))
                return -EINVAL;
        *ret_heap = NULL;
        if (need > stack_size) {
                buf = *ret_heap = malloc(need);
                if (!buf)
                        return -ENOMEM;
        }
        if (relative)
                path_clean_push(buf, &n, base);
        path_clean_push(buf, &n, path);
        path_clean_finish(buf, n);
        *ret_buf = buf;
        return 0;
}

bool path_is_inside(const char *path, const char *dir) {
        size_t n = strlen(dir);

        if (n == 1 && dir[0] == '/')
                return path_is_absolute(path);
        return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}
