/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The gate's globs, for file rules' paths and command rules' names. Patterns come from the policy;
 * the paths and names they are matched against come from inside the container.
 *
 * "**" crosses '/', "*" and "?" do not, [...] classes as in fnmatch(3) (never matching '/'), '\\' escapes.
 * A "/" followed by "**" and then '/' or the end may also match nothing: "/a/" "**" matches /a itself,
 * "/a/" "**" "/b" matches /a/b, and a pattern starting with "**" "/.ssh/" "**" matches /.ssh at any
 * depth. A match takes at most a fixed budget of backtracking plus (pattern length + 1) x path length
 * steps, whatever the pattern. A pattern longer than GATE_GLOB_PATTERN_MAX is invalid (and matches
 * nothing once it runs out of that budget). */

#include <stdbool.h>
#include <stddef.h>

#define GATE_GLOB_PATTERN_MAX (2U * 4096U + 64U)        /* a PATH_MAX directory, escaped, and a suffix */

bool gate_glob_match(const char *pattern, const char *path);
/* The same answer from the automaton gate_glob_match() falls back to when backtracking takes too long:
 * for tests and fuzzing. */
bool gate_glob_match_automaton(const char *pattern, const char *path);

/* NULL when pattern is a valid glob, else why not ("empty pattern", "pattern too long",
 * "invalid glob (unclosed '[')", ...):
 * a static string. */
const char *gate_glob_check(const char *pattern);

/* As gate_glob_check(), for a file rule's path glob: also why it could never match a path as the gate
 * checks paths (absolute and clean): one not starting with '/' or '*' ("~/.ssh/" "**", "src/x"), with an
 * empty component ("//", a trailing '/') or a "." or ".." component. A static string, or NULL. */
const char *gate_glob_check_path(const char *pattern);

/* A checked pattern prepared for the hot path: most paths are refused by comparing the pattern's plain
 * ends before the matcher runs. */
typedef struct GateGlob {
        char *pattern;
        bool plain;                     /* no wildcard, no escape: strcmp() */
        char *literal;                  /* for a pattern starting with a wildcard: a run every match contains */
        size_t prefix_len;              /* the pattern's first prefix_len bytes begin every match */
        size_t suffix_len;              /* its last suffix_len bytes end every match */
} GateGlob;

/* pattern must have passed gate_glob_check(). -ENOMEM. */
int gate_glob_compile(const char *pattern, GateGlob *ret);
/* Answers as gate_glob_match(g->pattern, path); path_len is strlen(path). */
bool gate_glob_matches(const GateGlob *g, const char *path, size_t path_len);
void gate_glob_done(GateGlob *g);

/* dir with glob characters escaped (so that it matches only itself), followed by suffix (a glob).
 * NULL on ENOMEM. */
char *gate_glob_escape_join(const char *dir, const char *suffix);
