/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **s = l; *s; s++)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char * const *l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

int strv_consume(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **c;

        if (!value)
                return -ENOMEM;
        c = realloc(*l, sizeof(char *) * (n + 2));
        if (!c) {
                free(value);
                return -ENOMEM;
        }
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *value) {
        return strv_consume(l, strdup(value));
}

bool strv_contains(char * const *l, const char *s) {
        STRV_FOREACH(i, l)
                if (strcmp(*i, s) == 0)
                        return true;
        return false;
}

char *strv_join(char * const *l, const char *sep) {
        size_t n = 0, k = strlen(sep);
        char *r, *p;

        STRV_FOREACH(s, l)
                n += strlen(*s) + k;
        r = p = malloc(n + 1);
        if (!r)
                return NULL;
        *p = 0;
        STRV_FOREACH(s, l) {
                if (s != l)
                        p = stpcpy(p, sep);
                p = stpcpy(p, *s);
        }
        return r;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

int strv_sort(char **l) {
        if (!l)
                return 0;
        qsort(l, strv_length(l), sizeof(char *), cmp_str);
        return 0;
}
