/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The agent's command line. Claude Code parses its arguments with commander, which matters twice:
 *
 *  - "--add-dir" (and "--mcp-config") are variadic: they swallow every following argument that does not
 *    start with "-", so a prompt right after "--add-dir D" would become a second directory. A prompt that
 *    starts with "-" would be taken for an option. A literal "--" before the prompt ends option parsing and
 *    any variadic option, so the prompt is always the last argument, after "--".
 *  - commander dispatches a subcommand when the first operand equals its name, even after "--": the prompt
 *    "update" would run `claude update`. A prompt that is a single bare word gets a trailing newline, which
 *    no subcommand name has and which the model does not care about.
 *
 * "--resume" takes an optional value, which commander does not take when it starts with "-", so such a
 * session id is refused rather than passed. Options with a required value (--model, --add-dir,
 * --append-system-prompt) take the next argument whatever it looks like. */

#include <assert.h>

#include "agent-argv.h"
#include "macro.h"
#include "strv.h"

static bool prompt_is_bare_word(const char *p) {
        for (; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:.", *p))
                        return false;
        return true;
}

int agent_argv_build(const AgentRequest *r, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int k;

        assert(r);
        assert(ret);

        if (isempty(r->bin) || isempty(r->mcp_config) || isempty(r->prompt))
                return -EINVAL;
        if (!isempty(r->resume) && r->resume[0] == '-')
                return -EINVAL;

        if ((k = strv_extend(&l, r->bin)) < 0 ||
            (k = strv_extend(&l, "--mcp-config")) < 0 ||
            (k = strv_extend(&l, r->mcp_config)) < 0)
                return k;

        if (!isempty(r->model) &&
            ((k = strv_extend(&l, "--model")) < 0 || (k = strv_extend(&l, r->model)) < 0))
                return k;

        if ((k = strv_extend(&l, "--print")) < 0 ||
            (k = strv_extend(&l, "--verbose")) < 0 ||
            (k = strv_extend(&l, "--output-format")) < 0 ||
            (k = strv_extend(&l, "stream-json")) < 0 ||
            (k = strv_extend(&l, "--dangerously-skip-permissions")) < 0)
                return k;

        if (!isempty(r->resume)) {
                if ((k = strv_extend(&l, "--resume")) < 0 || (k = strv_extend(&l, r->resume)) < 0)
                        return k;
                if (r->fork_session && (k = strv_extend(&l, "--fork-session")) < 0)
                        return k;
        }

        STRV_FOREACH(d, r->add_dirs) {
                if (isempty(*d))
                        continue;
                if ((k = strv_extend(&l, "--add-dir")) < 0 || (k = strv_extend(&l, *d)) < 0)
                        return k;
        }

        if (!isempty(r->append_system_prompt) &&
            ((k = strv_extend(&l, "--append-system-prompt")) < 0 ||
             (k = strv_extend(&l, r->append_system_prompt)) < 0))
                return k;

        if ((k = strv_extend(&l, "--")) < 0)
                return k;
        if (prompt_is_bare_word(r->prompt)) {
                char *p;
                if (asprintf(&p, "%s\n", r->prompt) < 0)
                        return -ENOMEM;
                k = strv_consume(&l, p);
        } else
                k = strv_extend(&l, r->prompt);
        if (k < 0)
                return k;

        *ret = TAKE_PTR(l);
        return 0;
}
