/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Scope-based cleanup and small helpers shared by every program of loop. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _pure_ __attribute__((pure))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand over ownership: returns the value and resets the variable so cleanup does nothing. */
#define TAKE_PTR(p) ({ __typeof__(p) _p_ = (p); (p) = NULL; _p_; })
#define TAKE_FD(fd) ({ int _fd_ = (fd); (fd) = -EBADF; _fd_; })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) {                   \
                if (*p)                                         \
                        func(*p);                               \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Clamp errno to a negative value, for "return -errno" after calls that may leave errno at 0. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}
static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}
static inline const char *strempty(const char *s) {
        return s ?: "";
}
static inline const char *strna(const char *s) {
        return s ?: "n/a";
}
static inline bool isempty(const char *s) {
        return !s || !*s;
}
/* The value of one hex digit, or -1. */
static inline int unhexchar(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* free() that returns NULL, for "p = mfree(p);" */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}
