/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The config module: every field, default, range, merge rule and error. */

#include <fcntl.h>
#include <sys/stat.h>

#include "config-project.h"
#include "config-schema.h"
#include "egress-policy.h"
#include "config.h"
#include "io-util.h"
#include "json-util.h"
#include "string-util.h"
#include "strv.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-config-XXXXXX";

static void write_file(const char *rel, const char *text, mode_t mode) {
        char path[4096], dir[4096];
        snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = 0;
        (void) mkdir(dir, 0755);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0 || loop_write(fd, text, strlen(text)) < 0)
                abort();
        (void) fchmod(fd, mode);
        close(fd);
}

static void reset_tree(void) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf %s/* %s/.loop", tmpdir, tmpdir);
        if (system(cmd) != 0)
                abort();
}

/* Validates one JSON document as a file of the given scope; returns the error count and keeps problems. */
static int validate(const char *text, unsigned scope, ConfigProblems *p) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        int r = config_parse_text(text, strlen(text), &o, &reason);
        if (r < 0)
                return -1;
        return schema_validate(&config_schema_root, o, scope, "test.json", p);
}

static bool has_problem(const ConfigProblems *p, bool error, const char *key, const char *needle) {
        for (size_t i = 0; i < p->n; i++)
                if (p->items[i].error == error && streq_ptr(p->items[i].key, key) &&
                    (!needle || strstr(p->items[i].message, needle)))
                        return true;
        return false;
}

/* One document must be refused with an error at key. */
static void refused(const char *text, unsigned scope, const char *key, const char *needle, const char *what) {
        ConfigProblems p = {};
        int r = validate(text, scope, &p);
        ok(r > 0 && has_problem(&p, true, key, needle), "%s", what);
        if (!(r > 0 && has_problem(&p, true, key, needle)))
                for (size_t i = 0; i < p.n; i++) {
                        _cleanup_free_ char *s = config_problem_to_string(&p.items[i]);
                        printf("#   problem: %s\n", s);
                }
        config_problems_done(&p);
}

static void accepted(const char *text, unsigned scope, const char *what) {
        ConfigProblems p = {};
        int r = validate(text, scope, &p);
        ok(r == 0 && p.n == 0, "%s", what);
        for (size_t i = 0; r != 0 && i < p.n; i++) {
                _cleanup_free_ char *s = config_problem_to_string(&p.items[i]);
                printf("#   problem: %s\n", s);
        }
        config_problems_done(&p);
}

static int load_json(const char *text, LoopConfig *c) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        ConfigProblems p = {};
        int r = config_parse_text(text, strlen(text), &o, &reason);
        if (r < 0)
                return r;
        r = schema_validate(&config_schema_root, o, SCOPE_CHANNEL, "t", &p);
        config_problems_done(&p);
        if (r != 0)
                return -EINVAL;
        return loop_config_from_json(o, "chan", c);
}

static void test_defaults(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};

        ok(loop_config_defaults(&c) == 0, "the defaults load");
        ok(!c.claude_code_oauth_token && !c.anthropic_api_key, "no credentials by default");
        is_str(c.claude_bin_path, "claude", "claude_bin_path defaults to claude");
        is_str(c.claude_model, "claude-sonnet-4-6", "claude_model defaults to claude-sonnet-4-6");
        ok(!c.keep_mcp_configs, "keep_mcp_configs defaults to false");
        is_str(c.container_image, "loop-agent:latest", "container_image defaults to loop-agent:latest");
        is_int(c.container_timeout_sec, 3600, "container_timeout_sec defaults to 3600");
        is_int(c.container_memory_mb, 1024, "container_memory_mb defaults to 1024");
        ok(c.container_cpus == 1.0, "container_cpus defaults to 1.0");
        is_int(c.container_keep_alive_sec, 300, "container_keep_alive_sec defaults to 300");
        is_str(c.api_addr, ":8222", "api_addr defaults to :8222");
        is_int(strv_length(c.mounts), 0, "no mounts by default");
        ok(strv_length(c.copy_files) == 1 && streq(c.copy_files[0], "~/.claude.json"),
           "copy_files always holds ~/.claude.json");
        is_int(strv_length(c.envs), 0, "no envs by default");
        is_int(c.n_mcp_servers, 0, "no user MCP servers by default");
        ok(c.browser.enabled, "browser.enabled defaults to true");
        is_str(c.browser.chrome_image, "loop-chrome:latest", "browser.chrome_image defaults to loop-chrome:latest");
        is_int(c.browser.host_cdp_port, 9222, "browser.host_cdp_port defaults to 9222");
        is_int(c.browser.memory_mb, 512, "browser.memory_mb defaults to 512");
        is_int(c.gates.rate_limits.pending, 30, "gates.rate_limits.pending defaults to 30");
        is_int(c.gates.rate_limits.per_minute, 60, "gates.rate_limits.per_minute defaults to 60");
        is_int(c.gates.rate_limits.total, 500, "gates.rate_limits.total defaults to 500");
        is_int(c.gates.audit.retention_days, 30, "gates.audit.retention_days defaults to 30");
        ok(!c.gates.audit.verbose, "gates.audit.verbose defaults to false");
        is_int(c.gates.approval_timeout_sec, 300, "gates.approval_timeout_sec defaults to 300");
        ok(!c.gates.webhook_url, "gates.webhook_url is unset by default");
        ok(c.gates.agentgate.enabled, "gates.agentgate.enabled defaults to true");
        is_int(c.gates.agentgate.default_decision, DECISION_ALLOW, "gates.agentgate.default_decision defaults to allow");
        ok(c.gates.docker_proxy.enabled, "gates.docker_proxy.enabled defaults to true");
        is_int(c.gates.docker_proxy.default_decision, DECISION_ALLOW, "gates.docker_proxy.default_decision defaults to allow");
        ok(!c.engine.socket, "engine.socket is unset by default (autodetect)");
        ok(c.enabled, "a channel is enabled by default");
        is_int(c.max_attempts, 3, "max_attempts defaults to 3");
        ok(c.limits.memory_max_mb == 0 && c.limits.cpu_quota_percent == 0 && c.limits.tasks_max == 0,
           "a channel slice has no limits by default");
}

