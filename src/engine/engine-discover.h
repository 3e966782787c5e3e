/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which engine socket to use: engine.socket from config, else $LOOP_ENGINE_SOCKET (either is final: when it
 * does not answer, that is an error), else Podman's rootful socket (/run/podman/podman.sock), then Docker's
 * (/var/run/docker.sock), the first that answers a ping.
 * When none answers and podman is installed, a private `podman system service` is started on a socket under
 * a private runtime directory for the lifetime of the command and stopped by engine_connection_free(). */

#include "engine.h"

typedef struct EngineConnection {
        Engine *engine;
        pid_t private_service;          /* > 0 when we started podman ourselves */
        char *private_dir;              /* its runtime dir, removed at the end */
} EngineConnection;

/* configured: engine.socket from config, may be NULL. Returns -EHOSTDOWN with a message on the user's
 * terminal listing what was tried when nothing could be found or started. */
int engine_connect(const char *configured, EngineConnection **ret);
/* allow_private=false: only engines that already run; -EHOSTDOWN (logged at debug level only) when none
 * answers. For periodic work such as `loop reconcile`, which must not start engines. */
int engine_connect_full(const char *configured, bool allow_private, EngineConnection **ret);
EngineConnection *engine_connection_free(EngineConnection *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EngineConnection *, engine_connection_free);
