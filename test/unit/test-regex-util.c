/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "macro.h"
#include "regex-util.h"
#include "tap.h"

int main(void) {
        /* what rules use */
        static const char * const fine[] = {
                "^/containers/create$", "-rf /", "^/v[0-9.]+/images/.*/push$", "(GET|HEAD) /x{2,3}",
                "[a-z{}()]+", "a{1,4096}", "(ab){1,100}(cd){1,100}", "\\(literal\\){3}", "x{", "[[:alpha:]]{1,50}",
        };
        for (size_t i = 0; i < ELEMENTSOF(fine); i++)
                ok(!regex_too_large(fine[i]), "\"%s\" is within the cap", fine[i]);

        /* glibc's regcomp() takes gigabytes for these (measured: "(a{1,1000}){1,1000}", 8 GB, 12 s) */
        static const char * const huge[] = {
                "(a{1,1000}){1,1000}", "((a{1,100}){1,100}){1,100}", "(((a{1,30}){1,30}){1,30}){1,30}",
                "a{1,32767}", "(x{200}){200}", "((((a+)+)+)+){1000}{1000}", "(a{,1000}){,1000}", "(a{1,1000}){1000,}",
                "((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))",
        };
        for (size_t i = 0; i < ELEMENTSOF(huge); i++)
                ok(regex_too_large(huge[i]), "\"%.40s\" is refused before regcomp()", huge[i]);

        /* back-references: not POSIX extended syntax; glibc matches them by backtracking */
        static const char * const backref[] = { "(a*)\\1", "^(x)(y)\\2$", "((a|b)*)*\\1\\1c", "[a]\\9" };
        for (size_t i = 0; i < ELEMENTSOF(backref); i++)
                ok(regex_has_backreference(backref[i]), "\"%s\" has a back-reference", backref[i]);
        static const char * const no_backref[] = { "a\\\\1", "[\\1]", "[]\\1]", "\\0", "a{1}", "[[:digit:]\\2]" };
        for (size_t i = 0; i < ELEMENTSOF(no_backref); i++)
                ok(!regex_has_backreference(no_backref[i]), "\"%s\" has none", no_backref[i]);

        regex_t re;
        is_int(regcomp_bounded(&re, "(a{1,1000}){1,1000}", REG_EXTENDED), REG_ESIZE,
               "regcomp_bounded() answers REG_ESIZE without compiling");
        is_int(regcomp_bounded(&re, "(a*)*\\1b", REG_EXTENDED), REG_ESUBREG,
               "regcomp_bounded() answers REG_ESUBREG for a back-reference");
        ok(regcomp_bounded(&re, "^a{2}$", REG_EXTENDED | REG_NOSUB) == 0 && regexec(&re, "aa", 0, NULL, 0) == 0,
           "...and compiles what is within the cap");
        regfree(&re);
        return done_testing();
}
