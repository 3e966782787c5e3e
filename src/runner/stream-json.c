/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The agent's stdout: one JSON event per line (Claude Code's --output-format stream-json).
 *
 * Whatever the chunking, the same lines give the same events. A line is held in memory only while it can
 * still be used: once it grows past STREAM_LINE_MAX the parser drops what it holds and discards bytes until
 * the next newline; a "user" line (tool results, often whole files) is dropped the same way once it passes
 * STREAM_USER_LINE_DRAIN. Both count as skipped, as do lines that are not one JSON object (truncated,
 * trailing garbage, NUL bytes, invalid UTF-8, nested deeper than STREAM_JSON_DEPTH_MAX). Blank lines are
 * ignored without being counted. Fields of the wrong type are treated as absent. */

#include <assert.h>
#include <math.h>

#include "stream-json.h"
#include "json-util.h"

#define STREAM_JSON_DEPTH_MAX 64                /* deeper JSON is not a stream event we know */
#define STREAM_BUFFER_KEEP (64U * 1024U)        /* a line buffer larger than this is freed after the line */
#define STREAM_SESSION_ID_MAX 256U              /* longer session ids are ignored */

struct StreamParser {
        StreamEventFn fn;
        void *userdata;
        json_tokener *tok;

        char *buf;                      /* the incomplete line so far */
        size_t len, allocated;
        bool discarding;                /* inside a line we skip: drop bytes until the next newline */
        int stopped;                    /* the callback's negative return, repeated on later calls */

        AgentResult result;
};

void agent_result_done(AgentResult *r) {
        if (!r)
                return;
        free(r->result);
        free(r->session_id);
        *r = (AgentResult) {};
}

int stream_parser_new(StreamEventFn fn, void *userdata, StreamParser **ret) {
        StreamParser *p;

        assert(ret);

        p = calloc(1, sizeof(StreamParser));
        if (!p)
                return -ENOMEM;
        p->tok = json_tokener_new_ex(STREAM_JSON_DEPTH_MAX);
        if (!p->tok) {
                free(p);
                return -ENOMEM;
        }
        json_tokener_set_flags(p->tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        p->fn = fn;
        p->userdata = userdata;
        *ret = p;
        return 0;
}

StreamParser *stream_parser_free(StreamParser *p) {
        if (!p)
                return NULL;
        json_tokener_free(p->tok);
        free(p->buf);
        agent_result_done(&p->result);
        free(p);
        return NULL;
}

const AgentResult *stream_parser_result(const StreamParser *p) {
        assert(p);
        return &p->result;
}

static json_object *get_typed(json_object *o, const char *key, json_type type) {
        json_object *v;

        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return json_object_is_type(v, type) ? v : NULL;
}

/* The content blocks of an assistant or user line ("message": {"content": [...]}), and how many; NULL and 0
 * when it has none. */
static json_object *message_content(json_object *obj, size_t *ret_n) {
        json_object *content = get_typed(get_typed(obj, "message", json_type_object), "content", json_type_array);

        *ret_n = content ? json_object_array_length(content) : 0;
        return content;
}

static const char *get_string(json_object *o, const char *key) {
        return json_object_get_string(get_typed(o, key, json_type_string));
}

static bool get_bool(json_object *o, const char *key) {
        json_object *v = get_typed(o, key, json_type_boolean);
        return v && json_object_get_boolean(v);
}

/* A non-negative count or duration; anything else is absent (0). */
static uint64_t get_uint(json_object *o, const char *key) {
        json_object *v;

        if ((v = get_typed(o, key, json_type_int))) {
                int64_t i = json_object_get_int64(v);
                return i > 0 ? (uint64_t) i : 0;
        }
        if ((v = get_typed(o, key, json_type_double))) {
                double d = json_object_get_double(v);
                return isfinite(d) && d > 0 && d < 9007199254740992.0 ? (uint64_t) d : 0;
        }
        return 0;
}

/* A session id is passed back to the agent as an argument: only printable ASCII without spaces, bounded. */
static const char *get_session_id(json_object *o) {
        const char *s = get_string(o, "session_id");
        size_t n;

        if (!s)
                return NULL;
        n = strlen(s);
        if (n == 0 || n > STREAM_SESSION_ID_MAX || s[0] == '-')
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (s[i] <= ' ' || s[i] > '~')
                        return NULL;
        return s;
}

/* The longest prefix of s[0..n) that is at most max bytes and does not split a UTF-8 sequence. */
static size_t utf8_cap(const char *s, size_t n, size_t max) {
        if (n <= max)
                return n;
        n = max;
        while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80)
                n--;
        return n;
}

