/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Running one prompt on a channel: the container lifecycle of seed 001 (resolve the work dir, merge the
 * project config, build env and mounts, write the MCP config, create, copy files in, start, collect the
 * stream-json output, schedule removal in the registry) and the session retry logic around it. Used by `loop run` now and by the
 * channel's runner service later. */

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "agent-retry.h"
#include "stream-json.h"
#include "config.h"
#include "container-spec.h"
#include "engine-discover.h"
#include "registry.h"
#include "tripwire.h"

#define RUNNER_STDERR_TAIL 4096U        /* the end of the agent's stderr kept for error messages */
#define RUNNER_LOOP_BIN "/usr/local/bin/loop"

/* What a caller may want to know while a run goes on (the runner service journals it); every hook may be
 * NULL. */
typedef struct RunHooks {
        void *userdata;
        void (*created)(const char *id, const char *name, void *userdata);
        /* scope: the transient unit the container runs in, NULL when there is none (no systemd) */
        void (*started)(const char *id, const char *name, pid_t pid, const char *scope, void *userdata);
        /* the run is over: the container stopped and is kept for container_keep_alive_sec (or removed) */
        void (*finished)(const char *id, const char *name, int exit_code, void *userdata);
        void (*event)(const StreamEvent *ev, void *userdata);
        void (*retrying)(const char *reason, const char *session_id, void *userdata);
} RunHooks;

typedef struct RunRequest {
        const char *channel;
        const char *prompt;
        const char *resume;             /* session id to resume, or NULL */
        const char *image;              /* overrides container_image */
        const char *agent;              /* overrides claude_bin_path (another agent binary in the image) */
        bool json;                      /* print the raw stream-json events instead of text */
        FILE *out;                      /* where turns and tool uses are printed as they stream; NULL: nowhere */
        const RunHooks *hooks;          /* may be NULL */
        const char *owner;              /* label loop-owner of its containers: "service" or "cli" */
} RunRequest;

typedef struct RunOutcome {
        AgentResult result;             /* the final result, session id */
        AgentErrorKind error;           /* AGENT_ERROR_NONE on success */
        char *error_message;            /* one line when error != NONE */
        unsigned retries;               /* how many retries the session logic made */
        bool result_printed;            /* the result was the last turn already printed to req->out */
} RunOutcome;

void run_outcome_done(RunOutcome *o);

/* Runs req to the end. Returns < 0 (with a message logged) when the run could not happen at all (bad
 * config, no engine, missing image, interrupted); >= 0 when the agent ran, with the outcome in *ret, which
 * may still be an agent error. */
int runner_run(const RunRequest *req, RunOutcome *ret);

/* From a signal handler: stop the current run (its container is stopped; its removal is scheduled). */
void runner_interrupt(void);

/* The channel's shell container (a singleton): found, started or created by runner_shell_open() under the
 * channel's registry lock, so two terminals get the same one. It runs the entrypoint and then idles; the
 * shells are execs in it as the agent user. */
typedef struct ShellTarget {
        EngineConnection *conn;
        char *channel;
        char *id;
        char *name;
        char *user;                     /* "uid:gid" of the agent user, for the exec */
        uint64_t keep_alive_sec;
        char *work_dir;
        Tripwire *tripwire;             /* the session's; NULL with "tripwire": false */
        bool tampered;                  /* set by runner_shell_release(): the tripwire fired */
        Registry *lock;                 /* the channel's registry, locked until the session runs */
} ShellTarget;

/* Returns with the channel's registry still locked (t->lock): a session ending in another terminal
 * meanwhile would find no other running and stop the container under the one being opened. Call
 * runner_shell_started() once the session's exec runs (runner_shell_release() and shell_target_done()
 * let it go too). */
int runner_shell_open(const char *channel, ShellTarget *ret);
void runner_shell_started(ShellTarget *t);
/* After a session: its tripwire is disarmed; if it fired, the container is stopped, the change journaled
 * (tamper) and the snapshot restored (t->tampered). Then, when no other session runs in it, stops the
 * container and schedules its removal after container_keep_alive_sec (a shell opened before then starts
 * it again and cancels the removal). */
int runner_shell_release(ShellTarget *t);
void shell_target_done(ShellTarget *t);

/* The channel's Chrome container (loop-chrome@NAME.service, issue 21): a singleton named
 * loop-chrome-{sanitized}, planned by the same runner_container_plan() as every container (egress
 * gateway, no network, hardening), with Chrome's seccomp profile (its own sandbox kept) and, bound at
 * CHROME_CONTAINER_CDP_DIR, the host directory cdp_dir (0700, owned by uid:gid, the browser service's
 * user, which Chrome runs as too): the bridge's socket there is CDP's only way in. A Chrome container left
 * from before is removed first. ready() runs once the bridge listens; then this waits until the container
 * ends (its exit code in *ret_exit_code) or runner_interrupt() (the container is stopped). */
#define CHROME_CONTAINER_CDP_DIR "/run/loop-cdp"
#define CHROME_CDP_SOCKET_NAME "cdp.sock"
#define CHROME_READY_TIMEOUT_SEC 60U

typedef struct ChromeRequest {
        const char *channel;
        const char *cdp_dir;
        uid_t uid;
        gid_t gid;
        void (*ready)(const char *container_name, void *userdata);
        void *userdata;
} ChromeRequest;

int runner_chrome_run(const ChromeRequest *req, int *ret_exit_code);
