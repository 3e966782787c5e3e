/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A client of the Docker Engine REST API (v1.41) over a unix socket, with libcurl. It speaks to rootful
 * Podman's compatible service and to Docker. Every call has a timeout except the ones that follow a
 * stream (logs with follow, wait, events, exec output, build). On failure a call returns a negative errno
 * and engine_last_error() holds one line for the user: the call, the HTTP status and the engine's message,
 * e.g. "POST /containers/create: 404 No such image: loop-agent:latest". */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "macro.h"

#define ENGINE_API_VERSION "v1.41"
#define ENGINE_TIMEOUT_SEC 30U                  /* every call that is not a stream */
#define ENGINE_CONNECT_TIMEOUT_SEC 5U
#define ENGINE_RESPONSE_MAX (64U * 1024U * 1024U)  /* JSON responses larger than this are refused */

typedef enum EngineKind {
        ENGINE_UNKNOWN,
        ENGINE_PODMAN,
        ENGINE_DOCKER,
} EngineKind;

typedef struct Engine Engine;

/* Output of a container or an exec, demultiplexed from the 8-byte framed stream when Tty=false.
 * stream is 1 (stdout) or 2 (stderr). Return < 0 to abort the transfer (the call then returns that). */
typedef int (*EngineStreamFn)(int stream, const char *data, size_t size, void *userdata);
/* One JSON object of a streamed JSON response (build progress, events). Return < 0 to abort, > 0 to stop
 * cleanly (the call then returns 0). */
typedef int (*EngineJsonFn)(json_object *message, void *userdata);

/* No I/O: just remembers the socket. */
int engine_new(const char *socket_path, Engine **ret);
Engine *engine_free(Engine *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Engine *, engine_free);

const char *engine_socket_path(const Engine *e);
const char *engine_last_error(const Engine *e);
/* Known after engine_ping() or engine_version(): Podman reports "Podman Engine" among its components. */
EngineKind engine_kind(const Engine *e);
const char *engine_kind_to_string(EngineKind k);

/* The total timeout of calls that are not streams (default ENGINE_TIMEOUT_SEC; 0 restores it), e.g. a
 * short one for probing candidate sockets. */
void engine_set_timeout(Engine *e, unsigned timeout_sec);

/* Tells the client to give up streams: safe to call from a signal handler. Sticky: every stream call after
 * it (logs, wait, exec start, events, build, import, load) returns -EINTR at once, while the calls that are
 * not streams (stop, kill, remove, inspect...) keep working so the caller can clean up. */
void engine_interrupt(Engine *e);

int engine_ping(Engine *e);
int engine_version(Engine *e, json_object **ret);
/* GET /info: CgroupDriver ("systemd" or "cgroupfs") tells whether CgroupParent names a slice. */
int engine_info(Engine *e, json_object **ret);

/* -ENOENT when the image does not exist. */
int engine_image_inspect(Engine *e, const char *name, json_object **ret);
/* Podman only: its libpod inspect of an image (ManifestType tells whether its config is Docker's, which
 * may carry ONBUILD triggers that Podman's compat inspect does not show). -ENOENT when it does not exist. */
int engine_image_inspect_libpod(Engine *e, const char *name, json_object **ret);
int engine_image_list(Engine *e, json_object **ret);
int engine_image_remove(Engine *e, const char *name, bool force);
/* POST /build with a tar context (in memory); progress messages ({"stream": ...}, {"error": ...}) go to
 * progress. dockerfile is the Containerfile's path inside the context. buildargs: NULL or KEY=VALUE. */
int engine_image_build(Engine *e, const char *tag, const void *context_tar, size_t size, const char *dockerfile,
                       char * const *buildargs, EngineJsonFn progress, void *userdata);
/* POST /images/create?fromSrc=- with a rootfs tarball read from fd; changes e.g. "CMD [\"/bin/sh\"]". */
int engine_image_import(Engine *e, int tar_fd, const char *repo_tag, char * const *changes);
/* POST /images/load with an image archive read from fd. */
int engine_image_load(Engine *e, int tar_fd);

int engine_container_create(Engine *e, const char *name, json_object *body, char **ret_id);
int engine_container_start(Engine *e, const char *id);
/* Blocks until the container exits (no timeout). */
int engine_container_wait(Engine *e, const char *id, int *ret_exit_code);
/* follow=false returns what is there; follow=true streams until the container stops. */
int engine_container_logs(Engine *e, const char *id, bool follow, EngineStreamFn fn, void *userdata);
/* -ENOENT when it does not exist. */
int engine_container_inspect(Engine *e, const char *id, json_object **ret);
/* Volumes and networks by name (or id): -ENOENT when they do not exist. Names as for containers. */
int engine_volume_inspect(Engine *e, const char *name, json_object **ret);
/* POST /volumes/create with body ({"Name", "Labels", ...}); *ret the volume as the engine reports it. */
int engine_volume_create(Engine *e, json_object *body, json_object **ret);
int engine_network_inspect(Engine *e, const char *id, json_object **ret);
/* GET /networks, unfiltered: every network of the engine. */
int engine_network_list(Engine *e, json_object **ret);

/* label: NULL or "key" or "key=value". */
int engine_container_list(Engine *e, const char *label, bool all, json_object **ret);
/* The value of label key of one entry of engine_container_list(), or NULL. */
const char *engine_container_label(json_object *container, const char *key);
int engine_container_stop(Engine *e, const char *id, unsigned timeout_sec);
int engine_container_kill(Engine *e, const char *id, const char *signal);
int engine_container_remove(Engine *e, const char *id, bool force);
/* PUT /containers/{id}/archive?path=dir with a tar archive in memory. */
int engine_container_archive_put(Engine *e, const char *id, const char *dir, const void *tar, size_t size);

int engine_exec_create(Engine *e, const char *id, char * const *argv, char * const *env, const char *user,
                       char **ret_exec_id);
typedef struct EngineExecSpec {
        char * const *argv;
        char * const *env;              /* may be NULL */
        const char *user;               /* "uid:gid" or a name; NULL: the container's */
        const char *workdir;            /* NULL: the container's */
        bool tty;                       /* a pseudo-terminal: the stream is raw, not framed */
        bool attach_stdin;
} EngineExecSpec;
int engine_exec_create_spec(Engine *e, const char *id, const EngineExecSpec *spec, char **ret_exec_id);
int engine_exec_inspect(Engine *e, const char *exec_id, json_object **ret);
int engine_exec_resize(Engine *e, const char *exec_id, unsigned rows, unsigned cols);
/* Starts an exec attached: *ret_fd is the hijacked connection, stdin goes in, output comes out (raw with
 * tty, else in 8-byte frames); bytes of the stream that came with the response head are in *ret_pending.
 * The response head is capped at ENGINE_HIJACK_HEAD_MAX. */
#define ENGINE_HIJACK_HEAD_MAX (16U * 1024U)
int engine_exec_attach(Engine *e, const char *exec_id, bool tty, int *ret_fd, char **ret_pending,
                       size_t *ret_pending_size);
/* Runs the exec and streams its output; then *ret_exit_code from exec inspect. */
int engine_exec_start(Engine *e, const char *exec_id, EngineStreamFn fn, void *userdata, int *ret_exit_code);

/* GET /events with the given filters (a JSON object as the API takes it, may be NULL). */
int engine_events(Engine *e, json_object *filters, EngineJsonFn fn, void *userdata);
