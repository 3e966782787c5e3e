/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <math.h>
#include <stdarg.h>
#include <regex.h>

#include "channel-defaults.h"
#include "config-build.h"
#include "config-schema.h"
#include "egress-policy.h"
#include "gate-glob.h"
#include "json-util.h"
#include "log.h"
#include "parse-util.h"
#include "protected-paths.h"
#include "regex-util.h"
#include "seal.h"
#include "string-util.h"
#include "strv.h"

#define CONFIG_DEPTH_MAX 32             /* nesting accepted in config JSON */
#define CONFIG_STRING_MAX 4096U         /* any single string value */
#define CONFIG_LIST_MAX 4096U           /* elements of any list or map */
#define DESCRIPTION_MAX 256U

/* ---- string checks ---- */

static bool has_control_chars(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return true;
        return false;
}

static const char *check_nonempty(const char *v) {
        return isempty(v) ? "must not be empty" : NULL;
}

static const char *check_single_line(const char *v) {
        return has_control_chars(v) ? "must not contain control characters" : NULL;
}

/* The seal's TCP connect restriction; room is left for the egress relay's two ports. */
static const char *check_connect_tcp(const char *v) {
        SealPolicy p = {};

        if (seal_parse_tcp_ports(v, &p) < 0 || p.n_tcp_ports > SEAL_TCP_PORTS_MAX - 2)
                return "must be \"none\" or up to 62 TCP ports (1-65535) separated by commas";
        return NULL;
}

static const char *check_description(const char *v) {
        if (strlen(v) > DESCRIPTION_MAX)
                return "is longer than 256 characters";
        return check_single_line(v);
}

static const char *check_image(const char *v) {
        if (isempty(v))
                return "must not be empty";
        for (const char *p = v; *p; p++)
                if (*p <= ' ' || *p == 0x7f)
                        return "must not contain whitespace or control characters";
        return NULL;
}

static bool path_has_dotdot(const char *p) {
        for (const char *s = p; (s = strstr(s, "..")); s += 2)
                if ((s == p || s[-1] == '/') && (s[2] == 0 || s[2] == '/'))
                        return true;
        return false;
}

static const char *check_absolute_path(const char *v) {
        if (v[0] != '/')
                return "must be an absolute path";
        if (path_has_dotdot(v))
                return "must not contain \"..\" components";
        return check_single_line(v);
}

static const char *check_optional_absolute_path(const char *v) {
        return isempty(v) ? NULL : check_absolute_path(v);
}

/* A path the agent's side sees, in mounts, extra_dirs and copy_files: absolute, ~ or ~/..., or relative
 * (project files resolve those against the work dir). */
static const char *check_host_path(const char *v) {
        if (isempty(v))
                return "must not be empty";
        if (v[0] == '~' && v[1] != 0 && v[1] != '/')
                return "~user paths are not supported, use ~ or an absolute path";
        return check_single_line(v);
}

static bool mount_option_valid(const char *o, size_t n) {
        static const char * const options[] = {
                "ro", "rw", "z", "Z", "U", "O", "nocopy", "shared", "rshared", "slave", "rslave",
                "private", "rprivate", "noexec", "exec", "nosuid", "suid", "nodev", "dev",
        };
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (strlen(options[i]) == n && strncmp(options[i], o, n) == 0)
                        return true;
        return false;
}

/* src:dst[:mode] where src is a host path or a named volume and mode a comma separated option list. */
static const char *check_mount(const char *v) {
        const char *c1, *c2, *r;

        r = check_single_line(v);
        if (r)
                return r;
        c1 = strchr(v, ':');
        if (!c1 || c1 == v)
                return "must have the form SOURCE:DESTINATION[:OPTIONS]";
        c2 = strchr(c1 + 1, ':');
        if (c2 == c1 + 1 || c1[1] == 0)
                return "has an empty destination";
        if (c1[1] != '/' && c1[1] != '~')
                return "destination must be an absolute path or start with ~";
        if (c2) {
                const char *o = c2 + 1;
                if (*o == 0)
                        return "has an empty option list";
                for (;;) {
                        size_t n = strcspn(o, ",");
                        if (!mount_option_valid(o, n))
                                return "has an unknown mount option (known: ro, rw, z, Z, U, O, nocopy, "
                                       "[r]shared, [r]slave, [r]private, [no]exec, [no]suid, [no]dev)";
                        if (o[n] == 0)
                                break;
                        o += n + 1;
                }
        }
        return NULL;
}

static const char *check_env_name(const char *v) {
        if (isempty(v))
                return "is not a valid environment variable name";
        if (!(v[0] == '_' || (v[0] >= 'A' && v[0] <= 'Z') || (v[0] >= 'a' && v[0] <= 'z')))
                return "is not a valid environment variable name";
        for (const char *p = v; *p; p++)
                if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
                        return "is not a valid environment variable name";
        return NULL;
}

static const char *check_regex(const char *v) {
        regex_t re;

        if (isempty(v))
                return "is an empty pattern";
        if (regex_too_large(v))
                return "is too large once its repetitions are expanded, or nests too deeply";
        if (regex_has_backreference(v))
                return "has a back-reference (\\1 to \\9), which extended regular expressions do not have";
        if (regcomp(&re, v, REG_EXTENDED | REG_NOSUB) != 0)
                return "is not a valid extended regular expression";
        regfree(&re);
        return NULL;
}

static const char *check_glob(const char *v) {
        if (isempty(v))
                return "is an empty pattern";
        /* fnmatch() has no compile step; an unclosed bracket is the one error it would silently accept. */
        for (const char *p = v; *p; p++) {
                if (*p == '\\' && p[1]) {
                        p++;
                        continue;
                }
                if (*p == '[') {
                        const char *q = p + 1;
                        if (*q == '!' || *q == '^')
                                q++;
                        if (*q == ']')
                                q++;
                        q = strchr(q, ']');
                        if (!q)
                                return "is not a valid glob (unclosed '[')";
                        p = q;
                }
        }
        return check_single_line(v);
}

/* A file rule's path glob: well formed, and able to match a path as the gate checks it (gate-glob.h). */
static const char *check_file_glob(const char *v) {
        return check_glob(v) ?: gate_glob_check_path(v);
}

static const char *check_socket_pattern(const char *v) {
        if (isempty(v))
                return "is an empty pattern";
        if (v[0] != '/' && v[0] != '@')
                return "must be an absolute socket path or @abstract-name";
        return check_single_line(v);
}

/* What the gate does with an exec whose arguments another task can still change (gate-mm.h). */
static const char *check_exec_shared_memory(const char *v) {
        return streq(v, "deny") || streq(v, "check") ? NULL : "must be \"deny\" or \"check\"";
}

static const char *check_file_op(const char *v) {
        return file_op_from_string(v) < 0
                ? "is not a file operation (read, write, create, delete, stat, list, chmod, chown, link)" : NULL;
}

