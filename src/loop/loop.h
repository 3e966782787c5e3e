/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The subcommands of the `loop` command. Each gets argv starting at its own name and returns an exit status. */

#include "config.h"
#include "engine-discover.h"

/* Loads the configuration and connects to the engine it names. An invalid loop.json is refused: its
 * defaults could name another engine than the one the operator configured. Logs why on failure. */
int loop_connect_engine(ConfigSet **ret_set, EngineConnection **ret_conn);

int verb_config(int argc, char *argv[]);
int verb_channels(int argc, char *argv[]);
int verb_privdrop(int argc, char *argv[]);
int verb_syscallwrap(int argc, char *argv[]);
int verb_relay(int argc, char *argv[]);
int verb_run(int argc, char *argv[]);
int verb_image(int argc, char *argv[]);
int verb_logs(int argc, char *argv[]);
int verb_send(int argc, char *argv[]);
int verb_outbox(int argc, char *argv[]);
int verb_queue(int argc, char *argv[]);
int verb_runner(int argc, char *argv[]);
int verb_status(int argc, char *argv[]);
int verb_gate(int argc, char *argv[]);
int verb_cleanup(int argc, char *argv[]);
int verb_reconcile(int argc, char *argv[]);
int verb_shell(int argc, char *argv[]);
int verb_profile(int argc, char *argv[]);
int verb_seal(int argc, char *argv[]);
int verb_task(int argc, char *argv[]);
int verb_mcp(int argc, char *argv[]);
int verb_mcp_browser(int argc, char *argv[]);
int verb_chrome(int argc, char *argv[]);
int verb_chrome_bridge(int argc, char *argv[]);
