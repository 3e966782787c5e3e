/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "loop-options.h"

int loop_parse_json_options(int argc, char *argv[], void (*help)(void), bool *ret_json) {
        enum { ARG_JSON = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                {}
        };
        bool json = false;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_JSON:
                        json = true;
                        break;
                default:
                        return -EINVAL;
                }
        *ret_json = json;
        return 1;
}

bool loop_check_channel_name(const char *name) {
        const char *reason;

        if (channel_name_check(name, &reason) < 0) {
                log_error("\"%s\" is not a valid channel name: %s.", name, reason);
                return false;
        }
        return true;
}

int loop_take_channel_argument(int argc, char *argv[], const char *synopsis, const char **ret_channel) {
        const char *channel;

        if (optind >= argc) {
                log_error("Usage: %s", synopsis);
                return -EINVAL;
        }
        channel = argv[optind++];
        if (!loop_check_channel_name(channel))
                return -EINVAL;
        if (optind < argc && strcmp(argv[optind], "--") == 0)
                optind++;
        *ret_channel = channel;
        return 0;
}
