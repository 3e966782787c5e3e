/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "macro.h"
#include "parse-util.h"
#include "tap.h"

static void check_port(const char *s, int want_r, unsigned want) {
        uint16_t p = 0;
        int r = parse_port(s, &p);
        if (want_r == 0)
                ok(r == 0 && p == want, "parse_port(\"%s\") is %u", s, want);
        else
                is_int(r, want_r, "parse_port(\"%s\") is refused", s);
}

int main(void) {
        uint16_t p = 7;

        check_port("443", 0, 443);
        check_port("1", 0, 1);
        check_port("65535", 0, 65535);
        check_port("08080", 0, 8080);
        check_port("+443", -EINVAL, 0);
        check_port("-1", -EINVAL, 0);
        check_port(" 443", -EINVAL, 0);
        check_port("443 ", -EINVAL, 0);
        check_port("0x1bb", -EINVAL, 0);
        check_port("a443", -EINVAL, 0);
        check_port("443a", -EINVAL, 0);
        check_port("65536", -EINVAL, 0);
        check_port("99999999999999999999", -EINVAL, 0);
        check_port("000443", -EINVAL, 0);
        check_port("", -EINVAL, 0);
        check_port("0", -EINVAL, 0);

        ok(parse_port_full("0", SIZE_MAX, true, &p) == 0 && p == 0, "port 0 is taken when allowed");
        ok(parse_port_full("8080/path", 4, false, &p) == 0 && p == 8080, "parse_port_full() parses the first n bytes");
        is_int(parse_port_full("8080", 0, false, &p), -EINVAL, "an empty span is refused");
        is_int(parse_port(NULL, &p), -EINVAL, "NULL is refused");
        return done_testing();
}
