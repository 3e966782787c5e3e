/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Whose objects a request names: a container, exec, volume or network named in the path or the body is
 * resolved once to its id and must be the channel's (others' answer as missing ones); who is calling;
 * image names and registries a request may use; the bases of a build. */

#include "dockerproxy-conn.h"

/* What a path or a body names. */
typedef enum ProxyRefKind { PROXY_REF_NONE, PROXY_REF_CONTAINER, PROXY_REF_EXEC, PROXY_REF_VOLUME, PROXY_REF_NETWORK } ProxyRefKind;

/* The container, exec, volume or network a path names: /containers/REF[/...], /exec/REF/...,
 * /volumes/REF, /networks/REF[/...]. The collections' own endpoints (POST .../create and .../prune,
 * GET /containers/json) name none; anything else under them names one, exactly as the engine's router
 * (case-sensitive) reads it: GET /volumes/create is the inspect of a volume called "create". */
ProxyRefKind proxy_path_ref(const char *method, const char *path, char **ret);

/* Whether the container, exec, volume or network ref belongs to the channel, resolved once: the engine
 * is asked about ref, the ownership checked on its answer, and the object's full id (a volume's name)
 * returned in *ret_id for the request to name instead of ref (a name or id prefix can be moved to
 * another container between a check and a use; an id cannot). Others' objects answer as missing ones.
 * Replies itself (404, 502, 400) and returns < 0 when it does not. ret_id may be NULL. */
int proxy_conn_check_ref(ProxyConn *c, ProxyRefKind kind, const char *ref, char **ret_id);

/* What the path names, and a container named in the query or body, must be the channel's; the request
 * goes on naming their ids. */
int proxy_conn_check_ownership(ProxyConn *c, json_object *body);

/* A volume or network create names its object the channel's way; a volume without a name gets one. */
int proxy_conn_check_create_name(ProxyConn *c, json_object *body, bool volume);

/* A container create's named volumes, networks and namespace-sharing containers must be the channel's.
 * A named volume that does not exist yet is made here, with the channel's labels, rather than by the
 * engine without them. Replies itself when refused. */
int proxy_conn_check_references(ProxyConn *c, json_object *body);

int proxy_count_nested(DockerProxy *p, Engine *e, uint64_t *ret);

/* POST /containers/ID/start: the binds are judged again as they are now, symlinks resolved anew. A
 * source swapped for a symlink after the create (a directory of the workspace replaced by a link to
 * /etc) would otherwise be mounted wherever it points at start. Replies itself when refused; else
 * *ret_inspect is the container's inspect reply (its pins, checked again with the channel frozen). */
int proxy_conn_recheck_start(ProxyConn *c, const char *ref, json_object **ret_inspect);

int proxy_conn_peer_check(ProxyConn *c, uid_t uid, char **ret_name);

/* A container that binds host paths gets no exec as another user, nor files copied in by the engine (which
 * extracts a tar as root, with the owners and setuid bits it names, into a bind as well). */
int proxy_conn_check_host_binds(ProxyConn *c, const char *ref, const char *tail, json_object *body);

int proxy_conn_check_update(ProxyConn *c, const char *ref, json_object *body);

/* Refuses (403, and returns -EPERM) when ref, or repo with tag, names a protected repository. */
int proxy_conn_check_image_name(ProxyConn *c, const char *repo, const char *tag, bool made);

/* A parameter ignoring case, as Podman reads it; a list (or anything but a string) is refused by the
 * caller as an unreadable reference. */
const char *proxy_conn_query_string(ProxyConn *c, const char *key);

/* A pull or a push reaches the registry of the reference from the engine, past the egress gateway: only
 * where the channel's egress policy lets the agent go (dockerproxy-registry.h). A pull may not name the
 * operator's images either (it would replace them). Refuses (403) and returns -EPERM otherwise. */
int proxy_conn_check_registry(ProxyConn *c, const char *what, const char *repo, const char *tag);

/* Tags, commits, builds and imports may not name a protected repository; a removal may not remove one,
 * by its name or by an id whose image carries one of its tags. Replies itself when refused. */
int proxy_conn_check_images(ProxyConn *c, const ProxyEndpoint *endpoint);

/* A build's base images: each FROM names a local image (asked of the engine once, by the normalised
 * reference), never one the engine would pull (that would reach a registry past the egress policy, and
 * bring ONBUILD triggers nobody checked: pull it first, through the proxy), and the base's own ONBUILD
 * triggers pass the Dockerfile allow-list. Refuses (403) and returns -EPERM otherwise. */
int proxy_conn_check_build_bases(ProxyConn *c, char **bases);
