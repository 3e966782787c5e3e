/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-browser: the browser of one channel (loop-browser@NAME.service), started by
 * loop-browser@NAME.socket on /run/loop/NAME/browser.sock, which the runner bind-mounts into the
 * channel's agent containers at /run/loop/browser.sock. `loop mcp-browser` inside sends one tool call per
 * connection (browser-call.h); the logic is browser-host.h's: token, egress policy, CDP to the channel's
 * Chrome through the bridge's socket (RUNTIME/NAME/chrome/cdp.sock, which only this service's user can
 * open). The unit wants loop-chrome@NAME.service, so the first call starts Chrome; this helper exits
 * after LOOP_BROWSER_IDLE_SEC without calls (browser.idle_timeout_sec, default 5 minutes) and Chrome,
 * bound to it, stops with it.
 *
 * Settings (the generator's drop-in): LOOP_BROWSER_IDLE_SEC, LOOP_BROWSER_CDP_SOCKET (default above),
 * LOOP_BROWSER_CHROME_WAIT_SEC; the egress policy from the credential egress.json (the gateway's policy
 * without its secrets, written by the generator for this service). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "browser-call.h"
#include "browser-host.h"
#include "config.h"
#include "channel-defaults.h"
#include "egress-config.h"
#include "env-util.h"
#include "gate-token.h"
#include "io-util.h"
#include "log.h"
#include "socket-service.h"

#define BROWSER_IDLE_SEC_MAX 86400U
#define BROWSER_CHROME_WAIT_SEC_DEFAULT 60U
#define BROWSER_CHROME_WAIT_SEC_MAX 600U
#define BROWSER_CONNECTIONS_MAX 16U

static int answer_line(int fd, const char *text) {
        int r = loop_write(fd, text, strlen(text));
        return r < 0 ? r : loop_write(fd, "\n", 1);
}

/* One line within the head deadline: its length, or a negative errno (answered when there was a reason). */
static ssize_t read_request(SocketConnection *c, char *buf) {
        int fd = socket_connection_fd(c);
        size_t size = 0;

        if (socket_connection_head_begin(c) < 0)
                return -ESHUTDOWN;
        for (;;) {
                char *nl;
                ssize_t k = read(fd, buf + size, BROWSER_REQUEST_MAX + 1 - size);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -ECONNRESET;
                nl = memchr(buf + size, '\n', (size_t) k);
                size += (size_t) k;
                if (nl) {
                        size = (size_t) (nl - buf);
                        break;
                }
                if (size > BROWSER_REQUEST_MAX) {
                        _cleanup_free_ char *a = NULL;
                        if (browser_answer_format_refusal("the request is too large", &a) >= 0)
                                (void) answer_line(fd, a);
                        return -E2BIG;
                }
        }
        if (socket_connection_head_end(c) == -ETIMEDOUT)
                return -ETIMEDOUT;
        return (ssize_t) size;
}

static void serve(SocketConnection *c, void *userdata) {
        BrowserHost *h = userdata;
        _cleanup_free_ char *buf = NULL, *answer = NULL;
        ssize_t n;

        buf = malloc(BROWSER_REQUEST_MAX + 1);
        if (!buf)
                return;
        n = read_request(c, buf);
        if (n < 0)
                return;
        if (browser_host_handle(h, buf, (size_t) n, &answer) < 0)
                return (void) log_oom();
        (void) answer_line(socket_connection_fd(c), answer);
}

static int load_policy(const char *channel, EgressPolicy **ret) {
        _cleanup_(egress_config_done) EgressConfig cfg = {};
        int r;

        *ret = NULL;
        if (isempty(getenv("CREDENTIALS_DIRECTORY"))) {
                log_notice("No egress policy (credential egress.json) for channel %s: URLs are checked for their scheme "
                           "only; Chrome has no network but through the channel's gateway, if any.", channel);
                return 0;
        }
        r = egress_config_load(NULL, &cfg);
        if (r < 0)
                return r;
        if (cfg.error) {
                log_error("The egress policy of channel %s cannot be used (%s): the gateway refuses every request, "
                          "and so does Chrome's way out.", channel, cfg.error);
                return 0;
        }
        *ret = TAKE_PTR(cfg.policy);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(socket_service_freep) SocketService *service = NULL;
        _cleanup_(browser_host_freep) BrowserHost *host = NULL;
        _cleanup_free_ char *cdp_socket = NULL;
        const char *reason, *sock, *screenshots;
        EgressPolicy *policy = NULL;
        uint64_t idle_sec, wait_sec;
        char *channel = NULL;
        int r;

        log_setup();
        r = socket_service_parse_argv(argc, argv, "CHANNEL",
                                      "The browser of a channel, started by loop-browser@CHANNEL.socket.",
                                      NULL, 0, 1, &channel);
        if (r <= 0)
                return r;
        if (channel_name_check(channel, &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", channel, reason);
        if ((r = env_uint("LOOP_BROWSER_IDLE_SEC", CHANNEL_BROWSER_IDLE_SEC_DEFAULT, BROWSER_IDLE_SEC_MAX, &idle_sec)) < 0 ||
            (r = env_uint("LOOP_BROWSER_CHROME_WAIT_SEC", BROWSER_CHROME_WAIT_SEC_DEFAULT, BROWSER_CHROME_WAIT_SEC_MAX, &wait_sec)) < 0)
                return log_error_errno(r, "Invalid setting in the environment: %m");
        sock = getenv("LOOP_BROWSER_CDP_SOCKET");
        if (isempty(sock)) {
                if (asprintf(&cdp_socket, "%s/%s/chrome/cdp.sock", loop_runtime_dir(), channel) < 0)
                        return log_oom();
                sock = cdp_socket;
        }
        /* StateDirectory=loop/NAME/screenshots: the agents see it read-only */
        screenshots = getenv("STATE_DIRECTORY");
        r = load_policy(channel, &policy);
        if (r < 0)
                return log_error_errno(r, "Cannot read the egress policy: %m");

        r = browser_host_new(&(BrowserHostConfig) {
                        .channel = channel,
                        .cdp_socket = sock,
                        .screenshots_dir = isempty(screenshots) ? NULL : screenshots,
                        .screenshots_dir_in_container = isempty(screenshots) ? NULL : BROWSER_CONTAINER_SCREENSHOTS,
                        .policy = policy,
                        .chrome_wait_usec = wait_sec * 1000000ULL,
                }, &host);
        if (r < 0) {
                egress_policy_free(policy);
                return log_oom();
        }
        r = socket_service_new(&(SocketServiceConfig) {
                        .connections_max = BROWSER_CONNECTIONS_MAX,
                        .idle_usec = idle_sec * 1000000ULL,
                        .run = serve,
                        .userdata = host,
                }, &service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        r = socket_service_listen_systemd(service);
        if (r == -EBADF)
                return log_error_errno(r, "No sockets passed; loop-browser is started by loop-browser@NAME.socket.");
        if (r < 0)
                return log_error_errno(r, "The sockets from systemd are not listening AF_UNIX stream sockets: %m");
        (void) sd_notify(false, "READY=1\nSTATUS=Serving browser calls.");
        r = socket_service_run(service);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
