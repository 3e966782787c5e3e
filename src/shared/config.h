/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The configuration: /etc/loop/loop.json (global) and /etc/loop/channels.d/NAME.json (one per channel),
 * $LOOP_CONFIG_DIR replacing /etc/loop. Every file is validated against one schema (config-schema.c):
 * types, ranges, allowed values and unknown keys. A channel file overrides any global field (objects are
 * merged key by key, everything else is replaced), and {work_dir}/.loop/config.json is merged over that at
 * run time with the narrower rules of config_apply_project() (config-project.h). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "json-util.h"
#include "macro.h"

#define CONFIG_FILE_MAX (4U * 1024U * 1024U)    /* larger config files are refused */
#define CONFIG_CHANNELS_MAX 65536U               /* channel files read from channels.d at most */
#define CHANNEL_NAME_MAX 64U
#define CONFIG_CREDENTIAL_MAX 16384U           /* a secret read from a systemd credential, at most */

typedef enum Decision {
        DECISION_ALLOW,
        DECISION_DENY,
        DECISION_APPROVE,
        _DECISION_MAX,
        _DECISION_INVALID = -EINVAL,
} Decision;

const char *decision_to_string(Decision d);
Decision decision_from_string(const char *s);

/* Operations a gate file rule can name; a rule's set is a bit mask of 1 << FileOp. */
typedef enum FileOp {
        FILE_OP_READ,
        FILE_OP_WRITE,
        FILE_OP_CREATE,
        FILE_OP_DELETE,
        FILE_OP_STAT,
        FILE_OP_LIST,
        FILE_OP_CHMOD,
        FILE_OP_CHOWN,
        FILE_OP_LINK,
        _FILE_OP_MAX,
        _FILE_OP_INVALID = -EINVAL,
} FileOp;

const char *file_op_to_string(FileOp op);
FileOp file_op_from_string(const char *s);

/* Operations of a docker proxy body rule check. */
typedef enum JsonCheckOp {
        JSON_CHECK_PRESENT,
        JSON_CHECK_EMPTY_ARRAY,
        JSON_CHECK_EQUALS,
        JSON_CHECK_CONTAINS_ANY,
        JSON_CHECK_STARTS_WITH_ANY,
        JSON_CHECK_NOT_IN,
        JSON_CHECK_CAPABILITY_NOT_IN,
        JSON_CHECK_SOURCE_PATH_IN,
        JSON_CHECK_SOURCE_PATH_NOT_IN,
        _JSON_CHECK_MAX,
        _JSON_CHECK_INVALID = -EINVAL,
} JsonCheckOp;

const char *json_check_op_to_string(JsonCheckOp op);
JsonCheckOp json_check_op_from_string(const char *s);

typedef struct PathRule {
        char *pattern;                  /* absolute AF_UNIX path, or @name for an abstract socket */
        Decision decision;
        char *message;
} PathRule;

typedef struct CommandRule {
        char **commands;                /* shell globs against basename(argv[0]); empty: any */
        char **args_patterns;           /* extended regexes against argv[1..] joined by spaces; empty: any */
        Decision decision;
        char *message;
} CommandRule;

typedef struct FileRule {
        char **paths;                   /* globs, "**" crosses directories */
        unsigned operations;            /* mask of 1 << FileOp; 0: any */
        Decision decision;
        char *message;
} FileRule;

typedef struct HttpRule {
        char **methods;                 /* empty or "*": any */
        char **paths;                   /* extended regexes against the unversioned path */
        Decision decision;
        char *message;
} HttpRule;

typedef struct JsonCheck {
        char *path;                     /* e.g. HostConfig.Binds[*] */
        JsonCheckOp op;
        char **values;
        char **except;
} JsonCheck;

typedef struct BodyRule {
        char *applies_to;               /* "METHOD ^regex$" */
        char **content_types;
        uint64_t max_body_bytes;        /* 0: the proxy's default cap */
        JsonCheck *json_checks;
        size_t n_json_checks;
        Decision decision;
        char *message;
} BodyRule;