static void test_every_field(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        const char *text =
                "{ \"claude_code_oauth_token\": \"oauth-x\", \"anthropic_api_key\": \"sk-y\",\n"
                "  \"claude_bin_path\": \"/opt/claude\", \"claude_model\": \"m1\", \"keep_mcp_configs\": true,\n"
                "  \"container_image\": \"img:1\", \"container_timeout_sec\": 60, \"container_memory_mb\": 2048,\n"
                "  \"container_cpus\": 2.5, \"container_keep_alive_sec\": 0, \"api_addr\": \"127.0.0.1:9000\",\n"
                "  \"mounts\": [\"vol:/data\", \"~/.ssh:~/.ssh:ro\"], \"copy_files\": [\"~/.gitconfig\"],\n"
                "  \"extra_dirs\": [\"/srv/extra\"],\n"
                "  \"envs\": {\"A\": \"x\", \"N\": 3, \"F\": 1.5, \"B\": true, \"Z\": null},\n"
                "  \"mcp\": {\"servers\": {\"zed\": {\"command\": \"z\"}, \"abc\": {\"command\": \"a\", \"args\": [\"-v\"], \"env\": {\"K\": 1}}}},\n"
                "  \"browser\": {\"enabled\": false, \"chrome_image\": \"c:2\", \"host_cdp_port\": 9333, \"memory_mb\": 256},\n"
                "  \"gates\": {\"rate_limits\": {\"pending\": 1, \"per_minute\": 2, \"total\": 3},\n"
                "             \"audit\": {\"retention_days\": 7, \"verbose\": true},\n"
                "             \"approval_timeout_sec\": 45, \"webhook_url\": \"https://hooks.example/x\",\n"
                "             \"agentgate\": {\"enabled\": true, \"default_decision\": \"deny\",\n"
                "                \"path_rules\": [{\"pattern\": \"/run/x.sock\", \"decision\": \"approve\", \"message\": \"m\"}],\n"
                "                \"command_rules\": [{\"commands\": [\"rm\"], \"args_patterns\": [\"-rf /\"], \"decision\": \"deny\"}],\n"
                "                \"file_rules\": [{\"paths\": [\"/etc/**\"], \"operations\": [\"write\", \"create\"], \"decision\": \"deny\"}]},\n"
                "             \"docker_proxy\": {\"enabled\": false, \"default_decision\": \"approve\",\n"
                "                \"http_rules\": [{\"methods\": [\"POST\"], \"paths\": [\"^/exec/.*\"], \"decision\": \"approve\"}],\n"
                "                \"body_rules\": [{\"applies_to\": \"POST ^/containers/create$\", \"max_body_bytes\": 100,\n"
                "                   \"json_checks\": [{\"path\": \"HostConfig.Binds[*]\", \"op\": \"source_path_in\", \"values\": [\"/\"], \"except\": [\"/srv\"]}],\n"
                "                   \"decision\": \"deny\"}]}},\n"
                "  \"permissions\": {\"owners\": {\"users\": [\"alice\"], \"roles\": [\"wheel\"]}, \"members\": {\"users\": [\"bob\"]}},\n"
                "  \"engine\": {\"socket\": \"/run/docker.sock\"},\n"
                "  \"description\": \"My project\", \"work_dir\": \"/srv/proj\", \"parent_dir\": \"/srv\", \"enabled\": false,\n"
                "  \"limits\": {\"memory_max_mb\": 4096, \"cpu_quota_percent\": 200, \"tasks_max\": 512}, \"user\": \"alice\"\n"
                "}";

        ok(load_json(text, &c) == 0, "a channel file using every field loads");
        is_str(c.claude_code_oauth_token, "oauth-x", "claude_code_oauth_token is read");
        is_str(c.anthropic_api_key, "sk-y", "anthropic_api_key is read");
        is_str(c.claude_bin_path, "/opt/claude", "claude_bin_path is read");
        is_str(c.claude_model, "m1", "claude_model is read");
        ok(c.keep_mcp_configs, "keep_mcp_configs is read");
        is_str(c.container_image, "img:1", "container_image is read");
        is_int(c.container_timeout_sec, 60, "container_timeout_sec is read");
        is_int(c.container_memory_mb, 2048, "container_memory_mb is read");
        ok(c.container_cpus == 2.5, "container_cpus is read");
        is_int(c.container_keep_alive_sec, 0, "container_keep_alive_sec 0 is allowed");
        is_str(c.api_addr, "127.0.0.1:9000", "api_addr is read");
        ok(strv_length(c.mounts) == 2 && streq(c.mounts[1], "~/.ssh:~/.ssh:ro"), "mounts are read in order");
        ok(strv_length(c.copy_files) == 2 && streq(c.copy_files[0], "~/.gitconfig") &&
           streq(c.copy_files[1], "~/.claude.json"), "copy_files keep ~/.claude.json added");
        ok(strv_length(c.extra_dirs) == 1, "extra_dirs are read");
        ok(strv_contains(c.envs, "A=x") && strv_contains(c.envs, "N=3") && strv_contains(c.envs, "F=1.5") &&
           strv_contains(c.envs, "B=true") && strv_contains(c.envs, "Z="), "envs are stringified");
        ok(c.n_mcp_servers == 2 && streq(c.mcp_servers[0].name, "abc") && streq(c.mcp_servers[1].name, "zed"),
           "mcp servers are sorted by name");
        ok(strv_length(c.mcp_servers[0].args) == 1 && strv_contains(c.mcp_servers[0].env, "K=1"),
           "mcp server args and env are read");
        ok(!c.browser.enabled && streq(c.browser.chrome_image, "c:2") && c.browser.host_cdp_port == 9333 &&
           c.browser.memory_mb == 256, "browser fields are read");
        ok(c.gates.rate_limits.pending == 1 && c.gates.rate_limits.per_minute == 2 && c.gates.rate_limits.total == 3,
           "rate limits are read");
        ok(c.gates.audit.retention_days == 7 && c.gates.audit.verbose, "audit fields are read");
        is_int(c.gates.approval_timeout_sec, 45, "gates.approval_timeout_sec is read");
        is_str(c.gates.webhook_url, "https://hooks.example/x", "gates.webhook_url is read");
        ok(c.gates.agentgate.default_decision == DECISION_DENY, "agentgate.default_decision is read");
        ok(c.gates.agentgate.n_path_rules == 1 && c.gates.agentgate.path_rules[0].decision == DECISION_APPROVE &&
           streq(c.gates.agentgate.path_rules[0].message, "m"), "path rules are read");
        ok(c.gates.agentgate.n_command_rules == 1 && streq(c.gates.agentgate.command_rules[0].commands[0], "rm"),
           "command rules are read");
        ok(c.gates.agentgate.n_file_rules == 1 &&
           c.gates.agentgate.file_rules[0].operations == ((1U << FILE_OP_WRITE) | (1U << FILE_OP_CREATE)),
           "file rule operations become a mask");
        ok(!c.gates.docker_proxy.enabled, "an explicit docker_proxy.enabled wins over the gate's");
        ok(c.gates.docker_proxy.n_http_rules == 1 && c.gates.docker_proxy.n_body_rules == 1,
           "http and body rules are read");
        ok(c.gates.docker_proxy.body_rules[0].n_json_checks == 1 &&
           c.gates.docker_proxy.body_rules[0].json_checks[0].op == JSON_CHECK_SOURCE_PATH_IN &&
           strv_length(c.gates.docker_proxy.body_rules[0].json_checks[0].except) == 1, "json checks are read");
        ok(strv_contains(c.permissions.owners.users, "alice") && strv_contains(c.permissions.members.users, "bob"),
           "permissions are read");
        is_str(c.engine.socket, "/run/docker.sock", "engine.socket is read");
        is_str(c.description, "My project", "description is read");
        is_str(c.work_dir, "/srv/proj", "work_dir is read");
        is_str(c.parent_dir, "/srv", "parent_dir is read");
        ok(!c.enabled, "enabled is read");
        is_str(c.user, "alice", "user is read");
        ok(c.limits.memory_max_mb == 4096 && c.limits.cpu_quota_percent == 200 && c.limits.tasks_max == 512,
           "limits are read");
}

static void test_gate_follows(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        ok(load_json("{\"gates\": {\"agentgate\": {\"enabled\": false}}}", &c) == 0 &&
           !c.gates.docker_proxy.enabled, "docker_proxy.enabled follows agentgate.enabled when unset");
}

static void test_default_work_dir(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        ok(load_json("{}", &c) == 0 && endswith(c.work_dir, "/loop/chan/work"),
           "the default work dir is STATE_DIR/NAME/work");
}

