/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Option parsing the `loop` verbs share. */

#include <stdbool.h>

/* The options of a verb that has only --help (-h) and --json: help() is called for --help. Returns 1 to go
 * on, with *ret_json set and optind at the first argument; 0 after --help (the verb exits with success);
 * -EINVAL for an unknown option, which getopt_long() has reported. */
int loop_parse_json_options(int argc, char *argv[], void (*help)(void), bool *ret_json);

/* Whether name is a valid channel name (channel_name_check()); logs why not. */
bool loop_check_channel_name(const char *name);

/* The "NAME [--]" that starts the arguments of `loop send`, `loop run` and `loop shell`: the channel NAME at
 * argv[optind], checked, and a "--" after it skipped, optind left at what follows. -EINVAL when NAME is
 * missing ("Usage: " synopsis logged) or invalid (why logged). */
int loop_take_channel_argument(int argc, char *argv[], const char *synopsis, const char **ret_channel);
