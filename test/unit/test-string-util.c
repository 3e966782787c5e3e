/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "macro.h"
#include "string-util.h"
#include "tap.h"

static void check_replace(const char *s, const char *what, const char *with, const char *want) {
        _cleanup_free_ char *r = str_replace_all(s, what, with);
        is_str(r, want, "str_replace_all(\"%s\", \"%s\", \"%s\") is \"%s\"", s, what, with, want);
}

int main(void) {
        _cleanup_free_ char *d = NULL;

        is_str(endswith("unit.service", ".service"), ".service", "endswith() finds a suffix");
        ok(!endswith("x", "longer"), "endswith() of a suffix longer than the string is NULL");

        ok(ref_name_is_valid("web_1.a-b", 9), "ref_name_is_valid() takes letters, digits, _ . -");
        ok(ref_name_is_valid("_x", 9), "a leading _ too");
        ok(!ref_name_is_valid("web_1.a-b", 8), "not one character more than max");
        ok(!ref_name_is_valid(".x", 9) && !ref_name_is_valid("-x", 9), "not a leading . or -");
        ok(!ref_name_is_valid("a/b", 9) && !ref_name_is_valid("a b", 9) && !ref_name_is_valid("\xc3\xa9", 9),
           "no slash, blank or other byte");
        ok(!ref_name_is_valid("", 9) && !ref_name_is_valid(NULL, 9), "not empty or NULL");
        {
                char s[] = ".GIT/Hooks-\xc3\x89[A-Z]";
                is_str(ascii_strlower(s), ".git/hooks-\xc3\x89[a-z]", "ascii_strlower() lowers A-Z in place, nothing else");
                ok(ascii_strlower(NULL) == NULL, "ascii_strlower(NULL) is NULL");
                ok(ascii_strcaseeq(".MCP.json", ".mcp.JSON") && ascii_strcaseeq("", ""),
                   "ascii_strcaseeq() ignores the case of A-Z");
                ok(!ascii_strcaseeq(".mcp.json", ".mcp.jso") && !ascii_strcaseeq("\xc3\x89", "\xc3\xa9") &&
                   !ascii_strcaseeq("[", "{"), "...and of nothing else, nor length");
        }
        {
                static const char * const table[] = { [0] = "allow", [2] = "deny" };
                is_int(string_table_lookup(table, 3, "deny"), 2, "string_table_lookup() finds a name's index");
                is_int(string_table_lookup(table, 3, "allow"), 0, "the first one too");
                is_int(string_table_lookup(table, 3, "Allow"), -EINVAL, "case counts");
                is_int(string_table_lookup(table, 3, ""), -EINVAL, "an empty name is none (a NULL entry is skipped)");
                is_int(string_table_lookup(table, 1, "deny"), -EINVAL, "only the first n entries count");
                is_int(string_table_lookup(table, 3, NULL), -EINVAL, "NULL is -EINVAL");
        }
        {
                char *p = NULL;
                is_int(strprintf(&p, "%s-%d", "port", 443), 0, "strprintf() formats");
                is_str(p, "port-443", "into a new string");
                free(p);
                errno = ENOENT;
                is_int(strprintf(&p, "%m"), 0, "strprintf() of %m");
                is_str(p, strerror(ENOENT), "names the caller's errno");
                free(p);
        }

        is_int(free_and_strdup(&d, "one"), 0, "free_and_strdup() sets a copy");
        is_str(d, "one", "the copy is the source");
        is_int(free_and_strdup(&d, NULL), 0, "free_and_strdup() of NULL clears");
        ok(!d, "the target is NULL afterwards");

        ok(comma_list_contains("rw,ro,nosuid", SIZE_MAX, "ro"), "comma_list_contains() finds an element");
        ok(comma_list_contains("ro", SIZE_MAX, "ro") && comma_list_contains("x,ro", SIZE_MAX, "ro"),
           "alone and last");
        ok(!comma_list_contains("rw,rom,nosuid", SIZE_MAX, "ro") && !comma_list_contains("rw, ro", SIZE_MAX, "ro") &&
           !comma_list_contains("RO", SIZE_MAX, "ro"), "only an exact element counts");
        ok(comma_list_contains("rw,ro,nosuid", 5, "ro") && !comma_list_contains("rw,ro,nosuid", 4, "ro"),
           "within the n bytes given");
        ok(!comma_list_contains(NULL, SIZE_MAX, "ro") && !comma_list_contains("", SIZE_MAX, "ro"),
           "a NULL or empty list has nothing");
        ok(comma_list_contains(",", SIZE_MAX, "") && !comma_list_contains("a", SIZE_MAX, ""),
           "an empty element is one when the list has it");

        check_replace("a-b-c", "-", "--", "a--b--c");
        check_replace("DUMMY and DUMMY", "DUMMY", "s", "s and s");
        check_replace("xyz", "q", "r", "xyz");
        check_replace("aaa", "aa", "b", "ba");
        check_replace("@X@", "@X@", "", "");
        check_replace("same", "", "w", "same");
        check_replace("", "a", "b", "");
        return done_testing();
}