static const char *check_check_op(const char *v) {
        return json_check_op_from_string(v) < 0
                ? "is not a check operation (present, empty_array, equals, contains_any, starts_with_any, "
                  "not_in, capability_not_in, source_path_in, source_path_not_in)" : NULL;
}

static const char *check_method(const char *v) {
        if (streq(v, "*"))
                return NULL;
        if (isempty(v))
                return "is not an HTTP method";
        for (const char *p = v; *p; p++)
                if (!(*p >= 'A' && *p <= 'Z'))
                        return "is not an HTTP method (upper case letters, or *)";
        return NULL;
}

/* "METHOD ^regex$" */
static const char *check_applies_to(const char *v) {
        const char *sp = strchr(v, ' ');
        _cleanup_free_ char *m = NULL;
        const char *r;

        if (!sp)
                return "must have the form \"METHOD REGEX\"";
        m = strndup(v, (size_t) (sp - v));
        if (!m)
                return "is too large";
        r = check_method(m);
        if (r)
                return r;
        while (*sp == ' ')
                sp++;
        return check_regex(sp);
}

/* A.B[*].C or A[0] */
static const char *check_json_path(const char *v) {
        if (isempty(v))
                return "is an empty path";
        for (const char *p = v; *p;) {
                size_t n = strcspn(p, ".[");
                if (n == 0)
                        return "is not a valid JSON path (empty segment)";
                p += n;
                while (*p == '[') {
                        const char *e = strchr(p, ']');
                        if (!e || e == p + 1)
                                return "is not a valid JSON path (bad [index])";
                        if (!(e == p + 2 && p[1] == '*'))
                                for (const char *d = p + 1; d < e; d++)
                                        if (*d < '0' || *d > '9')
                                                return "is not a valid JSON path (index must be a number or *)";
                        p = e + 1;
                }
                if (*p == '.')
                        p++;
                else if (*p)
                        return "is not a valid JSON path";
        }
        return NULL;
}

/* A user name (as useradd accepts them) or a numeric uid. */
static const char *check_user(const char *v) {
        if (isempty(v))
                return "must not be empty";
        if (strlen(v) > 32)
                return "is longer than 32 characters";
        for (const char *p = v; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '-' || *p == '.'))
                        return "is not a valid user name or uid";
        if (v[0] == '-')
                return "is not a valid user name or uid";
        return NULL;
}

static const char *check_engine_socket(const char *v) {
        return isempty(v) ? NULL : check_absolute_path(v);
}

static const char *check_api_addr(const char *v) {
        const char *c = strrchr(v, ':');
        uint16_t port;

        if (isempty(v))
                return NULL;
        if (!c)
                return "must have the form [HOST]:PORT";
        if (parse_port(c + 1, &port) < 0)
                return "has an invalid port";
        return NULL;
}

/* ---- the schema ---- */

#define STR(k, sc, chk)         { .key = k, .type = FIELD_STRING, .scope = sc, .check = chk }
#define SECRET(k, sc)           { .key = k, .type = FIELD_STRING, .scope = sc, .check = check_single_line, .secret = true }
#define BOOL(k, sc)             { .key = k, .type = FIELD_BOOL, .scope = sc }
#define UINT(k, sc, lo, hi)     { .key = k, .type = FIELD_UINT, .scope = sc, .min = lo, .max = hi }
#define DOUBLE(k, sc, lo, hi)   { .key = k, .type = FIELD_DOUBLE, .scope = sc, .dmin = lo, .dmax = hi }
#define STRV(k, sc, chk)        { .key = k, .type = FIELD_STRV, .scope = sc, .check = chk }
#define OBJECT(k, sc, s)        { .key = k, .type = FIELD_OBJECT, .scope = sc, .sub = &s }
#define ARRAY(k, sc, s)         { .key = k, .type = FIELD_ARRAY, .scope = sc, .sub = &s }
#define DECISION(k, sc)         { .key = k, .type = FIELD_DECISION, .scope = sc }
#define REQUIRED(f)             ({ Field _f = f; _f.required = true; _f; })
#define SCHEMA(n, a)            { .name = n, .fields = a, .n_fields = ELEMENTSOF(a) }

static const Field path_rule_fields[] = {
        { .key = "pattern", .type = FIELD_STRING, .scope = SCOPE_ALL, .check = check_socket_pattern, .required = true },
        { .key = "decision", .type = FIELD_DECISION, .scope = SCOPE_ALL, .required = true },
        STR("message", SCOPE_ALL, check_single_line),
};
static const Schema path_rule_schema = SCHEMA("path rule", path_rule_fields);

static const Field command_rule_fields[] = {
        STRV("commands", SCOPE_ALL, check_glob),
        STRV("args_patterns", SCOPE_ALL, check_regex),
        { .key = "decision", .type = FIELD_DECISION, .scope = SCOPE_ALL, .required = true },
        STR("message", SCOPE_ALL, check_single_line),
};
static const Schema command_rule_schema = SCHEMA("command rule", command_rule_fields);

static const Field file_rule_fields[] = {
        { .key = "paths", .type = FIELD_STRV, .scope = SCOPE_ALL, .check = check_file_glob, .required = true },
        STRV("operations", SCOPE_ALL, check_file_op),
        { .key = "decision", .type = FIELD_DECISION, .scope = SCOPE_ALL, .required = true },
        STR("message", SCOPE_ALL, check_single_line),
};
static const Schema file_rule_schema = SCHEMA("file rule", file_rule_fields);

static const Field agentgate_fields[] = {
        BOOL("enabled", SCOPE_ALL),
        DECISION("default_decision", SCOPE_CONFIG),
        STR("exec_shared_memory", SCOPE_CONFIG, check_exec_shared_memory),
        ARRAY("path_rules", SCOPE_ALL, path_rule_schema),
        ARRAY("command_rules", SCOPE_ALL, command_rule_schema),
        ARRAY("file_rules", SCOPE_ALL, file_rule_schema),
};
static const Schema agentgate_schema = SCHEMA("agentgate", agentgate_fields);

static const Field http_rule_fields[] = {
        STRV("methods", SCOPE_ALL, check_method),
        STRV("paths", SCOPE_ALL, check_regex),
        { .key = "decision", .type = FIELD_DECISION, .scope = SCOPE_ALL, .required = true },
        STR("message", SCOPE_ALL, check_single_line),
};
static const Schema http_rule_schema = SCHEMA("http rule", http_rule_fields);

static const Field json_check_fields[] = {
        { .key = "path", .type = FIELD_STRING, .scope = SCOPE_ALL, .check = check_json_path, .required = true },
        { .key = "op", .type = FIELD_STRING, .scope = SCOPE_ALL, .check = check_check_op, .required = true },
        STRV("values", SCOPE_ALL, check_single_line),
        STRV("except", SCOPE_ALL, check_single_line),
};
static const Schema json_check_schema = SCHEMA("json check", json_check_fields);

