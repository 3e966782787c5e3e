/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "secret-buffer.h"

/* Room for a few small appends after a first one, before the buffer doubles. */
#define SECRET_BUFFER_SLACK 256U

int secret_buffer_append(SecretBuffer *b, const void *s, size_t n) {
        if (n > SIZE_MAX / 4 - b->size)
                return -ENOMEM;
        if (b->size + n > b->allocated) {
                size_t want = MAX(b->allocated * 2, b->size + n + SECRET_BUFFER_SLACK);
                char *d = malloc(want);
                if (!d)
                        return -ENOMEM;
                if (b->data) {
                        memcpy(d, b->data, b->size);
                        explicit_bzero(b->data, b->allocated);
                        free(b->data);
                }
                b->data = d;
                b->allocated = want;
        }
        if (n > 0)
                memcpy(b->data + b->size, s, n);
        b->size += n;
        return 0;
}

int secret_buffer_append_str(SecretBuffer *b, const char *s) {
        return secret_buffer_append(b, s, strlen(s));
}

void secret_buffer_wipe(SecretBuffer *b) {
        if (b->data) {
                explicit_bzero(b->data, b->allocated);
                free(b->data);
        }
        *b = (SecretBuffer) {};
}
