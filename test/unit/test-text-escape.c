/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* text_escape_display(): what a human is shown of a target a container chose. */

#include <json-c/json.h>

#include "json-util.h"
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

/* text_escape_json(): `--json` output on the operator's terminal, still the same JSON value. */
static void check_json(const char *value, const char *want, const char *what) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(), *back = NULL;
        _cleanup_free_ char *e = NULL;
        json_object *v;

        json_object_object_add(o, "text", json_object_new_string(value));
        e = text_escape_json(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        is_str(e, want, "%s", what);
        back = json_tokener_parse(e);
        ok(back && json_object_object_get_ex(back, "text", &v) && streq(json_object_get_string(v), value),
           "  ... and parses back to the same string");
}

static void test_json(void) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        _cleanup_free_ char *pretty = NULL;

        check_json("caf\xc3\xa9 \xe6\x97\xa5", "{\"text\":\"caf\xc3\xa9 \xe6\x97\xa5\"}", "JSON: printable UTF-8 stays as it is");
        check_json("\xc2\x9b" "31m", "{\"text\":\"\\u009b31m\"}", "JSON: C1 CSI is written \\u009b");
        check_json("a\xe2\x80\xae" "b\xe2\x81\xa6", "{\"text\":\"a\\u202eb\\u2066\"}", "JSON: bidi overrides and isolates are escaped");
        check_json("x\x7fy\x1b", "{\"text\":\"x\\u007fy\\u001b\"}", "JSON: DEL is escaped (json-c escapes ESC itself)");
        check_json("\xf3\xa0\x80\x81" "tag", "{\"text\":\"\\udb40\\udc01tag\"}", "JSON: a language tag above U+FFFF is a surrogate pair");
        check_json("l1\xe2\x80\xa8l2", "{\"text\":\"l1\\u2028l2\"}", "JSON: the line separator is escaped");

        json_object_object_add(o, "a", json_object_new_string("\xc2\x85"));
        json_object_object_add(o, "b", json_object_new_int(1));
        pretty = text_escape_json(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
        is_str(pretty, "{\n  \"a\":\"\\u0085\",\n  \"b\":1\n}", "JSON: the layout of pretty output is kept");
        free(pretty);
        pretty = text_escape_json("\"bad\xff\"");
        is_str(pretty, "\"bad\\ufffd\"", "JSON: a byte that is not UTF-8 reads as U+FFFD");
}

int main(void) {
        test_json();
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
