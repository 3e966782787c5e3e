/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: {work_dir}/.loop/config.json, the project file the agent writes and the runner parses
 * (config_parse_text() then config_apply_project_json() over a fixed channel config). Besides crashes and
 * leaks it checks the allow-list of the README ("The project config") on every input the merge accepts:
 * what a project may not set is the operator's, lists it may only narrow hold nothing new, and the gates
 * are no wider (the gate stays on, the proxy and the browser only go from on to off, every rule the project
 * added is a deny rule). */

#include <stdint.h>
#include <stdlib.h>

#include "config-project.h"
#include "config-schema.h"
#include "config.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base_text[] =
        "{\"container_image\": \"op:1\", \"claude_bin_path\": \"/usr/local/bin/claude\","
        " \"mounts\": [\"./data:/data\", \"/srv/shared:/shared:ro\"], \"extra_dirs\": [\"/e1\"],"
        " \"copy_files\": [\"~/.gitconfig\"], \"user\": \"agent\", \"connect_tcp\": \"443\","
        " \"protect_paths\": [\"scripts\"], \"tripwire\": true, \"container_timeout_sec\": 600,"
        " \"tasks\": {\"max\": 5}, \"limits\": {\"memory_max_mb\": 2048},"
        " \"browser\": {\"enabled\": false, \"chrome_image\": \"op-chrome:1\"},"
        " \"egress\": {\"enabled\": true, \"rules\": [{\"host\": \"a.test\", \"decision\": \"allow\"}]},"
        " \"gates\": {\"approval_timeout_sec\": 60, \"agentgate\": {\"default_decision\": \"deny\","
        "   \"exec_shared_memory\": \"deny\","
        "   \"file_rules\": [{\"paths\": [\"/etc/**\"], \"decision\": \"deny\"}],"
        "   \"command_rules\": [{\"commands\": [\"curl\"], \"decision\": \"deny\"}]},"
        "  \"docker_proxy\": {\"enabled\": false, \"http_rules\": [{\"paths\": [\"^/\"], \"decision\": \"deny\"}]}}}";

static LoopConfig base;

static void setup(void) {
        static bool done;
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        ConfigProblems p = {};

        if (done)
                return;
        done = true;
        if (config_parse_text(base_text, strlen(base_text), &o, &reason) < 0 ||
            schema_validate(&config_schema_root, o, SCOPE_CHANNEL, "base", &p) != 0 ||
            loop_config_from_json(o, "fuzz", &base) < 0)
                abort();
        config_problems_done(&p);
}

static bool same_str(const char *a, const char *b) {
        return streq_ptr(a, b);
}

