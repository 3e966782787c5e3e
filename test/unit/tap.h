/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A minimal TAP producer for meson's `protocol: 'tap'`. One ok() per behaviour, named after it. */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static unsigned tap_count, tap_failed;

__attribute__((format(printf, 2, 3)))
static inline int ok(int cond, const char *fmt, ...) {
        va_list ap;
        tap_count++;
        printf("%s %u - ", cond ? "ok" : "not ok", tap_count);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        if (!cond)
                tap_failed++;
        fflush(stdout);
        return cond;
}

/* A point that cannot be tested here, in TAP's own form: "ok N - NAME # SKIP REASON". */
static inline void skip(const char *name, const char *reason) {
        tap_count++;
        printf("ok %u - %s # SKIP %s\n", tap_count, name, reason);
        fflush(stdout);
}

/* Compare two strings, printing both on mismatch. */
#define is_str(got, want, ...)                                                                   \
        ({                                                                                       \
                const char *_g = (got), *_w = (want);                                            \
                int _r = ok(_g && _w ? strcmp(_g, _w) == 0 : _g == _w, __VA_ARGS__);             \
                if (!_r)                                                                         \
                        printf("#   got:  '%s'\n#   want: '%s'\n", _g ?: "(null)", _w ?: "(null)"); \
                _r;                                                                              \
        })

#define is_int(got, want, ...)                                                                   \
        ({                                                                                       \
                long long _g = (long long) (got), _w = (long long) (want);                        \
                int _r = ok(_g == _w, __VA_ARGS__);                                              \
                if (!_r)                                                                         \
                        printf("#   got:  %lld\n#   want: %lld\n", _g, _w);                      \
                _r;                                                                              \
        })

static inline void diag(const char *s) {
        printf("# %s\n", s);
}

static inline int done_testing(void) {
        printf("1..%u\n", tap_count);
        return tap_failed > 0;
}
