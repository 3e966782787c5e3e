/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop privdrop`: become an unprivileged user for good and exec a command. Our replacement for gosu and
 * setpriv in the agent image's entrypoint, which runs as root with a few capabilities and must hand the
 * agent nothing of them: supplementary groups, gid and uid are set, every capability set is emptied
 * (bounding, ambient, inheritable, permitted, effective), no_new_privs is set, and all of it is read back
 * before the exec. */

#include <getopt.h>

#include "agent-env.h"
#include "log.h"
#include "loop.h"
#include "privdrop.h"
#include "strv.h"

/* Exit statuses as env(1), chroot(1) and timeout(1) use them, so a caller can tell our failure from the
 * command's. */
#define EXIT_PRIVDROP_FAILED 125
#define EXIT_CANNOT_INVOKE   126
#define EXIT_ENOENT          127

static void help(void) {
        printf("%s privdrop --uid UID --gid GID [--groups G1,G2...] [--allow-root] -- COMMAND [ARGS...]\n\n"
               "Drop every privilege for good and execute COMMAND (looked up in $PATH): set the supplementary\n"
               "groups (none unless --groups), the gid and the uid, empty all capability sets, set no_new_privs.\n"
               "The environment is passed on, with the agent's own variables ($" AGENT_ENV_VARIABLE ", set by loop)\n"
               "decoded into it after the drop; a $" AGENT_ENV_VARIABLE " that does not decode ends it with 125.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --uid UID           Numeric user id to become\n"
               "     --gid GID           Numeric group id to become\n"
               "     --groups G1,G2      Numeric supplementary groups (default: none)\n"
               "     --allow-root        Allow uid, gid or a group 0 (the capabilities are still dropped)\n\n"
               "Exit status: COMMAND's; 125 when privileges could not be dropped, 126 when COMMAND cannot be\n"
               "executed, 127 when it is not found.\n",
               program_invocation_short_name);
}

int verb_privdrop(int argc, char *argv[]) {
        enum { ARG_UID = 0x100, ARG_GID, ARG_GROUPS, ARG_ALLOW_ROOT };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h' },
                { "uid",        required_argument, NULL, ARG_UID },
                { "gid",        required_argument, NULL, ARG_GID },
                { "groups",     required_argument, NULL, ARG_GROUPS },
                { "allow-root", no_argument,       NULL, ARG_ALLOW_ROOT },
                {}
        };
        _cleanup_(privdrop_identity_done) PrivdropIdentity id = {};
        _cleanup_strv_free_ char **agent_env = NULL;
        bool allow_root = false;
        int c, r;

        /* "+": COMMAND's own options are not ours, even without "--". */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_UID:
                case ARG_GID:
                case ARG_GROUPS:
                        if (privdrop_identity_set(&id, c == ARG_UID ? "uid" : c == ARG_GID ? "gid" : "groups", optarg) < 0)
                                return EXIT_PRIVDROP_FAILED;
                        break;
                case ARG_ALLOW_ROOT:
                        allow_root = true;
                        break;
                default:
                        return EXIT_PRIVDROP_FAILED;    /* getopt printed why */
                }

        if (!id.have_uid || !id.have_gid) {
                log_error("privdrop needs both --uid and --gid.");
                return EXIT_PRIVDROP_FAILED;
        }
        if (optind >= argc) {
                log_error("privdrop needs a command to execute after the options.");
                return EXIT_PRIVDROP_FAILED;
        }
        if (!allow_root) {
                const char *root = privdrop_identity_root(&id);
                if (root && streq(root, "group"))
                        log_error("Refusing supplementary group 0 (use --allow-root if that is intended).");
                else if (root)
                        log_error("Refusing to run \"%s\" %s %s 0 (use --allow-root if that is intended).", argv[optind],
                                  streq(root, "uid") ? "as" : "with", root);
                if (root)
                        return EXIT_PRIVDROP_FAILED;
        }

        /* Decoded before the drop, so a bad one stops here; set after it, so only the command has it. */
        r = agent_env_take(&agent_env);
        if (r < 0)
                return EXIT_PRIVDROP_FAILED;

        r = privdrop_apply(id.uid, id.gid, id.groups, id.n_groups);
        if (r < 0)
                return EXIT_PRIVDROP_FAILED;
        r = agent_env_apply(agent_env);
        if (r < 0)
                return EXIT_PRIVDROP_FAILED;

        execvp(argv[optind], argv + optind);
        r = errno;
        log_error_errno(r, "Failed to execute %s: %m", argv[optind]);
        return r == ENOENT ? EXIT_ENOENT : EXIT_CANNOT_INVOKE;
}
