/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the Docker API proxy answers about objects that are not the channel's, and which id it acts on
 * once it decided a reference is the channel's (the engine's inspect answer is asked once; the request
 * goes on naming the id it names).
 *
 * Another channel's container, exec instance, volume or network answers exactly as a missing one: the
 * engine's own 404 body for a missing object of that kind, learnt by asking the engine about
 * PROXY_PROBE_REF (an id no object has), with the probe replaced by the caller's reference. The
 * proxy answers every missing object the same way, so the answer says nothing about which ids exist. */

#include <json-c/json.h>
#include <stdbool.h>

#include "dockerproxy-path.h"

#define PROXY_PROBE_REF "0000000000000000000000000000000000000000000000000000000000000000"
#define PROXY_NOT_FOUND_MAX (4U * 1024U)        /* bytes of an engine's 404 answer */

typedef enum ProxyObjectKind {
        PROXY_OBJECT_CONTAINER,
        PROXY_OBJECT_EXEC,
        PROXY_OBJECT_VOLUME,
        PROXY_OBJECT_NETWORK,
        _PROXY_OBJECT_KIND_MAX,
} ProxyObjectKind;

/* The engine path that inspects the probe of kind ("/containers/0000.../json"). */
const char *proxy_probe_path(ProxyObjectKind kind);

/* Docker's 404 body for a missing object of kind, with the probe as the reference: what is answered
 * when the engine gave no usable answer about the probe. */
const char *proxy_not_found_fallback(ProxyObjectKind kind);

/* Whether body (the engine's answer about the probe, its status 404) can be the template: a JSON
 * object that names the probe, of at most PROXY_NOT_FOUND_MAX bytes. */
bool proxy_not_found_is_template(const char *body);

/* The template with every PROXY_PROBE_REF replaced by ref (a reference of name and id bytes only:
 * nothing in it needs escaping in JSON). -EINVAL for a ref with other bytes, -ENOMEM. */
int proxy_not_found_format(const char *template, const char *ref, char **ret);

/* The id the engine's inspect answer gives the object (a volume's is its name): "Id" for containers
 * and networks, "ID" for exec instances, "Name" for volumes; NULL when missing or not of name and id
 * bytes. */
const char *proxy_inspect_id(ProxyObjectKind kind, json_object *inspect);

/* Name and id bytes: [A-Za-z0-9_.-], not beginning with '.' or '-', at most 256. */
bool proxy_ref_is_valid(const char *s);

/* The runner's own containers have fixed names: loop-chrome-CHANNEL, loop-shell-CHANNEL and
 * loop-BASE-XXXXXX. A nested container of such a name, made first by any channel's agent, would keep
 * the operator's from being created (one channel stopping another's Chrome). Names beginning with
 * "loop-" (case ignored, after the '/' Docker drops) are loop's: the name a container create or rename
 * (method and target as the engine reads them, the query's "name" in any case as Podman reads it) gives,
 * when it is one of those; NULL when the request names no container so. */
const char *proxy_container_name_reserved(const char *method, const ProxyTarget *t);
