/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The host side of the browser without a Chrome: the wire between `loop mcp-browser` and loop-browser@
 * (browser-call.h: requests parsed strictly, answers read back, a service that is missing, refuses or
 * goes away mid-call), the URL check against a channel's egress policy, and browser_host_handle()'s
 * refusals (token, unknown tool, a Chrome that never comes). */

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "browser-call.h"
#include "browser-host.h"
#include "egress-policy.h"
#include "gate-token.h"
#include "io-util.h"
#include "json-util.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-browser-host.XXXXXX";

static void test_request_parse(void) {
        BrowserRequest r = {};
        const char *reason = NULL;
        const char *good = "{\"token\":\"t\",\"tool\":\"navigate\",\"args\":{\"url\":\"https://a.test/\"}}";
        const char *no_args = "{\"token\":\"t\",\"tool\":\"list_tabs\"}";
        _cleanup_free_ char *deep = NULL;

        ok(browser_request_parse(good, strlen(good), &r, &reason) == 0 && streq(r.tool, "navigate") &&
           streq(r.token, "t") && json_object_is_type(r.args, json_type_object), "a request is parsed");
        browser_request_done(&r);
        ok(browser_request_parse(no_args, strlen(no_args), &r, &reason) == 0 &&
           json_object_object_length(r.args) == 0, "without args the arguments are an empty object");
        browser_request_done(&r);
        ok(browser_request_parse("{\"tool\":\"x\"}", 12, &r, &reason) == -EINVAL && reason, "a request without a token is refused");
        ok(browser_request_parse("{\"token\":\"t\",\"tool\":\"x\",\"args\":[1]}", 34, &r, &reason) == -EINVAL,
           "arguments that are not an object are refused");
        ok(browser_request_parse("{\"token\":\"t\",\"tool\":\"x\"} {}", 27, &r, &reason) == -EINVAL,
           "trailing bytes after the request are refused");
        ok(browser_request_parse("[]", 2, &r, &reason) == -EINVAL, "a request that is not an object is refused");
        deep = malloc(200);
        assert(deep);
        memset(deep, '[', 199);
        deep[199] = 0;
        ok(browser_request_parse(deep, 199, &r, &reason) == -EINVAL, "nesting deeper than the cap is refused");
        ok(browser_request_parse(good, BROWSER_REQUEST_MAX + 1, &r, &reason) == -E2BIG, "a request above the cap is refused");
}

/* A one-shot server on a unix socket: reads one line, answers what it is given (NULL: closes). */
typedef struct OneShot {
        int fd;
        const char *answer;
        char got[512];
} OneShot;

static void *one_shot(void *p) {
        OneShot *s = p;
        int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        ssize_t n;

        if (c < 0)
                return NULL;
        n = read(c, s->got, sizeof s->got - 1);
        s->got[n > 0 ? n : 0] = 0;
        if (s->answer)
                (void) loop_write(c, s->answer, strlen(s->answer));
        close(c);
        return NULL;
}

static int listen_at(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        strcpy(sa.sun_path, path);
        (void) unlink(path);
        assert(fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(fd, 1) == 0);
        return fd;
}

static void call_against(const char *answer, McpToolResult *r, char *got, size_t got_size) {
        _cleanup_free_ char *path = NULL;
        OneShot s = { .answer = answer };
        pthread_t t;

        assert(asprintf(&path, "%s/browser.sock", tmpdir) >= 0);
        s.fd = listen_at(path);
        assert(pthread_create(&t, NULL, one_shot, &s) == 0);
        *r = (McpToolResult) {};
        assert(browser_call(path, "tok", "navigate", NULL, r) == 0);
        pthread_join(t, NULL);
        close(s.fd);
        if (got)
                snprintf(got, got_size, "%s", s.got);
}

