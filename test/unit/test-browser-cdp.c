/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The CDP client against a peer played by the test over a socketpair: the test writes Chrome's answer
 * before the call (ids are predictable: 1, 2, ...), then reads what the client sent. */

#include <signal.h>
#include <sys/socket.h>

#include "cdp.h"
#include "io-util.h"
#include "json-util.h"
#include "tap.h"

#define SEC 1000000ULL

typedef struct Seen {
        unsigned n;
        char method[64], session[64];
        int value;
} Seen;

static void on_event(const char *session_id, const char *method, json_object *params, void *userdata) {
        Seen *s = userdata;
        json_object *v;

        s->n++;
        snprintf(s->method, sizeof(s->method), "%s", method);
        snprintf(s->session, sizeof(s->session), "%s", session_id ?: "(browser)");
        s->value = json_object_object_get_ex(params, "v", &v) ? json_object_get_int(v) : -1;
}

static bool seen_load(void *userdata) {
        Seen *s = userdata;

        return s->n > 0 && streq(s->method, "Page.loadEventFired");
}

static void peer_says(int fd, const char *text) {
        (void) loop_write(fd, text, strlen(text) + 1);      /* with its NUL */
}

/* What the client sent, one message. */
static json_object *peer_reads(int fd) {
        char buf[4096];
        ssize_t k = read(fd, buf, sizeof(buf) - 1);

        if (k <= 0)
                return NULL;
        buf[k] = 0;
        if (buf[k - 1] != 0 && strlen(buf) == (size_t) k)
                return NULL;    /* not NUL-ended */
        return json_tokener_parse(buf);
}

