/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Becoming an unprivileged user for good: supplementary groups, gid and uid set, every capability set
 * emptied (bounding when CAP_SETPCAP allows, ambient, inheritable, permitted, effective), no_new_privs set,
 * and all of it read back. Used by `loop privdrop` and by the agent side of `loop syscallwrap`. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* More supplementary groups than the kernel accepts (NGROUPS_MAX is 65536) are refused while parsing. */
#define PRIVDROP_GROUPS_MAX 65536

/* A uid or gid in decimal; (uid_t) -1 means "unchanged" to the set*id() calls and is refused (-EINVAL). */
int privdrop_parse_id(const char *s, uint32_t *ret);
/* "G1,G2,..." into a newly allocated array; "" is no groups. -EINVAL, -E2BIG (too many), -ENOMEM. */
int privdrop_parse_groups(const char *s, gid_t **ret, size_t *ret_n);

/* The identity a verb drops to, from its --uid, --gid and --groups options (`loop privdrop`,
 * `loop syscallwrap`). Zero-initialised; privdrop_identity_done() frees the groups. */
typedef struct PrivdropIdentity {
        uint32_t uid, gid;
        bool have_uid, have_gid;
        gid_t *groups;
        size_t n_groups;
} PrivdropIdentity;

void privdrop_identity_done(PrivdropIdentity *id);
/* Takes the value of the option named ("uid", "gid" or "groups", a later one replacing an earlier one).
 * Logs why a value is refused, naming the option, and returns -EINVAL (or -ENOMEM). */
int privdrop_identity_set(PrivdropIdentity *id, const char *option, const char *value);
/* Where the identity keeps root: "uid", "gid" or "group" (a supplementary group 0); NULL when nowhere. */
const char *privdrop_identity_root(const PrivdropIdentity *id);

/* Drops to uid/gid/groups with no capabilities and no_new_privs; needs CAP_SETUID and CAP_SETGID. Logs
 * why on failure and returns a negative errno: the caller must not go on. */
int privdrop_apply(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups);