static void test_validation(void) {
        accepted("{}", SCOPE_GLOBAL, "an empty global config is valid");
        accepted("// comment\n{ /* c */ \"claude_model\": \"x\" }", SCOPE_GLOBAL, "comments are allowed");

        refused("{\"gates\": {\"agentgate\": {\"exec_shared_memory\": \"maybe\"}}}", SCOPE_CHANNEL,
                "gates.agentgate.exec_shared_memory", "\"deny\" or \"check\"", "exec_shared_memory is deny or check");
        accepted("{\"gates\": {\"agentgate\": {\"exec_shared_memory\": \"check\"}}}", SCOPE_CHANNEL,
                 "a channel may choose exec_shared_memory: check");
        {
                ConfigProblems p = {};
                ok(validate("{\"gates\": {\"agentgate\": {\"exec_shared_memory\": \"check\"}}}", SCOPE_PROJECT, &p) == 0 &&
                   has_problem(&p, false, "gates.agentgate.exec_shared_memory", "ignoring"),
                   "a project file cannot loosen exec_shared_memory (ignored with a warning)");
                config_problems_done(&p);
        }
        refused("{\"container_memory_mb\": \"lots\"}", SCOPE_CHANNEL, "container_memory_mb", "must be a non-negative integer, not a string",
                "a string where a number belongs is an error naming both types");
        refused("{\"container_memory_mb\": 8}", SCOPE_CHANNEL, "container_memory_mb", "between 16 and",
                "container_memory_mb below 16 is refused");
        refused("{\"container_memory_mb\": -5}", SCOPE_CHANNEL, "container_memory_mb", "between",
                "a negative number is refused");
        refused("{\"container_memory_mb\": 1.5}", SCOPE_CHANNEL, "container_memory_mb", "integer",
                "a fraction where an integer belongs is refused");
        refused("{\"container_memory_mb\": 18446744073709551615}", SCOPE_CHANNEL, "container_memory_mb", "between",
                "a huge number is refused");
        refused("{\"container_timeout_sec\": 0}", SCOPE_CHANNEL, "container_timeout_sec", "between 1",
                "a zero timeout is refused");
        refused("{\"container_cpus\": 0}", SCOPE_CHANNEL, "container_cpus", "between",
                "zero cpus are refused");
        refused("{\"container_cpus\": \"2\"}", SCOPE_CHANNEL, "container_cpus", "must be a number",
                "cpus as a string are refused");
        accepted("{\"container_cpus\": 2}", SCOPE_CHANNEL, "cpus as an integer are accepted");
        refused("{\"gates\": {\"webhook_url\": \"ftp://x\"}}", SCOPE_GLOBAL, "gates.webhook_url", "http",
                "a webhook_url that is not http(s) is refused");
        refused("{\"gates\": {\"approval_timeout_sec\": 100000}}", SCOPE_CHANNEL, "gates.approval_timeout_sec", "between",
                "an approval timeout over a day is refused");
        accepted("{\"gates\": {\"approval_timeout_sec\": 0}}", SCOPE_CHANNEL, "an approval timeout of 0 (no approvals) is accepted");
        refused("{\"keep_mcp_configs\": 1}", SCOPE_CHANNEL, "keep_mcp_configs", "boolean",
                "1 is not a boolean");
        refused("{\"container_image\": \"\"}", SCOPE_CHANNEL, "container_image", "empty",
                "an empty image is refused");
        refused("{\"container_image\": \"a b\"}", SCOPE_CHANNEL, "container_image", "whitespace",
                "an image with a space is refused");
        refused("{\"claude_bin_path\": \"\"}", SCOPE_CHANNEL, "claude_bin_path", "empty",
                "an empty claude_bin_path is refused");
        refused("{\"api_addr\": \"x:99999\"}", SCOPE_GLOBAL, "api_addr", "port", "an api_addr with a bad port is refused");
        refused("{\"mounts\": [\"/a\"]}", SCOPE_CHANNEL, "mounts[0]", "SOURCE:DESTINATION",
                "a mount without destination is refused");
        refused("{\"mounts\": [\"/a:rel\"]}", SCOPE_CHANNEL, "mounts[0]", "absolute",
                "a mount with a relative destination is refused");
        refused("{\"mounts\": [\"/a:/b:rx\"]}", SCOPE_CHANNEL, "mounts[0]", "unknown mount option",
                "a mount with an unknown option is refused");
        accepted("{\"mounts\": [\"/a:/b:ro,z\", \"vol:/v\", \"~/.x:~/.x\"]}", SCOPE_CHANNEL, "good mounts are accepted");
        refused("{\"mounts\": [1]}", SCOPE_CHANNEL, "mounts[0]", "must be a string", "a number in mounts is refused");
        refused("{\"mounts\": \"/a:/b\"}", SCOPE_CHANNEL, "mounts", "array of strings", "mounts as a string is refused");
        refused("{\"copy_files\": [\"~bob/x\"]}", SCOPE_CHANNEL, "copy_files[0]", "~user",
                "~user paths are refused");
        refused("{\"envs\": {\"1BAD\": \"x\"}}", SCOPE_CHANNEL, "envs.1BAD", "environment variable name",
                "an env name starting with a digit is refused");
        refused("{\"envs\": {\"A\": [1]}}", SCOPE_CHANNEL, "envs.A", "string, number, boolean or null",
                "an array env value is refused");
        refused("{\"envs\": {\"A\": \"x\\u0000y\"}}", SCOPE_CHANNEL, "envs.A", "NUL",
                "an env value with NUL is refused");
        refused("{\"mcp\": {\"servers\": {\"s\": {}}}}", SCOPE_CHANNEL, "mcp.servers.s.command", "required",
                "an MCP server without command is refused");
        refused("{\"mcp\": {\"servers\": {\"s\": []}}}", SCOPE_CHANNEL, "mcp.servers.s", "must be an object",
                "an MCP server that is not an object is refused");
        refused("{\"browser\": {\"host_cdp_port\": 70000}}", SCOPE_CHANNEL, "browser.host_cdp_port", "between 1 and 65535",
                "a CDP port beyond 65535 is refused");
        refused("{\"gates\": {\"agentgate\": {\"default_decision\": \"maybe\"}}}", SCOPE_CHANNEL,
                "gates.agentgate.default_decision", "allow", "an unknown decision is refused");
        refused("{\"gates\": {\"agentgate\": {\"path_rules\": [{\"pattern\": \"\", \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.path_rules[0].pattern", "empty", "an empty path pattern is refused");
        refused("{\"gates\": {\"agentgate\": {\"path_rules\": [{\"pattern\": \"rel.sock\", \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.path_rules[0].pattern", "absolute", "a relative socket path is refused");
        refused("{\"gates\": {\"agentgate\": {\"path_rules\": [{\"pattern\": \"/x\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.path_rules[0].decision", "required", "a rule without decision is refused");
        refused("{\"gates\": {\"agentgate\": {\"command_rules\": [{\"args_patterns\": [\"(\"], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.command_rules[0].args_patterns[0]", "regular expression",
                "a bad regex is refused");
        /* 19 bytes that took glibc's regcomp() 8 GB and 12 s to refuse: in a project file, the agent's */
        refused("{\"gates\": {\"agentgate\": {\"command_rules\": [{\"args_patterns\": [\"(a{1,1000}){1,1000}\"], \"decision\": \"deny\"}]}}}",
                SCOPE_PROJECT, "gates.agentgate.command_rules[0].args_patterns[0]", "too large",
                "a regex whose repetitions expand beyond the cap is refused before regcomp()");
        /* a back-reference is matched by backtracking: 200 bytes of argument took 8.6 s */
        refused("{\"gates\": {\"agentgate\": {\"command_rules\": [{\"args_patterns\": [\"(a*)*\\\\1b\"], \"decision\": \"deny\"}]}}}",
                SCOPE_PROJECT, "gates.agentgate.command_rules[0].args_patterns[0]", "back-reference",
                "a regex with a back-reference is refused");
        refused("{\"gates\": {\"agentgate\": {\"command_rules\": [{\"commands\": [\"[rm\"], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.command_rules[0].commands[0]", "glob", "a bad glob is refused");
        refused("{\"gates\": {\"agentgate\": {\"file_rules\": [{\"paths\": [\"/x\"], \"operations\": [\"frob\"], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.file_rules[0].operations[0]", "file operation", "an unknown operation is refused");
        refused("{\"gates\": {\"agentgate\": {\"file_rules\": [{\"paths\": [], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.file_rules[0].paths", "empty", "a file rule without paths is refused");
        refused("{\"gates\": {\"agentgate\": {\"file_rules\": [{\"paths\": [\"~/.ssh/**\"], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.file_rules[0].paths[0]", "never matches",
                "a file rule glob the gate could never match (~ is not expanded) is refused, not a silent no-op");
        refused("{\"gates\": {\"agentgate\": {\"file_rules\": [{\"paths\": [\"/srv/secret/\"], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.agentgate.file_rules[0].paths[0]", "trailing /", "  ... as is one with a trailing /");
        refused("{\"gates\": {\"docker_proxy\": {\"http_rules\": [{\"methods\": [\"get\"], \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.docker_proxy.http_rules[0].methods[0]", "HTTP method", "a lower-case method is refused");
        refused("{\"gates\": {\"docker_proxy\": {\"body_rules\": [{\"applies_to\": \"POST\", \"decision\": \"deny\"}]}}}",
                SCOPE_CHANNEL, "gates.docker_proxy.body_rules[0].applies_to", "METHOD REGEX", "applies_to without a regex is refused");
        refused("{\"gates\": {\"docker_proxy\": {\"body_rules\": [{\"applies_to\": \"POST ^/x$\", \"decision\": \"deny\", "
                "\"json_checks\": [{\"path\": \"A..B\", \"op\": \"present\"}]}]}}}",
                SCOPE_CHANNEL, "gates.docker_proxy.body_rules[0].json_checks[0].path", "JSON path", "a bad JSON path is refused");
        refused("{\"gates\": {\"docker_proxy\": {\"body_rules\": [{\"applies_to\": \"POST ^/x$\", \"decision\": \"deny\", "
                "\"json_checks\": [{\"path\": \"A\", \"op\": \"is\"}]}]}}}",
                SCOPE_CHANNEL, "gates.docker_proxy.body_rules[0].json_checks[0].op", "check operation", "an unknown check op is refused");
        refused("{\"engine\": {\"socket\": \"run/x.sock\"}}", SCOPE_GLOBAL, "engine.socket", "absolute",
                "a relative engine socket is refused");
        refused("{\"work_dir\": \"relative\"}", SCOPE_CHANNEL, "work_dir", "absolute", "a relative work_dir is refused");
        refused("{\"work_dir\": \"/a/../etc\"}", SCOPE_CHANNEL, "work_dir", "..", "a work_dir with .. is refused");
        refused("{\"work_dir\": \"/srv/x\"}", SCOPE_GLOBAL, "work_dir", "channel file", "work_dir in loop.json is refused");
        refused("{\"description\": \"a\\nb\"}", SCOPE_CHANNEL, "description", "control", "a description with a newline is refused");
        refused("{\"max_attempts\": 0}", SCOPE_CHANNEL, "max_attempts", "between 1", "max_attempts 0 is refused");
        refused("{\"user\": \"-rf\"}", SCOPE_CHANNEL, "user", "user name", "a user name starting with '-' is refused");
        {
                ConfigProblems p = {};
                ok(validate("{\"user\": \"alice\"}", SCOPE_PROJECT, &p) == 0 && has_problem(&p, false, "user", "ignoring"),
                   "a project cannot choose the user (ignored with a warning)");
                config_problems_done(&p);
        }
        refused("{\"limits\": {\"tasks_max\": \"many\"}}", SCOPE_CHANNEL, "limits.tasks_max", "integer",
                "limits.tasks_max as a string is refused");
        refused("[1, 2]", SCOPE_CHANNEL, NULL, "JSON object", "a top-level array is refused");
        refused("{\"gates\": []}", SCOPE_CHANNEL, "gates", "must be an object", "gates as an array is refused");

        {
                ConfigProblems p = {};
                int r = validate("{\"contaner_image\": \"x\"}", SCOPE_CHANNEL, &p);
                ok(r == 0 && has_problem(&p, false, "contaner_image", "did you mean \"container_image\""),
                   "an unknown key is a warning that suggests the right key");
                config_problems_done(&p);
        }
        {
                ConfigProblems p = {};
                int r = validate("{\"gates\": {\"agentgate\": {\"frobnicate\": 1}}}", SCOPE_CHANNEL, &p);
                ok(r == 0 && has_problem(&p, false, "gates.agentgate.frobnicate", "unknown key"),
                   "an unknown nested key is a warning with its full path");
                config_problems_done(&p);
        }
        {
                ConfigProblems p = {};
                int r = validate("{\"anthropic_api_key\": \"sk-secret\\u0001\"}", SCOPE_CHANNEL, &p);
                bool leaked = false;
                for (size_t i = 0; i < p.n; i++)
                        leaked = leaked || strstr(p.items[i].message, "sk-secret");
                ok(r > 0 && !leaked, "an invalid secret is refused without echoing its value");
                config_problems_done(&p);
        }
        {
                ConfigProblems p = {};
                int r = validate("{\"container_timeout_sec\": 5, \"gates\": {\"audit\": {\"verbose\": true}}}",
                                 SCOPE_PROJECT, &p);
                ok(r == 0 && has_problem(&p, false, "container_timeout_sec", "ignoring") &&
                   has_problem(&p, false, "gates.audit", "ignoring"),
                   "fields a project may not set are ignored with a warning");
                config_problems_done(&p);
        }
}

