/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Docker API proxy's allow-list of endpoints: the methods and paths that the docker CLI, compose and
 * Testcontainers use, and nothing else. A request whose (method, unversioned path) is not in the table
 * is refused before any rule sees it, whatever the channel's default_decision says: an endpoint the
 * proxy does not know is one whose body and effects nobody checked (Podman's /libpod API, swarm,
 * plugins, pulls, pushes, BuildKit sessions).
 *
 * Paths match case-sensitively, as both engines' routers do, segment by segment: a literal, "*" (one
 * segment: a container, exec, volume or network reference) or "**" (one or more segments: an image
 * name, which may hold '/'). Each entry names the body it takes (ProxyBodyKind), which the body module
 * (dockerproxy-body.h) rebuilds; a request with a body where the entry takes none is refused.
 *
 * The API version: a request may carry none (the engine's own) or "vMAJOR.MINOR" at least
 * PROXY_API_VERSION_MIN; dockerproxy-path.h refuses any other first segment that either engine's router
 * would read as a version (Docker's "v[0-9.]+", Podman's "v[0-9][0-9A-Za-z.-]*"). Below 1.24 the
 * engines take request shapes that the proxy does not check (a start with a HostConfig body). */

#include <stdbool.h>
#include <stddef.h>

#define PROXY_API_VERSION_MIN_MAJOR 1U
#define PROXY_API_VERSION_MIN_MINOR 24U
#define PROXY_API_VERSION_MIN "1.24"

typedef enum ProxyBodyKind {
        PROXY_BODY_NONE,                /* no body, or an empty one ("", "{}", "null") */
        PROXY_BODY_CONTAINER_CREATE,
        PROXY_BODY_CONTAINER_UPDATE,
        PROXY_BODY_CONTAINER_CONFIG,    /* POST /commit: the image's config */
        PROXY_BODY_EXEC_CREATE,
        PROXY_BODY_EXEC_START,
        PROXY_BODY_VOLUME_CREATE,
        PROXY_BODY_NETWORK_CREATE,
        PROXY_BODY_NETWORK_CONNECT,
        PROXY_BODY_NETWORK_DISCONNECT,
        PROXY_BODY_STREAM,              /* a tarball or a raw stream: never parsed as JSON */
        _PROXY_BODY_KIND_MAX,
} ProxyBodyKind;

typedef struct ProxyEndpoint {
        const char *method;
        const char *pattern;            /* segments: literals, "*" or "**" (above) */
        ProxyBodyKind body;
} ProxyEndpoint;

/* The entry for method and an unversioned, normalised path (dockerproxy-path.h), or NULL. */
const ProxyEndpoint *proxy_endpoint_lookup(const char *method, const char *path);

/* Whether version ("v1.41", as ProxyTarget.version has it; NULL: none) is one the proxy serves:
 * exactly "vMAJOR.MINOR", not below PROXY_API_VERSION_MIN. */
bool proxy_api_version_is_supported(const char *version);

/* The table itself, for tests. */
const ProxyEndpoint *proxy_endpoint_table(size_t *ret_n);
