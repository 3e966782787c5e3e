/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The egress gateway's policy (config key "egress"): which hosts the agent may reach, on which ports, with
 * which methods and paths, and for which hosts a credential is injected. Rules are checked in order, the
 * first that matches wins, no match is a deny:
 *
 *   1. egress.rules, as written (the operator's own allows and denies come first);
 *   2. the model API host on port 443 ("api"), unless egress.allow_api is false;
 *   3. every host of egress.registries on ports 80 and 443 ("registry[i]");
 *   4. deny ("default").
 *
 * A rule's host is "example.com" (that name only), "*.example.com" (any name below it, not example.com
 * itself) or "*" (anything). Names are compared case-insensitively without a trailing dot. A rule with
 * methods or paths matches only a request whose method and path the gateway can see (plain HTTP, the API
 * pass-through): an opaque CONNECT tunnel never matches it. */

#include <regex.h>
#include <stdint.h>
#include <json-c/json.h>

#include "macro.h"

#define EGRESS_RULES_MAX 1024U
#define EGRESS_PORTS_MAX 64U
#define EGRESS_METHODS_MAX 32U
#define EGRESS_PATHS_MAX 64U
#define EGRESS_REGISTRIES_MAX 256U
#define EGRESS_HOST_MAX 253U
#define EGRESS_RULE_ID_MAX 32U
#define EGRESS_API_HOST_DEFAULT "api.anthropic.com"
/* The key the agent holds for the model API (ANTHROPIC_API_KEY / CLAUDE_CODE_OAUTH_TOKEN): a dummy the
 * API pass-through swaps for the real one, refused anywhere else. */
#define EGRESS_DUMMY_KEY_BUILTIN "sk-proxy"

typedef enum EgressDecision {
        EGRESS_ALLOW,
        EGRESS_DENY,
        EGRESS_CREDENTIAL,      /* allowed; the dummy in credential.header is replaced by the secret */
        _EGRESS_DECISION_MAX,
        _EGRESS_DECISION_INVALID = -EINVAL,
} EgressDecision;

const char *egress_decision_to_string(EgressDecision d);
EgressDecision egress_decision_from_string(const char *s);

typedef struct EgressCredential {
        char *header;           /* e.g. "Authorization" */
        char *dummy;            /* the value the agent holds, e.g. "ghp_loopdummy" */
        char *secret;           /* the real value; never logged */
} EgressCredential;

typedef struct EgressRule {
        char id[EGRESS_RULE_ID_MAX];    /* "rule[3]", "api", "registry[0]", "default" */
        char *host;                     /* lower case; "*" or "*.suffix" or a name */
        uint16_t *ports;                /* none: any port */
        size_t n_ports;
        char **methods;                 /* NULL: any method */
        regex_t *paths;                 /* none: any path; extended regexes, unanchored unless written so */
        size_t n_paths;
        EgressDecision decision;
        EgressCredential credential;    /* EGRESS_CREDENTIAL only */
} EgressRule;

typedef struct EgressPolicy {
        EgressRule *rules;              /* the last one is "default", deny */
        size_t n_rules;
} EgressPolicy;

EgressPolicy *egress_policy_free(EgressPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressPolicy *, egress_policy_free);

/* Compiles the "egress" object (NULL: all defaults) with the model API host api_host (NULL: the default).
 * On a bad rule returns -EINVAL and, in *ret_error, which rule and why. */
int egress_policy_compile(json_object *egress, const char *api_host, EgressPolicy **ret, char **ret_error);

/* Whether host is a name or address the gateway accepts as a target at all: 1..253 bytes of letters,
 * digits, '-', '.', '_', or an IP literal (IPv6 without brackets). */
bool egress_host_is_valid(const char *host);

/* Whether pattern is "*", "*.suffix" with a valid suffix, or a valid host. */
bool egress_host_pattern_is_valid(const char *pattern);

/* Whether a rule's host pattern matches host (already lower case, no trailing dot). */
bool egress_host_match(const char *pattern, const char *host);

/* The first rule matching host and port, and method and path when they are known (both NULL for an
 * opaque tunnel). Never NULL: the last rule matches everything. */
const EgressRule *egress_policy_match(const EgressPolicy *p, const char *host, uint16_t port,
                                      const char *method, const char *path);

/* Whether a credential rule matches host and port, whatever its methods and paths: such a host's TLS is
 * intercepted, and the policy then decides on each request inside. */
bool egress_policy_host_has_credential(const EgressPolicy *p, const char *host, uint16_t port);

/* The credential rule that holds dummy as its dummy value, or NULL. */
const EgressRule *egress_policy_find_dummy(const EgressPolicy *p, const char *dummy);

/* Normalizes a host in place: lower case, trailing dot removed. */
void egress_host_normalize(char *host);

/* Whether a channel's agents go out only through the egress gateway: egress.enabled of the merged config
 * JSON, default EGRESS_ENABLED_DEFAULT. */
#define EGRESS_ENABLED_DEFAULT true
bool egress_config_enabled(json_object *config);

/* The host of egress.api_upstream (default EGRESS_API_UPSTREAM_DEFAULT), lower case, in a new string. */
#define EGRESS_API_UPSTREAM_DEFAULT "https://" EGRESS_API_HOST_DEFAULT
int egress_config_api_host(json_object *config, char **ret);