static void test_escaping(void) {
        ConfigProblems p = {};
        int r = validate("{\"mounts\": [\"/a\\nExecStart=/bin/evil\"]}", SCOPE_CHANNEL, &p);
        ok(r > 0 && p.n == 1 && !strchr(p.items[0].message, '\n') && strstr(p.items[0].message, "\\n"),
           "a newline quoted from a config value is escaped in the problem message");
        config_problems_done(&p);

        json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        const char *bad_utf8 = "{\"description\": \"caf\xe9\"}";
        ok(config_parse_text(bad_utf8, strlen(bad_utf8), &o, &reason) == -EINVAL, "invalid UTF-8 is refused");
}

static void test_parse_errors(void) {
        json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        const char *bad = "{\n  \"a\": 1,\n  \"b\" 2\n}";

        ok(config_parse_text(bad, strlen(bad), &o, &reason) == -EINVAL && reason && strstr(reason, "line 3"),
           "invalid JSON is reported with its line");
        reason = mfree(reason);
        ok(config_parse_text("{} x", 4, &o, &reason) == -EINVAL, "trailing garbage after the object is refused");
        reason = mfree(reason);
        ok(config_parse_text("{\"a\": ", 6, &o, &reason) == -EINVAL && strstr(reason, "end of file"),
           "a truncated file is refused as such");
        reason = mfree(reason);
        ok(config_parse_text("{}\0{}", 5, &o, &reason) == -EINVAL, "a file with a NUL byte is refused");
        reason = mfree(reason);
        {
                char deep[400];
                memset(deep, '[', 200);
                memset(deep + 200, ']', 200);
                ok(config_parse_text(deep, 400, &o, &reason) == -EINVAL, "nesting beyond the depth cap is refused");
        }
}

static void test_names(void) {
        const char *reason;
        ok(channel_name_check("proj", NULL) == 0, "a plain name is valid");
        ok(channel_name_check("My_proj-2.x", NULL) == 0, "letters, digits, _ . - are valid");
        ok(channel_name_check("-x", &reason) == -EINVAL && strstr(reason, "start"), "a leading '-' is refused");
        ok(channel_name_check(".x", NULL) == -EINVAL, "a leading '.' is refused");
        ok(channel_name_check("a b", &reason) == -EINVAL && strstr(reason, "only contain"), "a space is refused");
        ok(channel_name_check("a/b", NULL) == -EINVAL, "a slash is refused");
        ok(channel_name_check("", NULL) == -EINVAL, "an empty name is refused");
        ok(channel_name_check("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL) == 0,
           "64 characters are valid");
        ok(channel_name_check("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &reason) == -EINVAL &&
           strstr(reason, "64"), "65 characters are refused");
        ok(channel_name_check("caf\xc3\xa9", NULL) == -EINVAL, "non-ASCII letters are refused");
}

/* A channel's volumes, networks and images are those named CHANNEL-... or CHANNEL_... (the Docker API
 * proxy's rule): "web" would own "web-api"'s names too, so "web-api" cannot be a channel beside "web". */
static void test_name_prefixes(void) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        const Channel *c;

        reset_tree();
        write_file("channels.d/web.json", "{}", 0644);
        write_file("channels.d/web-api.json", "{}", 0644);
        write_file("channels.d/WEB_db.json", "{}", 0644);
        write_file("channels.d/web-api-v2.json", "{}", 0644);
        write_file("channels.d/webapp.json", "{}", 0644);
        write_file("channels.d/web.x.json", "{}", 0644);
        write_file("channels.d/other-web.json", "{}", 0644);
        ok(config_load(tmpdir, &s) == 0, "setup: channels whose names begin with another's");

        c = config_set_find_channel(s, "web");
        ok(c && c->valid, "the shorter name (web) stays valid");
        c = config_set_find_channel(s, "web-api");
        ok(c && !c->valid && strstr(c->reason, "begins with channel \"web\""),
           "web-api is refused: web would own its volumes, networks and images");
        c = config_set_find_channel(s, "WEB_db");
        ok(c && !c->valid, "...and WEB_db (\"_\", case ignored)");
        c = config_set_find_channel(s, "web-api-v2");
        ok(c && !c->valid, "...and web-api-v2");
        ok(c && s->problems.n >= 3, "each refusal is a problem of the config");
        c = config_set_find_channel(s, "webapp");
        ok(c && c->valid, "webapp stays valid (no \"-\" or \"_\" after web)");
        c = config_set_find_channel(s, "web.x");
        ok(c && c->valid, "web.x stays valid (\".\" is no separator of the proxy's names)");
        c = config_set_find_channel(s, "other-web");
        ok(c && c->valid, "other-web stays valid (web is not where it begins)");
}

/* Channels whose names the engine sees as one (container_name_sanitize()) would share loop-chrome-NAME and
 * loop-shell-NAME: one's container blocks the other's create. */
static void test_engine_name_collisions(void) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        const Channel *c;
        char long1[80], long2[80], path[128];

        reset_tree();
        write_file("channels.d/a-b.json", "{}", 0644);
        write_file("channels.d/a.b.json", "{}", 0644);
        write_file("channels.d/a__b.json", "{}", 0644);
        write_file("channels.d/x.json", "{}", 0644);
        write_file("channels.d/x..json", "{}", 0644);
        memset(long1, 'l', 40);
        strcpy(long1 + 40, "-one.json");
        memset(long2, 'l', 40);
        strcpy(long2 + 40, "-two.json");
        snprintf(path, sizeof path, "channels.d/%s", long1);
        write_file(path, "{}", 0644);
        snprintf(path, sizeof path, "channels.d/%s", long2);
        write_file(path, "{}", 0644);
        ok(config_load(tmpdir, &s) == 0, "setup: channels whose engine names are equal");

        c = config_set_find_channel(s, "a-b");
        ok(c && c->valid, "a-b, first in byte order of the names that give loop-chrome-a-b, stays valid");
        c = config_set_find_channel(s, "a.b");
        ok(c && !c->valid && strstr(c->reason, "loop-chrome-a-b") && strstr(c->reason, "\"a-b\""),
           "a.b is refused: its Chrome container would be a-b's");
        c = config_set_find_channel(s, "a__b");
        ok(c && !c->valid, "...and a__b (a run of '_' is one '-')");
        c = config_set_find_channel(s, "x");
        ok(c && c->valid, "x stays valid");
        c = config_set_find_channel(s, "x.");
        ok(c && !c->valid, "x. is refused (a trailing '.' is dropped: loop-chrome-x)");
        long1[strlen(long1) - strlen(".json")] = 0;
        long2[strlen(long2) - strlen(".json")] = 0;
        c = config_set_find_channel(s, long1);
        ok(c && c->valid, "of two names equal in their first 40 characters, the first stays valid");
        c = config_set_find_channel(s, long2);
        ok(c && !c->valid, "the second is refused: the engine name is cut at 40 characters");
        is_int(config_set_count_valid(s), 3, "three channels are valid");
}

