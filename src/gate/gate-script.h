/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* The "#!" line of a file about to be executed, as the kernel reads it: the interpreter and its one
 * optional argument, within the first GATE_SCRIPT_HEAD bytes.
 *
 * Each worker keeps what it read of its last GATE_SCRIPT_CACHE_MAX files, keyed by what fstat() says of
 * the very file opened for the exec: device, inode, size, mtime and ctime. Every change of a file's
 * content moves its ctime to the time of the change, and nobody can set a ctime back; but timestamps are
 * coarse (a clock tick, whole seconds on some file systems), so a change made within the tick of the
 * ctime kept could leave it as it was. An entry is therefore kept only for a file whose ctime was
 * GATE_SCRIPT_SETTLED_NS older than the clock when it was read: any later change then carries a later
 * ctime. Device and inode name one file for the supervisor's whole life, since its mount namespace is the
 * agent's and neither can change it (the filter refuses setns and new mount namespaces). */
#define GATE_SCRIPT_HEAD 256U
#define GATE_SCRIPT_CACHE_MAX 32U
#define GATE_SCRIPT_SETTLED_NS (2ULL * 1000000000ULL)
/* An interpreter may be a script itself: the kernel's exec_binprm() runs at most this many of them for
 * one exec (and fails it with ELOOP beyond). */
#define GATE_SCRIPT_DEPTH_MAX 5U

/* What gate_script_interpreter() found the kernel would do with a file. The kernel offers a file to its
 * binary formats in turn, binfmt_misc's handlers first: a handler the host registered (qemu-user for
 * another architecture's ELF, a .jar, a Windows .exe, a .pyc) runs an interpreter of its own for files
 * with its magic bytes, one the gate never sees. Only "#!" scripts and ELF binaries of this machine's
 * architecture are let through; for anything else the gate answers ENOEXEC itself, what the kernel says
 * when no handler takes the file (a shell then reads it as a script, as it does without a handler). */
typedef enum GateExecFormat {
        GATE_EXEC_BINARY = 0,           /* an ELF executable of this machine: binfmt_elf runs it */
        GATE_EXEC_SCRIPT = 1,           /* a "#!" line naming an interpreter: binfmt_script */
        GATE_EXEC_OTHER = 2,            /* neither: ENOEXEC, or a binfmt_misc handler's interpreter */
} GateExecFormat;

typedef struct GateScriptEntry {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
        GateExecFormat format;
        char *interp;                   /* NULL: not a script */
        char *arg;
        uint64_t used;                  /* 0: a free entry */
} GateScriptEntry;

typedef struct GateScriptCache {
        GateScriptEntry entries[GATE_SCRIPT_CACHE_MAX];
        uint64_t clock;
        uint64_t hits;                  /* answers given without reading the file */
} GateScriptCache;

void gate_script_cache_done(GateScriptCache *c);

/* fd: the file to be executed (O_PATH will do); c: NULL for no cache. Returns GATE_EXEC_SCRIPT with the
 * interpreter and its argument (NULL without one), GATE_EXEC_BINARY for an ELF executable of this machine
 * (and for what is not a regular file, which the kernel does not execute), GATE_EXEC_OTHER for anything
 * else, -errno when it cannot be read (the kernel may still run it: the caller fails closed) or -ENOMEM. */
int gate_script_interpreter(GateScriptCache *c, int fd, char **ret_interp, char **ret_arg);
