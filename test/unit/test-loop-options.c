/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop_parse_json_options(): the --help and --json of `loop channels`, `loop status`, `loop queue` and
 * `loop gate list`; loop_check_channel_name(), the check of a channel NAME argument every verb makes. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "loop-options.h"
#include "macro.h"
#include "tap.h"

static unsigned helped;

static void help(void) {
        helped++;
}

/* argv as a verb gets it, starting at its own name; getopt_long() restarted as for each verb. */
static int parse(char **argv, bool *ret_json) {
        int argc = 0;

        while (argv[argc])
                argc++;
        optind = 0;
        opterr = 0;
        return loop_parse_json_options(argc, argv, help, ret_json);
}

int main(void) {
        bool json = true;

        is_int(parse((char *[]) { (char *) "status", NULL }, &json), 1, "no options: go on");
        ok(!json && optind == 1, "without --json, optind at the end");

        is_int(parse((char *[]) { (char *) "status", (char *) "--json", (char *) "web", NULL }, &json), 1,
               "--json: go on");
        ok(json && optind == 2, "with --json set, optind at the first argument");

        is_int(parse((char *[]) { (char *) "queue", (char *) "web", (char *) "--json", NULL }, &json), 1,
               "--json after an argument");
        ok(json && optind == 2, "is taken too (arguments are permuted to the end)");

        json = false;
        is_int(parse((char *[]) { (char *) "channels", (char *) "-h", NULL }, &json), 0, "-h: stop, with success");
        is_int(parse((char *[]) { (char *) "channels", (char *) "--help", (char *) "--json", NULL }, &json), 0,
               "--help: stop");
        is_int(helped, 2, "help was shown for each");
        ok(!json, "and nothing else was set");

        is_int(parse((char *[]) { (char *) "channels", (char *) "--jsn", NULL }, &json), -EINVAL,
               "an unknown option is -EINVAL");
        is_int(parse((char *[]) { (char *) "channels", (char *) "-j", NULL }, &json), -EINVAL,
               "--json has no short form");
        is_int(helped, 2, "and shows no help");

        ok(loop_check_channel_name("web-1"), "loop_check_channel_name() takes a valid name");
        ok(!loop_check_channel_name("../etc"), "refuses a path");
        ok(!loop_check_channel_name(""), "refuses an empty name");

        {
                char *a1[] = { (char *) "send", (char *) "web", (char *) "--", (char *) "-x", NULL };
                char *a2[] = { (char *) "send", (char *) "web", (char *) "hello", NULL };
                char *a3[] = { (char *) "send", NULL };
                char *a4[] = { (char *) "send", (char *) "a/b", (char *) "hi", NULL };
                const char *channel = NULL;

                optind = 1;
                is_int(loop_take_channel_argument(4, a1, "loop send NAME", &channel), 0,
                       "loop_take_channel_argument() takes NAME");
                ok(channel && streq(channel, "web") && optind == 3, "and skips the \"--\" after it");
                optind = 1;
                is_int(loop_take_channel_argument(3, a2, "loop send NAME", &channel), 0, "without \"--\"");
                ok(optind == 2, "optind is at the first word after NAME");
                optind = 1;
                channel = NULL;
                is_int(loop_take_channel_argument(1, a3, "loop send NAME", &channel), -EINVAL, "a missing NAME is -EINVAL");
                optind = 1;
                is_int(loop_take_channel_argument(3, a4, "loop send NAME", &channel), -EINVAL, "an invalid NAME is -EINVAL");
                ok(!channel, "and nothing is returned");
        }
        return done_testing();
}
