/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The agent inside the container: its command line (Claude Code's flags, or any agent binary), the MCP
 * config it gets, the stream-json it prints, and what to do when a run fails. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define STREAM_LINE_MAX (1024U * 1024U)         /* longer lines are skipped, never buffered whole */
#define STREAM_TOOL_SUMMARY_MAX 2000U
#define STREAM_TOOL_RESULT_MAX (8U * 1024U)
#define STREAM_USER_LINE_DRAIN (256U * 1024U)   /* user lines beyond this are drained unparsed */

typedef struct AgentRequest {
        const char *bin;                /* claude_bin_path, or --agent */
        const char *model;              /* NULL or "": no --model */
        const char *mcp_config;         /* path inside the container */
        const char *resume;             /* session id, or NULL */
        bool fork_session;
        const char *append_system_prompt;
        char * const *add_dirs;         /* --add-dir each */
        const char *prompt;
} AgentRequest;

/* claude --mcp-config F [--model M] --print --verbose --output-format stream-json
 *        --dangerously-skip-permissions [--resume SID [--fork-session]] [--add-dir D]...
 *        [--append-system-prompt S] PROMPT */
int agent_argv_build(const AgentRequest *r, char ***ret);

/* {"mcpServers": {...}}: the user's servers plus the built-in "loop" server (unless the user defines one
 * named "loop"): command loop_bin, args ["mcp", "--channel-id", CHANNEL, "--log", WORK_DIR/.loop/mcp.log];
 * with browser on, also "loop-browser" (["mcp-browser", "--channel-id", CHANNEL, "--log", ...]). */
int mcp_config_build(const LoopConfig *c, const char *channel, const char *work_dir, const char *loop_bin,
                     json_object **ret);
/* WORK_DIR/.loop/mcp-CHANNEL.json */
char *mcp_config_path(const char *work_dir, const char *channel);

typedef enum StreamEventType {
        STREAM_EVENT_TEXT,              /* assistant text block: a turn */
        STREAM_EVENT_TOOL_USE,          /* assistant tool_use block */
        STREAM_EVENT_TOOL_RESULT,       /* user tool_result block */
        STREAM_EVENT_ACTIVITY,          /* system task_started / task_progress / status */
        STREAM_EVENT_SYSTEM_INIT,       /* system init: carries the session id early */
        STREAM_EVENT_RESULT,            /* the final result */
        _STREAM_EVENT_TYPE_MAX,
} StreamEventType;

typedef struct StreamEvent {
        StreamEventType type;
        const char *text;               /* TEXT; TOOL_RESULT content (capped); ACTIVITY description */
        const char *tool_name;          /* TOOL_USE */
        const char *tool_summary;       /* TOOL_USE: the input, as JSON text, capped at 2000 characters */
        const char *subtype;            /* ACTIVITY, SYSTEM_INIT */
        const char *session_id;         /* when the event carries one */
        bool is_error;                  /* RESULT; TOOL_RESULT */
        uint64_t duration_ms;           /* RESULT */
        uint64_t num_turns;             /* RESULT */
        json_object *raw;               /* the whole event (for --json), borrowed */
} StreamEvent;

/* Return < 0 to stop parsing (the feed call returns it). */
typedef int (*StreamEventFn)(const StreamEvent *ev, void *userdata);

typedef struct AgentResult {
        bool have_result;
        char *result;
        char *session_id;               /* from the result, or the last one seen */
        bool is_error;
        uint64_t duration_ms;
        uint64_t num_turns;
        uint64_t lines_skipped;         /* not JSON, or over STREAM_LINE_MAX */
} AgentResult;

void agent_result_done(AgentResult *r);

typedef struct StreamParser StreamParser;

int stream_parser_new(StreamEventFn fn, void *userdata, StreamParser **ret);
StreamParser *stream_parser_free(StreamParser *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(StreamParser *, stream_parser_free);
/* Feed any chunking of the agent's stdout. Lines that are not JSON are skipped; lines over STREAM_LINE_MAX
 * are skipped without being held in memory. */
int stream_parser_feed(StreamParser *p, const char *data, size_t size);
/* Parses a last line without newline. */
int stream_parser_finish(StreamParser *p);
/* What has been collected so far (result, session id); valid until the parser is freed. */
const AgentResult *stream_parser_result(const StreamParser *p);

typedef enum AgentErrorKind {
        AGENT_ERROR_NONE,
        AGENT_ERROR_PROMPT_TOO_LONG,
        AGENT_ERROR_QUOTA,              /* rate limits, usage limits, overloaded quota */
        AGENT_ERROR_AUTH,               /* invalid key, expired OAuth token, 401/403 */
        AGENT_ERROR_BILLING,            /* credit balance */
        AGENT_ERROR_NO_RESULT,          /* the agent ended without a result event */
        AGENT_ERROR_OTHER,
        _AGENT_ERROR_KIND_MAX,
} AgentErrorKind;

const char *agent_error_kind_to_string(AgentErrorKind k);
/* From the result text (is_error) or the agent's stderr. */
AgentErrorKind agent_error_classify(const char *message);

typedef enum RetryAction {
        RETRY_GIVE_UP,                  /* return the first error */
        RETRY_COMPACT,                  /* run "/compact" on the session, then retry the request on it */
        RETRY_RESUME_LAST,              /* retry once with --resume and only the last message */
} RetryAction;

/* attempt: how many retries were done already (0 after the first failure). Without a session id nothing is
 * retried; quota, auth and billing errors never are; "Prompt is too long" compacts (once); anything else
 * resumes once. */
RetryAction retry_decide(AgentErrorKind kind, const char *session_id, unsigned attempt);
