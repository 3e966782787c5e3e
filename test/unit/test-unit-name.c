/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "macro.h"
#include "tap.h"
#include "unit-name.h"

static void check_escape(const char *in, const char *want) {
        _cleanup_free_ char *e = unit_name_escape(in);
        is_str(e, want, "unit_name_escape(\"%s\") is \"%s\" as systemd-escape prints it", in, want);
}

int main(void) {
        check_escape("plain", "plain");
        check_escape("my-proj", "my\\x2dproj");
        check_escape("a.b_c:d", "a.b_c:d");
        check_escape(".hidden", "\\x2ehidden");
        check_escape("a/b", "a-b");
        check_escape("sp ace", "sp\\x20ace");
        check_escape("\xc3\xa9", "\\xc3\\xa9");

        _cleanup_free_ char *s = channel_slice_name("my-proj");
        is_str(s, "loop-my\\x2dproj.slice", "the slice of channel my-proj is loop-my\\x2dproj.slice");
        return done_testing();
}