typedef struct AgentGateConfig {
        bool enabled;
        Decision default_decision;
        bool exec_shared_memory_check;  /* "exec_shared_memory": "check": an exec beside other threads is
                                         * decided on its arguments as read, racily (default "deny") */
        PathRule *path_rules;
        size_t n_path_rules;
        CommandRule *command_rules;
        size_t n_command_rules;
        FileRule *file_rules;
        size_t n_file_rules;
} AgentGateConfig;

typedef struct DockerProxyConfig {
        bool enabled;                   /* default: same as agentgate.enabled */
        Decision default_decision;
        HttpRule *http_rules;
        size_t n_http_rules;
        BodyRule *body_rules;
        size_t n_body_rules;
        uint64_t containers_max;        /* nested containers the channel may have at once */
        bool nested_network;            /* nested containers get a network even when the agent has none */
        bool build;                     /* POST /build through the proxy (default false) */
} DockerProxyConfig;

typedef struct GatesConfig {
        struct {
                uint64_t pending;
                uint64_t per_minute;
                uint64_t total;
        } rate_limits;
        struct {
                uint64_t retention_days;
                bool verbose;
        } audit;
        uint64_t approval_timeout_sec;  /* how long a human has to answer; 0: nobody is asked (no-approver) */
        char *webhook_url;              /* told about every pending approval; NULL: none. May hold a secret */
        AgentGateConfig agentgate;
        DockerProxyConfig docker_proxy;
} GatesConfig;

typedef struct McpServer {
        char *name;
        char *command;
        char **args;
        char **env;                     /* KEY=VALUE, in file order */
} McpServer;

typedef struct BrowserConfig {
        bool enabled;
        char *chrome_image;
        uint64_t host_cdp_port;         /* obsolete (seed 001): CDP has no TCP port; ignored with a warning */
        uint64_t memory_mb;
        uint64_t idle_timeout_sec;      /* the browser service (and Chrome with it) stops after this idle */
} BrowserConfig;

/* Scheduled tasks of a channel (tasks-store.h). */
typedef struct TasksConfig {
        uint64_t max;                   /* tasks of the channel, at most */
        uint64_t min_interval_sec;      /* the shortest interval an interval task may have */
        uint64_t prompt_max;            /* bytes of a task's prompt */
} TasksConfig;

typedef struct PermissionSet {
        char **users;
        char **roles;
} PermissionSet;

/* A channel's total limits, applied to its slice loop-NAME.slice. 0 means "not limited". */
typedef struct ChannelLimits {
        uint64_t memory_max_mb;
        uint64_t cpu_quota_percent;
        uint64_t tasks_max;
} ChannelLimits;

typedef struct LoopConfig {
        /* Authentication for Claude Code; OAuth wins when both are set. Secrets: never log them. */
        char *claude_code_oauth_token;
        char *anthropic_api_key;

        char *claude_bin_path;
        char *claude_model;
        bool keep_mcp_configs;

        char *container_image;
        uint64_t container_timeout_sec;
        uint64_t container_memory_mb;
        double container_cpus;
        uint64_t container_keep_alive_sec;

        char *api_addr;                 /* accepted for compatibility; loop uses per-channel unix sockets */

        char **mounts;                  /* src:dst[:mode] */
        char **copy_files;
        char **extra_dirs;
        char **envs;                    /* KEY=VALUE, non-strings stringified, in file order */
        char **protect_paths;           /* below the work dir, read-only in addition to the defaults */
        char **mask_paths;              /* below the work dir, masked in addition to the defaults */
        char **unmask_paths;            /* defaults of either list (or /proc, /sys paths) not applied */
        bool tripwire;                  /* watch the protected paths during a run (tripwire.h) */
        char *connect_tcp;              /* the seal's TCP connect ports ("443,8080", "none"); NULL: any */

        McpServer *mcp_servers;         /* sorted by name */
        size_t n_mcp_servers;

        BrowserConfig browser;
        TasksConfig tasks;
        GatesConfig gates;

        struct {
                PermissionSet owners;
                PermissionSet members;
        } permissions;

        struct {
                char *socket;           /* Docker Engine API socket; NULL: podman's, then docker's */
        } engine;

        /* Channel fields (allowed in channel files, and as defaults in loop.json where noted). */
        char *description;              /* channel only */
        char *work_dir;                 /* channel only; default: LOOP_STATE_DIR/NAME/work */
        char *parent_dir;               /* channel only; the worktree parent mounted instead of work_dir */
        bool enabled;                   /* false: the generator makes no units for the channel */
        char *user;                     /* host user (name or uid) the agent runs as; NULL: see runner */
        unsigned max_attempts;          /* runs of one queued message before it moves to failed/ */
        unsigned retry_delay_sec;       /* wait before a failed message's next attempt, doubled per attempt */
        bool strict_config;             /* loop.json only: unknown keys are errors, not warnings */
        ChannelLimits limits;

        /* The validated, merged JSON this was read from (owned). */
        json_object *json;
} LoopConfig;

