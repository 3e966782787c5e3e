/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "agent-env.h"
#include "log.h"
#include "macro.h"
#include "strv.h"

#define BASE64_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

static bool entry_is_valid(const char *e) {
        const char *eq = strchr(e, '=');
        return eq && eq != e;
}

int agent_env_encode(char * const *env, char **ret) {
        _cleanup_free_ char *raw = NULL, *b64 = NULL;
        size_t n = 0, k = 0;

        STRV_FOREACH(e, env) {
                if (!entry_is_valid(*e))
                        return -EINVAL;
                n += strlen(*e) + 1;
                if (n > AGENT_ENV_DECODED_MAX)
                        return -E2BIG;
        }
        raw = malloc(n ?: 1);
        b64 = malloc(4 * ((n + 2) / 3) + 1);
        if (!raw || !b64)
                return -ENOMEM;
        STRV_FOREACH(e, env) {
                size_t l = strlen(*e) + 1;
                memcpy(raw + k, *e, l);
                k += l;
        }
        (void) EVP_EncodeBlock((unsigned char *) b64, (const unsigned char *) raw, (int) n);
        *ret = TAKE_PTR(b64);
        return 0;
}

int agent_env_decode(const char *s, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *raw = NULL;
        size_t len = strlen(s), pad = 0, n;
        int k, r;

        /* EVP_DecodeBlock() skips white space around the input and counts padding as zero bytes: what it
         * would forgive is refused here, so one encoding means one list. */
        if (len % 4 != 0)
                return -EBADMSG;
        if (len / 4 * 3 > AGENT_ENV_DECODED_MAX + 2)
                return -E2BIG;
        while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
                pad++;
        if (strspn(s, BASE64_ALPHABET) != len - pad)
                return -EBADMSG;
        raw = malloc(len / 4 * 3 + 1);
        if (!raw)
                return -ENOMEM;
        k = EVP_DecodeBlock((unsigned char *) raw, (const unsigned char *) s, (int) len);
        if (k < 0 || (size_t) k < pad)
                return -EBADMSG;
        n = (size_t) k - pad;
        if (n > AGENT_ENV_DECODED_MAX)
                return -E2BIG;
        /* Every entry ends in a NUL: a list that does not is cut short. */
        if (n > 0 && raw[n - 1] != '\0')
                return -EBADMSG;
        for (size_t i = 0; i < n; i += strlen(raw + i) + 1) {
                if (!entry_is_valid(raw + i))
                        return -EBADMSG;
                r = strv_extend(&l, raw + i);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int agent_env_take(char ***ret) {
        _cleanup_free_ char *v = NULL;
        const char *e = getenv(AGENT_ENV_VARIABLE);
        int r;

        if (!e) {
                *ret = NULL;
                return 0;
        }
        v = strdup(e);
        if (!v)
                return log_oom();
        if (unsetenv(AGENT_ENV_VARIABLE) < 0)
                return log_error_errno(errno, "Cannot take $" AGENT_ENV_VARIABLE " out of the environment: %m");
        r = agent_env_decode(v, ret);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "$" AGENT_ENV_VARIABLE " is not an encoded environment of loop's, "
                                       "not running the agent with part of its environment: %m");
        return 0;
}

int agent_env_apply(char * const *env) {
        STRV_FOREACH(e, env) {
                _cleanup_free_ char *name = strndup(*e, strcspn(*e, "="));

                if (!name)
                        return log_oom();
                if (setenv(name, *e + strlen(name) + 1, 1) < 0)
                        return log_error_errno(errno, "Cannot set %s for the agent: %m", name);
        }
        return 0;
}

const char *agent_env_get(char * const *env, const char *name) {
        size_t l = strlen(name);
        const char *found = NULL;

        STRV_FOREACH(e, env)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=')
                        found = *e + l + 1;     /* the last one, as agent_env_apply() leaves it */
        return found;
}