static void test_call(void) {
        McpToolResult r = {};
        char got[512];

        call_against("{\"ok\":true,\"text\":\"Navigated\",\"isError\":false}\n", &r, got, sizeof got);
        ok(!r.is_error && streq_ptr(r.text, "Navigated"), "the service's answer is the tool's result");
        ok(strstr(got, "\"token\":\"tok\"") && strstr(got, "\"tool\":\"navigate\"") && strstr(got, "\"args\":{}"),
           "the request carries the token, the tool and the arguments");
        free(r.text);
        call_against("{\"ok\":true,\"text\":\"no such element\",\"isError\":true}\n", &r, NULL, 0);
        ok(r.is_error && streq_ptr(r.text, "no such element"), "a tool's error stays an isError result");
        free(r.text);
        call_against("{\"ok\":true,\"text\":\"Screenshot\",\"isError\":false,\"image\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"}\n",
                     &r, NULL, 0);
        ok(!r.is_error && streq_ptr(r.image, "iVBORw0KGgo=") && streq_ptr(r.image_mime_type, "image/png"),
           "a screenshot's image reaches the result");
        mcp_result_done(&r);
        call_against("{\"ok\":true,\"text\":\"Screenshot\",\"isError\":false,\"image\":\"PHN2Zz4=\",\"mimeType\":\"image/svg+xml\"}\n",
                     &r, NULL, 0);
        ok(r.is_error && !r.image && strstr(r.text, "image that cannot be used"), "an image other than PNG is refused");
        mcp_result_done(&r);
        {
                McpToolResult a = { .text = (char *) "Screenshot", .image = (char *) "iVBORw0KGgo=", .image_mime_type = "image/png" };
                _cleanup_free_ char *line = NULL;

                ok(browser_answer_format(&a, &line) == 0 && strstr(line, "\"image\":\"iVBORw0KGgo=\"") &&
                   strstr(line, "\"mimeType\":\"image/png\""), "the service's answer carries the image and its type");
        }
        call_against("{\"ok\":false,\"error\":\"no valid token\"}\n", &r, NULL, 0);
        ok(r.is_error && strstr(r.text, "Refused by the browser service: no valid token"), "a refusal says who refused and why");
        free(r.text);
        call_against(NULL, &r, NULL, 0);
        ok(r.is_error && strstr(r.text, "ended the call without an answer"),
           "a service that goes away mid-call is a clean isError result");
        free(r.text);
        call_against("garbage\n", &r, NULL, 0);
        ok(r.is_error && strstr(r.text, "cannot be read"), "an answer that is not JSON is an isError result");
        free(r.text);
        r = (McpToolResult) {};
        assert(browser_call("/nonexistent/browser.sock", "tok", "navigate", NULL, &r) == 0);
        ok(r.is_error && strstr(r.text, "not available"), "no service: the browser is not available");
        free(r.text);
}