static void test_load_set(void) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        const Channel *c;

        reset_tree();
        write_file("loop.json", "{\"container_memory_mb\": 2048, \"browser\": {\"enabled\": false, \"memory_mb\": 300},"
                   " \"envs\": {\"G\": \"1\", \"SHARED\": \"global\"}}", 0644);
        write_file("channels.d/alpha.json", "{\"container_memory_mb\": 512, \"browser\": {\"memory_mb\": 700},"
                   " \"envs\": {\"SHARED\": \"chan\"}}", 0644);
        write_file("channels.d/beta.json", "{}", 0644);
        write_file("channels.d/bad.json", "{\"container_cpus\": \"x\"}", 0644);
        write_file("channels.d/-no.json", "{}", 0644);
        write_file("channels.d/README", "not a channel", 0644);
        write_file("channels.d/.hidden.json", "{}", 0644);
        write_file("channels.d/Beta.json", "{}", 0644);
        write_file("channels.d/open.json", "{}", 0666);
        {
                char p[4200];
                snprintf(p, sizeof p, "%s/channels.d/link.json", tmpdir);
                ok(symlink("beta.json", p) == 0, "setup: a symlinked channel file");
                snprintf(p, sizeof p, "%s/channels.d/dangling.json", tmpdir);
                ok(symlink("nowhere.json", p) == 0, "setup: a dangling symlink");
                snprintf(p, sizeof p, "%s/channels.d/dir.json", tmpdir);
                ok(mkdir(p, 0755) == 0, "setup: a directory named like a channel");
        }

        ok(config_load(tmpdir, &s) == 0, "a config dir with good and bad channels loads");
        ok(s->global_present && s->global_valid, "loop.json is present and valid");
        is_int(s->n_channels, 9, "every *.json except hidden files is a channel, README is ignored");

        c = config_set_find_channel(s, "alpha");
        ok(c && c->valid, "alpha is valid");
        ok(c && c->config.container_memory_mb == 512, "a channel field overrides the global one");
        ok(c && !c->config.browser.enabled && c->config.browser.memory_mb == 700,
           "nested objects merge key by key (browser.enabled from loop.json, memory_mb from the channel)");
        ok(c && strv_contains(c->config.envs, "G=1") && strv_contains(c->config.envs, "SHARED=chan"),
           "envs merge by key, the channel winning");
        c = config_set_find_channel(s, "Beta");
        ok(c && c->valid && c->config.container_memory_mb == 2048, "a channel inherits global fields");
        c = config_set_find_channel(s, "bad");
        ok(c && !c->valid && c->reason && strstr(c->reason, "container_cpus"), "a wrong type invalidates the channel, naming the key");
        c = config_set_find_channel(s, "-no");
        ok(c && !c->valid && strstr(c->reason, "name"), "a bad name invalidates the channel");
        c = config_set_find_channel(s, "link");
        ok(c && c->valid, "a symlinked channel file is followed");
        c = config_set_find_channel(s, "dangling");
        ok(c && !c->valid && strstr(c->reason, "dangling"), "a dangling symlink is reported as such");
        c = config_set_find_channel(s, "dir");
        ok(c && !c->valid && strstr(c->reason, "regular file"), "a directory is not a channel file");
        c = config_set_find_channel(s, "open");
        ok(c && !c->valid && strstr(c->reason, "writable by everyone"), "a world-writable channel file is refused");
        c = config_set_find_channel(s, "Beta");
        ok(c && c->valid, "of two names equal ignoring case, the first in byte order (Beta) stays valid");
        c = config_set_find_channel(s, "beta");
        ok(c && !c->valid && strstr(c->reason, "duplicates"), "the later one (beta) is refused as a duplicate");
        is_int(config_set_count_valid(s), 3, "three channels are valid: alpha, Beta, link");
        s = config_set_free(s);

        /* An invalid loop.json invalidates every channel: the intended policy is unknown. */
        write_file("loop.json", "{\"gates\": {\"agentgate\": {\"default_decision\": \"perhaps\"}}}", 0644);
        ok(config_load(tmpdir, &s) == 0, "an invalid loop.json still loads the set");
        ok(!s->global_valid, "the invalid loop.json is reported");
        is_int(config_set_count_valid(s), 0, "every channel is invalid when loop.json is");
        c = config_set_find_channel(s, "alpha");
        ok(c && strstr(c->reason, "loop.json"), "the channel says loop.json is why");
        s = config_set_free(s);

        /* Missing dirs. */
        ok(config_load("/nonexistent/loop", &s) == 0 && s->n_channels == 0 && !s->global_present && s->global_valid,
           "a missing config dir gives an empty, valid set");
        s = config_set_free(s);
        reset_tree();
        write_file("loop.json", "{}", 0644);
        ok(config_load(tmpdir, &s) == 0 && s->n_channels == 0, "a missing channels.d gives no channels");
        s = config_set_free(s);

        /* strict_config: an unknown key is an error, in loop.json and in channel files. */
        write_file("loop.json", "{\"strict_config\": false}", 0644);
        write_file("channels.d/typo.json", "{\"work_dri\": \"/srv/x\"}", 0644);
        ok(config_load(tmpdir, &s) == 0 && (c = config_set_find_channel(s, "typo")) && c->valid &&
           has_problem(&s->problems, false, "work_dri", "unknown key"),
           "without strict_config a typo is a warning and the channel runs");
        s = config_set_free(s);
        write_file("loop.json", "{\"strict_config\": true}", 0644);
        ok(config_load(tmpdir, &s) == 0 && (c = config_set_find_channel(s, "typo")) && !c->valid &&
           c->reason && strstr(c->reason, "work_dri") && has_problem(&s->problems, true, "work_dri", "strict_config"),
           "with strict_config the channel with a typo is invalid, naming the key");
        s = config_set_free(s);
        write_file("loop.json", "{\"strict_config\": true, \"containr_image\": \"x\"}", 0644);
        ok(config_load(tmpdir, &s) == 0 && !s->global_valid && config_set_count_valid(s) == 0,
           "with strict_config an unknown key in loop.json invalidates it (and so every channel)");
        s = config_set_free(s);
        write_file("channels.d/typo.json", "{\"strict_config\": true, \"work_dri\": \"/srv/x\"}", 0644);
        write_file("loop.json", "{}", 0644);
        ok(config_load(tmpdir, &s) == 0 && (c = config_set_find_channel(s, "typo")) && !c->valid,
           "strict_config is loop.json's alone: a channel file cannot set it");
        s = config_set_free(s);

        write_file("loop.json", "{\"anthropic_api_key\": \"sk-live\"}", 0644);
        ok(config_load(tmpdir, &s) == 0 && s->global_valid && has_problem(&s->problems, false, NULL, "readable by everyone"),
           "a world-readable file with credentials gets a warning");
        s = config_set_free(s);
        reset_tree();
}

