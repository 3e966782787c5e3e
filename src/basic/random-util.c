/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#include "random-util.h"

int random_bytes(void *p, size_t n) {
        uint8_t *b = p;

        while (n > 0) {
                ssize_t k = getrandom(b, n, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                b += k;
                n -= (size_t) k;
        }
        return 0;
}