static void test_url_check(void) {
        _cleanup_(json_object_putp) json_object *o = json_tokener_parse(
                "{ \"rules\": [ { \"host\": \"allowed.test\", \"decision\": \"allow\", \"schemes\": [\"https\", \"http\"] } ] }");
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;
        char *reason = NULL;

        ok(o && egress_policy_compile(o, NULL, &p, NULL) >= 0, "a policy compiles");
        ok(browser_host_url_check(p, "https://allowed.test/page", &reason) == 0, "an allowed https origin passes");
        ok(browser_host_url_check(p, "http://ALLOWED.test/x", &reason) == 0, "...in any case, over http too");
        ok(browser_host_url_check(p, "https://denied.test/", &reason) == -EPERM && reason && strstr(reason, "rule default"),
           "an origin no rule allows is refused, naming the rule");
        reason = mfree(reason);
        ok(browser_host_url_check(p, "https://allowed.test:8443/", &reason) == -EPERM,
           "another port than the rule's is refused");
        reason = mfree(reason);
        ok(browser_host_url_check(p, "https://127.0.0.1/", &reason) == -EPERM, "loopback is refused by the default rule");
        reason = mfree(reason);
        ok(browser_host_url_check(p, "file:///etc/passwd", &reason) == -EPERM && strstr(reason, "file:"),
           "file: is refused whatever the policy");
        reason = mfree(reason);
        ok(browser_host_url_check(NULL, "chrome://settings", &reason) == -EPERM, "chrome: is refused without a policy too");
        reason = mfree(reason);
        ok(browser_host_url_check(NULL, "https://anything.test/", &reason) == 0, "without a policy http(s) passes (the gateway decides)");
        ok(browser_host_url_check(p, "not a url", &reason) < 0, "what is not a URL is refused");
        reason = mfree(reason);
        /* other spellings of a denied host, and of the allowed one in front of it */
        static const char * const denied[] = {
                "https://allowed.test@denied.test/",            /* userinfo: the host is the part after @ */
                "https://allowed.test:443@denied.test/",
                "https://denied.test#@allowed.test/",
                "https://denied.test?@allowed.test/",
                "https://allowed.test.denied.test/",
                "https://denied.test./",                        /* trailing dot */
                "https://DENIED.TEST/",
                "https://2130706433/",                          /* 127.0.0.1 as a decimal number */
                "https://0x7f.1/",
                "https://[::1]/",
                "https://[::ffff:127.0.0.1]/",
                "https://xn--llowed-6ya.test/",                 /* IDN look-alike */
        };
        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                int r = browser_host_url_check(p, denied[i], &reason);
                ok(r < 0, "%s is refused (%s)", denied[i], strna(reason));
                reason = mfree(reason);
        }
        /* the host percent-decoded, as Chrome's URL parser decodes it too: the same host either way */
        ok(browser_host_url_check(p, "https://%61llowed.test/", &reason) == 0, "a percent-encoded allowed host is that host");
        reason = mfree(reason);
        ok(browser_host_url_check(p, "https://%64enied.test/", &reason) < 0, "a percent-encoded denied host is refused");
        free(reason);
}

static void test_handle(void) {
        _cleanup_(browser_host_freep) BrowserHost *h = NULL;
        _cleanup_free_ char *cdp = NULL, *answer = NULL;
        char token[GATE_TOKEN_HEX_LEN + 1], line[512];

        assert(setenv("LOOP_RUNTIME_DIR", tmpdir, 1) == 0);
        assert(asprintf(&cdp, "%s/chrome/cdp.sock", tmpdir) >= 0);
        ok(gate_token_generate(token) == 0 && loop_token_write("web", BROWSER_TOKENS_DIRNAME, "ctr1", token) == 0,
           "a container token is recorded");
        ok(browser_host_new(&(BrowserHostConfig) { .channel = "web", .cdp_socket = cdp, .chrome_wait_usec = 300000 }, &h) == 0,
           "a host side is made");

        snprintf(line, sizeof line, "{\"token\":\"%064d\",\"tool\":\"list_tabs\"}", 0);
        ok(browser_host_handle(h, line, strlen(line), &answer) == 0 && strstr(answer, "\"ok\":false") &&
           strstr(answer, "no valid token"), "a wrong token is refused");
        answer = mfree(answer);
        snprintf(line, sizeof line, "{\"token\":\"%s\",\"tool\":\"format_disk\"}", token);
        ok(browser_host_handle(h, line, strlen(line), &answer) == 0 && strstr(answer, "unknown tool"),
           "an unknown tool is refused");
        answer = mfree(answer);
        snprintf(line, sizeof line, "{\"token\":\"%s\",\"tool\":\"list_tabs\"}", token);
        ok(browser_host_handle(h, line, strlen(line), &answer) == 0 && strstr(answer, "\"isError\":true") &&
           strstr(answer, "Chrome of channel web does not answer"), "no Chrome: a clear isError result, after waiting");
        answer = mfree(answer);
        ok(browser_host_handle(h, "{", 1, &answer) == 0 && strstr(answer, "\"ok\":false"), "a broken request is refused");
}

int main(void) {
        assert(mkdtemp(tmpdir));
        test_request_parse();
        test_call();
        test_url_check();
        test_handle();
        {
                char cmd[128];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
                (void) system(cmd);
        }
        return done_testing();
}
