/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The seccomp workload profile of every agent and shell container (seed 002's deny list): allow by
 * default, deny what a coding agent never needs and kernels keep getting exploited through. One table,
 * emitted as the engine's seccomp JSON (the format Docker and Podman share) for one architecture.
 *
 * The engine applies it before the entrypoint runs; the security gate's own filter, installed later,
 * can only add to it. Only the native architecture is listed: a call through another ABI (i386's
 * int 0x80, x32) matches no listed architecture and the runtime kills the thread. */

#include <json-c/json.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

static inline void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

/* A profile the runner hands to Podman is a file (its compat API opens the value as a path). */
#define SECCOMP_PROFILE_FILENAME "seccomp-workload.json"
#define SECCOMP_CHROME_PROFILE_FILENAME "seccomp-chrome.json"

typedef struct SeccompProfileRule {
        const char * const *names;      /* NULL-terminated; names an architecture lacks are left out there */
        int errno_value;                /* what the call returns instead of running */
        bool has_arg;                   /* at most one argument condition per rule */
        unsigned arg_index;
        enum scmp_compare op;           /* SCMP_CMP_EQ, SCMP_CMP_GE or SCMP_CMP_MASKED_EQ */
        uint64_t value;                 /* MASKED_EQ: the mask */
        uint64_t value_two;             /* MASKED_EQ: what (arg & mask) must equal */
        const char *comment;            /* why, for reviewers; emitted as "comment" */
} SeccompProfileRule;

/* The table, in the order it is emitted. */
const SeccompProfileRule *seccomp_workload_rules(size_t *ret_n);

/* "x86_64" / "aarch64" (also "amd64", "arm64") and libseccomp's SCMP_ARCH_* constant. */
int seccomp_profile_arch_from_string(const char *s, uint32_t *ret);
const char *seccomp_profile_arch_to_string(uint32_t arch);
/* The engine's name of an architecture: "SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"; NULL when unsupported. */
const char *seccomp_profile_arch_to_engine(uint32_t arch);
/* SCMP_ARCH_NATIVE resolved; -EOPNOTSUPP on an architecture the profile does not cover. */
int seccomp_profile_arch_native(uint32_t *ret);
/* "SCMP_CMP_MASKED_EQ" ... */
const char *seccomp_compare_to_string(enum scmp_compare op);

/* The profile for arch as the engines' JSON: {defaultAction: SCMP_ACT_ALLOW, architectures: [arch],
 * syscalls: [{names, action: SCMP_ACT_ERRNO, errnoRet, args, comment}, ...]}, one entry per table row
 * that has a name on arch, in table order. */
int seccomp_profile_json(uint32_t arch, json_object **ret);
int seccomp_profile_to_string(uint32_t arch, char **ret);

/* Loads the native profile into the calling thread's process as a filter of its own, built from the same
 * table with libseccomp and the SECCOMP_FILTER_FLAG_LOG flag (ret_log: whether the kernel took it), so
 * every refusal leaves a kernel audit record (type SECCOMP, 1326) naming the process and the call. The
 * engine's copy of the profile applies already; this one adds the log, which the engines cannot give (runc
 * 1.1 refuses the profile's "flags", Docker drops them). Equal verdicts of stacked filters are taken from
 * the newest, this one. The ENOSYS rules (clone3, splice: calls libc and runtimes try first and fall back
 * from) are left out, so that not every new thread writes a record; the engine's copy refuses them.
 * Needs no_new_privs or CAP_SYS_ADMIN. */
int seccomp_profile_load_logged(bool *ret_log);

/* The HostConfig.SecurityOpt entry applying the native profile: "seccomp=<JSON>" for Docker (it takes
 * the profile inline); for Podman the profile is written to dir/SECCOMP_PROFILE_FILENAME (0644, atomic)
 * and the entry is "seccomp=<that path>", since Podman's compat API opens the value as a file. */
int seccomp_profile_security_opt(EngineKind engine, const char *dir, char **ret);

/* The Chrome container's profile: the workload profile less what Chrome's own sandbox needs (a user
 * namespace with new PID and network namespaces, and chroot), so Chrome runs sandboxed, never with
 * --no-sandbox. Written as SECCOMP_CHROME_PROFILE_FILENAME for Podman. */
int seccomp_profile_json_chrome(uint32_t arch, json_object **ret);
int seccomp_profile_security_opt_chrome(EngineKind engine, const char *dir, char **ret);