static const Field body_rule_fields[] = {
        { .key = "applies_to", .type = FIELD_STRING, .scope = SCOPE_ALL, .check = check_applies_to, .required = true },
        STRV("content_types", SCOPE_ALL, check_single_line),
        UINT("max_body_bytes", SCOPE_ALL, 0, 1024ULL * 1024 * 1024),
        { .key = "json_checks", .type = FIELD_ARRAY, .scope = SCOPE_ALL, .sub = &json_check_schema },
        { .key = "decision", .type = FIELD_DECISION, .scope = SCOPE_ALL, .required = true },
        STR("message", SCOPE_ALL, check_single_line),
};
static const Schema body_rule_schema = SCHEMA("body rule", body_rule_fields);

static const Field docker_proxy_fields[] = {
        BOOL("enabled", SCOPE_ALL),
        DECISION("default_decision", SCOPE_CONFIG),
        ARRAY("http_rules", SCOPE_ALL, http_rule_schema),
        ARRAY("body_rules", SCOPE_ALL, body_rule_schema),
        UINT("containers_max", SCOPE_CONFIG, 1, 10000),
        BOOL("nested_network", SCOPE_CONFIG),
        BOOL("build", SCOPE_CONFIG),
};
static const Schema docker_proxy_schema = SCHEMA("docker_proxy", docker_proxy_fields);

static const Field rate_limits_fields[] = {
        UINT("pending", SCOPE_CONFIG, 0, 10000),
        UINT("per_minute", SCOPE_CONFIG, 0, 100000),
        UINT("total", SCOPE_CONFIG, 0, 10000000),
};
static const Schema rate_limits_schema = SCHEMA("rate_limits", rate_limits_fields);

static const Field audit_fields[] = {
        UINT("retention_days", SCOPE_CONFIG, 0, 36500),
        BOOL("verbose", SCOPE_CONFIG),
};
static const Schema audit_schema = SCHEMA("audit", audit_fields);

static const char *check_webhook_url(const char *v) {
        if (isempty(v))
                return NULL;
        if (!startswith(v, "http://") && !startswith(v, "https://"))
                return "must be an http:// or https:// URL";
        for (const char *p = v; *p; p++)
                if (*p <= ' ' || *p == 0x7f)
                        return "must not contain whitespace or control characters";
        return NULL;
}

/* The gateway's own normalisation decides: a legacy IPv4 spelling ("3405803778") is no host. */
static bool egress_host_pattern_ok(const char *v) {
        _cleanup_free_ char *n = NULL;
        return egress_host_pattern_normalize(v, &n) >= 0 && egress_host_pattern_is_valid(n);
}

static const char *check_egress_host(const char *v) {
        return egress_host_pattern_ok(v) ? NULL : "is not a host name, an IP address (dotted quad or IPv6), *.suffix or *";
}

static const char *check_egress_registry(const char *v) {
        return egress_host_pattern_ok(v) && !streq(v, "*") ? NULL : "is not a host name or *.suffix";
}

static const char *check_egress_scheme(const char *v) {
        return streq(v, "https") || streq(v, "http") ? NULL : "must be \"https\" or \"http\"";
}

static const char *check_egress_intercept(const char *v) {
        return streq(v, "always") || streq(v, "auto") ? NULL : "must be \"always\" or \"auto\"";
}

static const char *check_egress_decision(const char *v) {
        return egress_decision_from_string(v) < 0 ? "must be one of \"allow\", \"deny\", \"credential\"" : NULL;
}

/* The model API behind the API pass-through: https://HOST[:PORT] (the real key never goes in clear text). */
static const char *check_egress_upstream(const char *v) {
        const char *rest;

        if (isempty(v))
                return NULL;
        rest = startswith(v, "https://");
        if (!rest || isempty(rest))
                return "must be an https:// URL (the real key is never sent in clear text)";
        for (const char *p = rest; *p; p++)
                if (*p <= ' ' || *p == 0x7f || *p == '@' || *p == '?' || *p == '#')
                        return "must be a plain https://HOST[:PORT][/PATH] URL";
        return NULL;
}

/* The host's own HTTP proxy, which the gateway asks for tunnels: http://HOST:PORT. */
static const char *check_egress_proxy(const char *v) {
        if (isempty(v))
                return NULL;
        if (!startswith(v, "http://"))
                return "must be an http://HOST:PORT URL";
        return check_webhook_url(v);
}

static const Field egress_credential_fields[] = {
        { .key = "header", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_nonempty, .required = true },
        { .key = "dummy", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_single_line, .required = true },
        { .key = "secret", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_single_line, .required = true, .secret = true },
};
static const Schema egress_credential_schema = SCHEMA("egress credential", egress_credential_fields);

static const Field egress_rule_fields[] = {
        { .key = "host", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_egress_host, .required = true },
        STRV("schemes", SCOPE_CONFIG, check_egress_scheme),
        { .key = "ports", .type = FIELD_UINTV, .scope = SCOPE_CONFIG, .min = 1, .max = 65535 },
        STRV("methods", SCOPE_CONFIG, check_method),
        STRV("paths", SCOPE_CONFIG, check_regex),
        STR("intercept", SCOPE_CONFIG, check_egress_intercept),
        { .key = "decision", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_egress_decision, .required = true },
        OBJECT("credential", SCOPE_CONFIG, egress_credential_schema),
        STR("message", SCOPE_CONFIG, check_single_line),
};
static const Schema egress_rule_schema = SCHEMA("egress rule", egress_rule_fields);

/* Not in project files: the agent writes those. */
static const Field egress_fields[] = {
        BOOL("enabled", SCOPE_CONFIG),
        /* secret too: a URL refused for its user:password@ must not be echoed into the journal */
        { .key = "api_upstream", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_egress_upstream, .secret = true },
        BOOL("allow_api", SCOPE_CONFIG),
        STRV("registries", SCOPE_CONFIG, check_egress_registry),
        ARRAY("rules", SCOPE_CONFIG, egress_rule_schema),
        /* secret: an error never echoes it, the URL may carry user:password@ */
        { .key = "upstream_proxy", .type = FIELD_STRING, .scope = SCOPE_CONFIG, .check = check_egress_proxy, .secret = true },
        STR("ca_file", SCOPE_CONFIG, check_optional_absolute_path),
};
static const Schema egress_schema = SCHEMA("egress", egress_fields);

static const Field gates_fields[] = {
        OBJECT("rate_limits", SCOPE_CONFIG, rate_limits_schema),
        OBJECT("audit", SCOPE_CONFIG, audit_schema),
        UINT("approval_timeout_sec", SCOPE_CONFIG, 0, 86400),
        STR("webhook_url", SCOPE_CONFIG, check_webhook_url),
        OBJECT("agentgate", SCOPE_ALL, agentgate_schema),
        OBJECT("docker_proxy", SCOPE_ALL, docker_proxy_schema),
};
static const Schema gates_schema = SCHEMA("gates", gates_fields);

