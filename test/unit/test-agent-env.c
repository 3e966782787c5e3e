/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* LOOP_AGENT_ENV (agent-env.h): the configured envs in one variable of loop's, decoded only right before
 * the agent's execve. What decodes is exactly what was encoded; anything else is refused as a whole. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-env.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static int decode(const char *s) {
        _cleanup_strv_free_ char **l = NULL;
        return agent_env_decode(s, &l);
}

int main(void) {
        char *env[] = {
                (char *) "FOO=bar", (char *) "EMPTY=", (char *) "MULTI=a\nb c", (char *) "EQ=x=y",
                (char *) "LANG=C.UTF-8", (char *) "FOO=later", NULL,
        };
        char *no_name[] = { (char *) "=x", NULL };
        char *no_eq[] = { (char *) "FOO", NULL };
        _cleanup_strv_free_ char **back = NULL, **none = NULL, **big = NULL;
        _cleanup_free_ char *enc = NULL, *enc_empty = NULL, *huge = NULL, *bad = NULL;

        is_int(agent_env_encode(env, &enc), 0, "a list encodes");
        ok(enc && strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == strlen(enc),
           "as base64 alone: no shell or tool reads a name or a newline in it");
        is_int(agent_env_decode(enc, &back), 0, "it decodes");
        ok(strv_length(back) == 6 && streq(back[0], "FOO=bar") && streq(back[1], "EMPTY=") &&
           streq(back[2], "MULTI=a\nb c") && streq(back[3], "EQ=x=y") && streq(back[5], "FOO=later"),
           "into the same entries in order (empty values, newlines and = in values kept)");
        is_str(agent_env_get(back, "FOO"), "later", "the last entry of a name is the one that applies");
        ok(!agent_env_get(back, "FO") && !agent_env_get(back, "LANG=C"), "a lookup matches whole names only");

        is_int(agent_env_encode(NULL, &enc_empty), 0, "an empty list encodes");
        is_int(agent_env_decode(enc_empty, &none), 0, "and decodes");
        ok(!none, "to nothing");

        is_int(agent_env_encode(no_name, &bad), -EINVAL, "an entry without a name does not encode");
        is_int(agent_env_encode(no_eq, &bad), -EINVAL, "an entry without = does not encode");

        /* Malformed: the run stops rather than start the agent with half its environment. */
        is_int(decode("Rk9PPWJhcgA"), -EBADMSG, "a length that is not a multiple of 4 is refused");
        is_int(decode("Rk9PPWJhcgA=\n"), -EBADMSG, "white space around it is refused");
        is_int(decode("Rk9P PWJhcgA="), -EBADMSG, "white space inside it is refused");
        is_int(decode("Rk9PPWJh*gA="), -EBADMSG, "a byte outside base64 is refused");
        is_int(decode("Rk9PPWJhcg=="), -EBADMSG, "a last entry without its NUL (cut short) is refused");
        is_int(decode("Rk9PAA=="), -EBADMSG, "an entry without = is refused");       /* "FOO\0" */
        is_int(decode("PXgA"), -EBADMSG, "an entry without a name is refused");       /* "=x\0" */
        is_int(decode("AEZPTz0A"), -EBADMSG, "an empty entry is refused");            /* "\0FOO=\0" */
        is_int(decode("Rk9PPWJhcgA=Rk9P"), -EBADMSG, "padding in the middle is refused");
        is_int(decode("Rk9PPWJhcgA="), 0, "the well-formed one beside them decodes");

        /* The cap: one environment string must stay under the kernel's MAX_ARG_STRLEN. */
        huge = malloc(AGENT_ENV_DECODED_MAX + 8);
        if (!huge)
                abort();
        memset(huge, 'x', AGENT_ENV_DECODED_MAX + 7);
        memcpy(huge, "BIG=", 4);
        huge[AGENT_ENV_DECODED_MAX + 7] = '\0';
        if (strv_extend(&big, huge) < 0)
                abort();
        is_int(agent_env_encode(big, &bad), -E2BIG, "a list over AGENT_ENV_DECODED_MAX does not encode");
        huge[AGENT_ENV_DECODED_MAX - 2] = '\0';
        free(big[0]);
        big[0] = strdup(huge);
        is_int(agent_env_encode(big, &bad), 0, "one just under it does");
        ok(bad && strlen(AGENT_ENV_VARIABLE "=") + strlen(bad) < 128 * 1024, "and stays under MAX_ARG_STRLEN");
        return done_testing();
}
