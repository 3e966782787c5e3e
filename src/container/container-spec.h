/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One container, as seed 001 describes it, computed from the configuration and facts about the host: its
 * name, labels, environment, mounts, files to copy in, limits and baseline hardening. Pure functions of
 * their inputs (plus stat() of host paths), so every rule is unit-tested. */

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "egress-policy.h"
#include "engine.h"

#define CONTAINER_NAME_BASE_MAX 40U
#define CONTAINER_PIDS_LIMIT 4096
#define CONTAINER_AGENT_PATH_SUFFIX "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

typedef enum ContainerType {
        CONTAINER_AGENT,
        CONTAINER_SHELL,
        CONTAINER_CHROME,
        _CONTAINER_TYPE_MAX,
        _CONTAINER_TYPE_INVALID = -EINVAL,
} ContainerType;

const char *container_type_to_string(ContainerType t);
ContainerType container_type_from_string(const char *s);

/* The host user the agent runs as: its uid/gid inside the container, HOME and HOST_USER. */
typedef struct HostUser {
        char *name;
        uid_t uid;
        gid_t gid;
        char *home;
} HostUser;

/* spec: a user name or a numeric uid; NULL: the user running this process. */
int host_user_resolve(const char *spec, HostUser *ret);
void host_user_done(HostUser *u);

/* Lower case, non-alphanumerics to "-", runs of "-" collapsed, trimmed, at most 40 characters. The base is
 * basename(work_dir) when the channel has a custom work dir, else the channel name. */
char *container_name_sanitize(const char *s);
/* "loop-{base}-{6 random hex}" */
int container_name_new(const char *channel, const char *custom_work_dir, char **ret);
/* "loop-chrome-{sanitized channel}" */
char *container_name_chrome(const char *channel);

/* The IANA name of the host's time zone: $TZ (without a leading ':'), then /etc/timezone, then the target of
 * the /etc/localtime symlink below .../zoneinfo/, else "UTC". root replaces "/" for tests. */
char *timezone_detect(const char *tz_env, const char *root);

/* The name containers use for the host: Docker resolves host.docker.internal through "host-gateway";
 * Podman 4.3 ignores host-gateway but always adds host.containers.internal. */
const char *engine_host_alias(EngineKind k);

/* A proxy value with localhost rewritten: "://localhost:" and "://127.0.0.1:" become "://ALIAS:", a bare
 * ":PORT" becomes "http://ALIAS:PORT". */
char *proxy_rewrite(const char *value, const char *alias);

/* SOURCE:TARGET[:OPTIONS]. A source with no "/" that does not start with "~" or "." is a named volume;
 * "~" expands to home in source (host paths only) and target. */
typedef struct MountSpec {
        char *source;
        char *target;
        char *options;                  /* NULL when none */
        bool named_volume;
} MountSpec;

int mount_spec_parse(const char *spec, const char *home, MountSpec *ret);
void mount_spec_done(MountSpec *m);

typedef struct ContainerInput {
        const char *channel;
        ContainerType type;
        const char *name;                       /* container name */
        const LoopConfig *config;               /* with the project config applied */
        const HostUser *user;
        EngineKind engine;
        char * const *host_env;                 /* the runner's environment: TZ and proxy variables */
        const char *timezone;                   /* from timezone_detect() */
        const char *git_excludes_file;          /* core.excludesFile of the user when it exists, else NULL */
        char * const *cmd;                      /* the command (agent argv), NULL for the image's */
        char * const *extra_env;                /* KEY=VALUE added by the runner (LOOP_*), may be NULL */
        char * const *extra_binds;              /* "SRC:DST[:OPTS]" added by the runner, may be NULL */
        const char *home_dir;                   /* host dir that backs HOME for every run of the channel (the
                                                 * agent's sessions live there); NULL: a volume per container */
        const char *cgroup_parent;              /* the channel's slice under systemd, else NULL */
        const char *owner;                      /* label loop-owner: "service" (the channel's runner), "cli" */
        bool egress_gateway;                    /* agent and shell containers: no network; out only through
                                                 * `loop relay` and the channel's egress gateway */
        const char *egress_dummy;               /* with egress_gateway: the container's model-API dummy (from
                                                 * the gateway, egress-token.h); NULL: EGRESS_DUMMY_KEY_NONE */
        const char *seccomp_option;             /* SecurityOpt "seccomp=..." (seccomp-profile.h) for agent and
                                                 * shell containers; NULL: the engine's default profile */
        const char *empty_dir;                  /* host dir, empty and not the agent's, bound read-only over
                                                 * masked directories; NULL: an empty read-only tmpfs (which
                                                 * Podman 4.3 mounts before the binds, under the work dir) */
} ContainerInput;

/* The relay's ports on the container's loopback and what the agent is told about them. */
#define EGRESS_RELAY_PROXY_PORT 3128
#define EGRESS_RELAY_API_PORT 2376
/* The agent's key when no gateway gave it a dummy of its own (no gateway: nothing to spend it on). */
#define EGRESS_DUMMY_KEY_NONE "sk-loop-no-gateway"

typedef struct ContainerPlan {
        json_object *body;              /* POST /containers/create body */
        char **copy_sources;            /* host files to copy in before start (expanded, existing) */
        char **copy_targets;            /* the container path of each, same index */
        char **chown_paths;             /* also in the body as CHOWN_PATHS */
        char **skipped;                 /* one line each: a mount or copy skipped and why */
} ContainerPlan;

/* Builds the create body. Env: CHANNEL_ID, HOME, HOST_USER, AGENT_UID, AGENT_GID, TZ, PATH
 * ($HOME/.local/bin:$HOME/bin:$HOME/go/bin:/usr/local/go/bin:...), CHOWN_PATHS, the credential (OAuth over
 * API key), forwarded proxy variables with NO_PROXY/no_proxy, custom envs (~ expanded), extra_env.
 * Binds: config mounts (named volumes kept, missing host paths skipped), the git excludes file read-only,
 * the work dir (or parent_dir when the work dir is inside it), extra dirs, extra_binds. Labels app=loop-agent,
 * loop-channel, loop-type. HostConfig: memory, NanoCpus, PidsLimit, CapDrop ALL plus only what the
 * entrypoint needs to drop privileges (CHOWN, DAC_OVERRIDE, FOWNER, SETUID, SETGID, SETPCAP), no-new-privileges, read-only rootfs with tmpfs /tmp and /run,
 * ExtraHosts for Docker, CgroupParent.
 * With egress_gateway (agent and shell containers): NetworkMode none and no ExtraHosts; the credential is
 * the container's dummy (egress_dummy); HTTP_PROXY, HTTPS_PROXY (and lower case) name the relay, NO_PROXY loopback, and
 * ANTHROPIC_BASE_URL the relay's API port; the host's proxy variables are not forwarded (the gateway uses
 * them); LOOP_EGRESS_ENABLED=1 tells the entrypoint to start `loop relay`. */
int container_plan_build(const ContainerInput *in, ContainerPlan **ret);
ContainerPlan *container_plan_free(ContainerPlan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(ContainerPlan *, container_plan_free);
