/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>
#include <string.h>

#include "curl-buffer.h"

size_t curl_buffer_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        CurlBuffer *b = userdata;
        size_t n = size * nmemb;
        char *p;

        if (n > b->max || b->size > b->max - n) {
                b->overflow = true;
                return 0;       /* aborts the transfer */
        }
        p = realloc(b->data, b->size + n + 1);
        if (!p)
                return 0;
        memcpy(p + b->size, ptr, n);
        b->data = p;
        b->size += n;
        b->data[b->size] = 0;
        return n;
}