void loop_config_done(LoopConfig *c);

/* One thing wrong with the configuration. */
typedef struct ConfigProblem {
        char *file;
        char *key;                      /* dotted key path, or NULL when it concerns the whole file */
        char *message;
        bool error;                     /* false: a warning (unknown key, ignored field) */
        bool unknown_key;               /* a key no schema knows (an error with strict_config) */
} ConfigProblem;

typedef struct ConfigProblems {
        ConfigProblem *items;
        size_t n;
} ConfigProblems;

void config_problems_done(ConfigProblems *p);
int config_problem_add(ConfigProblems *p, bool error, const char *file, const char *key,
                       const char *format, ...) _printf_(5, 6);
/* "FILE: KEY: MESSAGE" */
char *config_problem_to_string(const ConfigProblem *p);

typedef struct Channel {
        char *name;                     /* file name without .json */
        char *path;                     /* the channel file */
        bool valid;
        char *reason;                   /* why it is invalid: the first error, as one line */
        LoopConfig config;              /* only when valid */
} Channel;

/* Marks a channel invalid with a reason (the first reason stays) and frees its config: nothing of it may be
 * used after this, arguments of FORMAT neither. */
int channel_invalidate(Channel *c, const char *format, ...) _printf_(2, 3);

typedef struct ConfigSet {
        char *dir;                      /* the config dir */
        char *global_path;              /* DIR/loop.json */
        bool global_present;
        bool global_valid;
        LoopConfig global;              /* defaults, merged with loop.json when it is valid */
        Channel *channels;              /* every channel file found, valid or not, sorted by name */
        size_t n_channels;
        ConfigProblems problems;        /* everything found wrong, errors and warnings */
} ConfigSet;

/* $LOOP_CONFIG_DIR, else the compiled-in default (/etc/loop). */
const char *config_dir(void);

/* Loads the global config and every channel under dir. Problems in the files are recorded in the set, not
 * returned: the return value is negative only when nothing could be read at all (out of memory). A missing
 * dir or channels.d gives an empty set. An invalid loop.json makes every channel invalid (fail closed). */
int config_load(const char *dir, ConfigSet **ret);
ConfigSet *config_set_free(ConfigSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ConfigSet *, config_set_free);

const Channel *config_set_find_channel(const ConfigSet *s, const char *name);
size_t config_set_count_valid(const ConfigSet *s);

/* 0 when name is a valid channel name; otherwise -EINVAL and a static reason. */
int channel_name_check(const char *name, const char **ret_reason);

/* Loads only the defaults. */
int loop_config_defaults(LoopConfig *ret);


/* Validated JSON of a config for display, with secrets replaced by "[REDACTED]". */
/* Registers every secret the configuration holds for redaction (audit_add_secret()): the model API key
 * and OAuth token, every value under a secret-sounding key (egress credentials' "secret", tokens,
 * passwords, in envs too) and the password of egress.upstream_proxy. Every process that may log one calls
 * it once it has loaded the configuration. */
int loop_config_register_secrets(const LoopConfig *c);

/* Logs the warnings about FILE (and about loop.json), "FILE: KEY: MESSAGE" each: every command that runs a
 * channel says what of its configuration is ignored, not only `loop config check`. */
void config_set_log_warnings(const ConfigSet *s, const char *file);

/* egress.ca_file of a config, NULL when not set. */
const char *loop_config_egress_ca_file(const LoopConfig *c);

json_object *loop_config_to_json_redacted(const LoopConfig *c);
