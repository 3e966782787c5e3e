/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <regex.h>
#include <stdbool.h>

/* glibc's regcomp() copies a group once per repetition its bounds allow, nested bounds multiplied:
 * "(a{1,1000}){1,1000}", 19 bytes, takes gigabytes and seconds to be refused. Patterns come from config
 * files, the project file among them (the agent writes it), so their expanded size is capped first. */
#define REGEX_EXPANDED_MAX 20000U       /* atoms of a pattern once every repetition is expanded */
#define REGEX_NESTING_MAX 32U           /* nested groups */

/* Whether pattern (POSIX extended syntax) would expand beyond REGEX_EXPANDED_MAX atoms or nest deeper
 * than REGEX_NESTING_MAX groups; an estimate that only errs large (alternatives are added up). */
bool regex_too_large(const char *pattern);

/* Whether pattern has a back-reference (\1 to \9 outside a bracket expression): POSIX extended syntax has
 * none, glibc takes them as an extension and matches them by backtracking, exponential in the subject. */
bool regex_has_backreference(const char *pattern);

/* regcomp(), unless regex_too_large(pattern) (REG_ESIZE) or regex_has_backreference(pattern)
 * (REG_ESUBREG): then that error without compiling (re stays untouched). */
int regcomp_bounded(regex_t *re, const char *pattern, int cflags);