static const Field mcp_server_fields[] = {
        { .key = "command", .type = FIELD_STRING, .scope = SCOPE_ALL, .check = check_nonempty, .required = true },
        STRV("args", SCOPE_ALL, NULL),
        { .key = "env", .type = FIELD_ENV_MAP, .scope = SCOPE_ALL },
};
static const Schema mcp_server_schema = SCHEMA("mcp server", mcp_server_fields);

static const Field mcp_fields[] = {
        { .key = "servers", .type = FIELD_MAP, .scope = SCOPE_ALL, .sub = &mcp_server_schema },
};
static const Schema mcp_schema = SCHEMA("mcp", mcp_fields);

static const Field browser_fields[] = {
        BOOL("enabled", SCOPE_ALL),
        STR("chrome_image", SCOPE_ALL, check_image),
        UINT("host_cdp_port", SCOPE_ALL, 1, 65535),
        UINT("memory_mb", SCOPE_ALL, 64, 1024 * 1024),
        UINT("idle_timeout_sec", SCOPE_ALL, 10, 86400),
};
static const Schema browser_schema = SCHEMA("browser", browser_fields);

/* Scheduled tasks (issue 22): what the agent's `loop mcp` and `loop task` may create. */
static const Field tasks_fields[] = {
        UINT("max", SCOPE_CONFIG, 0, 1000),
        UINT("min_interval_sec", SCOPE_CONFIG, 1, 366ULL * 24 * 3600),
        UINT("prompt_max", SCOPE_CONFIG, 1, 1024 * 1024),
};
static const Schema tasks_schema = SCHEMA("tasks", tasks_fields);

static const Field permission_set_fields[] = {
        STRV("users", SCOPE_ALL, check_nonempty),
        STRV("roles", SCOPE_ALL, check_nonempty),
};
static const Schema permission_set_schema = SCHEMA("permission set", permission_set_fields);

static const Field permissions_fields[] = {
        OBJECT("owners", SCOPE_ALL, permission_set_schema),
        OBJECT("members", SCOPE_ALL, permission_set_schema),
};
static const Schema permissions_schema = SCHEMA("permissions", permissions_fields);

static const Field engine_fields[] = {
        STR("socket", SCOPE_CONFIG, check_engine_socket),
};
static const Schema engine_schema = SCHEMA("engine", engine_fields);

static const Field limits_fields[] = {
        UINT("memory_max_mb", SCOPE_CONFIG, 0, 1024ULL * 1024 * 1024),
        UINT("cpu_quota_percent", SCOPE_CONFIG, 0, 100ULL * 4096),
        UINT("tasks_max", SCOPE_CONFIG, 0, 4194304),
};
static const Schema limits_schema = SCHEMA("limits", limits_fields);

static const Field root_fields[] = {
        SECRET("claude_code_oauth_token", SCOPE_ALL),
        SECRET("anthropic_api_key", SCOPE_ALL),
        STR("claude_bin_path", SCOPE_ALL, check_nonempty),
        STR("claude_model", SCOPE_ALL, check_single_line),
        BOOL("keep_mcp_configs", SCOPE_ALL),
        STR("container_image", SCOPE_ALL, check_image),
        UINT("container_timeout_sec", SCOPE_CONFIG, 1, 30ULL * 24 * 3600),
        UINT("container_memory_mb", SCOPE_ALL, 16, 1024 * 1024),
        DOUBLE("container_cpus", SCOPE_ALL, 0.01, 1024.0),
        UINT("container_keep_alive_sec", SCOPE_CONFIG, 0, 30ULL * 24 * 3600),
        STR("api_addr", SCOPE_CONFIG, check_api_addr),
        STRV("mounts", SCOPE_ALL, check_mount),
        STRV("copy_files", SCOPE_ALL, check_host_path),
        STRV("extra_dirs", SCOPE_ALL, check_host_path),
        STRV("protect_paths", SCOPE_CONFIG, protected_path_check_entry),
        STRV("mask_paths", SCOPE_CONFIG, protected_path_check_entry),
        STRV("unmask_paths", SCOPE_CONFIG, protected_path_check_unmask_entry),
        BOOL("tripwire", SCOPE_CONFIG),
        STR("connect_tcp", SCOPE_CONFIG, check_connect_tcp),
        { .key = "envs", .type = FIELD_ENV_MAP, .scope = SCOPE_ALL },
        OBJECT("mcp", SCOPE_ALL, mcp_schema),
        OBJECT("browser", SCOPE_ALL, browser_schema),
        OBJECT("tasks", SCOPE_CONFIG, tasks_schema),
        OBJECT("gates", SCOPE_ALL, gates_schema),
        OBJECT("egress", SCOPE_CONFIG, egress_schema),
        OBJECT("permissions", SCOPE_ALL, permissions_schema),
        OBJECT("engine", SCOPE_CONFIG, engine_schema),
        STR("description", SCOPE_CHANNEL, check_description),
        STR("work_dir", SCOPE_CHANNEL, check_absolute_path),
        STR("parent_dir", SCOPE_CHANNEL, check_optional_absolute_path),
        BOOL("enabled", SCOPE_CONFIG),
        OBJECT("limits", SCOPE_CONFIG, limits_schema),
        STR("user", SCOPE_CONFIG, check_user),
        UINT("max_attempts", SCOPE_CONFIG, 1, 100),
        UINT("retry_delay_sec", SCOPE_CONFIG, 0, 3600),
        BOOL("strict_config", SCOPE_GLOBAL),
};
const Schema config_schema_root = SCHEMA("config", root_fields);

const Field *schema_find(const Schema *s, const char *key) {
        for (size_t i = 0; i < s->n_fields; i++)
                if (streq(s->fields[i].key, key))
                        return &s->fields[i];
        return NULL;
}

/* ---- validation ---- */

static const char *json_type_describe(json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_null:    return "null";
        case json_type_boolean: return "a boolean";
        case json_type_double:  return "a number";
        case json_type_int:     return "an integer";
        case json_type_object:  return "an object";
        case json_type_array:   return "an array";
        case json_type_string:  return "a string";
        }
        return "something else";
}

static const char *field_type_describe(FieldType t) {
        switch (t) {
        case FIELD_STRING:   return "a string";
        case FIELD_BOOL:     return "a boolean";
        case FIELD_UINT:     return "a non-negative integer";
        case FIELD_DOUBLE:   return "a number";
        case FIELD_STRV:     return "an array of strings";
        case FIELD_OBJECT:
        case FIELD_MAP:
        case FIELD_ENV_MAP:  return "an object";
        case FIELD_ARRAY:    return "an array of objects";
        case FIELD_DECISION: return "one of \"allow\", \"deny\", \"approve\"";
        case FIELD_UINTV:    return "an array of non-negative integers";
        }
        return "?";
}

static size_t edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), row[65];

        if (la > 64 || lb > 64)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t prev = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t cur = row[j];
                        size_t sub = prev + (a[i - 1] != b[j - 1]);
                        row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), sub);
                        prev = cur;
                }
        }
        return row[lb];
}

