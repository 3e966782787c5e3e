/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Docker API proxy reads a request target the way the engine will, before any rule sees it, and
 * forwards what it read rather than what it was sent: the rules and the engine never disagree about
 * which endpoint a request names.
 *
 * Path: percent-encoding decoded once (a decoded '%', '?', '#', '\\', control, space or non-ASCII byte
 * is refused: double encoding and tricks that another decoder would read differently), "//" and "."
 * segments dropped, ".." resolved (never above the root), no trailing '/'. A leading /vN.M segment is
 * the API version: the rules match the unversioned path, the engine gets the versioned one. Any other
 * first segment that either engine's router might read as a version (Docker's "v[0-9.]+", Podman's
 * "v[0-9][0-9A-Za-z.-]*", and those with a capital V) is refused: "/v1a/..." is a version to Podman.
 * Case is kept (container names have it); rules match case-insensitively instead.
 *
 * Query: "k=v" pairs separated by '&', '+' and percent-encoding decoded; a ';' (which Go's parser once
 * took for a separator), a key given twice (also in another case: Podman reads parameters ignoring
 * case), a decoded control byte or a malformed escape is refused.
 * The API's list parameters (t, changes, cachefrom) may repeat and are arrays of strings. */

#include <json-c/json.h>

#include "macro.h"

#define PROXY_PATH_MAX 4096U            /* bytes of a decoded path */
#define PROXY_PATH_SEGMENTS_MAX 64U
#define PROXY_QUERY_MAX (16U * 1024U)   /* bytes of a raw query string */
#define PROXY_QUERY_PARAMS_MAX 64U
#define PROXY_API_VERSION_MAX 16U

typedef struct ProxyTarget {
        char *path;                     /* clean, decoded, with the version: "/v1.41/containers/create" */
        char *unversioned;              /* what rules match: "/containers/create" */
        char *version;                  /* "v1.41", or NULL */
        json_object *query;             /* {"key": "value", "t": ["a", "b"], ...}, decoded; never NULL */
} ProxyTarget;

void proxy_target_done(ProxyTarget *t);

/* Parses an origin-form target's path and query (query may be NULL). spare_query, when not NULL, is an
 * empty JSON object the query is read into (a kept connection's from its last request), taken in every
 * case; else a new one is made. -EBADMSG for anything refused above, -E2BIG beyond the caps, -ENOMEM. */
int proxy_target_parse(const char *path, const char *query, json_object *spare_query, ProxyTarget *ret);

/* The target to forward: t->path and t->query percent-encoded where needed ("/v1.41/x?a=b%20c").
 * Allocated; NULL on ENOMEM. */
char *proxy_target_format(const ProxyTarget *t);

/* The reference segment after prefix ("/containers/") of the target replaced by id (both the
 * unversioned path and the one forwarded): a request resolved once goes on naming the id. -EINVAL when
 * the path does not have ref there or id is empty or has a '/', -ENOMEM. */
int proxy_target_replace_ref(ProxyTarget *t, const char *prefix, const char *ref, const char *id);

/* The query parameter key, ignoring case as Podman reads it (there is at most one: two keys equal but
 * for case are refused), and the key as spelt in *ret_key (may be NULL). NULL when absent. */
json_object *proxy_query_get(const ProxyTarget *t, const char *key, const char **ret_key);

/* Whether every query parameter of t is one of known[], spelt exactly as there (an allow-list: a
 * parameter the proxy does not know is one it cannot vouch for). */
bool proxy_query_only(const ProxyTarget *t, const char * const *known, size_t n_known);
