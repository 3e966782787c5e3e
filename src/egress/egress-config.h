/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The egress gateway's configuration, typed: what loop-generator writes into the credential egress.json
 * ({"egress": {...}, "anthropic_api_key": "...", "claude_code_oauth_token": "..."}) read once. A file
 * that cannot be used is not a failure of the load: it says why in .error, and the gateway refuses every
 * request with 503 (the agent has no egress) instead of not starting. */

#include "egress-policy.h"
#include "egress-upstream.h"
#include "macro.h"

#define EGRESS_CONFIG_SIZE_MAX (1024U * 1024U)

typedef struct EgressConfig {
        char *error;                    /* set: not usable, and why (never a secret) */
        EgressPolicy *policy;
        EgressUpstream api;             /* egress.api_upstream: https only, no userinfo */
        EgressUpstream proxy;           /* the host's HTTP proxy; .host NULL: none */
        const char *proxy_from;         /* "egress.upstream_proxy" or the environment variable it came from */
        char *api_key, *oauth_token;    /* NULL: none */
        char *ca_file;                  /* egress.ca_file, trusted besides the system's store; NULL: none */
} EgressConfig;

void egress_config_done(EgressConfig *c);

/* Reads path (NULL: $CREDENTIALS_DIRECTORY/egress.json). Every secret in it (keys, credential rules'
 * secrets, the proxy's password in each form it could be logged in) is registered with
 * audit_add_secret() before anything could log it. Returns 0 with *ret filled (.error set when the file
 * is not usable; what was read before the problem stays), or -ENOMEM. */
int egress_config_load(const char *path, EgressConfig *ret);

/* The same from a parsed document; the upstream proxy falls back to the environment's https_proxy,
 * HTTPS_PROXY, http_proxy, HTTP_PROXY. */
int egress_config_from_json(json_object *doc, EgressConfig *ret);
