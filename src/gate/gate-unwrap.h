/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Exec-wrapper unwrapping for the gate's exec checks: which word of an argv is the command that really
 * runs when it is run through a wrapper. The argv comes from inside the container: every cap below is
 * what keeps an adversarial one cheap. */

#include <stdbool.h>
#include <stddef.h>

/* Caps of the exec unwrapping (gate_unwrap_argv() and the exec checks); past any of them the exec check
 * answers deny with the rule id "error". */
#define GATE_UNWRAP_CANDIDATES_MAX 16U  /* interpretations of one argv that are checked */
#define GATE_UNWRAP_STEPS_MAX 128U      /* wrappers and option branches walked for one argv */
#define GATE_UNWRAP_DEPTH_MAX 4U        /* command strings within command strings (script -c, env -S) */

/* The index in argv of the real command after unwrapping env, sudo, nice, ionice, chrt, timeout, nohup,
 * unshare, setsid, taskset, stdbuf, script and ld-linux* (their options and K=V arguments dropped, "--"
 * ends options). Returns the count of argv when nothing is left (e.g. a bare "env").
 *
 * This is the most likely reading only. Where the command is inside a string (script -c CMD, env -S STR)
 * the index is that of the string. The checks do more: they split such strings into words (and script's
 * into shell commands), and where an option's shape is unknown (does it take a value?) they check every
 * reading and take the strictest verdict (deny > approve > allow), so wrapping a command never makes its
 * check less strict than that of the plain command. Also unwrapped: ld-musl-* (the musl loader). */
size_t gate_unwrap_argv(char * const *argv);

typedef struct GateUnwrapCandidate {
        char * const *argv;             /* the caller's argv, or words split from a command string */
        size_t index;                   /* the command's index in argv */
} GateUnwrapCandidate;

typedef struct GateUnwrap {
        bool primary;                   /* only the most likely reading, no splitting (gate_unwrap_argv()) */
        GateUnwrapCandidate items[GATE_UNWRAP_CANDIDATES_MAX];
        size_t n;
        unsigned steps;
        void *allocs[2 * GATE_UNWRAP_STEPS_MAX];
        size_t n_allocs;
        int error;
} GateUnwrap;

/* Fills u with every reading of argv (NULL or empty: one reading of ""): a candidate is argv itself or
 * words split from a command string in it, which u owns until gate_unwrap_done(). u->error is negative
 * when argv cannot be judged within the caps (-E2BIG: too many readings or steps; -ELOOP: command strings
 * nested too deep; -ENOMEM): the caller must then deny. primary: the most likely reading only, as
 * gate_unwrap_argv(). */
void gate_unwrap_all(GateUnwrap *u, char * const *argv, bool primary);
void gate_unwrap_done(GateUnwrap *u);
