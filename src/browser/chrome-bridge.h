/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The bridge in the Chrome container (`loop chrome-bridge`): Chrome's parent. It starts Chrome with
 * --remote-debugging-pipe on a pipe pair at fds 3 (Chrome reads) and 4 (Chrome writes), and relays those
 * bytes to one client on a unix socket in a directory the host bind-mounted in (mode 0700, owned by the
 * browser service's user, the only one that can reach it): CDP has no TCP port anywhere, and only
 * loop-browser@NAME can drive Chrome.
 *
 * One client at a time: a new connection (loop-browser@ started again after an idle stop or a crash)
 * replaces the old one, at a message boundary on Chrome's side (a message half sent to the old client is
 * dropped, never spliced into the new stream). The bridge exits with Chrome: the container ends with it
 * and loop-chrome@ restarts it. */

#include <stddef.h>

#define CHROME_BRIDGE_BUFFER (4U * 1024U * 1024U)   /* a whole request of the client fits */

typedef struct ChromeBridge {
        const char *socket_path;        /* where to listen (created 0600, removed first when it exists) */
        char * const *chrome_argv;      /* Chrome's command line, --remote-debugging-pipe included */
} ChromeBridge;

/* Whether Chrome's namespace sandbox can work here: a child makes a user namespace with new PID and
 * network namespaces, as Chrome's zygote does. 0, or the negative errno that refused it. */
int chrome_sandbox_check(void);

/* Checks the sandbox (refuses to start Chrome without it), then runs until Chrome exits. Returns Chrome's exit status (>= 0), 128+signal when it was killed, or a
 * negative errno when the bridge itself failed. */
int chrome_bridge_run(const ChromeBridge *b);