int main(void) {
        _cleanup_(cdp_freep) Cdp *c = NULL;
        _cleanup_close_ int a = -EBADF, b = -EBADF;
        json_object *result = NULL, *sent, *v;
        char *error = NULL;
        Seen seen = {};
        int sv[2], r;

        signal(SIGPIPE, SIG_IGN);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 1;
        a = sv[0];
        b = sv[1];
        ok(cdp_new(a, a, &c) == 0, "a client is made over one socket fd");
        cdp_set_event_handler(c, on_event, &seen);

        /* a result */
        peer_says(b, "{\"id\":1,\"result\":{\"product\":\"HeadlessChrome/1\"}}");
        r = cdp_call(c, NULL, "Browser.getVersion", NULL, 5 * SEC, &result, &error);
        ok(r == 0 && result && json_object_object_get_ex(result, "product", &v) &&
           streq(json_object_get_string(v), "HeadlessChrome/1"), "an answer's result is handed to the caller");
        json_object_put(TAKE_PTR(result));
        sent = peer_reads(b);
        ok(sent && json_object_object_get_ex(sent, "id", &v) && json_object_get_int(v) == 1 &&
           json_object_object_get_ex(sent, "method", &v) && streq(json_object_get_string(v), "Browser.getVersion") &&
           json_object_object_get_ex(sent, "params", &v) && json_object_is_type(v, json_type_object) &&
           !json_object_object_get_ex(sent, "sessionId", NULL),
           "the call is sent as one NUL-ended JSON object with id, method and empty params");
        json_object_put(sent);

        /* session id sent, an error answered, and an event before the answer */
        peer_says(b, "{\"method\":\"Page.loadEventFired\",\"params\":{\"v\":7},\"sessionId\":\"S1\"}");
        peer_says(b, "{\"id\":2,\"error\":{\"code\":-32000,\"message\":\"Cannot navigate to invalid URL\"}}");
        r = cdp_call(c, "S1", "Page.navigate", NULL, 5 * SEC, &result, &error);
        ok(r == -EPROTO && error && streq(error, "Cannot navigate to invalid URL"), "an error answer is -EPROTO with CDP's message");
        free(TAKE_PTR(error));
        ok(seen.n == 1 && streq(seen.method, "Page.loadEventFired") && streq(seen.session, "S1") && seen.value == 7,
           "an event arriving while a call waits goes to the handler with its session and params");
        sent = peer_reads(b);
        ok(sent && json_object_object_get_ex(sent, "sessionId", &v) && streq(json_object_get_string(v), "S1"),
           "the session id is sent with the call");
        json_object_put(sent);

        /* a stale answer (id of a call that timed out) and garbage are skipped, the right answer taken */
        peer_says(b, "{\"id\":1,\"result\":{\"stale\":true}}");
        peer_says(b, "not json");
        peer_says(b, "[1,2,3]");
        peer_says(b, "{\"id\":\"3\",\"result\":{}}");
        peer_says(b, "{\"method\":42}");
        peer_says(b, "{\"id\":3,\"result\":{\"ok\":true}}");
        r = cdp_call(c, NULL, "Target.getTargets", NULL, 5 * SEC, &result, NULL);
        ok(r == 0 && json_object_object_get_ex(result, "ok", NULL), "stale answers and malformed messages are skipped");
        ok(cdp_messages_dropped(c) == 4, "each malformed message is counted as dropped");
        json_object_put(TAKE_PTR(result));
        json_object_put(peer_reads(b));

        /* no answer: a timeout, and the client stays usable */
        r = cdp_call(c, NULL, "Browser.getVersion", NULL, SEC / 5, &result, NULL);
        ok(r == -ETIMEDOUT && !result, "no answer in time is -ETIMEDOUT");
        json_object_put(peer_reads(b));
        peer_says(b, "{\"id\":5,\"result\":{}}");
        ok(cdp_call(c, NULL, "Browser.getVersion", NULL, 5 * SEC, NULL, NULL) == 0, "the next call after a timeout works");
        json_object_put(peer_reads(b));

        /* deep nesting is refused, not parsed */
        {
                char deep[4 * CDP_JSON_DEPTH_MAX + 64];
                size_t n = 0;
                uint64_t before = cdp_messages_dropped(c);

                n += (size_t) sprintf(deep, "{\"method\":\"X.y\",\"params\":{\"v\":");
                for (int i = 0; i < 2 * CDP_JSON_DEPTH_MAX; i++)
                        deep[n++] = '[';
                for (int i = 0; i < 2 * CDP_JSON_DEPTH_MAX; i++)
                        deep[n++] = ']';
                n += (size_t) sprintf(deep + n, "}}");
                seen.n = 0;
                ok(cdp_feed(c, deep, n + 1) == 0 && seen.n == 0 && cdp_messages_dropped(c) == before + 1,
                   "JSON nested deeper than CDP_JSON_DEPTH_MAX is dropped");
        }

        /* events by cdp_pump(), bad names refused */
        peer_says(b, "{\"method\":\"Runtime.consoleAPICalled\",\"params\":{\"v\":3}}");
        peer_says(b, "{\"method\":\"Bad name\",\"params\":{}}");
        peer_says(b, "{\"method\":\"X.y\",\"sessionId\":\"\\\"quoted\\\"\"}");
        seen.n = 0;
        ok(cdp_pump(c, SEC / 10) == 0 && seen.n == 1 && streq(seen.method, "Runtime.consoleAPICalled") &&
           streq(seen.session, "(browser)"), "cdp_pump() dispatches events; bad method and session names are dropped");
        ok(cdp_call(c, NULL, "bad method", NULL, SEC, NULL, NULL) == -EINVAL, "a method name with a blank is refused");

        /* cdp_pump_until(): the peer stays connected and silent after the awaited event, so a wait that
         * did not end on it would sit out its hour (and the test's own timeout) */
        seen.n = 0;
        peer_says(b, "{\"method\":\"Network.dataReceived\",\"params\":{}}");
        peer_says(b, "{\"method\":\"Page.loadEventFired\",\"params\":{\"v\":9},\"sessionId\":\"S1\"}");
        r = cdp_pump_until(c, seen_load, &seen, 3600 * SEC);
        ok(r == 1 && seen.n == 2 && seen.value == 9, "cdp_pump_until() returns 1 on the event that meets its predicate");
        ok(cdp_pump_until(c, seen_load, &seen, 3600 * SEC) == 1, "cdp_pump_until() returns 1 without reading when the predicate already holds");
        seen.n = 0;
        peer_says(b, "{\"method\":\"Runtime.consoleAPICalled\",\"params\":{\"v\":4}}");
        ok(cdp_pump_until(c, seen_load, &seen, SEC / 10) == 0 && seen.n == 1 && seen.value == 4,
           "cdp_pump_until() dispatches other events and returns 0 when the time runs out first");

        /* an oversized message fails the call waiting for it with -EMSGSIZE, and the stream resyncs */
        {
                _cleanup_free_ char *big = malloc(CDP_MESSAGE_MAX + 2);
                uint64_t before = cdp_messages_dropped(c);

                memset(big, ' ', CDP_MESSAGE_MAX + 1);
                big[CDP_MESSAGE_MAX + 1] = 0;
                seen.n = 0;
                ok(big && cdp_feed(c, big, CDP_MESSAGE_MAX + 2) == 0 && cdp_messages_dropped(c) == before + 1,
                   "a message above CDP_MESSAGE_MAX is dropped");
                ok(cdp_feed(c, "{\"method\":\"A.b\"}", sizeof("{\"method\":\"A.b\"}")) == 0 && seen.n == 1, "the message after an oversized one is read");
        }

        /* the peer goes away */
        b = safe_close(b);
        r = cdp_call(c, NULL, "Browser.getVersion", NULL, 5 * SEC, NULL, NULL);
        ok(r == -ECONNRESET || r == -EPIPE, "a call to a Chrome that went away fails with -ECONNRESET/-EPIPE");
        ok(cdp_is_closed(c) && cdp_call(c, NULL, "Browser.getVersion", NULL, SEC, NULL, NULL) < 0,
           "every later call fails too");

        return done_testing();
}
