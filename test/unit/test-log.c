/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The log's context field and its memory of the last error: what lets the runner put the reason a run
 * could not start into the message's record and queue entry, under the channel's LOOP_CHANNEL=. */

#include "audit.h"
#include "log.h"
#include "tap.h"

int main(void) {
        log_set_target(LOG_TARGET_NULL);

        ok(log_last_error() == NULL, "no error remembered at the start");
        log_warning("only a warning");
        ok(log_last_error() == NULL, "a warning is not an error");
        log_error("The image %s is not on the engine.", "x:1");
        is_str(log_last_error(), "The image x:1 is not on the engine.", "the last error is remembered as logged");
        (void) log_error_errno(ENOENT, "Cannot open %s: %m", "/nonexistent");
        is_str(log_last_error(), "Cannot open /nonexistent: No such file or directory",
               "the newest error replaces it, %%m expanded");
        log_forget_last_error();
        ok(log_last_error() == NULL, "log_forget_last_error() forgets it");

        ok(audit_add_secret("sk-secret-value-0001") == 1, "a secret is registered");
        log_error("token sk-secret-value-0001 refused");
        is_str(log_last_error(), "token [REDACTED] refused", "the remembered error is the redacted one");
        audit_clear_secrets();

        /* An error is remembered whatever the log level lets through, since the caller reports it further up. */
        log_set_max_level(LOG_CRIT);
        log_forget_last_error();
        (void) log_internal(LOG_ERR, 0, __FILE__, __LINE__, __func__, "below the level");
        is_str(log_last_error(), "below the level", "log_internal() remembers an error it does not print");
        log_set_max_level(LOG_INFO);

        ok(log_set_context_field("LOOP_CHANNEL=demo") == 0, "a context field KEY=value is taken");
        ok(log_set_context_field("LOOP_CHANNEL") == -EINVAL, "a context field without '=' is refused");
        ok(log_set_context_field("LOOP_CHANNEL=a\nMESSAGE=forged") == -EINVAL,
           "a context field with a newline (a second field) is refused");
        ok(log_set_context_field(NULL) == 0, "NULL drops the context field");

        return done_testing();
}
