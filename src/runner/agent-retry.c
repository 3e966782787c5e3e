/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What a failed run means and whether to run again. Messages are matched case-insensitively; HTTP status
 * codes only as whole numbers, so a session id or a byte count that contains "401" is not an auth error.
 *
 * "Overloaded" (HTTP 529) is deliberately not a quota error: it says the service is busy, not that this
 * account may not use it, so it is retried once like any other transient failure. Retrying quota, auth and
 * billing errors would only fail again and burn the session. */

#include <assert.h>

#include "agent-retry.h"
#include "macro.h"

static const char *const agent_error_kind_table[_AGENT_ERROR_KIND_MAX] = {
        [AGENT_ERROR_NONE]            = "none",
        [AGENT_ERROR_PROMPT_TOO_LONG] = "prompt-too-long",
        [AGENT_ERROR_QUOTA]           = "quota",
        [AGENT_ERROR_AUTH]            = "auth",
        [AGENT_ERROR_BILLING]         = "billing",
        [AGENT_ERROR_NO_RESULT]       = "no-result",
        [AGENT_ERROR_OTHER]           = "other",
};

const char *agent_error_kind_to_string(AgentErrorKind k) {
        if ((unsigned) k >= _AGENT_ERROR_KIND_MAX)
                return NULL;
        return agent_error_kind_table[k];
}

static bool is_alnum(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A needle starting with a digit must stand alone: "HTTP 401" matches "401", "a4019f" does not. */
static bool contains(const char *haystack, const char *needle) {
        size_t n = strlen(needle);
        bool numeric = needle[0] >= '0' && needle[0] <= '9';

        for (const char *p = haystack; (p = strcasestr(p, needle)); p++) {
                if (!numeric)
                        return true;
                if ((p == haystack || !is_alnum(p[-1])) && !is_alnum(p[n]))
                        return true;
        }
        return false;
}

static const struct {
        AgentErrorKind kind;
        const char *needle;
} agent_error_patterns[] = {
        /* First match wins: the more specific kinds come first. */
        { AGENT_ERROR_PROMPT_TOO_LONG, "prompt is too long" },

        { AGENT_ERROR_AUTH, "invalid api key" },
        { AGENT_ERROR_AUTH, "invalid_api_key" },
        { AGENT_ERROR_AUTH, "invalid x-api-key" },
        { AGENT_ERROR_AUTH, "authentication" },
        { AGENT_ERROR_AUTH, "unauthorized" },
        { AGENT_ERROR_AUTH, "oauth token" },
        { AGENT_ERROR_AUTH, "please run /login" },
        { AGENT_ERROR_AUTH, "401" },
        { AGENT_ERROR_AUTH, "403" },

        { AGENT_ERROR_BILLING, "credit balance" },
        { AGENT_ERROR_BILLING, "billing" },
        { AGENT_ERROR_BILLING, "payment" },

        { AGENT_ERROR_QUOTA, "rate limit" },
        { AGENT_ERROR_QUOTA, "rate_limit" },
        { AGENT_ERROR_QUOTA, "usage limit" },
        { AGENT_ERROR_QUOTA, "too many requests" },
        { AGENT_ERROR_QUOTA, "quota" },
        { AGENT_ERROR_QUOTA, "429" },
};

AgentErrorKind agent_error_classify(const char *message) {
        if (isempty(message))
                return AGENT_ERROR_NONE;

        for (size_t i = 0; i < ELEMENTSOF(agent_error_patterns); i++)
                if (contains(message, agent_error_patterns[i].needle))
                        return agent_error_patterns[i].kind;
        return AGENT_ERROR_OTHER;
}

RetryAction retry_decide(AgentErrorKind kind, const char *session_id, unsigned attempt) {
        if (isempty(session_id) || attempt > 0)
                return RETRY_GIVE_UP;

        switch (kind) {
        case AGENT_ERROR_PROMPT_TOO_LONG:
                return RETRY_COMPACT;
        case AGENT_ERROR_NO_RESULT:
        case AGENT_ERROR_OTHER:
                return RETRY_RESUME_LAST;
        case AGENT_ERROR_NONE:          /* nothing failed */
        case AGENT_ERROR_QUOTA:
        case AGENT_ERROR_AUTH:
        case AGENT_ERROR_BILLING:
        default:
                return RETRY_GIVE_UP;
        }
}
