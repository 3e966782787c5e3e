/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* text_escape_display(): what a human is shown of a target a container chose. */

#include "macro.h"
#include "tap.h"
#include "text-escape.h"

static void check(const char *in, size_t max, const char *want, const char *what) {
        _cleanup_free_ char *e = text_escape_display(in, max);
        is_str(e, want, "%s", what);
}

static void check_prose(const char *in, const char *want, const char *what) {
        _cleanup_free_ char *e = text_escape_prose(in, 0);
        is_str(e, want, "%s", what);
}

/* text_escape_prose(): the agent's text and journal messages on the operator's terminal. */
static void test_prose(void) {
        check_prose("line one\n\tline two \\n", "line one\n\tline two \\n",
                    "prose keeps newlines, tabs and backslashes as they are");
        check_prose("a\x1b]52;c;Y3VybA==\x07" "b", "a\\x1b]52;c;Y3VybA==\\x07b", "prose escapes OSC 52 (the clipboard) and BEL");
        check_prose("x\x1b[2J\ry", "x\\x1b[2J\\ry", "...ESC and a carriage return");
        check_prose("\xc2\x9b" "31m\xe2\x80\xae\xff", "\\u009b31m\\u202e\\xff", "...C1 CSI, bidi overrides and invalid UTF-8");
}

int main(void) {
        test_prose();
        check("/home/agent/work/main.c", 0, "/home/agent/work/main.c", "a plain path is shown as it is");
        check("/tmp/caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac", 0, "/tmp/caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac",
              "printable UTF-8 is shown as it is");
        check("a\nb\tc\rd", 0, "a\\nb\\tc\\rd", "newline, tab and carriage return become \\n, \\t, \\r");
        check("x\x1b[2Jy", 0, "x\\x1b[2Jy", "an ANSI escape cannot clear the screen");
        check("x\x7fy\x01", 0, "x\\x7fy\\x01", "DEL and other C0 controls become \\xNN");
        check("a\\b", 0, "a\\\\b", "a backslash is doubled, so escapes in the output are unambiguous");
        check("/tmp/\xe2\x80\xae" "txt.sh", 0, "/tmp/\\u202etxt.sh", "U+202E RIGHT-TO-LEFT OVERRIDE is escaped");
        check("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", 0, "\\u202a\\u202b\\u202c\\u202d",
              "U+202A..U+202D embeddings and overrides are escaped");
        check("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", 0, "\\u2066\\u2067\\u2068\\u2069",
              "U+2066..U+2069 isolates are escaped");
        check("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", 0, "\\u200e\\u200f\\u061c",
              "LRM, RLM and the Arabic letter mark are escaped");
        check("a\xe2\x80\xa8" "b\xe2\x80\xa9", 0, "a\\u2028b\\u2029", "line and paragraph separators are escaped");
        check("/tmp/a\xe2\x80\x8b" "b", 0, "/tmp/a\\u200bb", "U+200B ZERO WIDTH SPACE is escaped (the target looks like another)");
        check("x\xe3\x85\xa4y\xc2\xadz", 0, "x\\u3164y\\u00adz", "U+3164 HANGUL FILLER and U+00AD SOFT HYPHEN are escaped");
        check("\xe2\x80\x8c\xe2\x80\x8d\xe2\x81\xa0\xef\xbb\xbf", 0, "\\u200c\\u200d\\u2060\\ufeff",
              "zero-width joiners, the word joiner and the byte order mark are escaped");
        check("\xc2\x85\xc2\x9b", 0, "\\u0085\\u009b", "C1 controls (NEL, CSI) are escaped");
        check("bad\xff\xfe", 0, "bad\\xff\\xfe", "bytes that are not UTF-8 become \\xNN");
        check("\xc0\xaf", 0, "\\xc0\\xaf", "an overlong encoding of '/' is not decoded");
        check("\xed\xa0\x80", 0, "\\xed\\xa0\\x80", "an encoded surrogate is not decoded");
        check("\xe2\x80", 0, "\\xe2\\x80", "a truncated sequence becomes \\xNN");
        check("abcdef", 3, "abc...", "a long text is cut at the cap and says so");
        check("ab\xc3\xa9", 3, "ab...", "the cut does not split a character");
        check("abc", 3, "abc", "a text exactly at the cap is not marked as cut");
        check("", 0, "", "the empty string stays empty");
        return done_testing();
}
