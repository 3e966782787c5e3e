/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "time-util.h"

uint64_t clock_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * UINT64_C(1000000) + (uint64_t) ts.tv_nsec / UINT64_C(1000);
}
