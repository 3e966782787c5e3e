/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Settings that reach a program through its environment. */

#include <stdint.h>

/* A helper's numeric setting from its unit's Environment=: def when unset or empty; a value that is not a
 * number in [0, max] is refused with a message naming the variable (-EINVAL). */
int env_uint(const char *name, uint64_t def, uint64_t max, uint64_t *ret);
