/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop mcp`: the agent's built-in MCP server (the runner's MCP config names it "loop"), over stdio. Its
 * tools are the channel's scheduled tasks; it holds no state: each call is one request to the channel's
 * loop-tasks@NAME helper on the socket the runner bind-mounted (/run/loop/tasks.sock), with the
 * container's token (/run/loop/tasks-token), and the helper's answer becomes the tool's result. A refusal
 * (a bad schedule, the cap, an unknown id) is an isError result whose text says why. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-build.h"
#include "helper-call.h"
#include "log.h"
#include "loop.h"
#include "loop-mcp-verb.h"
#include "mcp-server.h"
#include "tasks-service.h"

#define MCP_TASKS_SOCKET_DEFAULT "/run/loop/tasks.sock"
#define MCP_TASKS_TOKEN_FILE_DEFAULT "/run/loop/tasks-token"
#define MCP_TASKS_ANSWER_MAX (8U * 1024U * 1024U)
#define MCP_TASKS_TIMEOUT_SEC 30

typedef struct McpTasks {
        const char *channel;
        const char *socket_path;
        const char *token_file;
} McpTasks;

/* One request to the helper; its answer object in *ret, or a text for the model in *ret_error. */
static int tasks_call(McpTasks *m, const char *op, json_object *args, json_object **ret, McpToolResult *result) {
        _cleanup_(json_object_putp) json_object *req = json_object_new_object();
        _cleanup_free_ char *token = NULL;
        const char *failure;
        size_t token_size;
        int r;

        r = mcp_verb_token_read(m->token_file, &token, &token_size);
        if (r < 0)
                return mcp_result_printf(result, true, "Scheduled tasks are not available in this container (no token at %s: %s).",
                                         m->token_file, strerror(-r));
        if (!req ||
            json_object_object_add(req, "token", json_object_new_string(token)) < 0 ||
            json_object_object_add(req, "op", json_object_new_string(op)) < 0 ||
            json_object_object_add(req, "args", args ? json_object_get(args) : json_object_new_object()) < 0)
                return -ENOMEM;
        explicit_bzero(token, token_size);

        r = helper_call(m->socket_path, MCP_TASKS_TIMEOUT_SEC * 1000000ULL, req, TASKS_REQUEST_MAX,
                        MCP_TASKS_ANSWER_MAX, ret, &failure);
        if (r == -EMSGSIZE)
                return mcp_result_printf(result, true, "The request is too large (the prompt is at most %u bytes).",
                                         TASKS_PROMPT_MAX_HARD);
        if (r < 0 && !failure)
                return r;
        if (r < 0)
                return mcp_result_printf(result, true, "The channel's task service at %s %s (%s): scheduled tasks are not available.",
                                         m->socket_path, failure, r == -EAGAIN ? "timed out" : strerror(-r));
        return 1;
}

/* The answer as the model reads it: the task(s) as JSON, or the helper's refusal as an error. */
static int tasks_tool(McpTasks *m, const char *op, json_object *args, McpToolResult *result, const char *done) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        json_object *ok, *v;
        int r;

        r = tasks_call(m, op, args, &answer, result);
        if (r <= 0)
                return r;
        if (!json_object_object_get_ex(answer, "ok", &ok) || !json_object_get_boolean(ok)) {
                json_object_object_get_ex(answer, "error", &v);
                return mcp_result_printf(result, true, "Refused: %s", v ? json_object_get_string(v) : "unknown error");
        }
        json_object_object_del(answer, "ok");
        return mcp_result_printf(result, false, "%s%s", done,
                                 json_object_to_json_string_ext(answer, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int tool_schedule(json_object *args, void *userdata, McpToolResult *r) {
        return tasks_tool(userdata, "schedule", args, r, "Task scheduled.\n");
}
static int tool_list(json_object *args, void *userdata, McpToolResult *r) {
        return tasks_tool(userdata, "list", NULL, r, "");
}
static int tool_show(json_object *args, void *userdata, McpToolResult *r) {
        return tasks_tool(userdata, "show", args, r, "");
}
static int tool_cancel(json_object *args, void *userdata, McpToolResult *r) {
        return tasks_tool(userdata, "cancel", args, r, "Task cancelled.\n");
}
static int tool_edit(json_object *args, void *userdata, McpToolResult *r) {
        return tasks_tool(userdata, "edit", args, r, "Task changed.\n");
}
static int tool_toggle(json_object *args, void *userdata, McpToolResult *r) {
        return tasks_tool(userdata, "toggle", args, r, "Task toggled.\n");
}

#define ID_SCHEMA "\"id\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{8}$\",\"description\":\"The task id (list_tasks shows it).\"}"
#define TYPE_SCHEMA "\"type\":{\"type\":\"string\",\"enum\":[\"cron\",\"interval\",\"once\",\"manual\"]," \
        "\"description\":\"cron: a 5-field cron expression in schedule; interval: a duration such as 5m, 1h30m, 2d; " \
        "once: an RFC 3339 time; manual: no schedule (the operator runs it).\"}"
#define SCHEDULE_SCHEMA "\"schedule\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"" \
        "For cron: minute hour day-of-month month day-of-week, e.g. \\\"*/15 9-17 * * mon-fri\\\" (local time). " \
        "For interval: e.g. \\\"30m\\\". For once: e.g. \\\"2026-11-26T12:00:00Z\\\".\"}"
#define PROMPT_SCHEMA "\"prompt\":{\"type\":\"string\",\"description\":\"What the agent is asked each time the task fires.\"}"
#define NAME_SCHEMA "\"name\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"A short label.\"}"

static const McpTool tasks_tools[] = {
        { "schedule_task",
          "Schedule a prompt to run in this channel later or repeatedly (a systemd timer on the host). "
          "Each firing queues the prompt; the result appears in the channel's outbox.",
          "{\"type\":\"object\",\"properties\":{" TYPE_SCHEMA "," SCHEDULE_SCHEMA "," PROMPT_SCHEMA "," NAME_SCHEMA "},"
          "\"required\":[\"type\",\"prompt\"],\"additionalProperties\":false}",
          tool_schedule },
        { "list_tasks", "List this channel's scheduled tasks.",
          "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", tool_list },
        { "show_task", "Show one scheduled task.",
          "{\"type\":\"object\",\"properties\":{" ID_SCHEMA "},\"required\":[\"id\"],\"additionalProperties\":false}", tool_show },
        { "cancel_task", "Cancel (delete) a scheduled task and its timer.",
          "{\"type\":\"object\",\"properties\":{" ID_SCHEMA "},\"required\":[\"id\"],\"additionalProperties\":false}", tool_cancel },
        { "edit_task", "Change a task's type, schedule, prompt or name.",
          "{\"type\":\"object\",\"properties\":{" ID_SCHEMA "," TYPE_SCHEMA "," SCHEDULE_SCHEMA "," PROMPT_SCHEMA "," NAME_SCHEMA "},"
          "\"required\":[\"id\"],\"additionalProperties\":false}", tool_edit },
        { "toggle_task", "Enable or disable a task (a disabled task's timer is stopped). Without enabled, flips it.",
          "{\"type\":\"object\",\"properties\":{" ID_SCHEMA ",\"enabled\":{\"type\":\"boolean\"}},\"required\":[\"id\"],"
          "\"additionalProperties\":false}", tool_toggle },
};

static const McpVerb verb = {
        .verb = "mcp",
        .summary = "The agent's MCP server over stdio (in the agent container): scheduled tasks of the channel.",
        .what = "task service",
        .env_socket = "LOOP_TASKS_SOCKET",
        .env_token = "LOOP_TASKS_TOKEN_FILE",
        .default_socket = MCP_TASKS_SOCKET_DEFAULT,
        .default_token = MCP_TASKS_TOKEN_FILE_DEFAULT,
};

int verb_mcp(int argc, char *argv[]) {
        _cleanup_free_ char *instructions = NULL;
        McpVerbArgs a;
        McpTasks m;
        int r;

        r = mcp_verb_parse(&verb, argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        m = (McpTasks) { .channel = a.channel, .socket_path = a.socket_path, .token_file = a.token_file };
        if (asprintf(&instructions, "Scheduled tasks of the loop channel %s: each task is a systemd timer on the host; "
                     "when it fires, its prompt is queued for this channel and runs like any other message.",
                     m.channel ?: "of this container") < 0)
                return log_oom(), EXIT_FAILURE;

        McpStdioServer s = {
                .name = "loop",
                .version = PACKAGE_VERSION,
                .instructions = instructions,
                .tools = tasks_tools,
                .n_tools = ELEMENTSOF(tasks_tools),
                .userdata = &m,
        };
        return mcp_verb_serve(&s);
}
