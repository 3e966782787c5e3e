/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "log.h"
#include "loop.h"

int verb_privdrop(int argc, char *argv[]) {
        log_error("privdrop: being written");
        return EXIT_FAILURE;
}
