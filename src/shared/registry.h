/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The container registry of seed 001, one per channel: every container loop made for the channel, its type
 * (agent, shell, chrome; shell and chrome are singletons), its status (running, stopped, pending-removal)
 * and, when pending removal, the time it is removed (container_keep_alive_sec after it stopped, so its logs
 * stay readable for a while). A container that runs again before that time is taken off the schedule.
 *
 * The engine is the source of truth: the registry is a cache of what loop made, kept in the channel's
 * state dir (registry.json, written atomically under an flock of registry.lock), and reconciled with the
 * engine's labelled containers by registry_sync(): entries of containers that are gone are dropped,
 * statuses are synced, removal is scheduled for containers that stopped, and containers whose time has
 * come are removed. Without a registry file (first start, or the file was lost) the registry is restored
 * from the engine without events. Every change is an audit event (container-registered,
 * container-status, container-removed), so the journal tells the same story.
 *
 * Who calls what: the runner registers its containers and schedules their removal after the run; `loop
 * reconcile` (loop-reconcile.timer, every 30 s) syncs every channel; `loop runner` and `loop run` sync their
 * channel when they start; `loop cleanup` removes everything; `loop shell` finds or creates the shell. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "container-spec.h"
#include "engine.h"

#define REGISTRY_ENTRIES_MAX 4096U              /* entries kept per channel; more are not recorded */
#define REGISTRY_FILE_MAX (4U * 1024U * 1024U)
#define REGISTRY_RECONCILE_INTERVAL_SEC 30U     /* loop-reconcile.timer's period */
/* A container seen running and then exited is left at least this long to the run that started it, which
 * may not have read its output and exit status yet; that run removes it itself when it is done. */
#define REGISTRY_EXIT_GRACE_SEC 60U

typedef enum ContainerStatus {
        CONTAINER_STATUS_RUNNING,
        CONTAINER_STATUS_STOPPED,
        CONTAINER_STATUS_PENDING_REMOVAL,
        _CONTAINER_STATUS_MAX,
        _CONTAINER_STATUS_INVALID = -EINVAL,
} ContainerStatus;

const char *container_status_to_string(ContainerStatus s);
ContainerStatus container_status_from_string(const char *s);

typedef struct RegistryEntry {
        char *id;                       /* the engine's full id */
        char *name;
        ContainerType type;
        ContainerStatus status;
        char *owner;                    /* label loop-owner: service, cli, shell; may be NULL */
        char *scope;                    /* the transient scope it runs in, NULL when none is known */
        uint64_t registered_usec;       /* CLOCK_REALTIME */
        uint64_t remove_at_usec;        /* CLOCK_REALTIME; only when pending-removal */
} RegistryEntry;

typedef struct Registry {
        char *channel;
        char *path;                     /* .../registry.json */
        int lock_fd;                    /* holds LOCK_EX on .../registry.lock while open */
        bool existed;                   /* a registry file was there (else: restore without events) */
        RegistryEntry *entries;
        size_t n;
} Registry;

/* What the engine says about one labelled container (from GET /containers/json). */
typedef struct EngineContainerState {
        const char *id;
        const char *name;
        ContainerType type;
        const char *owner;
        bool running;                   /* running, paused or restarting */
} EngineContainerState;

/* Opens the registry of channel in its state dir (created when missing), locked until registry_close().
 * A damaged registry file is not an error: it is logged and the registry is restored from the engine. */
int registry_open(const char *channel, Registry **ret);
/* Reads the registry of channel without locking or creating anything, for display (the file is replaced
 * atomically, so it is always whole). A missing file gives an empty registry. */
int registry_read(const char *channel, Registry **ret);
/* Writes the registry, keeping the lock. */
int registry_save(Registry *r);
/* Writes the registry and releases the lock. Returns the write's result;
 * always frees. */
int registry_close(Registry *r);
Registry *registry_free(Registry *r);           /* without writing */
DEFINE_TRIVIAL_CLEANUP_FUNC(Registry *, registry_free);

RegistryEntry *registry_find(Registry *r, const char *id);
/* The running, stopped or pending entry of a singleton type; NULL when there is none. */
RegistryEntry *registry_find_type(Registry *r, ContainerType type);

/* Records a container loop just made or started (status running). A pending removal is cancelled. Emits
 * container-registered for a new entry, container-status for a changed one; pid (> 0) is journaled as
 * LOOP_PID. */
int registry_register(Registry *r, const char *id, const char *name, ContainerType type, const char *owner,
                      const char *scope, pid_t pid);
/* Marks a container as stopped and schedules its removal at now + keep_alive_sec (container-status).
 * keep_alive_sec == 0: removes it at once (container-removed). */
int registry_schedule_remove(Registry *r, Engine *e, const char *id, uint64_t now_usec, uint64_t keep_alive_sec);
/* Removes the container from the engine (forced) and the entry (container-removed with the reason). An
 * engine answering "no such container" counts as removed. */
int registry_remove(Registry *r, Engine *e, const char *id, const char *reason);

/* Pure: applies an observation of the engine to the registry and lists the ids whose removal time has
 * come. Stale entries (not in observed) are dropped; observed containers unknown to the registry are
 * added (silently when !r->existed: the restore); statuses are synced; a container that is not running
 * and not yet pending gets remove_at = now + keep_alive_sec (at least REGISTRY_EXIT_GRACE_SEC when it was
 * last seen running); a pending one that runs again is taken off the schedule. Every change is emitted as an audit event. *ret_remove: NULL-terminated, may be NULL. */
int registry_reconcile(Registry *r, const EngineContainerState *observed, size_t n_observed, uint64_t now_usec,
                       uint64_t keep_alive_sec, char ***ret_remove);

/* Lists the channel's labelled containers on e, reconciles, and removes what is due. Logs what fails. */
int registry_sync(Registry *r, Engine *e, uint64_t keep_alive_sec);

/* Parses GET /containers/json entries that carry app=loop-agent and loop-channel=channel (others are
 * skipped). The states point into list. Returns the count, or -ENOMEM. */
int engine_containers_of_channel(json_object *list, const char *channel, EngineContainerState **ret);

