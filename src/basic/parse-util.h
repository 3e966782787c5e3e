/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Numbers from text, strictly: digits only (no sign, no blanks, no leading junk, nothing after). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A TCP/UDP port: 1 to 5 decimal digits, 1..65535 (0 too when allow_zero). s[0..n) is parsed; n ==
 * SIZE_MAX for all of the NUL-terminated s. -EINVAL for anything else. */
int parse_port_full(const char *s, size_t n, bool allow_zero, uint16_t *ret);
static inline int parse_port(const char *s, uint16_t *ret) {
        return parse_port_full(s, SIZE_MAX, false, ret);
}