static const char *schema_suggest(const Schema *s, const char *key) {
        const char *best = NULL;
        size_t best_d = 3;      /* suggest only close typos */

        for (size_t i = 0; i < s->n_fields; i++) {
                size_t d = edit_distance(key, s->fields[i].key);
                if (d < best_d) {
                        best_d = d;
                        best = s->fields[i].key;
                }
        }
        return best;
}

static const char *scope_describe(unsigned scope) {
        if (scope == SCOPE_CHANNEL)
                return "only valid in a channel file";
        if (!(scope & SCOPE_PROJECT))
                return "not allowed in a project config";
        return "not allowed here";
}

typedef struct Validator {
        unsigned scope;
        const char *file;
        ConfigProblems *problems;
        int errors;
} Validator;

_printf_(4, 5)
static int problem(Validator *v, bool error, const char *key, const char *format, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = strprintf_va(&m, format, ap);
        va_end(ap);
        if (r < 0)
                return r;
        if (error)
                v->errors++;
        return config_problem_add(v->problems, error, v->file, key, "%s", m);
}

static char *key_join(const char *prefix, const char *key) {
        char *r;
        if (asprintf(&r, "%s%s%s", strempty(prefix), isempty(prefix) ? "" : ".", key) < 0)
                return NULL;
        return r;
}

static char *key_index(const char *prefix, size_t i) {
        char *r;
        if (asprintf(&r, "%s[%zu]", prefix, i) < 0)
                return NULL;
        return r;
}

static int validate_object(Validator *v, const Schema *s, json_object *obj, const char *prefix, unsigned depth);

static int validate_string(Validator *v, const Field *f, json_object *val, const char *key) {
        const char *s = json_object_get_string(val), *reason;
        size_t len = (size_t) json_object_get_string_len(val);

        if (strlen(s) != len)
                return problem(v, true, key, "must not contain NUL characters");
        if (len > CONFIG_STRING_MAX)
                return problem(v, true, key, "is longer than %u bytes", CONFIG_STRING_MAX);
        if (f->type == FIELD_DECISION) {
                if (decision_from_string(s) < 0)
                        return problem(v, true, key, "must be one of \"allow\", \"deny\", \"approve\"");
                return 0;
        }
        reason = f->check ? f->check(s) : NULL;
        if (!reason)
                return 0;
        if (f->secret)
                return problem(v, true, key, "%s", reason);
        return problem(v, true, key, "\"%s\" %s", s, reason);
}

static int validate_env_map(Validator *v, json_object *obj, const char *prefix) {
        int r;

        if (json_object_object_length(obj) > (int) CONFIG_LIST_MAX)
                return problem(v, true, prefix, "has more than %u entries", CONFIG_LIST_MAX);
        json_object_object_foreach(obj, name, val) {
                _cleanup_free_ char *k = key_join(prefix, name);
                const char *reason;

                if (!k)
                        return -ENOMEM;
                reason = check_env_name(name);
                if (reason) {
                        r = problem(v, true, k, "\"%s\" %s", name, reason);
                        if (r < 0)
                                return r;
                        continue;
                }
                switch (json_object_get_type(val)) {
                case json_type_string:
                        if (strlen(json_object_get_string(val)) != (size_t) json_object_get_string_len(val)) {
                                r = problem(v, true, k, "must not contain NUL characters");
                                if (r < 0)
                                        return r;
                        }
                        break;
                case json_type_object:
                case json_type_array:
                        r = problem(v, true, k, "must be a string, number, boolean or null, not %s",
                                    json_type_describe(val));
                        if (r < 0)
                                return r;
                        break;
                default:
                        break;
                }
        }
        return 0;
}

/* One element e (named k) of an array field f. */
static int validate_element(Validator *v, const Field *f, json_object *e, const char *k, unsigned depth) {
        json_type t = json_object_get_type(e);

        switch (f->type) {
        case FIELD_STRV:
                if (t != json_type_string)
                        return problem(v, true, k, "must be a string, not %s", json_type_describe(e));
                return validate_string(v, f, e, k);
        case FIELD_UINTV:
                if (t != json_type_int || json_object_get_int64(e) < (int64_t) f->min ||
                    json_object_get_int64(e) > (int64_t) f->max)
                        return problem(v, true, k, "must be an integer between %llu and %llu",
                                       (unsigned long long) f->min, (unsigned long long) f->max);
                return 0;
        case FIELD_ARRAY:
                if (t != json_type_object)
                        return problem(v, true, k, "must be an object, not %s", json_type_describe(e));
                return validate_object(v, f->sub, e, k, depth + 1);
        default:                        /* not an array field */
                return -EINVAL;
        }
}