static void test_project_narrows(void) {
        _cleanup_(loop_config_done) LoopConfig base = {}, out = {};
        ConfigProblems p = {};
        json_object *o;

        ok(load_json("{\"mounts\": [\"/g:/g\", \"./data:/data\"], \"extra_dirs\": [\"/e1\", \"/e2\"],"
                     " \"container_image\": \"op:1\", \"claude_bin_path\": \"/usr/local/bin/claude\"}", &base) == 0,
           "setup: a base with mounts, extra dirs, an image and an agent binary");
        o = json_tokener_parse("{\"mounts\": [\"./data:/data\", \"/etc:/hostetc\"], \"extra_dirs\": [\"/e2\", \"/root\"],"
                               " \"container_image\": \"op:1\", \"claude_bin_path\": \"/w/tools/agent\"}");
        ok(config_apply_project_json(&base, o, "/w/.loop/config.json", "/w", &out, &p) == 0, "a narrowing project applies");
        ok(strv_length(out.mounts) == 1 && streq(out.mounts[0], "./data:/data"), "a project keeps an operator's mount, drops a new one");
        ok(strv_length(out.extra_dirs) == 1 && streq(out.extra_dirs[0], "/e2"), "...and the same for extra dirs");
        is_str(out.container_image, "op:1", "naming the operator's image is fine");
        is_str(out.claude_bin_path, "/usr/local/bin/claude", "an agent binary in the work dir is ignored");
        ok(has_problem(&p, false, "claude_bin_path", "ignoring"), "...with a warning");
        json_object_put(o);
        config_problems_done(&p);
        loop_config_done(&out);

        o = json_tokener_parse("{\"claude_bin_path\": \"/opt/agent/bin/run\"}");
        ok(config_apply_project_json(&base, o, "/w/.loop/config.json", "/w", &out, &p) == 0 &&
           streq_ptr(out.claude_bin_path, "/opt/agent/bin/run"), "an agent binary in the image's /opt is accepted");
        json_object_put(o);
        config_problems_done(&p);

        /* A work dir below an image prefix: the binary's path is cleaned before it is compared. */
        static const char * const spellings[] = { "/opt//w/tools/agent", "/opt/w/./tools/agent", "/opt/./w/agent" };
        for (size_t i = 0; i < ELEMENTSOF(spellings); i++) {
                _cleanup_(loop_config_done) LoopConfig spelled = {};
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text, "{\"claude_bin_path\": \"%s\"}", spellings[i]) < 0)
                        abort();
                o = json_tokener_parse(text);
                ok(config_apply_project_json(&base, o, "/opt/w/.loop/config.json", "/opt/w/", &spelled, &p) == 0 &&
                   streq_ptr(spelled.claude_bin_path, "/usr/local/bin/claude"),
                   "an agent binary in a work dir below /opt, spelled %s, is ignored", spellings[i]);
                json_object_put(o);
                config_problems_done(&p);
        }
}

/* The Chrome sidecar runs its image outside the gate: a project (the agent writes it) cannot choose that
 * image, nor turn on a browser the operator turned off. */
static void test_project_browser(void) {
        _cleanup_(loop_config_done) LoopConfig base = {}, out = {}, on = {}, off = {};
        ConfigProblems p = {};
        json_object *o;

        ok(load_json("{\"browser\": {\"enabled\": false, \"chrome_image\": \"op-chrome:1\", \"memory_mb\": 512}}", &base) == 0,
           "setup: a base with the browser off and an image of the operator's");
        o = json_tokener_parse("{\"browser\": {\"enabled\": true, \"chrome_image\": \"demo-evil:1\", \"memory_mb\": 300}}");
        ok(config_apply_project_json(&base, o, "/w/.loop/config.json", "/w", &out, &p) == 0, "a project naming a browser applies");
        is_str(out.browser.chrome_image, "op-chrome:1", "a project cannot choose the Chrome image");
        ok(has_problem(&p, false, "browser.chrome_image", "cannot choose the Chrome image"), "...with a warning");
        ok(!out.browser.enabled, "a project cannot turn on a browser the operator turned off");
        ok(has_problem(&p, false, "browser.enabled", "cannot enable"), "...with a warning");
        is_int(out.browser.memory_mb, 300, "a project may still size the browser");
        json_object_put(o);
        config_problems_done(&p);

        ok(load_json("{\"browser\": {\"chrome_image\": \"op-chrome:1\"}}", &on) == 0, "setup: a base with the browser on");
        o = json_tokener_parse("{\"browser\": {\"enabled\": false, \"chrome_image\": \"op-chrome:1\"}}");
        ok(config_apply_project_json(&on, o, "/w/.loop/config.json", "/w", &off, &p) == 0 && !off.browser.enabled &&
           streq_ptr(off.browser.chrome_image, "op-chrome:1") && p.n == 0,
           "a project may turn the browser off and name the operator's image");
        json_object_put(o);
        config_problems_done(&p);
}

/* The first matching rule decides and the project's rules come first: a project rule other than "deny"
 * would override the operator's "deny" (a hole: the agent writes the project file). */
static void test_project_rules_only_narrow(const LoopConfig *base) {
        static const char * const decisions[] = { "allow", "approve" };

        for (size_t i = 0; i < ELEMENTSOF(decisions); i++) {
                _cleanup_(loop_config_done) LoopConfig out = {};
                _cleanup_free_ char *text = NULL;
                ConfigProblems p = {};
                json_object *o;

                if (asprintf(&text, "{\"gates\": {\"agentgate\": {"
                             " \"path_rules\": [{\"pattern\": \"/run/docker.sock\", \"decision\": \"%1$s\"}],"
                             " \"command_rules\": [{\"commands\": [\"rm\"], \"decision\": \"%1$s\"}],"
                             " \"file_rules\": [{\"paths\": [\"/g\"], \"decision\": \"%1$s\"},"
                             "                 {\"paths\": [\"/q\"], \"decision\": \"deny\"}]},"
                             " \"docker_proxy\": {\"http_rules\": [{\"paths\": [\"^/\"], \"decision\": \"%1$s\"}],"
                             " \"body_rules\": [{\"applies_to\": \"POST ^/\", \"decision\": \"%1$s\"}]}}}",
                             decisions[i]) < 0)
                        abort();
                o = json_tokener_parse(text);
                ok(o && config_apply_project_json(base, o, "/w/.loop/config.json", "/w", &out, &p) == 0,
                   "a project with %s rules applies", decisions[i]);
                ok(out.gates.agentgate.n_file_rules == 2 && streq(out.gates.agentgate.file_rules[0].paths[0], "/q") &&
                   out.gates.agentgate.file_rules[1].decision == DECISION_DENY &&
                   streq(out.gates.agentgate.file_rules[1].paths[0], "/g"),
                   "a project %s file rule cannot override the operator's deny; its deny rule is kept first", decisions[i]);
                ok(out.gates.agentgate.n_path_rules == 0 && out.gates.agentgate.n_command_rules == 0 &&
                   out.gates.docker_proxy.n_http_rules == 0 && out.gates.docker_proxy.n_body_rules == 0,
                   "a project's %s path, command, http and body rules are dropped", decisions[i]);
                ok(has_problem(&p, false, "gates.agentgate.file_rules[0]", "only add \"deny\" rules") &&
                   has_problem(&p, false, "gates.docker_proxy.body_rules[0]", "only add \"deny\" rules"),
                   "...each with a warning naming the rule (%s)", decisions[i]);
                json_object_put(o);
                config_problems_done(&p);
        }
}

