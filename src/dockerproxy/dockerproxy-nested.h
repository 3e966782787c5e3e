/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Containers an agent creates through the Docker API proxy are "nested" containers of its channel: the
 * proxy rewrites the create body so that whatever the agent asked for, the container carries the
 * channel's labels and runs under the channel's policy, and it scopes lists and prunes to them. */

#include <json-c/json.h>
#include <sys/types.h>

#include "macro.h"

#define PROXY_LABEL_CHANNEL "loop-channel"
#define PROXY_LABEL_TYPE "loop-type"
#define PROXY_TYPE_NESTED "nested"
#define PROXY_PIDS_LIMIT 1024           /* when the agent sets none (or "unlimited") */
#define PROXY_FILTERS_MAX (16U * 1024U) /* bytes of a filters query parameter */

/* Docker's own masked and read-only paths: a MaskedPaths or ReadonlyPaths the agent sets replaces them
 * (an empty one removes them all), so they are always added. */
#define PROXY_DOCKER_MASKED_PATHS "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", \
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", \
        "/sys/devices/virtual/powercap"
#define PROXY_DOCKER_READONLY_PATHS "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"

/* What of the channel's policy a nested container gets. */
typedef struct ProxyNestedPolicy {
        const char *channel;
        const char *cgroup_parent;      /* the channel's slice; NULL: left to the engine */
        const char *seccomp_option;     /* "seccomp=..." (seccomp_profile_security_opt()); NULL: none */
        char **masked_paths;            /* the channel's masked /proc and /sys paths */
        bool podman;                    /* Podman takes masks as SecurityOpt "mask=" */
        bool network_none;              /* NetworkMode "none" whatever was asked (the agent has no network) */
} ProxyNestedPolicy;

/* Forces onto a container create body (an object, as proxy_body_parse() gave it): labels loop-channel=
 * channel and loop-type=nested, no-new-privileges, NET_RAW, MKNOD, AUDIT_WRITE and SETFCAP dropped unless
 * added explicitly, a pids limit, the channel's slice as CgroupParent, the workload seccomp profile
 * (any "seccomp" or "unmask" security option the agent gave is dropped), MaskedPaths and ReadonlyPaths
 * that only grow (the channel's masks, Docker's read-only paths, added to what was asked), and
 * NetworkMode "none" (NetworkingConfig dropped) when policy says so. Keys are found ignoring case, as
 * the engine does. -EBADMSG when a field it must change has the wrong type (the engine would refuse the
 * body anyway), -ENOMEM. */
int proxy_container_force(json_object *body, const ProxyNestedPolicy *policy);

/* Adds label=loop-channel=channel and label=loop-type=nested to the "filters" parameter of a query (an object of strings, as
 * dockerproxy-path.h makes it), so that a list or a prune sees only the channel's nested containers.
 * Both forms the engines accept are read: {"label":["a=b"]} and {"label":{"a=b":true}}. -EBADMSG when
 * filters is not such a JSON object. */
int proxy_query_scope_to_channel(json_object *query, const char *channel);

/* Whether an inspect reply's Config.Labels mark a container as a nested container of channel. */
bool proxy_container_is_nested_of(json_object *inspect, const char *channel);

/* Volumes and networks made through the proxy are the channel's too: labels loop-channel=channel and
 * loop-type=nested forced onto a volume or network create body (an object). -EBADMSG, -ENOMEM. */
int proxy_labels_force(json_object *body, const char *channel);
/* Whether a volume or network inspect reply (Labels at its top) marks it as channel's. */
bool proxy_object_is_nested_of(json_object *inspect, const char *channel);

/* The engine's own networks (Docker's bridge, host and none, Podman's podman), which the agent may see
 * but not use beyond what a create's NetworkMode allows: a network of that name without a loop-channel
 * label. Their inspect and list entries are shown with "Containers" emptied (it names every container
 * on them, other channels' included): proxy_network_redact(). */
#define PROXY_DEFAULT_NETWORKS "bridge", "podman", "host", "none"
bool proxy_network_is_engine_default(json_object *network);
int proxy_network_redact(json_object *network);
/* Of an engine's unfiltered network list: the channel's own networks as they are and the engine's
 * defaults redacted, in a new array. -EBADMSG when list is not an array. */
int proxy_network_list_scope(json_object *list, const char *channel, json_object **ret);

/* What else a container create body uses by name: named volumes (Binds sources that are not paths,
 * Mounts of type volume), networks (NetworkMode, NetworkingConfig.EndpointsConfig; not the engines'
 * default networks "bridge", "default", "podman" and "none") and containers (NetworkMode "container:X").
 * Each must be the channel's own. Keys ignoring case; -EBADMSG for fields of the wrong type. */
