/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Docker API proxy rebuilds the JSON bodies it forwards instead of filtering them: a body (as
 * proxy_body_parse() gave it) is read field by field against a table of the fields the proxy knows for
 * its endpoint, every value is checked against what it may be, and a new body is written holding only
 * those fields, under the names the engine documents. A field not in the table is refused (an engine
 * reads fields the proxy never heard of: Podman's LogConfig path=, bind options such as overlay's
 * upperdir=), so what the engine gets is exactly what was checked.
 *
 * Fields are of these kinds: values of a type (string, boolean, integer, list of strings, map of
 * strings) with a check of their value; objects, lists and maps of objects with their own table; and
 * fields that may only be absent or zero (Privileged, Devices, Links, PortBindings...), which the
 * docker CLI sends as false, "" or [] and which are left out of the rebuilt body. Names match ignoring
 * case, as Go's decoder matches them; a null is an absent field.
 *
 * What is forced onto a body afterwards (the channel's labels, cap drop ALL, no-new-privileges last,
 * nosuid,nodev on binds, the pids limit...) is dockerproxy-nested.h's. */

#include <json-c/json.h>

#include "dockerproxy-endpoint.h"

#define PROXY_BODY_FIELD_MAX 160U       /* bytes of a field path in an answer or the journal */
#define PROXY_BODY_FIELDS_LOG_MAX 512U  /* bytes of the list of fields a record carries */
#define PROXY_BODY_LIST_MAX 1024U       /* elements of one list, entries of one map */

typedef struct ProxyBodyRefusal {
        char field[PROXY_BODY_FIELD_MAX];       /* "HostConfig.LogConfig.Config" */
        const char *reason;                     /* static: "is not a field the proxy knows" */
} ProxyBodyRefusal;

/* Rebuilds in (an object, or NULL for none) for an endpoint's body kind into *ret (a new object). On
 * success *ret_fields (may be NULL) is the comma-separated list of the fields that carried a value
 * (what the rules and checks looked at, for the journal), at most PROXY_BODY_FIELDS_LOG_MAX bytes.
 * -EPERM when a field or value is refused, -EBADMSG when a value has the wrong type or the body is
 * not an object, each with the field and the reason in *ret_refusal; -ENOMEM. */
int proxy_body_rebuild(ProxyBodyKind kind, json_object *in, json_object **ret, char **ret_fields,
                       ProxyBodyRefusal *ret_refusal);

/* Whether a dotted field path ("HostConfig.LogConfig.Type", ignoring case; a map's key is any one
 * segment) is one the table of kind knows. */
bool proxy_body_knows(ProxyBodyKind kind, const char *path);

/* The checks of single values, for the tests and the fuzzer. */
bool proxy_bind_spec_is_allowed(const char *spec, const char **ret_reason);
bool proxy_security_opt_is_allowed(const char *opt);
bool proxy_capability_may_be_added(const char *cap);
bool proxy_network_name_is_allowed(const char *name);