/* An array field f: its length capped, each element checked with its index in the key ("a[2]"). */
static int validate_array(Validator *v, const Field *f, json_object *val, const char *key, unsigned depth) {
        size_t n = json_object_array_length(val);

        if (n > CONFIG_LIST_MAX)
                return problem(v, true, key, "has more than %u elements", CONFIG_LIST_MAX);
        if (f->type == FIELD_STRV && f->required && n == 0)
                return problem(v, true, key, "must not be empty");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *k = key_index(key, i);
                int r;

                if (!k)
                        return -ENOMEM;
                r = validate_element(v, f, json_object_array_get_idx(val, i), k, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int validate_value(Validator *v, const Field *f, json_object *val, const char *key, unsigned depth) {
        json_type t = json_object_get_type(val);
        int r;

        if (depth > CONFIG_DEPTH_MAX)
                return problem(v, true, key, "is nested too deeply");

        switch (f->type) {
        case FIELD_STRING:
        case FIELD_DECISION:
                if (t != json_type_string)
                        break;
                return validate_string(v, f, val, key);

        case FIELD_BOOL:
                if (t != json_type_boolean)
                        break;
                return 0;

        case FIELD_UINT: {
                int64_t i;
                if (t != json_type_int)
                        break;
                errno = 0;
                i = json_object_get_int64(val);
                if (i < 0 || errno == EINVAL) {
                        /* json-c keeps integers beyond INT64_MAX as uint64 */
                        return problem(v, true, key, "must be between %llu and %llu",
                                       (unsigned long long) f->min, (unsigned long long) f->max);
                }
                uint64_t u = json_object_get_uint64(val);
                if (u < f->min || u > f->max)
                        return problem(v, true, key, "must be between %llu and %llu, not %llu",
                                       (unsigned long long) f->min, (unsigned long long) f->max,
                                       (unsigned long long) u);
                return 0;
        }

        case FIELD_DOUBLE: {
                double d;
                if (t != json_type_double && t != json_type_int)
                        break;
                d = json_object_get_double(val);
                if (!isfinite(d) || d < f->dmin || d > f->dmax)
                        return problem(v, true, key, "must be between %g and %g", f->dmin, f->dmax);
                return 0;
        }

        case FIELD_STRV:
        case FIELD_UINTV:
                if (t != json_type_array)
                        break;
                return validate_array(v, f, val, key, depth);

        case FIELD_OBJECT:
                if (t != json_type_object)
                        break;
                return validate_object(v, f->sub, val, key, depth + 1);

        case FIELD_ENV_MAP:
                if (t != json_type_object)
                        break;
                return validate_env_map(v, val, key);

        case FIELD_MAP: {
                if (t != json_type_object)
                        break;
                if (json_object_object_length(val) > (int) CONFIG_LIST_MAX)
                        return problem(v, true, key, "has more than %u entries", CONFIG_LIST_MAX);
                json_object_object_foreach(val, name, e) {
                        _cleanup_free_ char *k = key_join(key, name);
                        if (!k)
                                return -ENOMEM;
                        if (isempty(name) || has_control_chars(name))
                                r = problem(v, true, k, "names must be non-empty and free of control characters");
                        else if (json_object_get_type(e) != json_type_object)
                                r = problem(v, true, k, "must be an object, not %s", json_type_describe(e));
                        else
                                r = validate_object(v, f->sub, e, k, depth + 1);
                        if (r < 0)
                                return r;
                }
                return 0;
        }

        case FIELD_ARRAY:
                if (t != json_type_array)
                        break;
                return validate_array(v, f, val, key, depth);
        }

        return problem(v, true, key, "must be %s, not %s", field_type_describe(f->type), json_type_describe(val));
}

static int validate_object(Validator *v, const Schema *s, json_object *obj, const char *prefix, unsigned depth) {
        int r;

        json_object_object_foreach(obj, key, val) {
                _cleanup_free_ char *k = key_join(prefix, key);
                const Field *f = schema_find(s, key);

                if (!k)
                        return -ENOMEM;
                if (!f) {
                        const char *hint = schema_suggest(s, key);
                        if (hint)
                                r = problem(v, false, k, "unknown key, ignoring (did you mean \"%s\"?)", hint);
                        else
                                r = problem(v, false, k, "unknown key, ignoring");
                        if (r >= 0)
                                v->problems->items[v->problems->n - 1].unknown_key = true;
                } else if (!(f->scope & v->scope)) {
                        /* Channel-only keys in loop.json are mistakes; keys a project may not set are ignored,
                         * as upstream does. */
                        r = problem(v, v->scope != SCOPE_PROJECT, k, "%s%s", scope_describe(f->scope),
                                    v->scope == SCOPE_PROJECT ? ", ignoring" : "");
                } else
                        r = validate_value(v, f, val, k, depth);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < s->n_fields; i++) {
                const Field *f = &s->fields[i];
                if (f->required && !json_object_object_get_ex(obj, f->key, NULL)) {
                        _cleanup_free_ char *k = key_join(prefix, f->key);
                        if (!k)
                                return -ENOMEM;
                        r = problem(v, true, k, "is required");
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int schema_validate(const Schema *s, json_object *obj, unsigned scope, const char *file, ConfigProblems *problems) {
        Validator v = { .scope = scope, .file = file, .problems = problems };
        int r;

        if (json_object_get_type(obj) != json_type_object)
                return config_problem_add(problems, true, file, NULL, "must contain a JSON object, not %s",
                                          json_type_describe(obj)) < 0 ? -ENOMEM : 1;
        r = validate_object(&v, s, obj, NULL, 0);
        if (r < 0)
                return r;
        return v.errors;
}

/* ---- merging ---- */

json_object *schema_merge(const Schema *s, json_object *base, json_object *over) {
        _cleanup_(json_object_putp) json_object *r = NULL;

        r = base ? json_copy(base) : json_object_new_object();
        if (!r)
                return NULL;
        if (!over)
                return TAKE_PTR(r);

        json_object_object_foreach(over, key, val) {
                const Field *f = s ? schema_find(s, key) : NULL;
                json_object *old = NULL, *n;

                (void) json_object_object_get_ex(r, key, &old);
                if (f && old && json_object_get_type(old) == json_type_object &&
                    json_object_get_type(val) == json_type_object &&
                    (f->type == FIELD_OBJECT || f->type == FIELD_MAP || f->type == FIELD_ENV_MAP))
                        n = schema_merge(f->type == FIELD_OBJECT ? f->sub : NULL, old, val);
                else
                        n = json_copy(val);
                if (!n && val)
                        return NULL;
                if (json_object_object_add(r, key, n) < 0) {
                        json_object_put(n);
                        return NULL;
                }
        }
        return TAKE_PTR(r);
}

/* ---- parsing ---- */

int config_parse_text(const char *text, size_t size, json_object **ret, char **ret_reason) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        JsonParseError e = {};
        int r;

        r = json_parse_untrusted(text, size, SIZE_MAX, CONFIG_DEPTH_MAX + 8, false, &o, &e);
        if (r == -EILSEQ)
                return asprintf(ret_reason, "contains a NUL byte") < 0 ? -ENOMEM : -EINVAL;
        if (r == -EFBIG)
                return asprintf(ret_reason, "too large") < 0 ? -ENOMEM : -EINVAL;
        if (r == -EBADMSG && e.error == json_tokener_continue)
                return asprintf(ret_reason, "invalid JSON: unexpected end of file") < 0 ? -ENOMEM : -EINVAL;
        if (r == -EBADMSG) {
                unsigned line = 1, col = 1;
                for (size_t i = 0; i < e.offset && i < size; i++) {
                        if (text[i] == '\n') {
                                line++;
                                col = 1;
                        } else
                                col++;
                }
                return asprintf(ret_reason, "invalid JSON at line %u, column %u: %s", line, col,
                                json_tokener_error_desc(e.error)) < 0 ? -ENOMEM : -EINVAL;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- typed loading (the JSON is validated, so types are right) ---- */

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;
        if (!o || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

static int load_string(json_object *o, const char *key, const char *def, char **ret) {
        json_object *v = get(o, key);
        const char *s = v ? json_object_get_string(v) : def;

        free(*ret);
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

static bool load_bool(json_object *o, const char *key, bool def) {
        json_object *v = get(o, key);
        return v ? json_object_get_boolean(v) : def;
}

static uint64_t load_uint(json_object *o, const char *key, uint64_t def) {
        json_object *v = get(o, key);
        return v ? json_object_get_uint64(v) : def;
}

static Decision load_decision(json_object *o, const char *key, Decision def) {
        json_object *v = get(o, key);
        return v ? decision_from_string(json_object_get_string(v)) : def;
}

static int load_strv(json_object *o, const char *key, char ***ret) {
        json_object *v = get(o, key);
        char **l = NULL;
        size_t n;

        *ret = strv_free(*ret);
        if (!v)
                return 0;
        n = json_object_array_length(v);
        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                l[i] = strdup(json_object_get_string(json_object_array_get_idx(v, i)));
                if (!l[i]) {
                        strv_free(l);
                        return -ENOMEM;
                }
        }
        *ret = l;
        return 0;
}

/* Non-strings are stringified: numbers as JSON writes them, booleans as true/false, null as "". */
static int env_map_to_strv(json_object *map, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (map) {
                json_object_object_foreach(map, name, val) {
                        const char *s = "";
                        char *kv;
                        if (json_object_get_type(val) != json_type_null)
                                s = json_object_get_string(val);
                        if (asprintf(&kv, "%s=%s", name, s) < 0)
                                return -ENOMEM;
                        r = strv_consume(&l, kv);
                        if (r < 0)
                                return r;
                }
        }
        strv_free(*ret);
        *ret = TAKE_PTR(l);
        return 0;
}

/* Allocates one zeroed item of size bytes per element of the JSON array a (none when a is NULL) and loads
 * each with load_one. *items and *n are set first, so the config's done() frees what a failure leaves. */
static int load_array_sized(json_object *a, size_t size, int (*load_one)(json_object *e, void *item),
                            void **items, size_t *n) {
        size_t m = a ? json_object_array_length(a) : 0;
        uint8_t *p = calloc(m ?: 1, size);
        int r;

        if (!p)
                return -ENOMEM;
        *items = p;
        *n = m;
        for (size_t i = 0; i < m; i++) {
                r = load_one(json_object_array_get_idx(a, i), p + i * size);
                if (r < 0)
                        return r;
        }
        return 0;
}

#define load_array(a, items, n, load_one) \
        load_array_sized((a), sizeof(**(items)), (load_one), (void **) (items), (n))

static int load_path_rule(json_object *e, void *item) {
        PathRule *p = item;
        int r;

        if ((r = load_string(e, "pattern", NULL, &p->pattern)) < 0 ||
            (r = load_string(e, "message", NULL, &p->message)) < 0)
                return r;
        p->decision = load_decision(e, "decision", DECISION_DENY);
        return 0;
}

static int load_command_rule(json_object *e, void *item) {
        CommandRule *c = item;
        int r;

        if ((r = load_strv(e, "commands", &c->commands)) < 0 ||
            (r = load_strv(e, "args_patterns", &c->args_patterns)) < 0 ||
            (r = load_string(e, "message", NULL, &c->message)) < 0)
                return r;
        c->decision = load_decision(e, "decision", DECISION_DENY);
        return 0;
}

static int load_file_rule(json_object *e, void *item) {
        json_object *ops = get(e, "operations");
        FileRule *f = item;
        int r;

        if ((r = load_strv(e, "paths", &f->paths)) < 0 ||
            (r = load_string(e, "message", NULL, &f->message)) < 0)
                return r;
        for (size_t j = 0; ops && j < json_object_array_length(ops); j++) {
                FileOp op = file_op_from_string(json_object_get_string(json_object_array_get_idx(ops, j)));
                if (op < 0)             /* the schema refused it already; never a shift by -1 */
                        return -EINVAL;
                f->operations |= 1U << op;
        }
        f->decision = load_decision(e, "decision", DECISION_DENY);
        return 0;
}

static int load_http_rule(json_object *e, void *item) {
        HttpRule *h = item;
        int r;

        if ((r = load_strv(e, "methods", &h->methods)) < 0 ||
            (r = load_strv(e, "paths", &h->paths)) < 0 ||
            (r = load_string(e, "message", NULL, &h->message)) < 0)
                return r;
        h->decision = load_decision(e, "decision", DECISION_DENY);
        return 0;
}

static int load_json_check(json_object *e, void *item) {
        JsonCheck *jc = item;
        int r;

        if ((r = load_string(e, "path", NULL, &jc->path)) < 0 ||
            (r = load_strv(e, "values", &jc->values)) < 0 ||
            (r = load_strv(e, "except", &jc->except)) < 0)
                return r;
        jc->op = json_check_op_from_string(json_object_get_string(get(e, "op")));
        return 0;
}

static int load_body_rule(json_object *e, void *item) {
        BodyRule *b = item;
        int r;

        if ((r = load_string(e, "applies_to", NULL, &b->applies_to)) < 0 ||
            (r = load_strv(e, "content_types", &b->content_types)) < 0 ||
            (r = load_string(e, "message", NULL, &b->message)) < 0)
                return r;
        b->max_body_bytes = load_uint(e, "max_body_bytes", 0);
        b->decision = load_decision(e, "decision", DECISION_DENY);
        return load_array(get(e, "json_checks"), &b->json_checks, &b->n_json_checks, load_json_check);
}

static int load_mcp_servers(json_object *servers, LoopConfig *c) {
        size_t n = servers ? (size_t) json_object_object_length(servers) : 0, i = 0;
        _cleanup_strv_free_ char **names = NULL;
        int r;

        c->mcp_servers = calloc(n ?: 1, sizeof(McpServer));
        if (!c->mcp_servers)
                return -ENOMEM;
        if (servers) {
                json_object_object_foreach(servers, key, v) {
                        (void) v;
                        if ((r = strv_extend(&names, key)) < 0)
                                return r;
                }
        }
        strv_sort(names);
        STRV_FOREACH(name, names) {
                json_object *e = get(servers, *name);
                McpServer *m = &c->mcp_servers[i++];
                c->n_mcp_servers = i;
                m->name = strdup(*name);
                if (!m->name)
                        return -ENOMEM;
                if ((r = load_string(e, "command", NULL, &m->command)) < 0 ||
                    (r = load_strv(e, "args", &m->args)) < 0 ||
                    (r = env_map_to_strv(get(e, "env"), &m->env)) < 0)
                        return r;
        }
        return 0;
}

int loop_config_from_json(json_object *obj, const char *channel, LoopConfig *ret) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        json_object *gates = get(obj, "gates"), *gate = get(gates, "agentgate"), *proxy = get(gates, "docker_proxy");
        json_object *browser = get(obj, "browser"), *limits = get(obj, "limits"), *tasks = get(obj, "tasks");
        json_object *rl = get(gates, "rate_limits"), *audit = get(gates, "audit"), *perm = get(obj, "permissions");
        _cleanup_free_ char *default_work_dir = NULL;
        json_object *cpus;
        int r;

        if (channel && asprintf(&default_work_dir, "%s/%s/work", LOOP_STATE_DIR, channel) < 0)
                return -ENOMEM;

        if ((r = load_string(obj, "claude_code_oauth_token", NULL, &c.claude_code_oauth_token)) < 0 ||
            (r = load_string(obj, "anthropic_api_key", NULL, &c.anthropic_api_key)) < 0 ||
            (r = load_string(obj, "claude_bin_path", "claude", &c.claude_bin_path)) < 0 ||
            (r = load_string(obj, "claude_model", "claude-sonnet-4-6", &c.claude_model)) < 0 ||
            (r = load_string(obj, "container_image", "loop-agent:latest", &c.container_image)) < 0 ||
            (r = load_string(obj, "api_addr", ":8222", &c.api_addr)) < 0 ||
            (r = load_strv(obj, "mounts", &c.mounts)) < 0 ||
            (r = load_strv(obj, "extra_dirs", &c.extra_dirs)) < 0 ||
            (r = load_strv(obj, "protect_paths", &c.protect_paths)) < 0 ||
            (r = load_strv(obj, "mask_paths", &c.mask_paths)) < 0 ||
            (r = load_strv(obj, "unmask_paths", &c.unmask_paths)) < 0 ||
            (r = env_map_to_strv(get(obj, "envs"), &c.envs)) < 0 ||
            (r = load_mcp_servers(get(get(obj, "mcp"), "servers"), &c)) < 0 ||
            (r = load_string(browser, "chrome_image", "loop-chrome:latest", &c.browser.chrome_image)) < 0 ||
            (r = load_strv(get(perm, "owners"), "users", &c.permissions.owners.users)) < 0 ||
            (r = load_strv(get(perm, "owners"), "roles", &c.permissions.owners.roles)) < 0 ||
            (r = load_strv(get(perm, "members"), "users", &c.permissions.members.users)) < 0 ||
            (r = load_strv(get(perm, "members"), "roles", &c.permissions.members.roles)) < 0 ||
            (r = load_string(get(obj, "engine"), "socket", NULL, &c.engine.socket)) < 0 ||
            (r = load_string(obj, "description", NULL, &c.description)) < 0 ||
            (r = load_string(obj, "work_dir", default_work_dir, &c.work_dir)) < 0 ||
            (r = load_string(obj, "parent_dir", NULL, &c.parent_dir)) < 0 ||
            (r = load_string(obj, "user", NULL, &c.user)) < 0 ||
            (r = load_string(obj, "connect_tcp", NULL, &c.connect_tcp)) < 0)
                return r;

        /* ~/.claude.json is always copied, as upstream does. */
        if (get(obj, "copy_files")) {
                if ((r = load_strv(obj, "copy_files", &c.copy_files)) < 0)
                        return r;
        }
        if (!strv_contains(c.copy_files, "~/.claude.json") && (r = strv_extend(&c.copy_files, "~/.claude.json")) < 0)
                return r;

        if (isempty(c.engine.socket))
                c.engine.socket = mfree(c.engine.socket);
        if (isempty(c.parent_dir))
                c.parent_dir = mfree(c.parent_dir);

        c.keep_mcp_configs = load_bool(obj, "keep_mcp_configs", false);
        c.tripwire = load_bool(obj, "tripwire", true);
        c.container_timeout_sec = load_uint(obj, "container_timeout_sec", 3600);
        c.container_memory_mb = load_uint(obj, "container_memory_mb", 1024);
        cpus = get(obj, "container_cpus");
        c.container_cpus = cpus ? json_object_get_double(cpus) : 1.0;
        c.container_keep_alive_sec = load_uint(obj, "container_keep_alive_sec", 300);

        c.browser.enabled = load_bool(browser, "enabled", true);
        c.browser.host_cdp_port = load_uint(browser, "host_cdp_port", 9222);
        c.browser.memory_mb = load_uint(browser, "memory_mb", 512);
        c.browser.idle_timeout_sec = load_uint(browser, "idle_timeout_sec", CHANNEL_BROWSER_IDLE_SEC_DEFAULT);

        c.tasks.max = load_uint(tasks, "max", CHANNEL_TASKS_MAX_DEFAULT);
        c.tasks.min_interval_sec = load_uint(tasks, "min_interval_sec", CHANNEL_TASKS_MIN_INTERVAL_SEC_DEFAULT);
        c.tasks.prompt_max = load_uint(tasks, "prompt_max", CHANNEL_TASKS_PROMPT_MAX_DEFAULT);

        c.gates.rate_limits.pending = load_uint(rl, "pending", CHANNEL_GATE_RATE_PENDING_DEFAULT);
        c.gates.rate_limits.per_minute = load_uint(rl, "per_minute", CHANNEL_GATE_RATE_PER_MINUTE_DEFAULT);
        c.gates.rate_limits.total = load_uint(rl, "total", CHANNEL_GATE_RATE_TOTAL_DEFAULT);
        c.gates.audit.retention_days = load_uint(audit, "retention_days", 30);
        c.gates.audit.verbose = load_bool(audit, "verbose", CHANNEL_GATE_AUDIT_VERBOSE_DEFAULT);
        c.gates.approval_timeout_sec = load_uint(gates, "approval_timeout_sec", CHANNEL_GATE_APPROVAL_TIMEOUT_SEC_DEFAULT);
        if ((r = load_string(gates, "webhook_url", NULL, &c.gates.webhook_url)) < 0)
                return r;
        if (isempty(c.gates.webhook_url))
                c.gates.webhook_url = mfree(c.gates.webhook_url);

        c.gates.agentgate.enabled = load_bool(gate, "enabled", true);
        c.gates.agentgate.default_decision = load_decision(gate, "default_decision", DECISION_ALLOW);
        c.gates.agentgate.exec_shared_memory_check = streq_ptr(json_object_get_string(get(gate, "exec_shared_memory")), "check");
        if ((r = load_array(get(gate, "path_rules"), &c.gates.agentgate.path_rules,
                            &c.gates.agentgate.n_path_rules, load_path_rule)) < 0 ||
            (r = load_array(get(gate, "command_rules"), &c.gates.agentgate.command_rules,
                            &c.gates.agentgate.n_command_rules, load_command_rule)) < 0 ||
            (r = load_array(get(gate, "file_rules"), &c.gates.agentgate.file_rules,
                            &c.gates.agentgate.n_file_rules, load_file_rule)) < 0)
                return r;

        /* Unless set, the proxy follows the gate. */
        c.gates.docker_proxy.enabled = load_bool(proxy, "enabled", c.gates.agentgate.enabled);
        c.gates.docker_proxy.default_decision = load_decision(proxy, "default_decision", DECISION_ALLOW);
        c.gates.docker_proxy.containers_max = load_uint(proxy, "containers_max", 16);
        c.gates.docker_proxy.nested_network = load_bool(proxy, "nested_network", false);
        c.gates.docker_proxy.build = load_bool(proxy, "build", false);
        if ((r = load_array(get(proxy, "http_rules"), &c.gates.docker_proxy.http_rules,
                            &c.gates.docker_proxy.n_http_rules, load_http_rule)) < 0 ||
            (r = load_array(get(proxy, "body_rules"), &c.gates.docker_proxy.body_rules,
                            &c.gates.docker_proxy.n_body_rules, load_body_rule)) < 0)
                return r;

        c.enabled = load_bool(obj, "enabled", true);
        c.max_attempts = (unsigned) load_uint(obj, "max_attempts", 3);
        c.retry_delay_sec = (unsigned) load_uint(obj, "retry_delay_sec", 10);
        c.strict_config = load_bool(obj, "strict_config", false);
        c.limits.memory_max_mb = load_uint(limits, "memory_max_mb", 0);
        c.limits.cpu_quota_percent = load_uint(limits, "cpu_quota_percent", 0);
        c.limits.tasks_max = load_uint(limits, "tasks_max", 0);

        c.json = json_copy(obj);
        if (!c.json)
                return -ENOMEM;

        *ret = c;
        c = (LoopConfig) {};
        return 0;
}
