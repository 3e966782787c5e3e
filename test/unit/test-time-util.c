/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "macro.h"
#include "tap.h"
#include "time-util.h"

int main(void) {
        uint64_t a = clock_usec(CLOCK_MONOTONIC), b = clock_usec(CLOCK_MONOTONIC);
        struct timespec ts;

        ok(a > 0 && b >= a, "clock_usec(CLOCK_MONOTONIC) does not go back");
        clock_gettime(CLOCK_REALTIME, &ts);
        ok(clock_usec(CLOCK_REALTIME) / 1000000 >= (uint64_t) ts.tv_sec,
           "clock_usec(CLOCK_REALTIME) counts microseconds since the epoch");
        ok(clock_usec((clockid_t) 0x7fff) == 0, "an invalid clock gives 0");
        return done_testing();
}
