/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The agent module: its command line, its MCP config, the stream-json it prints, and the retry decisions. */

#include <malloc.h>

#include "agent-argv.h"
#include "agent-retry.h"
#include "mcp-config.h"
#include "stream-json.h"
#include "json-util.h"
#include "strv.h"
#include "tap.h"

/* ---- command line ---------------------------------------------------------------------------------- */

static char *argv_joined(const AgentRequest *r, int *ret) {
        _cleanup_strv_free_ char **l = NULL;

        *ret = agent_argv_build(r, &l);
        return *ret < 0 ? NULL : strv_join(l, "|");
}

_printf_(3, 4)
static void check_argv(const AgentRequest *r, const char *want, const char *format, ...) {
        _cleanup_free_ char *got = NULL, *what = NULL;
        va_list ap;
        int k;

        va_start(ap, format);
        if (vasprintf(&what, format, ap) < 0)
                abort();
        va_end(ap);
        got = argv_joined(r, &k);
        is_str(got, want, "%s", what);
}

#define BASE_FLAGS "--print|--verbose|--output-format|stream-json|--dangerously-skip-permissions"

static void test_argv(void) {
        char *dirs[] = { (char *) "/srv/a", (char *) "-odd", NULL };
        AgentRequest r = { .bin = "claude", .mcp_config = "/w/.loop/mcp-c.json", .prompt = "fix the tests" };
        int k;

        check_argv(&r, "claude|--mcp-config|/w/.loop/mcp-c.json|" BASE_FLAGS "|--|fix the tests",
                   "the minimal command line ends with -- and the prompt");

        r.model = "";
        check_argv(&r, "claude|--mcp-config|/w/.loop/mcp-c.json|" BASE_FLAGS "|--|fix the tests",
                   "an empty model gives no --model");

        r.model = "claude-sonnet-4-6";
        r.resume = "sess-1";
        r.fork_session = true;
        r.add_dirs = dirs;
        r.append_system_prompt = "-be brief";
        check_argv(&r, "claude|--mcp-config|/w/.loop/mcp-c.json|--model|claude-sonnet-4-6|" BASE_FLAGS
                   "|--resume|sess-1|--fork-session|--add-dir|/srv/a|--add-dir|-odd|--append-system-prompt|-be brief"
                   "|--|fix the tests",
                   "every option comes in the documented order");

        /* Every combination of the optional parts, against the rule written out once more. */
        for (unsigned m = 0; m < 32; m++) {
                AgentRequest c = {
                        .bin = "/usr/bin/agent",
                        .mcp_config = "/m.json",
                        .prompt = "--help me",
                        .model = (m & 1) ? "opus" : NULL,
                        .resume = (m & 2) ? "abc-123" : NULL,
                        .fork_session = m & 4,
                        .add_dirs = (m & 8) ? dirs : NULL,
                        .append_system_prompt = (m & 16) ? "sys" : NULL,
                };
                char want[1024];
                snprintf(want, sizeof want, "/usr/bin/agent|--mcp-config|/m.json%s|" BASE_FLAGS "%s%s%s%s|--|--help me",
                         (m & 1) ? "|--model|opus" : "",
                         (m & 2) ? "|--resume|abc-123" : "",
                         (m & 6) == 6 ? "|--fork-session" : "",
                         (m & 8) ? "|--add-dir|/srv/a|--add-dir|-odd" : "",
                         (m & 16) ? "|--append-system-prompt|sys" : "");
                check_argv(&c, want, "argv for model=%d resume=%d fork=%d add_dirs=%d append=%d",
                           !!(m & 1), !!(m & 2), !!(m & 4), !!(m & 8), !!(m & 16));
        }

        AgentRequest d = { .bin = "claude", .mcp_config = "/m.json", .prompt = "-p --dangerous" };
        check_argv(&d, "claude|--mcp-config|/m.json|" BASE_FLAGS "|--|-p --dangerous",
                   "a prompt that starts with - is the last argument, after --");

        d.prompt = "update";
        check_argv(&d, "claude|--mcp-config|/m.json|" BASE_FLAGS "|--|update\n",
                   "a bare-word prompt gets a newline so it cannot name a subcommand");
        d.prompt = "/compact";
        check_argv(&d, "claude|--mcp-config|/m.json|" BASE_FLAGS "|--|/compact", "/compact is passed unchanged");

        d.prompt = "";
        free(argv_joined(&d, &k));
        is_int(k, -EINVAL, "an empty prompt is refused");
        d.prompt = NULL;
        free(argv_joined(&d, &k));
        is_int(k, -EINVAL, "a missing prompt is refused");
        d.prompt = "x y";
        d.bin = NULL;
        free(argv_joined(&d, &k));
        is_int(k, -EINVAL, "a missing agent binary is refused");
        d.bin = "claude";
        d.mcp_config = NULL;
        free(argv_joined(&d, &k));
        is_int(k, -EINVAL, "a missing MCP config is refused");
        d.mcp_config = "/m.json";
        d.resume = "--dangerously";
        free(argv_joined(&d, &k));
        is_int(k, -EINVAL, "a session id starting with - is refused (--resume takes an optional value)");
}

