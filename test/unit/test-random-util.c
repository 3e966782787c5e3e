/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "macro.h"
#include "random-util.h"
#include "tap.h"

int main(void) {
        uint8_t a[64] = {}, b[64] = {}, zero[64] = {};

        is_int(random_bytes(a, sizeof a), 0, "random_bytes() fills a buffer");
        is_int(random_bytes(b, sizeof b), 0, "and another");
        ok(memcmp(a, zero, sizeof a) != 0 && memcmp(a, b, sizeof a) != 0, "with bytes that differ each time");
        is_int(random_bytes(a, 0), 0, "no bytes asked, none given");
        return done_testing();
}
