/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop seal -- COMMAND`: put COMMAND in a Landlock domain derived from the container's mounts (see
 * seal.h), under a logged copy of the seccomp workload profile (seccomp-profile.h), mark stray fds
 * close-on-exec and exec it. Landlock (ABI 7) and seccomp refusals after that leave kernel audit records.
 * The agent image's entrypoint runs it around the security gate (`loop seal -- loop syscallwrap ... --
 * AGENT`), so the gate's supervisor, which performs the agent's opens for it, works inside the same
 * domain. */

#include <fcntl.h>
#include <getopt.h>

#include "agent-env.h"
#include "io-util.h"
#include "log.h"
#include "loop.h"
#include "seal.h"
#include "seccomp-profile.h"
#include "strv.h"

#define EXIT_SEAL_FAILED   125
#define EXIT_CANNOT_INVOKE 126
#define EXIT_ENOENT        127

static void seal_help(void) {
        printf("%s seal [--work-dir DIR] [--connect-tcp PORTS] [--agent-env] [--print] -- COMMAND [ARGS...]\n\n"
               "Confine COMMAND with Landlock (ABI 3 or newer) in four tiers derived from the mounts of this\n"
               "mount namespace and with the seccomp workload profile (refusals logged by the kernel), mark\n"
               "inherited fds above 2 close-on-exec and execute COMMAND.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --work-dir DIR      The work dir, writable (default: the current directory)\n"
               "     --connect-tcp PORTS Allow TCP connect() only to these ports (e.g. 443,8080, or none;\n"
               "                         ABI 4+; default: $" SEAL_CONNECT_TCP_ENV ", else unrestricted)\n"
               "     --agent-env         Decode the agent's own variables ($" AGENT_ENV_VARIABLE ") into COMMAND's\n"
               "                         environment (a `loop shell` session; refused as root)\n"
               "     --print             Print the Landlock ABI and the tiers, and exit\n\n"
               "Exit status: COMMAND's; 125 when the seal cannot be applied (no Landlock, ABI below 3),\n"
               "126 when COMMAND cannot be executed, 127 when it is not found.\n",
               program_invocation_short_name);
}

int verb_seal(int argc, char *argv[]) {
        enum { ARG_WORK_DIR = 0x100, ARG_CONNECT_TCP, ARG_AGENT_ENV, ARG_PRINT };
        static const struct option options[] = {
                { "help",        no_argument,       NULL, 'h' },
                { "work-dir",    required_argument, NULL, ARG_WORK_DIR },
                { "connect-tcp", required_argument, NULL, ARG_CONNECT_TCP },
                { "agent-env",   no_argument,       NULL, ARG_AGENT_ENV },
                { "print",       no_argument,       NULL, ARG_PRINT },
                {}
        };
        _cleanup_(seal_policy_done) SealPolicy policy = {};
        _cleanup_free_ char *mountinfo = NULL, *cwd = NULL;
        _cleanup_strv_free_ char **agent_env = NULL;
        const char *work_dir = NULL, *ports = NULL, *refusal;
        bool print = false, take_agent_env = false;
        int c, r, abi;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        seal_help();
                        return EXIT_SUCCESS;
                case ARG_WORK_DIR:
                        work_dir = optarg;
                        break;
                case ARG_CONNECT_TCP:
                        ports = optarg;
                        break;
                case ARG_AGENT_ENV:
                        take_agent_env = true;
                        break;
                case ARG_PRINT:
                        print = true;
                        break;
                default:
                        return EXIT_SEAL_FAILED;
                }
        if (!print && optind >= argc) {
                log_error("No command given. See '%s seal --help'.", program_invocation_short_name);
                return EXIT_SEAL_FAILED;
        }
        /* The agent's variables are the agent's alone: the entrypoint's seal, as root, passes them on
         * encoded to `loop privdrop` or `loop syscallwrap`. Decoded first, so a bad one stops here. */
        if (take_agent_env) {
                if (geteuid() == 0) {
                        log_error("--agent-env is for a process of the agent: refusing it as root.");
                        return EXIT_SEAL_FAILED;
                }
                if (agent_env_take(&agent_env) < 0)
                        return EXIT_SEAL_FAILED;
        }
        if (!work_dir) {
                cwd = getcwd(NULL, 0);
                if (!cwd) {
                        log_error_errno(errno, "Cannot tell the current directory: %m");
                        return EXIT_SEAL_FAILED;
                }
                work_dir = cwd;
        }

        abi = seal_landlock_abi();
        refusal = seal_abi_refusal(abi);
        if (refusal) {
                log_error("Refusing to run unconfined: %s (found ABI %d, %d needed).", refusal, abi, SEAL_ABI_REQUIRED);
                return EXIT_SEAL_FAILED;
        }

        r = read_full_file_at(AT_FDCWD, "/proc/self/mountinfo", SEAL_MOUNTINFO_MAX, true, &mountinfo, NULL);
        if (r < 0) {
                log_error_errno(r, "Failed to read /proc/self/mountinfo: %m");
                return EXIT_SEAL_FAILED;
        }
        r = seal_policy_from_mountinfo(mountinfo, work_dir, getenv("HOME"), &policy);
        if (r < 0) {
                log_error_errno(r, "Failed to derive the Landlock policy from the mounts: %m");
                return EXIT_SEAL_FAILED;
        }
        if (!ports)
                ports = getenv(SEAL_CONNECT_TCP_ENV);
        if (ports && seal_parse_tcp_ports(ports, &policy) < 0) {
                log_error("Invalid --connect-tcp (or $" SEAL_CONNECT_TCP_ENV ") \"%s\": expected \"none\" or up to %u "
                          "ports (1-65535) separated by commas.", ports, SEAL_TCP_PORTS_MAX);
                return EXIT_SEAL_FAILED;
        }

        if (print) {
                printf("landlock_abi %d\n", abi);
                for (unsigned t = 0; t < _SEAL_TIER_MAX; t++)
                        STRV_FOREACH(p, policy.paths[t])
                                printf("%s %s\n", seal_tier_to_string(t), *p);
                for (size_t i = 0; i < policy.n_tcp_ports; i++)
                        printf("connect_tcp %u\n", (unsigned) policy.tcp_ports[i]);
                if (policy.restrict_tcp && policy.n_tcp_ports == 0)
                        printf("connect_tcp none\n");
                return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        }

        r = seal_apply(&policy, abi);
        if (r < 0)
                return EXIT_SEAL_FAILED;    /* logged */
        /* The workload profile once more, as a filter of the container's own that the kernel logs. */
        {
                bool logged = false;

                r = seccomp_profile_load_logged(&logged);
                if (r < 0) {
                        log_error_errno(r, "Failed to load the logged copy of the seccomp workload profile: %m");
                        return EXIT_SEAL_FAILED;
                }
                if (!logged)
                        log_notice("The kernel cannot log seccomp refusals (SECCOMP_FILTER_FLAG_LOG); they stay silent.");
        }
        r = seal_close_stray_fds();
        if (r < 0) {
                log_error_errno(r, "Failed to mark inherited fds close-on-exec: %m");
                return EXIT_SEAL_FAILED;
        }

        if (agent_env_apply(agent_env) < 0)
                return EXIT_SEAL_FAILED;
        execvp(argv[optind], argv + optind);
        r = errno;
        log_error_errno(r, "Failed to execute %s: %m", argv[optind]);
        return r == ENOENT ? EXIT_ENOENT : EXIT_CANNOT_INVOKE;
}
