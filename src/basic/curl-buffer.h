/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A libcurl write callback that collects a response body in memory, capped: past max bytes it sets
 * overflow and aborts the transfer (curl then reports CURLE_WRITE_ERROR). The data is NUL-terminated. */

#include <stdbool.h>
#include <stddef.h>

typedef struct CurlBuffer {
        char *data;
        size_t size;
        size_t max;                     /* the cap, set by the caller */
        bool overflow;
} CurlBuffer;

/* For CURLOPT_WRITEFUNCTION, with the CurlBuffer as CURLOPT_WRITEDATA. */
size_t curl_buffer_write(char *ptr, size_t size, size_t nmemb, void *userdata);
