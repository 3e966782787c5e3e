/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* For test-journal.sh: emits every audit event once for channel argv[1], through the real audit_log() and
 * the real log target choice (run it as a service and it finds the journal on its stderr). The secret
 * comes from $AUDIT_EMIT_SECRET, not argv: journald records every logging process's _CMDLINE.
 *
 *   audit-emit CHANNEL [big]     big: one more run-tool-use event with a 100 KiB field */

#include <syslog.h>

#include "audit.h"
#include "log.h"

int main(int argc, char *argv[]) {
        const char *secret = getenv("AUDIT_EMIT_SECRET");
        _cleanup_free_ char *prompt = NULL, *token = NULL, *cname = NULL, *scope = NULL;
        int r;

        log_setup();
        if (argc < 2 || !secret) {
                log_error("Usage: AUDIT_EMIT_SECRET=... %s CHANNEL [big|hostile]", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        r = audit_add_secret(secret);
        if (r <= 0) {
                log_error_errno(r, "The secret was not registered (too short?): %m");
                return EXIT_FAILURE;
        }

        if (asprintf(&prompt, "LOOP_PROMPT=deploy with key %s please", secret) < 0 ||
            asprintf(&token, "LOOP_GITHUB_TOKEN=unregistered-but-named-%s", argv[1]) < 0 ||
            asprintf(&cname, "loop-%s-agent-1", argv[1]) < 0 ||
            asprintf(&scope, "loop-%s-agent-1.scope", argv[1]) < 0)
                return log_oom(), EXIT_FAILURE;

        char *extra[] = { prompt, token, (char *) "LOOP_DETAIL=line one\nline two", NULL };
        AuditFields f = {
                .channel = argv[1],
                .container = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
                .container_name = cname,
                .container_type = "agent",
                .scope = scope,
                .session = "7d0b4a4e-session",
                .message_id = "q-0001",
                .extra = extra,
        };

        for (AuditEvent e = 0; e < _AUDIT_EVENT_MAX; e++) {
                r = audit_log(e, e == AUDIT_RUN_FAILED || e == AUDIT_QUEUE_FAILED ? LOG_ERR : LOG_INFO, &f,
                              "Test event %s of %s, secret %s.", audit_event_to_string(e), argv[1], secret);
                if (r < 0)
                        return log_error_errno(r, "audit_log(%s) failed: %m", audit_event_to_string(e)), EXIT_FAILURE;
        }

        if (argc > 2 && streq(argv[2], "big")) {
                _cleanup_free_ char *big = malloc(strlen("LOOP_OUTPUT=") + 100 * 1024 + 1);
                if (!big)
                        return log_oom(), EXIT_FAILURE;
                strcpy(big, "LOOP_OUTPUT=");
                memset(big + strlen(big), 'o', 100 * 1024);
                big[strlen("LOOP_OUTPUT=") + 100 * 1024] = 0;
                char *big_extra[] = { big, NULL };
                f = (AuditFields) { .channel = argv[1], .extra = big_extra };
                r = audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, &f, "Big tool output.");
                if (r < 0)
                        return log_error_errno(r, "audit_log() failed: %m"), EXIT_FAILURE;
        }
        if (argc > 2 && streq(argv[2], "hostile")) {
                /* the agent's text as a run-turn carries it: clear screen, title, OSC 52, C1 CSI, RLO */
                f = (AuditFields) { .channel = argv[1] };
                r = audit_log(AUDIT_RUN_TURN, LOG_INFO, &f, "%s",
                              "hostile \033[2J\033]0;owned\007\033]52;c;Y3VybCBldmlsfHNo\007 \302\23331m \342\200\256end");
                if (r < 0)
                        return log_error_errno(r, "audit_log() failed: %m"), EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