/* ---- MCP config ------------------------------------------------------------------------------------ */

static char *mcp_json(const LoopConfig *c, int *ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;

        *ret = mcp_config_build(c, "chan", "/srv/w", "/usr/bin/loop", &o);
        if (*ret < 0)
                return NULL;
        return strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

#define LOOP_SERVER \
        "\"loop\":{\"command\":\"/usr/bin/loop\",\"args\":[\"mcp\",\"--channel-id\",\"chan\",\"--log\",\"/srv/w/.loop/mcp.log\"]}"
#define BROWSER_SERVER \
        "\"loop-browser\":{\"command\":\"/usr/bin/loop\",\"args\":[\"mcp-browser\",\"--channel-id\",\"chan\",\"--log\"," \
        "\"/srv/w/.loop/mcp-browser.log\"]}"

static void test_mcp_config(void) {
        char *args[] = { (char *) "-y", (char *) "server", NULL };
        char *env[] = { (char *) "TOKEN=abc", (char *) "URL=http://x/?a=b", NULL };
        McpServer servers[] = {
                { .name = (char *) "alpha", .command = (char *) "npx", .args = args, .env = env },
                { .name = (char *) "zeta", .command = (char *) "/bin/z" },
        };
        LoopConfig c = {};
        char *bad_env[] = { (char *) "NOEQUALS", NULL };
        McpServer bad = { .name = (char *) "b", .command = (char *) "b", .env = bad_env };
        McpServer own_loop = { .name = (char *) "loop", .command = (char *) "/opt/my-loop" };
        McpServer own_browser = { .name = (char *) "loop-browser", .command = (char *) "/opt/br" };
        _cleanup_free_ char *s = NULL, *s2 = NULL, *p = NULL;
        json_object *unused = NULL;
        int k;

        s = mcp_json(&c, &k);
        is_str(s, "{\"mcpServers\":{" LOOP_SERVER "}}", "without user servers only the built-in loop server is there");
        free(s);

        c.browser.enabled = true;
        s = mcp_json(&c, &k);
        is_str(s, "{\"mcpServers\":{" LOOP_SERVER "," BROWSER_SERVER "}}", "with the browser on, loop-browser is added");
        free(s);

        c.mcp_servers = servers;
        c.n_mcp_servers = 2;
        s = mcp_json(&c, &k);
        is_str(s, "{\"mcpServers\":{"
                  "\"alpha\":{\"command\":\"npx\",\"args\":[\"-y\",\"server\"],\"env\":{\"TOKEN\":\"abc\",\"URL\":\"http://x/?a=b\"}},"
                  "\"zeta\":{\"command\":\"/bin/z\",\"args\":[]},"
                  LOOP_SERVER "," BROWSER_SERVER "}}",
               "user servers come first in name order, env becomes an object split at the first =");
        s2 = mcp_json(&c, &k);
        is_str(s2, s, "the same config gives the same bytes");

        c.mcp_servers = &own_loop;
        c.n_mcp_servers = 1;
        free(s);
        s = mcp_json(&c, &k);
        is_str(s, "{\"mcpServers\":{\"loop\":{\"command\":\"/opt/my-loop\",\"args\":[]}," BROWSER_SERVER "}}",
               "a user server named loop replaces the built-in one");

        c.mcp_servers = &own_browser;
        free(s);
        s = mcp_json(&c, &k);
        is_str(s, "{\"mcpServers\":{\"loop-browser\":{\"command\":\"/opt/br\",\"args\":[]}," LOOP_SERVER "}}",
               "a user server named loop-browser replaces the built-in one");

        c.browser.enabled = false;
        free(s);
        s = mcp_json(&c, &k);
        is_str(s, "{\"mcpServers\":{\"loop-browser\":{\"command\":\"/opt/br\",\"args\":[]}," LOOP_SERVER "}}",
               "a user's loop-browser server stays when the browser is off");

        c.mcp_servers = &bad;
        free(s);
        s = mcp_json(&c, &k);
        ok(!s && k == -EINVAL, "an env entry without = is refused");

        c.n_mcp_servers = 0;
        ok(mcp_config_build(&c, "chan", "/srv/w", NULL, &unused) == -EINVAL && !unused,
           "a missing loop binary is refused and nothing is returned");
        ok(mcp_config_build(&c, "", "/srv/w", "/usr/bin/loop", &unused) == -EINVAL, "an empty channel is refused");

        p = mcp_config_path("/srv/w", "chan");
        is_str(p, "/srv/w/.loop/mcp-chan.json", "the MCP config path is WORK_DIR/.loop/mcp-CHANNEL.json");
        errno = 0;
        ok(!mcp_config_path("/srv/w", "../etc") && errno == EINVAL, "a channel name with a slash gives no path");
}

/* ---- stream-json ----------------------------------------------------------------------------------- */

typedef struct Recorder {
        FILE *f;
        char *log;
        size_t size;
        unsigned n;
        unsigned stop_after;            /* 0: never */
        char *last_text, *last_summary;
        bool raw_ok;
} Recorder;

static int record(const StreamEvent *ev, void *userdata) {
        Recorder *r = userdata;

        r->n++;
        if (!ev->raw || !json_object_is_type(ev->raw, json_type_object))
                r->raw_ok = false;
        switch (ev->type) {
        case STREAM_EVENT_TEXT:
                fprintf(r->f, "TEXT %s\n", strna(ev->text));
                break;
        case STREAM_EVENT_TOOL_USE:
                fprintf(r->f, "TOOL_USE %s %s\n", strna(ev->tool_name), strna(ev->tool_summary));
                break;
        case STREAM_EVENT_TOOL_RESULT:
                fprintf(r->f, "TOOL_RESULT err=%d %s\n", ev->is_error, strna(ev->text));
                break;
        case STREAM_EVENT_ACTIVITY:
                fprintf(r->f, "ACTIVITY %s %s\n", strna(ev->subtype), strna(ev->text));
                break;
        case STREAM_EVENT_SYSTEM_INIT:
                fprintf(r->f, "SYSTEM_INIT %s\n", strna(ev->session_id));
                break;
        case STREAM_EVENT_RESULT:
                fprintf(r->f, "RESULT err=%d %s sid=%s ms=%llu turns=%llu\n", ev->is_error, strna(ev->text),
                        strna(ev->session_id), (unsigned long long) ev->duration_ms,
                        (unsigned long long) ev->num_turns);
                break;
        default:
                fprintf(r->f, "UNKNOWN %d\n", ev->type);
        }
        free(r->last_text);
        free(r->last_summary);
        r->last_text = ev->text ? strdup(ev->text) : NULL;
        r->last_summary = ev->tool_summary ? strdup(ev->tool_summary) : NULL;
        if (r->stop_after && r->n >= r->stop_after)
                return -ECANCELED;
        return 0;
}

static void recorder_init(Recorder *r) {
        *r = (Recorder) { .raw_ok = true };
        r->f = open_memstream(&r->log, &r->size);
        if (!r->f)
                abort();
}

static const char *recorder_log(Recorder *r) {
        fflush(r->f);
        return r->log;
}

static void recorder_done(Recorder *r) {
        fclose(r->f);
        free(r->log);
        free(r->last_text);
        free(r->last_summary);
}

/* Parses data fed in chunks of the given size (0: at once); returns the log, the result via ret_*. */
typedef struct Parsed {
        char *log;
        AgentResult result;
        int feed_r, finish_r;
        unsigned n;
        char *last_text, *last_summary;
        bool raw_ok;
} Parsed;

static void parsed_done(Parsed *p) {
        free(p->log);
        free(p->last_text);
        free(p->last_summary);
        agent_result_done(&p->result);
}

static void parse_split(const char *data, size_t size, size_t split, size_t chunk, unsigned stop_after, Parsed *ret) {
        _cleanup_(stream_parser_freep) StreamParser *p = NULL;
        Recorder rec;
        const AgentResult *res;

        recorder_init(&rec);
        rec.stop_after = stop_after;
        if (stream_parser_new(record, &rec, &p) < 0)
                abort();

        *ret = (Parsed) {};
        if (chunk == 0) {
                ret->feed_r = stream_parser_feed(p, data, MIN(split, size));
                if (ret->feed_r >= 0 && split < size)
                        ret->feed_r = stream_parser_feed(p, data + split, size - split);
        } else
                for (size_t i = 0; i < size && ret->feed_r >= 0; i += chunk)
                        ret->feed_r = stream_parser_feed(p, data + i, MIN(chunk, size - i));
        ret->finish_r = stream_parser_finish(p);

        res = stream_parser_result(p);
        ret->result = (AgentResult) {
                .have_result = res->have_result,
                .result = res->result ? strdup(res->result) : NULL,
                .session_id = res->session_id ? strdup(res->session_id) : NULL,
                .is_error = res->is_error,
                .duration_ms = res->duration_ms,
                .num_turns = res->num_turns,
                .lines_skipped = res->lines_skipped,
        };
        ret->log = strdup(recorder_log(&rec));
        ret->n = rec.n;
        ret->last_text = TAKE_PTR(rec.last_text);
        ret->last_summary = TAKE_PTR(rec.last_summary);
        ret->raw_ok = rec.raw_ok;
        recorder_done(&rec);
}

static void parse(const char *data, Parsed *ret) {
        parse_split(data, strlen(data), SIZE_MAX, 0, 0, ret);
}

static const char golden_stream[] =
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-1\",\"tools\":[\"Bash\"]}\n"
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Looking.\"},"
                "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"ls /\"}}]},\"session_id\":\"s-1\"}\n"
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"bin\\netc\"}]}}\n"
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t2\",\"is_error\":true,"
                "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"b\"}]}]}}\n"
        "not json at all\n"
        "\n"
        "{\"type\":\"system\",\"subtype\":\"task_started\",\"task_id\":\"k\",\"description\":\"Explore\"}\n"
        "{\"type\":\"system\",\"subtype\":\"task_progress\",\"task_id\":\"k\",\"description\":\"Reading\"}\r\n"
        "{\"type\":\"system\",\"subtype\":\"status\",\"status\":\"compacting\"}\n"
        "{\"type\":\"system\",\"subtype\":\"hook_started\"}\n"
        "{\"type\":\"rate_limit_event\",\"session_id\":\"s-2\"}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"duration_ms\":1234,\"num_turns\":3,"
                "\"result\":\"Done: caf\xc3\xa9\",\"session_id\":\"s-3\"}\n";

static const char golden_log[] =
        "SYSTEM_INIT s-1\n"
        "TEXT Looking.\n"
        "TOOL_USE Bash {\"command\":\"ls /\"}\n"
        "TOOL_RESULT err=0 bin\netc\n"
        "TOOL_RESULT err=1 a\nb\n"
        "ACTIVITY task_started Explore\n"
        "ACTIVITY task_progress Reading\n"
        "ACTIVITY status compacting\n"
        "RESULT err=0 Done: caf\xc3\xa9 sid=s-3 ms=1234 turns=3\n";

static void test_golden(void) {
        Parsed p;

        parse(golden_stream, &p);
        is_str(p.log, golden_log, "a stream of every event type gives the documented events in order");
        ok(p.raw_ok, "every event carries its whole JSON object");
        ok(p.result.have_result, "the result event is collected");
        is_str(p.result.result, "Done: caf\xc3\xa9", "the result text is kept");
        is_str(p.result.session_id, "s-3", "the session id is the result's");
        ok(!p.result.is_error && p.result.duration_ms == 1234 && p.result.num_turns == 3,
           "is_error, duration_ms and num_turns are read");
        is_int(p.result.lines_skipped, 1, "the one non-JSON line is skipped and counted, the blank one ignored");
        ok(p.feed_r == 0 && p.finish_r == 0, "feed and finish succeed");
        parsed_done(&p);

        /* Every split point, and one byte at a time. */
        size_t n = strlen(golden_stream), bad = SIZE_MAX;
        for (size_t i = 0; i <= n && bad == SIZE_MAX; i++) {
                parse_split(golden_stream, n, i, 0, 0, &p);
                if (!streq(p.log, golden_log) || p.result.lines_skipped != 1 || !streq_ptr(p.result.session_id, "s-3"))
                        bad = i;
                parsed_done(&p);
        }
        ok(bad == SIZE_MAX, "splitting the stream at any of its %zu byte offsets gives the same events", n + 1);
        if (bad != SIZE_MAX)
                printf("#   first bad split: %zu\n", bad);

        parse_split(golden_stream, n, 0, 1, 0, &p);
        is_str(p.log, golden_log, "feeding one byte at a time gives the same events");
        parsed_done(&p);

        /* The last line without a newline is parsed by finish. */
        parse("{\"type\":\"result\",\"result\":\"tail\",\"session_id\":\"t\"}", &p);
        ok(p.result.have_result && streq_ptr(p.result.result, "tail"), "finish parses a last line without newline");
        parsed_done(&p);

        /* Without a callback the result is still collected. */
        {
                _cleanup_(stream_parser_freep) StreamParser *sp = NULL;
                ok(stream_parser_new(NULL, NULL, &sp) == 0 && stream_parser_feed(sp, golden_stream, n) == 0 &&
                   stream_parser_finish(sp) == 0 && stream_parser_result(sp)->have_result &&
                   streq_ptr(stream_parser_result(sp)->result, "Done: caf\xc3\xa9"),
                   "a parser without a callback still collects the result");
        }
}

static void test_results(void) {
        Parsed p;

        parse("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-init\"}\n"
              "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},\"session_id\":\"s-later\"}\n",
              &p);
        ok(!p.result.have_result && !p.result.result, "a stream without a result event has no result");
        is_str(p.result.session_id, "s-later", "without a result, the last session id seen is kept");
        parsed_done(&p);

        parse("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-9\"}\n"
              "{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true,\"result\":\"Prompt is too long\","
              "\"session_id\":\"s-9\",\"num_turns\":1}\n", &p);
        ok(p.result.have_result && p.result.is_error, "an is_error result is a result marked as error");
        is_str(p.result.session_id, "s-9", "an is_error result keeps the session id");
        is_str(p.result.result, "Prompt is too long", "an is_error result keeps its message");
        parsed_done(&p);

        parse("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-ok\"}\n"
              "{\"type\":\"result\",\"result\":42,\"session_id\":7,\"is_error\":\"yes\",\"duration_ms\":\"9\",\"num_turns\":-3}\n",
              &p);
        ok(p.result.have_result && !p.result.result && !p.result.is_error && p.result.duration_ms == 0 &&
           p.result.num_turns == 0, "result fields of the wrong type are treated as absent");
        is_str(p.result.session_id, "s-ok", "a session id of the wrong type does not replace the last good one");
        parsed_done(&p);

        parse("{\"type\":\"result\",\"result\":\"x\",\"session_id\":\"--inject\",\"duration_ms\":12.7,\"num_turns\":1e300}\n", &p);
        ok(!p.result.session_id, "a session id that looks like an option is ignored");
        ok(p.result.duration_ms == 12 && p.result.num_turns == 0, "numbers are read as non-negative integers, huge ones dropped");
        parsed_done(&p);

        parse("{\"type\":\"result\",\"result\":\"first\"}\n{\"type\":\"result\",\"result\":\"second\"}\n", &p);
        is_str(p.result.result, "second", "a later result event replaces an earlier one");
        parsed_done(&p);

        parse("{\"type\":\"assistant\",\"message\":{\"content\":\"just a string\"}}\n"
              "{\"type\":\"assistant\",\"message\":[1,2]}\n"
              "{\"type\":\"assistant\",\"message\":{\"content\":[1,\"x\",null,{\"type\":\"text\",\"text\":5},{\"type\":7},"
              "{\"type\":\"tool_use\",\"name\":3}]}}\n"
              "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":{\"a\":1},\"is_error\":1}]}}\n"
              "{\"type\":\"system\",\"subtype\":5}\n"
              "{\"type\":[\"assistant\"]}\n", &p);
        is_str(p.log, "TOOL_USE n/a n/a\nTOOL_RESULT err=0 n/a\n",
               "wrong types inside events are treated as absent without crashing");
        is_int(p.result.lines_skipped, 0, "valid JSON of unexpected shape is not counted as skipped");
        parsed_done(&p);
}

static bool utf8_valid(const char *s) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_string(s);
        json_tokener *tok = json_tokener_new();
        _cleanup_free_ char *quoted = NULL;
        bool r;

        /* Let json-c's validating tokener judge: wrap the text as a JSON string. */
        if (asprintf(&quoted, "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0)
                abort();
        json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
        json_object *back = json_tokener_parse_ex(tok, quoted, (int) strlen(quoted));
        r = back && json_tokener_get_error(tok) == json_tokener_success;
        json_object_put(back);
        json_tokener_free(tok);
        return r;
}

static char *repeat(const char *unit, size_t times) {
        size_t k = strlen(unit);
        char *s = malloc(k * times + 1);
        if (!s)
                abort();
        for (size_t i = 0; i < times; i++)
                memcpy(s + i * k, unit, k);
        s[k * times] = 0;
        return s;
}

static void test_caps(void) {
        _cleanup_free_ char *euros = repeat("\xe2\x82\xac", 4000), *line = NULL;
        Parsed p;

        /* {"x":"€€€..."}: the JSON text starts with 6 ASCII bytes, so byte 2000 falls inside a euro sign. */
        if (asprintf(&line, "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"name\":\"W\","
                            "\"input\":{\"x\":\"%s\"}}]}}\n", euros) < 0)
                abort();
        parse(line, &p);
        ok(p.last_summary && strlen(p.last_summary) <= STREAM_TOOL_SUMMARY_MAX &&
           strlen(p.last_summary) >= STREAM_TOOL_SUMMARY_MAX - 3, "a tool_use summary is capped at 2000 bytes");
        ok(p.last_summary && utf8_valid(p.last_summary) && strlen(p.last_summary) == 1998,
           "the summary is cut on a character boundary");
        ok(p.last_summary && startswith(p.last_summary, "{\"x\":\"\xe2\x82\xac"), "the summary is the input as JSON text");
        parsed_done(&p);

        free(line);
        if (asprintf(&line, "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"a%s\"}]}}\n",
                     euros) < 0)
                abort();
        parse(line, &p);
        ok(p.last_text && strlen(p.last_text) <= STREAM_TOOL_RESULT_MAX && strlen(p.last_text) > STREAM_TOOL_RESULT_MAX - 3 &&
           utf8_valid(p.last_text), "a string tool result is capped at 8 KiB on a character boundary");
        parsed_done(&p);

        free(line);
        if (asprintf(&line, "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":["
                            "{\"type\":\"text\",\"text\":\"%s\"},{\"type\":\"text\",\"text\":\"%s\"}]}]}}\n",
                     euros, euros) < 0)
                abort();
        parse(line, &p);
        ok(p.last_text && strlen(p.last_text) <= STREAM_TOOL_RESULT_MAX && strlen(p.last_text) > STREAM_TOOL_RESULT_MAX - 3 &&
           utf8_valid(p.last_text), "a tool result of text blocks is capped at 8 KiB on a character boundary");
        parsed_done(&p);
}

/* A valid assistant text line of exactly len bytes (without the newline). */
static char *text_line_of(size_t len) {
        static const char head[] = "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"";
        static const char tail[] = "\"}]}}";
        size_t pad = len - strlen(head) - strlen(tail);
        char *s = malloc(len + 2);

        if (!s)
                abort();
        memcpy(s, head, strlen(head));
        memset(s + strlen(head), 'a', pad);
        memcpy(s + strlen(head) + pad, tail, strlen(tail));
        s[len] = '\n';
        s[len + 1] = 0;
        return s;
}

static size_t heap_in_use(void) {
        struct mallinfo2 m = mallinfo2();
        return m.uordblks + m.hblkhd;
}

static void test_long_lines(void) {
        static const char before[] = "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"before\"}]}}\n";
        static const char after[] = "{\"type\":\"result\",\"result\":\"after\",\"session_id\":\"s-after\"}\n";
        size_t big = 2 * 1024 * 1024, n = strlen(before) + big + 1 + strlen(after);
        _cleanup_free_ char *data = malloc(n + 1);
        Parsed p;

        if (!data)
                abort();
        /* A huge line that would be valid JSON: the cap, not the parser, must refuse it. */
        _cleanup_free_ char *huge = text_line_of(big);
        memcpy(data, before, strlen(before));
        memcpy(data + strlen(before), huge, big + 1);
        memcpy(data + strlen(before) + big + 1, after, strlen(after) + 1);

        parse_split(data, n, SIZE_MAX, 0, 0, &p);
        is_str(p.log, "TEXT before\nRESULT err=0 after sid=s-after ms=0 turns=0\n",
               "a 2 MB line between two valid lines is skipped and both neighbours are parsed");
        is_int(p.result.lines_skipped, 1, "the 2 MB line is counted as skipped");
        parsed_done(&p);

        parse_split(data, n, SIZE_MAX, 4096, 0, &p);
        is_str(p.log, "TEXT before\nRESULT err=0 after sid=s-after ms=0 turns=0\n",
               "the same holds when the 2 MB line arrives in 4 KiB chunks");
        parsed_done(&p);

        /* Memory: while the 2 MB line streams in, the parser never holds much more than the 1 MB cap, and it
         * lets the buffer go once the line is known to be skipped. */
        {
                _cleanup_(stream_parser_freep) StreamParser *sp = NULL;
                size_t base, peak, end;

                if (stream_parser_new(NULL, NULL, &sp) < 0)
                        abort();
                malloc_trim(0);
                base = peak = heap_in_use();
                for (size_t i = 0; i < n; i += 4096) {
                        if (stream_parser_feed(sp, data + i, MIN((size_t) 4096, n - i)) < 0)
                                abort();
                        peak = MAX(peak, heap_in_use());
                }
                end = heap_in_use();
                ok(peak - base <= STREAM_LINE_MAX + 64 * 1024,
                   "feeding a 2 MB line holds at most the 1 MB cap plus a little (peak %zu KiB over the start)",
                   (peak - base) / 1024);
                ok(end <= base + 64 * 1024, "after the long line the parser holds no large buffer (%zu KiB over the start)",
                   end > base ? (end - base) / 1024 : 0);
                ok(stream_parser_result(sp)->lines_skipped == 1, "the memory-watched parse skipped the long line too");
        }

        /* Exactly at the cap is still a line; one byte more is not. */
        free(huge);
        huge = text_line_of(STREAM_LINE_MAX);
        parse_split(huge, STREAM_LINE_MAX + 1, SIZE_MAX, 65536, 0, &p);
        ok(p.n == 1 && p.result.lines_skipped == 0, "a line of exactly STREAM_LINE_MAX bytes is parsed");
        parsed_done(&p);
        free(huge);
        huge = text_line_of(STREAM_LINE_MAX + 1);
        parse_split(huge, STREAM_LINE_MAX + 2, SIZE_MAX, 65536, 0, &p);
        ok(p.n == 0 && p.result.lines_skipped == 1, "a line of STREAM_LINE_MAX + 1 bytes is skipped");
        parsed_done(&p);
        parse_split(huge, STREAM_LINE_MAX + 1, SIZE_MAX, 0, 0, &p);
        ok(p.n == 0 && p.result.lines_skipped == 1, "an over-long last line without newline is skipped at finish");
        parsed_done(&p);
}

static void test_user_drain(void) {
        size_t body = STREAM_USER_LINE_DRAIN + 1000;
        _cleanup_free_ char *filler = repeat("x", body), *data = NULL, *data2 = NULL, *small = NULL;
        static const char want[] = "TEXT one\nTEXT two\n";
        Parsed p;

        if (asprintf(&data, "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"one\"}]}}\n"
                            "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"%s\"}]}}\n"
                            "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"two\"}]}}\n",
                     filler) < 0)
                abort();
        parse(data, &p);
        is_str(p.log, want, "a user line over 256 KiB gives no tool result and its neighbours are parsed");
        is_int(p.result.lines_skipped, 1, "the drained user line is counted as skipped");
        parsed_done(&p);

        parse_split(data, strlen(data), SIZE_MAX, 1000, 0, &p);
        ok(streq_ptr(p.log, want) && p.result.lines_skipped == 1, "the same in 1000-byte chunks");
        parsed_done(&p);

        /* "type" not first: the line is parsed only to learn it is a user line, with the same outcome. */
        if (asprintf(&data2, "{\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"%s\"}]},\"type\":\"user\"}\n",
                     filler) < 0)
                abort();
        parse_split(data2, strlen(data2), SIZE_MAX, 777, 0, &p);
        ok(p.n == 0 && p.result.lines_skipped == 1, "a long user line with type last is skipped the same way");
        parsed_done(&p);

        filler[STREAM_USER_LINE_DRAIN / 2] = 0;
        if (asprintf(&small, "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"%s\"}]}}\n",
                     filler) < 0)
                abort();
        parse_split(small, strlen(small), SIZE_MAX, 4096, 0, &p);
        ok(p.n == 1 && p.last_text && strlen(p.last_text) == STREAM_TOOL_RESULT_MAX,
           "a user line under 256 KiB is parsed and its result capped");
        parsed_done(&p);
}

static void test_malformed(void) {
        static const char good[] = "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n";
        _cleanup_free_ char *deep = NULL, *nul_line = NULL;
        Parsed p;

        parse("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"cut\n"
              "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n", &p);
        ok(streq_ptr(p.log, "TEXT ok\n") && p.result.lines_skipped == 1, "a truncated JSON line is skipped");
        parsed_done(&p);

        parse("{\"type\":\"result\",\"result\":\"x\"} trailing\n[1,2]\n42\n\"s\"\n", &p);
        ok(!p.result.have_result && p.result.lines_skipped == 4, "trailing garbage and non-object JSON are skipped");
        parsed_done(&p);

        parse("{\"type\":\"result\",\"result\":\"x\"", &p);
        ok(!p.result.have_result && p.result.lines_skipped == 1, "a truncated last line is skipped at finish");
        parsed_done(&p);

        /* 100000 nested arrays: the tokener's depth cap refuses them without recursion. */
        deep = malloc(200002 + strlen(good) + 1);
        if (!deep)
                abort();
        memset(deep, '[', 100000);
        memset(deep + 100000, ']', 100000);
        deep[200000] = '\n';
        strcpy(deep + 200001, good);
        parse(deep, &p);
        ok(streq_ptr(p.log, "TEXT ok\n") && p.result.lines_skipped == 1, "deeply nested JSON is skipped");
        parsed_done(&p);

        /* A NUL inside a line: the bytes around it would be valid JSON. */
        size_t gl = strlen(good);
        nul_line = malloc(2 * gl + 1);
        if (!nul_line)
                abort();
        memcpy(nul_line, good, gl);
        nul_line[40] = 0;
        memcpy(nul_line + gl, good, gl);
        parse_split(nul_line, 2 * gl, SIZE_MAX, 0, 0, &p);
        ok(streq_ptr(p.log, "TEXT ok\n") && p.result.lines_skipped == 1, "a line with a NUL byte is skipped");
        parsed_done(&p);

        parse("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe\"}]}}\n"
              "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xc3\"}]}}\n"
              "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n", &p);
        ok(streq_ptr(p.log, "TEXT ok\n") && p.result.lines_skipped == 2, "lines with invalid UTF-8 are skipped");
        parsed_done(&p);

        parse("\r\n   \n\t\n", &p);
        ok(p.n == 0 && p.result.lines_skipped == 0, "blank lines are ignored without being counted");
        parsed_done(&p);

        /* Mutations of the golden stream in odd chunks: nothing may crash or grow without bound. */
        {
                size_t n = strlen(golden_stream);
                _cleanup_free_ char *m = malloc(n);
                uint32_t seed = 12345;
                bool fine = true;

                if (!m)
                        abort();
                for (unsigned round = 0; round < 3000; round++) {
                        memcpy(m, golden_stream, n);
                        for (unsigned k = 0; k < 1 + round % 8; k++) {
                                seed = seed * 1103515245 + 12345;
                                size_t at = (seed >> 8) % n;
                                seed = seed * 1103515245 + 12345;
                                m[at] = (char) (seed >> 16);
                        }
                        seed = seed * 1103515245 + 12345;
                        parse_split(m, n, SIZE_MAX, 1 + (seed >> 8) % 97, 0, &p);
                        if (p.feed_r < 0 || p.finish_r < 0)
                                fine = false;
                        parsed_done(&p);
                }
                ok(fine, "3000 randomly mutated streams in random chunks parse without error or crash");
        }
}

static void test_stop(void) {
        Parsed p;
        size_t n = strlen(golden_stream);

        parse_split(golden_stream, n, SIZE_MAX, 0, 2, &p);
        ok(p.feed_r == -ECANCELED && p.n == 2, "a negative callback return stops parsing and is returned by feed");
        ok(p.finish_r == -ECANCELED, "after a stop, finish returns the same error");
        ok(!p.result.have_result, "nothing after the stop is parsed");
        parsed_done(&p);

        parse_split(golden_stream, n, SIZE_MAX, 10, 2, &p);
        ok(p.feed_r == -ECANCELED && p.n == 2, "the stop holds across later feed calls");
        parsed_done(&p);
}

/* ---- errors and retries ---------------------------------------------------------------------------- */

static void test_classify(void) {
        static const struct {
                const char *message;
                AgentErrorKind kind;
        } table[] = {
                { "Prompt is too long", AGENT_ERROR_PROMPT_TOO_LONG },
                { "API Error: 400 {\"error\":{\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}",
                  AGENT_ERROR_PROMPT_TOO_LONG },
                { "PROMPT IS TOO LONG", AGENT_ERROR_PROMPT_TOO_LONG },
                { "Claude AI usage limit reached|1750000000", AGENT_ERROR_QUOTA },
                { "API Error: Rate limit exceeded", AGENT_ERROR_QUOTA },
                { "{\"type\":\"rate_limit_error\"}", AGENT_ERROR_QUOTA },
                { "You have exceeded your quota", AGENT_ERROR_QUOTA },
                { "API Error: 429 Too Many Requests", AGENT_ERROR_QUOTA },
                { "Invalid API key · Please run /login", AGENT_ERROR_AUTH },
                { "OAuth token has expired", AGENT_ERROR_AUTH },
                { "authentication_error: invalid x-api-key", AGENT_ERROR_AUTH },
                { "HTTP 401", AGENT_ERROR_AUTH },
                { "403 Forbidden", AGENT_ERROR_AUTH },
                { "Unauthorized", AGENT_ERROR_AUTH },
                { "Credit balance is too low", AGENT_ERROR_BILLING },
                { "Please update your billing details", AGENT_ERROR_BILLING },
                { "payment required", AGENT_ERROR_BILLING },
                { "API Error: 529 Overloaded", AGENT_ERROR_OTHER },
                { "tool failed in session a4019f-4290-4030", AGENT_ERROR_OTHER },
                { "wrote 14290 bytes", AGENT_ERROR_OTHER },
                { "segmentation fault", AGENT_ERROR_OTHER },
                { "", AGENT_ERROR_NONE },
                { NULL, AGENT_ERROR_NONE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                is_str(agent_error_kind_to_string(agent_error_classify(table[i].message)),
                       agent_error_kind_to_string(table[i].kind), "\"%s\" is classified as %s",
                       strna(table[i].message), agent_error_kind_to_string(table[i].kind));

        bool all = true;
        for (int k = 0; k < _AGENT_ERROR_KIND_MAX; k++)
                for (int j = 0; j < k; j++)
                        if (!agent_error_kind_to_string(k) ||
                            streq(agent_error_kind_to_string(k), agent_error_kind_to_string(j)))
                                all = false;
        ok(all, "every error kind has its own name");
        ok(!agent_error_kind_to_string(_AGENT_ERROR_KIND_MAX) && !agent_error_kind_to_string((AgentErrorKind) -1),
           "an out-of-range kind has no name");
}

static void test_retry(void) {
        static const struct {
                AgentErrorKind kind;
                const char *session;
                unsigned attempt;
                RetryAction action;
                const char *what;
        } table[] = {
                { AGENT_ERROR_PROMPT_TOO_LONG, "s", 0, RETRY_COMPACT, "prompt too long with a session compacts" },
                { AGENT_ERROR_PROMPT_TOO_LONG, "s", 1, RETRY_GIVE_UP, "prompt too long compacts only once" },
                { AGENT_ERROR_PROMPT_TOO_LONG, NULL, 0, RETRY_GIVE_UP, "prompt too long without a session gives up" },
                { AGENT_ERROR_OTHER, "s", 0, RETRY_RESUME_LAST, "another error with a session resumes once" },
                { AGENT_ERROR_OTHER, "s", 1, RETRY_GIVE_UP, "another error is not retried twice" },
                { AGENT_ERROR_OTHER, "", 0, RETRY_GIVE_UP, "an empty session id is no session" },
                { AGENT_ERROR_NO_RESULT, "s", 0, RETRY_RESUME_LAST, "a run without result resumes once" },
                { AGENT_ERROR_NO_RESULT, NULL, 0, RETRY_GIVE_UP, "a run without result and session gives up" },
                { AGENT_ERROR_QUOTA, "s", 0, RETRY_GIVE_UP, "a quota error is never retried" },
                { AGENT_ERROR_AUTH, "s", 0, RETRY_GIVE_UP, "an auth error is never retried" },
                { AGENT_ERROR_BILLING, "s", 0, RETRY_GIVE_UP, "a billing error is never retried" },
                { AGENT_ERROR_NONE, "s", 0, RETRY_GIVE_UP, "no error, no retry" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                is_int(retry_decide(table[i].kind, table[i].session, table[i].attempt), table[i].action, "%s",
                       table[i].what);
}

int main(void) {
        test_argv();
        test_mcp_config();
        test_golden();
        test_results();
        test_caps();
        test_long_lines();
        test_user_drain();
        test_malformed();
        test_stop();
        test_classify();
        test_retry();
        return done_testing();
}
