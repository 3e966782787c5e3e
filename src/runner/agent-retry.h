/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What to do when a run fails. */

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
