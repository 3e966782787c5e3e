/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A byte buffer that may hold secrets (a request head with a real credential, a response on its way to the
 * agent): it grows by copying and wiping, so no stale copy stays behind in freed memory, and is wiped when
 * done. Zero-initialised; data is not NUL-terminated unless a NUL is appended. */

#include <stddef.h>

typedef struct SecretBuffer {
        char *data;
        size_t size, allocated;
} SecretBuffer;

/* Appends s[0..n); -ENOMEM leaves the buffer as it was. */
int secret_buffer_append(SecretBuffer *b, const void *s, size_t n);
int secret_buffer_append_str(SecretBuffer *b, const char *s);
/* Wipes all of the allocation, frees it, and empties the buffer. */
void secret_buffer_wipe(SecretBuffer *b);
