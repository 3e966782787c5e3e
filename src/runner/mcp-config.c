/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The MCP config the agent gets: {"mcpServers": {NAME: {"command", "args", "env"}}}. The user's servers come
 * first, in name order (the config keeps them sorted), then the built-in "loop" and "loop-browser" servers,
 * each only when the user has not defined a server of that name: the same config always gives the same
 * bytes. "args" is always present, "env" only when the server has variables. */

#include <assert.h>

#include "mcp-config.h"
#include "json-util.h"
#include "strv.h"

static bool user_defines(const LoopConfig *c, const char *name) {
        for (size_t i = 0; i < c->n_mcp_servers; i++)
                if (streq_ptr(c->mcp_servers[i].name, name))
                        return true;
        return false;
}

static int strv_to_json_array(char * const *l, json_object **ret) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();

        if (!a)
                return -ENOMEM;
        STRV_FOREACH(s, l) {
                json_object *e = json_object_new_string(*s);
                if (!e || json_object_array_add(a, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/* KEY=VALUE strings to an object; a later duplicate key wins, as it would in an environment block. */
static int env_to_json_object(char * const *env, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        STRV_FOREACH(kv, env) {
                const char *eq = strchr(*kv, '=');
                _cleanup_free_ char *key = NULL;
                json_object *v;

                if (!eq || eq == *kv)
                        return -EINVAL;
                key = strndup(*kv, eq - *kv);
                v = json_object_new_string(eq + 1);
                if (!key || !v || json_object_object_add(o, key, v) < 0) {
                        json_object_put(v);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int server_add(json_object *servers, const char *name, const char *command, char * const *args,
                      char * const *env) {
        _cleanup_(json_object_putp) json_object *s = NULL, *a = NULL, *e = NULL, *cmd = NULL;
        int r;

        if (isempty(name) || isempty(command))
                return -EINVAL;

        s = json_object_new_object();
        cmd = json_object_new_string(command);
        if (!s || !cmd)
                return -ENOMEM;
        r = strv_to_json_array(args, &a);
        if (r < 0)
                return r;
        if (env && *env) {
                r = env_to_json_object(env, &e);
                if (r < 0)
                        return r;
        }

        if (json_object_object_add(s, "command", cmd) < 0)
                return -ENOMEM;
        TAKE_PTR(cmd);
        if (json_object_object_add(s, "args", a) < 0)
                return -ENOMEM;
        TAKE_PTR(a);
        if (e) {
                if (json_object_object_add(s, "env", e) < 0)
                        return -ENOMEM;
                TAKE_PTR(e);
        }
        if (json_object_object_add(servers, name, s) < 0)
                return -ENOMEM;
        TAKE_PTR(s);
        return 0;
}

static int builtin_add(json_object *servers, const char *name, const char *subcommand, const char *channel,
                       const char *work_dir, const char *log_name, const char *loop_bin) {
        _cleanup_free_ char *log = NULL;

        if (asprintf(&log, "%s/.loop/%s", work_dir, log_name) < 0)
                return -ENOMEM;

        char *args[] = { (char *) subcommand, (char *) "--channel-id", (char *) channel, (char *) "--log", log, NULL };
        return server_add(servers, name, loop_bin, args, NULL);
}

int mcp_config_build(const LoopConfig *c, const char *channel, const char *work_dir, const char *loop_bin,
                     json_object **ret) {
        _cleanup_(json_object_putp) json_object *root = NULL, *servers = NULL;
        int r;

        assert(c);
        assert(ret);

        if (isempty(channel) || isempty(work_dir) || isempty(loop_bin))
                return -EINVAL;

        servers = json_object_new_object();
        if (!servers)
                return -ENOMEM;

        for (size_t i = 0; i < c->n_mcp_servers; i++) {
                const McpServer *m = &c->mcp_servers[i];
                r = server_add(servers, m->name, m->command, m->args, m->env);
                if (r < 0)
                        return r;
        }

        if (!user_defines(c, "loop")) {
                r = builtin_add(servers, "loop", "mcp", channel, work_dir, "mcp.log", loop_bin);
                if (r < 0)
                        return r;
        }
        if (c->browser.enabled && !user_defines(c, "loop-browser")) {
                r = builtin_add(servers, "loop-browser", "mcp-browser", channel, work_dir, "mcp-browser.log",
                                loop_bin);
                if (r < 0)
                        return r;
        }

        root = json_object_new_object();
        if (!root)
                return -ENOMEM;
        if (json_object_object_add(root, "mcpServers", servers) < 0)
                return -ENOMEM;
        TAKE_PTR(servers);

        *ret = TAKE_PTR(root);
        return 0;
}

char *mcp_config_path(const char *work_dir, const char *channel) {
        char *p;

        if (isempty(work_dir) || isempty(channel) || channel_name_check(channel, NULL) < 0) {
                errno = EINVAL;
                return NULL;
        }
        if (asprintf(&p, "%s/.loop/mcp-%s.json", work_dir, channel) < 0) {
                errno = ENOMEM;
                return NULL;
        }
        return p;
}
