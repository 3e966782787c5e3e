/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>

#include "env-util.h"
#include "macro.h"
#include "tap.h"

static void check_env(const char *value, int want_r, uint64_t want) {
        uint64_t v = 12345;
        int r;

        if (value)
                setenv("TEST_ENV_UINT", value, 1);
        else
                unsetenv("TEST_ENV_UINT");
        r = env_uint("TEST_ENV_UINT", 30, 100, &v);
        if (want_r == 0)
                ok(r == 0 && v == want, "TEST_ENV_UINT=%s gives %llu", strna(value), (unsigned long long) want);
        else
                ok(r == want_r && v == 12345, "TEST_ENV_UINT=%s is refused and the result left alone", strna(value));
}

int main(void) {
        check_env(NULL, 0, 30);
        check_env("", 0, 30);
        check_env("7", 0, 7);
        check_env("100", 0, 100);
        check_env("101", -EINVAL, 0);
        check_env("-1", -EINVAL, 0);
        check_env("5s", -EINVAL, 0);
        check_env("x", -EINVAL, 0);
        return done_testing();
}