static bool same_strv(char **a, char **b) {
        size_t n = strv_length(a);

        if (n != strv_length(b))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

/* Every element of sub (after relative sources are resolved) is one of base's. */
static bool strv_subset(char **sub, char **of) {
        STRV_FOREACH(s, sub)
                if (!strv_contains(of, *s))
                        return false;
        return true;
}

/* The rules in front of the n_base operator rules are the project's: deny rules only. */
static void check_rules_deny(size_t n_out, size_t n_base, const Decision *decisions, size_t stride) {
        if (n_out < n_base)
                abort();        /* the operator's rules are all kept */
        for (size_t i = 0; i < n_out - n_base; i++)
                if (*(const Decision *) ((const char *) decisions + i * stride) != DECISION_DENY)
                        abort();        /* a project rule that is not deny stands before the operator's */
}

static void check_narrowed(const LoopConfig *c) {
        const AgentGateConfig *g = &c->gates.agentgate, *bg = &base.gates.agentgate;
        const DockerProxyConfig *d = &c->gates.docker_proxy, *bd = &base.gates.docker_proxy;

        if (!same_str(c->container_image, base.container_image) ||
            !same_str(c->browser.chrome_image, base.browser.chrome_image) ||
            !same_str(c->user, base.user) || !same_str(c->work_dir, base.work_dir) ||
            !same_str(c->connect_tcp, base.connect_tcp) || !same_str(c->api_addr, base.api_addr) ||
            !same_strv(c->protect_paths, base.protect_paths) || !same_strv(c->mask_paths, base.mask_paths) ||
            !same_strv(c->unmask_paths, base.unmask_paths) || c->tripwire != base.tripwire ||
            c->container_timeout_sec != base.container_timeout_sec ||
            c->limits.memory_max_mb != base.limits.memory_max_mb || c->tasks.max != base.tasks.max)
                abort();        /* a key not in project files changed */
        if (!json_object_equal(json_object_object_get(c->json, "egress"), json_object_object_get(base.json, "egress")))
                abort();        /* egress is not accepted from a project */
        if (!strv_subset(c->extra_dirs, base.extra_dirs) || !strv_subset(c->copy_files, base.copy_files))
                abort();        /* only narrowed */
        STRV_FOREACH(m, c->mounts)
                if (!strv_contains(base.mounts, *m) &&
                    !(startswith(*m, "/w/data:/data") && strv_contains(base.mounts, "./data:/data")))
                        abort();        /* only the operator's mounts */
        if (c->claude_bin_path && !same_str(c->claude_bin_path, base.claude_bin_path)) {
                _cleanup_free_ char *clean = path_clean(c->claude_bin_path);     /* "///bin/x" is /bin/x */
                if (clean && !startswith(clean, "/usr/") && !startswith(clean, "/opt/") &&
                    !startswith(clean, "/bin/") && !startswith(clean, "/sbin/"))
                        abort();        /* an agent binary outside the image's system directories */
        }
        if (g->enabled != bg->enabled)
                abort();        /* the gate stays as the operator set it: off, it enforces nothing */
        if ((d->enabled && !bd->enabled) || (c->browser.enabled && !base.browser.enabled))
                abort();        /* the others only go from true to false */
        if (g->default_decision != bg->default_decision || g->exec_shared_memory_check != bg->exec_shared_memory_check ||
            d->default_decision != bd->default_decision || d->build != bd->build ||
            d->nested_network != bd->nested_network || d->containers_max != bd->containers_max ||
            c->gates.approval_timeout_sec != base.gates.approval_timeout_sec)
                abort();
        check_rules_deny(g->n_path_rules, bg->n_path_rules, &g->path_rules[0].decision, sizeof g->path_rules[0]);
        check_rules_deny(g->n_command_rules, bg->n_command_rules, &g->command_rules[0].decision, sizeof g->command_rules[0]);
        check_rules_deny(g->n_file_rules, bg->n_file_rules, &g->file_rules[0].decision, sizeof g->file_rules[0]);
        check_rules_deny(d->n_http_rules, bd->n_http_rules, &d->http_rules[0].decision, sizeof d->http_rules[0]);
        check_rules_deny(d->n_body_rules, bd->n_body_rules, &d->body_rules[0].decision, sizeof d->body_rules[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(json_object_putp) json_object *project = NULL;
        _cleanup_(loop_config_done) LoopConfig out = {};
        _cleanup_free_ char *reason = NULL;
        ConfigProblems p = {};
        int r;

        if (size > CONFIG_FILE_MAX + 1)
                return 0;
        setup();
        r = config_parse_text((const char *) data, size, &project, &reason);
        if (r < 0) {
                if (r != -ENOMEM && isempty(reason))
                        abort();
                return 0;
        }
        r = config_apply_project_json(&base, project, "/w/.loop/config.json", "/w", &out, &p);
        if (r == -EINVAL) {
                bool error = false;
                for (size_t i = 0; i < p.n; i++)
                        error = error || p.items[i].error;
                if (!error)
                        abort();        /* refused without saying why */
        } else if (r >= 0)
                check_narrowed(&out);
        config_problems_done(&p);
        return 0;
}
