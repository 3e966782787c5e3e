/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* n bytes from the kernel's CSPRNG (getrandom(), blocking until it is seeded, retried when interrupted or
 * short); 0 or -errno. */
int random_bytes(void *p, size_t n);
