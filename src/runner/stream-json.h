/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The stream-json the agent prints, read as it comes. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define STREAM_LINE_MAX (1024U * 1024U)         /* longer lines are skipped, never buffered whole */
#define STREAM_TOOL_SUMMARY_MAX 2000U
#define STREAM_TOOL_RESULT_MAX (8U * 1024U)
#define STREAM_USER_LINE_DRAIN (256U * 1024U)   /* user lines beyond this are drained unparsed */

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