static void test_project(void) {
        _cleanup_(loop_config_done) LoopConfig base = {}, out = {}, out2 = {}, out3 = {};
        ConfigProblems p = {};
        json_object *o;
        const char *global =
                "{\"anthropic_api_key\": \"sk-global\", \"container_timeout_sec\": 100,"
                " \"mounts\": [\"/g:/g\"], \"envs\": {\"A\": \"g\", \"B\": \"g\"},"
                " \"mcp\": {\"servers\": {\"one\": {\"command\": \"g1\"}, \"two\": {\"command\": \"g2\"}}},"
                " \"gates\": {\"audit\": {\"verbose\": false}, \"agentgate\": {\"enabled\": true,"
                "   \"file_rules\": [{\"paths\": [\"/g\"], \"decision\": \"deny\"}]}}}";
        const char *project =
                "{\"claude_code_oauth_token\": \"oauth-proj\", \"container_timeout_sec\": 5,"
                " \"mounts\": [\"./data:/data\", \"vol:/v\", \"~/.x:/x\"], \"envs\": {\"B\": \"p\", \"C\": \"p\"},"
                " \"mcp\": {\"servers\": {\"two\": {\"command\": \"p2\"}}}, \"container_image\": \"proj:1\","
                " \"gates\": {\"default_decision\": \"allow\", \"audit\": {\"verbose\": true},"
                "   \"agentgate\": {\"file_rules\": [{\"paths\": [\"/p\"], \"decision\": \"deny\"}]}}}";

        ok(load_json(global, &base) == 0, "setup: the base config loads");
        o = json_tokener_parse(project);
        ok(config_apply_project_json(&base, o, "/w/.loop/config.json", "/w", &out, &p) == 0, "a project config applies");
        ok(out.claude_code_oauth_token && streq(out.claude_code_oauth_token, "oauth-proj") && !out.anthropic_api_key,
           "setting the OAuth token in a project clears the API key");
        is_int(out.container_timeout_sec, 100, "container_timeout_sec in a project is ignored");
        ok(has_problem(&p, false, "container_timeout_sec", "ignoring"), "...with a warning");
        ok(strv_length(out.mounts) == 0, "project mounts the operator did not configure are not mounted (issue 18 item 7)");
        ok(has_problem(&p, false, "mounts", "can only narrow"), "...with a warning");
        ok(strv_contains(out.envs, "A=g") && strv_contains(out.envs, "B=p") && strv_contains(out.envs, "C=p"),
           "envs merge by key, the project winning");
        ok(out.n_mcp_servers == 2 && streq(out.mcp_servers[1].command, "p2") && streq(out.mcp_servers[0].command, "g1"),
           "mcp servers merge by name, the project winning");
        ok(!streq_ptr(out.container_image, "proj:1"), "a project cannot choose the image (issue 18 item 7)");
        ok(has_problem(&p, false, "container_image", "cannot choose the image"), "...with a warning");
        ok(!out.gates.audit.verbose, "gates.audit in a project is ignored");
        ok(out.gates.agentgate.n_file_rules == 2 && streq(out.gates.agentgate.file_rules[0].paths[0], "/p") &&
           streq(out.gates.agentgate.file_rules[1].paths[0], "/g"), "project rules are prepended to the global ones");
        is_str(out.work_dir, base.work_dir, "the work dir is kept");
        json_object_put(o);
        config_problems_done(&p);

        o = json_tokener_parse("{\"anthropic_api_key\": \"sk-p\", \"gates\": {\"agentgate\": {\"enabled\": false}}}");
        ok(config_apply_project_json(&out, o, "p", "/w", &out2, &p) == 0, "a second project config applies");
        ok(!out2.claude_code_oauth_token && streq(out2.anthropic_api_key, "sk-p"), "setting the API key clears the OAuth token");
        /* Off, the gate enforces nothing: the agent would do whatever the operator's rules deny. */
        ok(out2.gates.agentgate.enabled && out2.gates.docker_proxy.enabled,
           "a project cannot turn the gate off (nor, with it, the docker proxy)");
        ok(has_problem(&p, false, "gates.agentgate.enabled", "cannot turn the gate off"), "...and is told so");
        json_object_put(o);
        config_problems_done(&p);

        {
                _cleanup_(loop_config_done) LoopConfig no_proxy = {}, off = {};
                o = json_tokener_parse("{\"gates\": {\"docker_proxy\": {\"enabled\": false}}}");
                ok(config_apply_project_json(&out, o, "p", "/w", &no_proxy, &p) == 0 &&
                   no_proxy.gates.agentgate.enabled && !no_proxy.gates.docker_proxy.enabled && p.n == 0,
                   "a project may turn the docker proxy off (the agent then has no Docker API)");
                json_object_put(o);
                config_problems_done(&p);

                ok(load_json("{\"gates\": {\"agentgate\": {\"enabled\": false}}}", &off) == 0,
                   "setup: an operator's config with the gate off");
                o = json_tokener_parse("{\"gates\": {\"agentgate\": {\"enabled\": true}, \"docker_proxy\": {\"enabled\": true}}}");
                ok(config_apply_project_json(&off, o, "p", "/w", &out3, &p) == 0 && !out3.gates.agentgate.enabled &&
                   !out3.gates.docker_proxy.enabled, "a project cannot turn a disabled gate back on");
                ok(has_problem(&p, false, "gates.agentgate.enabled", "cannot enable"), "...and is told so");
                json_object_put(o);
                config_problems_done(&p);
        }

        {
                _cleanup_(loop_config_done) LoopConfig bad = {};
                o = json_tokener_parse("{\"mounts\": [\"nocolon\"]}");
                ok(config_apply_project_json(&base, o, "p", "/w", &bad, &p) == -EINVAL &&
                   has_problem(&p, true, "mounts[0]", NULL), "an invalid project config is an error, not half applied");
                json_object_put(o);
                config_problems_done(&p);
        }

        test_project_rules_only_narrow(&base);

        /* From the file system. */
        reset_tree();
        {
                _cleanup_(loop_config_done) LoopConfig a = {}, b = {}, d = {};
                char p1[4200], p2[4200];

                ok(config_apply_project(&base, tmpdir, &a, &p) == 0 && a.container_timeout_sec == 100 &&
                   streq(a.work_dir, base.work_dir), "no project file: the base config unchanged");
                write_file(".loop/config.json", "{\"claude_model\": \"proj-model\"}", 0644);
                ok(config_apply_project(&base, tmpdir, &b, &p) == 0 && streq(b.claude_model, "proj-model"),
                   "{work_dir}/.loop/config.json is read");
                snprintf(p1, sizeof p1, "%s/.loop/config.json", tmpdir);
                snprintf(p2, sizeof p2, "%s/elsewhere.json", tmpdir);
                write_file("elsewhere.json", "{\"claude_model\": \"sneaky\"}", 0644);
                (void) unlink(p1);
                ok(symlink(p2, p1) == 0, "setup: the project file is a symlink");
                ok(config_apply_project(&base, tmpdir, &d, &p) == -EINVAL && has_problem(&p, true, NULL, "symbolic link"),
                   "a symlinked project file is refused (the agent owns the work dir)");
                config_problems_done(&p);
                write_file(".loop/config2.json", "x", 0644);
        }
        {
                _cleanup_(loop_config_done) LoopConfig e = {};
                char p1[4200];
                snprintf(p1, sizeof p1, "%s/.loop/config.json", tmpdir);
                (void) unlink(p1);
                write_file(".loop/config.json", "{ broken", 0644);
                ok(config_apply_project(&base, tmpdir, &e, &p) == -EINVAL && has_problem(&p, true, NULL, "invalid JSON"),
                   "an unparsable project file is an error");
                config_problems_done(&p);
                (void) unlink(p1);
                ok(mkfifo(p1, 0644) == 0, "setup: the project file is a FIFO");
                ok(config_apply_project(&base, tmpdir, &e, &p) == -EINVAL &&
                   has_problem(&p, true, NULL, "not a regular file"),
                   "a FIFO as the project file is refused at once, not waited on");
                config_problems_done(&p);
                (void) unlink(p1);
                ok(symlink("/dev/zero", p1) == 0, "setup: the project file is a symlink to /dev/zero");
                ok(config_apply_project(&base, tmpdir, &e, &p) == -EINVAL && has_problem(&p, true, NULL, "symbolic link"),
                   "a project file pointing at /dev/zero is refused, not read");
                config_problems_done(&p);
                (void) unlink(p1);
                {
                        char l1[4200], l2[4200];
                        snprintf(l1, sizeof l1, "%s/.loop", tmpdir);
                        snprintf(l2, sizeof l2, "%s/.loop-real", tmpdir);
                        ok(rename(l1, l2) == 0 && symlink(l2, l1) == 0, "setup: .loop is a symlink to a directory");
                        write_file(".loop-real/config.json", "{\"claude_model\": \"via-link\"}", 0644);
                        ok(config_apply_project(&base, tmpdir, &e, &p) == -EINVAL &&
                           has_problem(&p, true, NULL, ".loop is a symbolic link"),
                           "a symlinked .loop directory is refused");
                        config_problems_done(&p);
                        (void) unlink(l1);
                        (void) rename(l2, l1);
                }
        }
        reset_tree();
}