typedef struct ProxyReferences {
        char **volumes;
        char **networks;
        char **containers;
} ProxyReferences;
#define PROXY_REFERENCES_MAX 256U       /* names (and bind sources) one create may use */
void proxy_references_done(ProxyReferences *r);
int proxy_container_references(json_object *body, ProxyReferences *ret);

/* Bind sources pinned at create: each absolute source of Binds and of Mounts of type bind is resolved
 * with symlinks and rewritten to the result, and the result's device and inode are recorded in the
 * container's label PROXY_LABEL_PINS (replacing any the agent set): [[dev, ino, "path"], ...]. At start
 * proxy_binds_verify() refuses a container whose source now resolves elsewhere or is another file, so
 * a swap between create and start cannot widen the bind. A container with pinned binds gets the restart
 * policy "no": the engine restarting it on its own would mount them again unchecked. -ENOENT (or another errno) when a source
 * cannot be resolved, -EINVAL when it resolves to a path a bind cannot name (with ':'), -EBADMSG for
 * fields of the wrong type. */
#define PROXY_LABEL_PINS "loop-bind-pins"
int proxy_binds_pin(json_object *body);
/* 0 when the pins in an inspect reply's Config.Labels still hold (or it has none), -EXDEV with the path
 * in *ret_path when one does not, -EBADMSG when the label is malformed. */
int proxy_binds_verify(json_object *inspect, char **ret_path);
/* How many binds an inspect reply's pins label lists (0 without the label), -EBADMSG when it is not a
 * list: a start of a container with any is made with its channel frozen. */
int proxy_binds_pinned(json_object *inspect);

/* A nested container that binds a host path writes host files, and a file it makes is owned by whoever
 * runs in it: its root (no capability needed) could leave a setuid-root file in a directory of the work
 * dir that anyone may write, and on Docker binds cannot be nosuid. So such a container runs as the
 * agent's uid:gid (numeric, after whatever the caller asked): "User" forced, "GroupAdd" dropped (a group
 * the agent is not in, to chgrp and setgid a file to), and SETUID and SETGID removed from CapAdd (with
 * them a process changes its uid back to 0). no-new-privileges (forced) keeps the image's setuid files
 * from changing it either. proxy_container_host_binds(): how many host paths a create body binds (Binds
 * sources that are paths, Mounts of type bind); -EBADMSG for fields of the wrong type. */
int proxy_container_host_binds(json_object *body);
int proxy_container_run_as(json_object *body, uid_t uid, gid_t gid);
/* An exec into a container that binds a host path (an inspect reply: its pins label, HostConfig.Binds
 * with a path, Mounts of type bind) runs as the same uid:gid: "User" of an exec create body forced. */
bool proxy_inspect_binds_host(json_object *inspect);
int proxy_exec_run_as(json_object *body, uid_t uid, gid_t gid);

/* tmpfs mounts (HostConfig.Tmpfs, Mounts of type tmpfs) checked and capped: refused with -EPERM and a
 * reason when they ask for exec and suid together, device files, a mode beyond 01777, a size beyond
 * PROXY_TMPFS_SIZE_MAX or a size relative to memory ("50%"); one without a size gets
 * PROXY_TMPFS_SIZE_DEFAULT. -EBADMSG for fields of the wrong type. */
#define PROXY_TMPFS_SIZE_MAX (4ULL * 1024ULL * 1024ULL * 1024ULL)
#define PROXY_TMPFS_SIZE_DEFAULT (64ULL * 1024ULL * 1024ULL)
int proxy_tmpfs_check(json_object *body, const char **ret_reason);

/* POST /build: the containers of its RUN steps are the engine's, made without the proxy seeing them,
 * so what the build API lets a caller widen is refused and the network forced. Every query parameter
 * must be one of a known harmless set (or empty, for those the docker CLI always sends: cgroupparent,
 * isolation, extrahosts, securityopt, outputs, session, remote, ulimits); -EPERM with its name in
 * *ret_refused otherwise, and for a version other than the classic builder's "1". network_none: the
 * networkmode parameter becomes "none" whatever was asked. Otherwise a named network is returned in
 * *ret_network, for the caller to check it is the channel's. -EBADMSG, -ENOMEM. */
int proxy_build_force(json_object *query, bool network_none, char **ret_network, char **ret_refused);

/* GET /info as a channel's agent sees it: of the engine's answer only what describes the engine and the
 * host's size (version, OS, kernel, architecture, CPUs, memory, drivers, security options), not the
 * counts of everyone's containers and images, the host's name, labels, registries or plugins. A new
 * object in *ret; -EBADMSG when info is not an object. */
int proxy_info_redact(json_object *info, json_object **ret);

/* Volumes and networks an agent names are the channel's by name too: "CHANNEL-..." or "CHANNEL_..."
 * (compose's project prefix), so that no channel can make one that another channel, or the operator's
 * runner, would later take for its own. Decided on the name alone, never on whether it exists. */
bool proxy_name_is_channels(const char *channel, const char *name);
