/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* `loop seal`: a Landlock domain over the agent (seed 002's sandbox-seal). Four tiers of file system
 * access, derived from the container's mounts:
 *
 *   read_only     /                                    read files and directories
 *   read_exec     /bin /sbin /usr /lib*                ... and execute
 *   write_noexec  /dev /proc                           ... and write, create, remove, rename, device
 *                                                      ioctls; no execute
 *   write_exec    /tmp /var/tmp /home, the work dir,   everything
 *                 $HOME, every other read-write mount
 *
 * /run stays read-only (the entrypoint has written what it needs there before the seal), so a rw tmpfs
 * the agent does not need is no place to stage files. ABI 3 (kernel 6.2: truncate) is required; 4 adds
 * TCP connect (enforced only when ports are given), 5 ioctls on devices, 6 scoping of abstract unix
 * sockets and signals to the sealed processes. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEAL_ABI_REQUIRED 3
/* Ports in --connect-tcp, at most. */
#define SEAL_TCP_PORTS_MAX 64U
/* The environment variable `loop seal` takes the ports from when --connect-tcp is not given (the runner
 * sets it from the channel's "connect_tcp"; `loop shell` sessions inherit it from the container). */
#define SEAL_CONNECT_TCP_ENV "LOOP_SEAL_CONNECT_TCP"
/* Paths per tier, at most: a container with more mounts than this is refused rather than half sealed. */
#define SEAL_TIER_PATHS_MAX 1024U
/* /proc/self/mountinfo is read up to this size. */
#define SEAL_MOUNTINFO_MAX (4U * 1024U * 1024U)

typedef enum SealTier {
        SEAL_READ_ONLY,
        SEAL_READ_EXEC,
        SEAL_WRITE_NOEXEC,
        SEAL_WRITE_EXEC,
        _SEAL_TIER_MAX,
} SealTier;

typedef struct SealPolicy {
        char **paths[_SEAL_TIER_MAX];   /* absolute, clean, without duplicates across tiers */
        uint16_t tcp_ports[SEAL_TCP_PORTS_MAX];
        size_t n_tcp_ports;
        bool restrict_tcp;              /* connect() only to tcp_ports (ABI 4+) */
} SealPolicy;

void seal_policy_done(SealPolicy *p);
const char *seal_tier_to_string(SealTier t);

/* The highest Landlock ABI the kernel offers; 0 when Landlock is not enabled (ENOSYS, EOPNOTSUPP). */
int seal_landlock_abi(void);
/* NULL when abi is enough, else a one-line explanation for the operator. */
const char *seal_abi_refusal(int abi);

/* The access rights a tier grants under abi, and what the ruleset handles (everything abi knows). */
uint64_t seal_tier_access(SealTier t, int abi);
uint64_t seal_handled_access_fs(int abi);

/* The policy for a container whose mounts are mountinfo (the text of /proc/self/mountinfo): the base
 * tiers above plus work_dir and home (may be NULL) and each read-write mount outside /dev, /proc, /sys
 * and /run in write_exec. Pure: no file is looked at. */
int seal_policy_from_mountinfo(const char *mountinfo, const char *work_dir, const char *home, SealPolicy *ret);
/* "443,8080" -> ports, "none" -> no port at all; -EINVAL for anything else (0, > 65535, junk, more than
 * SEAL_TCP_PORTS_MAX). */
int seal_parse_tcp_ports(const char *s, SealPolicy *p);

/* Builds the ruleset for abi (paths that do not exist are skipped; a file gets the file rights of its
 * tier only) and restricts the calling thread (no_new_privs must be set, as the engine does). */
int seal_apply(const SealPolicy *p, int abi);
/* Marks every fd from 3 up close-on-exec: nothing the entrypoint or the engine left open reaches the
 * sealed command. */
int seal_close_stray_fds(void);
