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
 * itself) or "*" (anything). Hosts, of rules and of requests alike, are normalised once by
 * egress_host_normalize() and compared in that form only. A rule with methods or paths matches only a
 * request whose method and path the gateway can see (plain HTTP, the API pass-through, an intercepted
 * tunnel): an opaque CONNECT tunnel never matches it.
 *
 * A rule's scheme is explicit: "schemes" lists "https" (TLS through CONNECT, the default) and/or "http"
 * (plain requests through the proxy); a rule without "ports" covers the default port of each of its
 * schemes (443, 80) and no other, so "http://host:443/" never matches an https rule on 443. A credential
 * rule is https only: real secrets go only into TLS connections the gateway made and verified. */

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
#define EGRESS_PATH_MAX (8U * 1024U)

typedef enum EgressScheme {
        EGRESS_SCHEME_HTTP = 1 << 0,    /* a plain request through the proxy (absolute form) */
        EGRESS_SCHEME_HTTPS = 1 << 1,   /* a CONNECT tunnel carrying TLS */
} EgressScheme;

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
        char *host;                     /* normalised; "*" or "*.suffix" or a name or an IP literal */
        unsigned schemes;               /* EgressScheme bits; never 0 */
        uint16_t *ports;                /* none: the default port of each scheme (443, 80) */
        size_t n_ports;
        char **methods;                 /* NULL: any method */
        regex_t *paths;                 /* none: any path; extended regexes, unanchored unless written so */
        size_t n_paths;
        EgressDecision decision;
        EgressCredential credential;    /* EGRESS_CREDENTIAL only */
        bool intercept;                 /* "intercept": "always": an allowed https host is intercepted
                                         * too, so the Host of each request is checked against SNI */
} EgressRule;

typedef struct EgressPolicy {
        EgressRule *rules;              /* the last one is "default", deny */
        size_t n_rules;
        bool allow_api;                 /* egress.allow_api: the model API host and its pass-through */
} EgressPolicy;

EgressPolicy *egress_policy_free(EgressPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressPolicy *, egress_policy_free);

/* Compiles the "egress" object (NULL: all defaults) with the model API host api_host (NULL: the default).
 * On a bad rule returns -EINVAL and, in *ret_error, which rule and why. */
int egress_policy_compile(json_object *egress, const char *api_host, EgressPolicy **ret, char **ret_error);

/* Whether host is a name or address the gateway accepts as a target at all: 1..253 bytes of letters,
 * digits, '-', '.', '_', or an IP literal (IPv6 without brackets). */
bool egress_host_is_valid(const char *host);

/* The normalised form of a rule's host pattern: "*", "*." + a normalised name, or a normalised host
 * (egress_host_normalize()); -EINVAL when it is none of these. */
int egress_host_pattern_normalize(const char *pattern, char **ret);

/* Whether pattern is "*", "*.suffix" with a valid suffix, or a valid host. */
bool egress_host_pattern_is_valid(const char *pattern);

/* Whether a rule's host pattern matches host (normalised by egress_host_normalize()). */
bool egress_host_match(const char *pattern, const char *host);

/* The first rule matching scheme, host and port, and method and path when they are known (both NULL for
 * an opaque tunnel). Never NULL: the last rule matches everything. */
const EgressRule *egress_policy_match(const EgressPolicy *p, EgressScheme scheme, const char *host, uint16_t port,
                                      const char *method, const char *path);

/* Whether a credential rule (or an "intercept": "always" allow rule) matches https host:port, whatever
 * its methods and paths: such a host's TLS is intercepted, and the policy then decides on each request
 * inside. */
bool egress_policy_host_intercepted(const EgressPolicy *p, const char *host, uint16_t port);

/* The credential rule that holds dummy as its dummy value, or NULL. */
const EgressRule *egress_policy_find_dummy(const EgressPolicy *p, const char *dummy);

/* The one form of a host every decision is made on: ASCII only (IDNA A-labels; a U-label is refused),
 * lower case, one trailing dot removed, surrounding brackets of an IPv6 literal removed. An IP literal is
 * parsed strictly into its canonical form: IPv4 only as a dotted quad of decimal numbers without leading
 * zeros (inet_aton's legacy forms, "3405803778", "0313.0.0161.02", "0xcb.0.0x71.2", "203.0.113.02",
 * "1.2.3", are refused: a name whose last label is numeric must be such a quad), IPv6 as inet_ntop()
 * writes it, an IPv4-mapped IPv6 address as its IPv4 address. -EINVAL for anything else. */
int egress_host_normalize(const char *host, char **ret);

/* The one form of a request's path rules are matched on and the upstream gets: percent-encoded
 * unreserved characters decoded, other escapes in upper case hex, dot-segments removed (RFC 3986 3.3,
 * 5.2.4, 6.2.2). An encoded "/" or "\\", an encoded dot-segment ("%2e%2e"), a dot-segment with
 * parameters ("..;x", which Tomcat and Jetty read as ".."), a bad escape, a NUL, or a byte RFC 3986 does
 * not allow in a path ("\\", which WHATWG URL parsers read as "/", a blank, "|", "{"...) is refused
 * (-EINVAL): they could mean another path to the server than to the rule. "*" stays "*". */
int egress_path_normalize(const char *path, char **ret);

/* Whether a channel's agents go out only through the egress gateway: egress.enabled of the merged config
 * JSON, default EGRESS_ENABLED_DEFAULT. */
#define EGRESS_ENABLED_DEFAULT true
bool egress_config_enabled(json_object *config);

/* The host of egress.api_upstream (default EGRESS_API_UPSTREAM_DEFAULT), lower case, in a new string. */
#define EGRESS_API_UPSTREAM_DEFAULT "https://" EGRESS_API_HOST_DEFAULT
int egress_config_api_host(json_object *config, char **ret);