static char *strndup_capped(const char *s, size_t n, size_t max) {
        return strndup(s, utf8_cap(s, n, max));
}

static int emit(StreamParser *p, StreamEvent *ev) {
        int r;

        if (!p->fn)
                return 0;
        r = p->fn(ev, p->userdata);
        return r < 0 ? r : 0;
}

static int handle_assistant(StreamParser *p, json_object *obj, const char *session_id) {
        size_t n;
        json_object *content = message_content(obj, &n);
        int r;

        for (size_t i = 0; i < n; i++) {
                json_object *block = json_object_array_get_idx(content, i);
                const char *type = get_string(block, "type");
                StreamEvent ev = { .session_id = session_id, .raw = obj };

                if (streq_ptr(type, "text")) {
                        ev.type = STREAM_EVENT_TEXT;
                        ev.text = get_string(block, "text");
                        if (!ev.text)
                                continue;
                        r = emit(p, &ev);
                } else if (streq_ptr(type, "tool_use")) {
                        _cleanup_free_ char *summary = NULL;
                        json_object *input;

                        ev.type = STREAM_EVENT_TOOL_USE;
                        ev.tool_name = get_string(block, "name");
                        if (json_object_is_type(block, json_type_object) &&
                            json_object_object_get_ex(block, "input", &input)) {
                                size_t len;
                                const char *s = json_object_to_json_string_length(
                                                input, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
                                if (!s)
                                        return -ENOMEM;
                                summary = strndup_capped(s, len, STREAM_TOOL_SUMMARY_MAX);
                                if (!summary)
                                        return -ENOMEM;
                        }
                        ev.tool_summary = summary;
                        r = emit(p, &ev);
                } else
                        continue;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A tool result's content: a string, or an array of blocks of which the text ones are joined by newlines. */
static int tool_result_text(json_object *block, char **ret) {
        json_object *content;
        const char *s;
        char *t;

        if ((s = get_string(block, "content"))) {
                t = strndup_capped(s, strlen(s), STREAM_TOOL_RESULT_MAX);
                if (!t)
                        return -ENOMEM;
                *ret = t;
                return 0;
        }

        content = get_typed(block, "content", json_type_array);
        if (!content) {
                *ret = NULL;
                return 0;
        }

        /* Collect at most one byte over the cap, so the cut below sees whether a character was split. */
        size_t n = json_object_array_length(content), len = 0;
        _cleanup_free_ char *buf = malloc(STREAM_TOOL_RESULT_MAX + 2);
        bool any = false;

        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < n && len <= STREAM_TOOL_RESULT_MAX; i++) {
                json_object *b = json_object_array_get_idx(content, i);
                const char *text;
                size_t k;

                if (!streq_ptr(get_string(b, "type"), "text") || !(text = get_string(b, "text")))
                        continue;
                if (any)
                        buf[len++] = '\n';
                any = true;
                k = MIN(strlen(text), STREAM_TOOL_RESULT_MAX + 1 - MIN(len, STREAM_TOOL_RESULT_MAX + 1));
                memcpy(buf + len, text, k);
                len += k;
        }
        if (!any) {
                *ret = NULL;
                return 0;
        }
        len = utf8_cap(buf, len, STREAM_TOOL_RESULT_MAX);
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int handle_user(StreamParser *p, json_object *obj, const char *session_id) {
        size_t n;
        json_object *content = message_content(obj, &n);
        int r;

        for (size_t i = 0; i < n; i++) {
                json_object *block = json_object_array_get_idx(content, i);
                _cleanup_free_ char *text = NULL;

                if (!streq_ptr(get_string(block, "type"), "tool_result"))
                        continue;
                r = tool_result_text(block, &text);
                if (r < 0)
                        return r;

                StreamEvent ev = {
                        .type = STREAM_EVENT_TOOL_RESULT,
                        .text = text,
                        .is_error = get_bool(block, "is_error"),
                        .session_id = session_id,
                        .raw = obj,
                };
                r = emit(p, &ev);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int handle_system(StreamParser *p, json_object *obj, const char *session_id) {
        const char *subtype = get_string(obj, "subtype");
        StreamEvent ev = { .subtype = subtype, .session_id = session_id, .raw = obj };

        if (streq_ptr(subtype, "init"))
                ev.type = STREAM_EVENT_SYSTEM_INIT;
        else if (streq_ptr(subtype, "task_started") || streq_ptr(subtype, "task_progress") ||
                 streq_ptr(subtype, "status")) {
                ev.type = STREAM_EVENT_ACTIVITY;
                ev.text = get_string(obj, "description") ?: get_string(obj, "status") ?: get_string(obj, "summary");
        } else
                return 0;
        return emit(p, &ev);
}

static int handle_result(StreamParser *p, json_object *obj, const char *session_id) {
        const char *text = get_string(obj, "result");
        char *copy = NULL;

        if (text) {
                copy = strdup(text);
                if (!copy)
                        return -ENOMEM;
        }
        free(p->result.result);
        p->result.result = copy;
        p->result.have_result = true;
        p->result.is_error = get_bool(obj, "is_error");
        p->result.duration_ms = get_uint(obj, "duration_ms");
        p->result.num_turns = get_uint(obj, "num_turns");

        StreamEvent ev = {
                .type = STREAM_EVENT_RESULT,
                .text = p->result.result,
                .subtype = get_string(obj, "subtype"),
                .session_id = session_id,
                .is_error = p->result.is_error,
                .duration_ms = p->result.duration_ms,
                .num_turns = p->result.num_turns,
                .raw = obj,
        };
        return emit(p, &ev);
}

/* Claude Code writes "type" first; this lets a large user line be dropped before it is held whole. */
static bool line_starts_as_user(const char *s, size_t n) {
        static const char *const tokens[] = { "{", "\"type\"", ":", "\"user\"" };
        size_t i = 0;

        for (size_t t = 0; t < ELEMENTSOF(tokens); t++) {
                size_t k = strlen(tokens[t]);
                while (i < n && strchr(" \t\r", s[i]) && s[i])
                        i++;
                if (n - i < k || memcmp(s + i, tokens[t], k) != 0)
                        return false;
                i += k;
        }
        return true;
}

static int skip_line(StreamParser *p) {
        p->result.lines_skipped++;
        return 0;
}

static int parse_line(StreamParser *p, const char *line, size_t len) {
        _cleanup_(json_object_putp) json_object *obj = NULL;
        size_t raw_len = len;
        const char *type, *session_id;

        while (len > 0 && strchr(" \t\r", line[0]) && line[0])
                line++, len--;
        while (len > 0 && strchr(" \t\r", line[len - 1]) && line[len - 1])
                len--;
        if (len == 0)
                return 0;
        if (memchr(line, 0, len))
                return skip_line(p);
        if (raw_len > STREAM_USER_LINE_DRAIN && line_starts_as_user(line, len))
                return skip_line(p);

        json_tokener_reset(p->tok);
        obj = json_tokener_parse_ex(p->tok, line, (int) len);
        if (!obj || json_tokener_get_error(p->tok) != json_tokener_success ||
            json_tokener_get_parse_end(p->tok) != len || !json_object_is_type(obj, json_type_object))
                return skip_line(p);

        type = get_string(obj, "type");
        /* The same rule for a user line whose "type" is not first, so that chunking never matters. */
        if (streq_ptr(type, "user") && raw_len > STREAM_USER_LINE_DRAIN)
                return skip_line(p);

        session_id = get_session_id(obj);
        if (session_id && !streq_ptr(session_id, p->result.session_id)) {
                char *c = strdup(session_id);
                if (!c)
                        return -ENOMEM;
                free(p->result.session_id);
                p->result.session_id = c;
        }

        if (streq_ptr(type, "assistant"))
                return handle_assistant(p, obj, session_id);
        if (streq_ptr(type, "user"))
                return handle_user(p, obj, session_id);
        if (streq_ptr(type, "system"))
                return handle_system(p, obj, session_id);
        if (streq_ptr(type, "result"))
                return handle_result(p, obj, session_id);
        return 0;
}

static int buffer_append(StreamParser *p, const char *data, size_t n) {
        if (p->len + n > p->allocated) {
                size_t a = MAX(p->allocated * 2, (size_t) 4096);
                char *b;

                while (a < p->len + n)
                        a *= 2;
                a = MIN(a, (size_t) STREAM_LINE_MAX);
                b = realloc(p->buf, a);
                if (!b)
                        return -ENOMEM;
                p->buf = b;
                p->allocated = a;
        }
        memcpy(p->buf + p->len, data, n);
        p->len += n;
        return 0;
}

static void buffer_clear(StreamParser *p) {
        p->len = 0;
        if (p->allocated > STREAM_BUFFER_KEEP) {
                p->buf = mfree(p->buf);
                p->allocated = 0;
        }
}

static void start_discarding(StreamParser *p) {
        p->discarding = true;
        p->len = 0;
        p->buf = mfree(p->buf);
        p->allocated = 0;
}

int stream_parser_feed(StreamParser *p, const char *data, size_t size) {
        int r;

        assert(p);
        assert(data || size == 0);

        while (size > 0) {
                const char *nl;
                size_t n;

                if (p->stopped < 0)
                        return p->stopped;

                nl = memchr(data, '\n', size);
                n = nl ? (size_t) (nl - data) : size;

                if (p->discarding) {
                        if (nl) {
                                p->discarding = false;
                                (void) skip_line(p);
                        }
                } else if (p->len + n > STREAM_LINE_MAX) {
                        start_discarding(p);
                        if (nl) {
                                p->discarding = false;
                                (void) skip_line(p);
                        }
                } else if (nl) {
                        if (p->len == 0)
                                r = parse_line(p, data, n);
                        else {
                                r = buffer_append(p, data, n);
                                if (r >= 0)
                                        r = parse_line(p, p->buf, p->len);
                                buffer_clear(p);
                        }
                        if (r < 0)
                                return (p->stopped = r);
                } else {
                        r = buffer_append(p, data, n);
                        if (r < 0)
                                return r;
                        if (p->len > STREAM_USER_LINE_DRAIN && line_starts_as_user(p->buf, p->len))
                                start_discarding(p);
                }

                data += n + !!nl;
                size -= n + !!nl;
        }

        return p->stopped < 0 ? p->stopped : 0;
}

int stream_parser_finish(StreamParser *p) {
        int r = 0;

        assert(p);

        if (p->stopped < 0)
                return p->stopped;
        if (p->discarding) {
                p->discarding = false;
                (void) skip_line(p);
        } else if (p->len > 0) {
                r = parse_line(p, p->buf, p->len);
                buffer_clear(p);
                if (r < 0)
                        p->stopped = r;
        }
        return r;
}
