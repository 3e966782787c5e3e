/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop profile seccomp`: the seccomp workload profile every agent and shell container gets, as the
 * engine receives it, for review (and for `podman run --security-opt seccomp=FILE` by hand). */

#include <getopt.h>

#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "seccomp-profile.h"

static void profile_help(void) {
        printf("%s profile seccomp [--arch x86_64|aarch64]\n\n"
               "Print the seccomp workload profile of agent and shell containers as the engine's JSON.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --arch ARCH         x86_64 or aarch64 (default: this machine's)\n",
               program_invocation_short_name);
}

static int profile_seccomp(int argc, char *argv[]) {
        enum { ARG_ARCH = 0x100 };
        static const struct option options[] = {
                { "help", no_argument,       NULL, 'h' },
                { "arch", required_argument, NULL, ARG_ARCH },
                {}
        };
        _cleanup_(json_object_putp) json_object *profile = NULL;
        bool have_arch = false;
        uint32_t arch = 0;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        profile_help();
                        return EXIT_SUCCESS;
                case ARG_ARCH:
                        if (seccomp_profile_arch_from_string(optarg, &arch) < 0) {
                                log_error("Unknown architecture \"%s\": expected x86_64 or aarch64.", optarg);
                                return EXIT_FAILURE;
                        }
                        have_arch = true;
                        break;
                default:
                        return EXIT_FAILURE;
                }
        if (optind < argc) {
                log_error("Unexpected argument \"%s\".", argv[optind]);
                return EXIT_FAILURE;
        }
        if (!have_arch && seccomp_profile_arch_native(&arch) < 0) {
                log_error("This machine's architecture has no workload profile; pass --arch x86_64 or aarch64.");
                return EXIT_FAILURE;
        }

        r = seccomp_profile_json(arch, &profile);
        if (r < 0) {
                log_error_errno(r, "Failed to build the seccomp profile: %m");
                return EXIT_FAILURE;
        }
        puts(json_object_to_json_string_ext(profile, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int verb_profile(int argc, char *argv[]) {
        if (argc >= 2 && (streq(argv[1], "-h") || streq(argv[1], "--help"))) {
                profile_help();
                return EXIT_SUCCESS;
        }
        if (argc < 2) {
                log_error("Which profile? See '%s profile --help'.", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        if (streq(argv[1], "seccomp"))
                return profile_seccomp(argc - 1, argv + 1);
        log_error("Unknown profile \"%s\": expected seccomp.", argv[1]);
        return EXIT_FAILURE;
}