static void test_redaction(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(json_object_putp) json_object *j = NULL;
        const char *s;

        ok(load_json("{\"anthropic_api_key\": \"sk-zzz\", \"envs\": {\"PLAIN\": \"envsecret\"},"
                     " \"mcp\": {\"servers\": {\"x\": {\"command\": \"c\", \"env\": {\"T\": \"mcpsecret\"}}}}}", &c) == 0,
           "setup: a config with secrets");
        j = loop_config_to_json_redacted(&c);
        s = j ? json_object_to_json_string(j) : "";
        ok(j && !strstr(s, "sk-zzz") && !strstr(s, "envsecret") && !strstr(s, "mcpsecret") && strstr(s, "[REDACTED]"),
           "the display form holds no credential, env or MCP env value");
}

static void test_egress(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(json_object_putp) json_object *j = NULL;

        accepted("{\"egress\": {\"enabled\": true, \"api_upstream\": \"https://api.test:8443/base\", \"allow_api\": true,"
                 " \"registries\": [\"registry.npmjs.org\", \"*.pythonhosted.org\"], \"upstream_proxy\": \"http://proxy.corp:3128\","
                 " \"ca_file\": \"/etc/loop/ca.pem\", \"rules\": [{\"host\": \"*.example.com\", \"ports\": [443, 8443],"
                 " \"methods\": [\"GET\"], \"paths\": [\"^/pub/\"], \"decision\": \"allow\"},"
                 " {\"host\": \"api.github.com\", \"decision\": \"credential\","
                 "  \"credential\": {\"header\": \"Authorization\", \"dummy\": \"ghp_dummy0001\", \"secret\": \"ghp_real0001\"}}]}}",
                 SCOPE_CHANNEL, "a full egress section is valid in a channel file");
        {
                ConfigProblems p = {};
                int r = validate("{\"egress\": {\"enabled\": false}}", SCOPE_PROJECT, &p);
                ok(r == 0 && has_problem(&p, false, "egress", "not allowed in a project config"),
                   "egress in a project file (the agent writes those) is ignored with a warning");
                config_problems_done(&p);
        }
        refused("{\"egress\": {\"rules\": [{\"host\": \"a b\", \"decision\": \"allow\"}]}}", SCOPE_CHANNEL,
                "egress.rules[0].host", "host name", "a rule host with a space is refused");
        refused("{\"egress\": {\"rules\": [{\"host\": \"a.test\", \"decision\": \"approve\"}]}}", SCOPE_CHANNEL,
                "egress.rules[0].decision", "credential", "an egress decision other than allow, deny, credential is refused");
        refused("{\"egress\": {\"rules\": [{\"host\": \"a.test\", \"ports\": [0], \"decision\": \"allow\"}]}}", SCOPE_CHANNEL,
                "egress.rules[0].ports[0]", "between 1 and 65535", "port 0 is refused");
        refused("{\"egress\": {\"rules\": [{\"host\": \"a.test\", \"ports\": [\"443\"], \"decision\": \"allow\"}]}}", SCOPE_CHANNEL,
                "egress.rules[0].ports[0]", NULL, "a port given as a string is refused");
        refused("{\"egress\": {\"rules\": [{\"decision\": \"allow\"}]}}", SCOPE_CHANNEL,
                "egress.rules[0].host", NULL, "a rule without host is refused");
        refused("{\"egress\": {\"registries\": [\"*\"]}}", SCOPE_CHANNEL, "egress.registries[0]", NULL,
                "a * registry is refused (that is a rule, not a registry)");
        refused("{\"egress\": {\"api_upstream\": \"ftp://api.test\"}}", SCOPE_CHANNEL, "egress.api_upstream", NULL,
                "an api_upstream that is not http(s) is refused");
        refused("{\"egress\": {\"upstream_proxy\": \"https://proxy.corp:3128\"}}", SCOPE_CHANNEL, "egress.upstream_proxy", "http://",
                "an upstream_proxy that is not http:// is refused");
        {
                ConfigProblems p = {};
                ok(validate("{\"egress\": {\"upstream_proxy\": \"https://user:pw-SECRET-01@proxy.corp:3128\"}}", SCOPE_CHANNEL, &p) > 0 &&
                   p.n == 1 && !strstr(p.items[0].message, "pw-SECRET-01"),
                   "...and its error does not echo the URL, which may carry a password");
                config_problems_done(&p);
        }
        {
                ConfigProblems p = {};
                ok(validate("{\"egress\": {\"api_upstream\": \"https://user:pw-SECRET-02@api.test\"}}", SCOPE_CHANNEL, &p) > 0 &&
                   p.n == 1 && !strstr(p.items[0].message, "pw-SECRET-02"),
                   "an api_upstream with user:password@ is refused without echoing the URL");
                config_problems_done(&p);
        }
        accepted("{\"egress\": {\"upstream_proxy\": \"http://user:p%40ss@proxy.corp:3128\"}}", SCOPE_CHANNEL,
                 "an upstream_proxy with user:password@ is accepted");

        ok(load_json("{\"egress\": {\"rules\": [{\"host\": \"gh.test\", \"decision\": \"credential\","
                     " \"credential\": {\"header\": \"Authorization\", \"dummy\": \"ghp_dummy0001\", \"secret\": \"ghp_topsecret_01\"}}]}}", &c) == 0,
           "setup: a config with an egress credential");
        j = loop_config_to_json_redacted(&c);
        ok(j && !strstr(json_object_to_json_string(j), "ghp_topsecret_01"), "the display form holds no egress credential secret");
        ok(egress_config_enabled(c.json), "egress is on by default");
}

/* A secret of loop.json as the systemd credential loop.KEY (here from $CREDENTIALS_DIRECTORY, as a unit
 * with LoadCredential= has it); loop.json wins when it sets the key. */
static void test_credentials(void) {
        ConfigSet *s = NULL;
        const Channel *c;
        char dir[4200];

        reset_tree();
        snprintf(dir, sizeof dir, "%s/creds", tmpdir);
        setenv("CREDENTIALS_DIRECTORY", dir, 1);
        write_file("loop.json", "{}", 0644);
        write_file("channels.d/demo.json", "{}", 0644);
        write_file("creds/loop.anthropic_api_key", "sk-from-credential\n", 0600);
        ok(config_load(tmpdir, &s) == 0 && streq_ptr(s->global.anthropic_api_key, "sk-from-credential") &&
           (c = config_set_find_channel(s, "demo")) && c->valid &&
           streq_ptr(c->config.anthropic_api_key, "sk-from-credential"),
           "the credential loop.anthropic_api_key is the key when loop.json has none (its channels too)");
        ok(!s->global.claude_code_oauth_token, "...and a credential that is not there sets nothing");
        s = config_set_free(s);

        write_file("loop.json", "{\"anthropic_api_key\": \"sk-in-file\"}", 0600);
        ok(config_load(tmpdir, &s) == 0 && streq_ptr(s->global.anthropic_api_key, "sk-in-file"),
           "loop.json's key wins over the credential");
        s = config_set_free(s);

        write_file("loop.json", "{}", 0644);
        write_file("creds/loop.anthropic_api_key", "sk-\001bad", 0600);
        ok(config_load(tmpdir, &s) == 0 && !s->global.anthropic_api_key &&
           has_problem(&s->problems, true, NULL, "control characters"),
           "a credential with control characters is refused with an error, not used");
        s = config_set_free(s);
        unsetenv("CREDENTIALS_DIRECTORY");
        reset_tree();
}

int main(void) {
        if (!mkdtemp(tmpdir))
                return 1;

        test_defaults();
        test_every_field();
        test_gate_follows();
        test_default_work_dir();
        test_validation();
        test_parse_errors();
        test_escaping();
        test_names();
        test_load_set();
        test_project();
        test_project_narrows();
        test_project_browser();
        test_name_prefixes();
        test_engine_name_collisions();
        test_redaction();
        test_egress();
        test_credentials();

        {
                char cmd[4200];
                snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
                if (system(cmd) != 0)
                        diag("could not remove the temporary dir");
        }
        return done_testing();
}
