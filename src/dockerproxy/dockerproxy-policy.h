/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Docker API proxy's policy: which requests an agent may send to the engine. Pure logic; the
 * service (services/loop-dockerproxy.c) parses requests and calls these.
 *
 * The document is the reference's proxy-policy.json:
 *   {default_decision,
 *    http_rules:[{methods[], paths[regex], decision, message}],
 *    body_rules:[{applies_to:"METHOD ^regex$", content_types[], max_body_bytes,
 *                 json_checks:[{path:"HostConfig.Binds[*]", op, values[], except[]}], decision, message}]}
 * Paths are matched unversioned (dockerproxy-path.h), as extended regexes, ignoring case; methods "*" or
 * none match any. Rules are checked in order, the first match wins; a body rule fires on its first check
 * that fires. Rule ids are "http[i]", "body[i]" (index in the compiled document) or "default".
 *
 * A request is decided thus: an http rule's deny is final; otherwise a body rule's deny is; otherwise
 * either one's approve asks a human; otherwise an http or body rule's allow allows; otherwise the
 * default decision. Body rules see the JSON body (every endpoint but the streamed ones below) and the
 * query parameters (as a flat object of strings): a check fires when it fires on either, so that
 * /build?networkmode=host is judged like a create body.
 *
 * JSON checks (values compared ignoring case; a path names object keys ignoring case, "[*]" every
 * element of an array, "[N]" one):
 *   present            the value is there and not null, false, 0, "", [] or {}
 *   empty_array        the value is an empty array
 *   equals             the value (string, number, boolean) is one of values
 *   contains_any       a string value contains one of values
 *   starts_with_any    a string value starts with one of values
 *   not_in             a string value is none of values (another type fires)
 *   capability_not_in  a capability, "CAP_" and case aside, is none of values ("ALL" is none)
 *   source_path_in     the source of a bind (a Binds "src:dst[:opts]" string, a Mounts object of Type
 *                      bind, a volume's DriverOpts.device), symlinks resolved, is one of values or below
 *                      one ("/" only itself), and under none of except
 *   source_path_not_in the resolved source is under none of values nor of except
 * Named volumes have no source to resolve and never fire the path ops. A source that cannot be resolved
 * (missing, relative, unreadable) fires the check only when its rule denies. */

#include <json-c/json.h>

#include "config.h"
/* Transitional, for services/loop-dockerproxy.c until it includes these itself (issue 20). */
#include "env-util.h"
#include "string-util.h"

#define PROXY_BODY_MAX (1024U * 1024U)          /* a JSON body; larger is 413 */
#define PROXY_JSON_DEPTH_MAX 64
#define PROXY_JSON_KEYS_MAX 65536U              /* object keys in one body */
#define PROXY_CHECK_VALUES_MAX 1024U            /* values one check looks at; beyond, it fails closed */
#define PROXY_POLICY_FILE_MAX (4U * 1024U * 1024U)
#define PROXY_POLICY_RULES_MAX 4096U
#define PROXY_RULE_ID_MAX 32U
#define PROXY_RULE_ID_ERROR "error"

typedef struct ProxyVerdict {
        Decision decision;
        char rule_id[PROXY_RULE_ID_MAX];        /* "http[2]", "body[7]", "default", "error" */
        const char *message;                    /* the rule's (owned by the policy), or NULL */
        bool matched;                           /* a rule matched (as opposed to the default) */
} ProxyVerdict;

typedef struct ProxyPolicy ProxyPolicy;

/* The channel's document: cfg's rules first, then the built-in ones (see dockerproxy-policy.c): http
 * denies of swarm, nodes, services, tasks, secrets, configs, plugins, the libpod API and BuildKit's
 * session, approvals of exec create/start and container archives; body denies on container create
 * (host bind sources, Privileged, host namespaces, CgroupParent, runtimes, added capabilities,
 * unconfined security options, devices, VolumesFrom, sysctls, published ports, emptied masked paths),
 * container update, volume create with bind options, build with host networking; approvals of
 * container:* namespaces, volumes with a device, and binds outside work_dir. work_dir (absolute, or
 * NULL) is excepted from the host-source denies. cfg may be NULL. */
int proxy_policy_document(const DockerProxyConfig *cfg, const char *work_dir, json_object **ret);

/* The channel's part alone: {default_decision, http_rules, body_rules} of cfg (may be NULL). This is what
 * loop-generator hands the service (the "policy" credential); proxy_policy_document_merge() appends the
 * built-in rules to such a document (channel may be NULL), as proxy_policy_document() does. -EINVAL for
 * a work_dir that is relative or "/", or rules that are not arrays. */
int proxy_policy_channel_document(const DockerProxyConfig *cfg, json_object **ret);
int proxy_policy_document_merge(json_object *channel, const char *work_dir, json_object **ret);
/* No rules and the default decision allow: nothing the built-in document lacks. */
bool proxy_policy_channel_document_is_empty(json_object *doc);

/* Reads a channel document (at most PROXY_POLICY_FILE_MAX), merges the built-in rules and compiles. */
int proxy_policy_load_channel_file(const char *path, const char *work_dir, ProxyPolicy **ret, char **ret_error);

/* -EINVAL and a one-line reason naming the rule in *ret_error (may be NULL) on a compile error. */
int proxy_policy_compile(json_object *doc, ProxyPolicy **ret, char **ret_error);
ProxyPolicy *proxy_policy_free(ProxyPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProxyPolicy *, proxy_policy_free);

Decision proxy_policy_default_decision(const ProxyPolicy *p);

/* The first http rule matching; ret->matched false (and the default decision) when none does. */
void proxy_policy_check_http(const ProxyPolicy *p, const char *method, const char *path, ProxyVerdict *ret);

/* Whether body rules apply to method and path, and the body cap to buffer them with (the smallest
 * max_body_bytes of the applicable rules, PROXY_BODY_MAX at most). */
bool proxy_policy_wants_body(const ProxyPolicy *p, const char *method, const char *path, size_t *ret_max);

/* The first body rule firing on body (a parsed JSON value or NULL) or query (an object of strings or
 * NULL); content_type is the request's (may be NULL). */
void proxy_policy_check_body(const ProxyPolicy *p, const char *method, const char *path, const char *content_type,
                             json_object *body, json_object *query, ProxyVerdict *ret);

/* Both verdicts into one, as described above. */
void proxy_verdict_combine(const ProxyVerdict *http, const ProxyVerdict *body, Decision default_decision,
                           ProxyVerdict *ret);

/* Endpoints whose body is a stream (build contexts, image tarballs, archives), never parsed as JSON. */
bool proxy_path_body_is_stream(const char *method, const char *path);

/* Parses a request body as the engine will: JSON (strict, UTF-8) with no two keys of an object equal
 * ignoring ASCII case (the engine's decoder matches fields ignoring case, so either could be the one it
 * takes), no non-ASCII key (Go's decoder folds some of those onto ASCII ones), at most
 * PROXY_JSON_DEPTH_MAX deep and PROXY_JSON_KEYS_MAX keys. An empty body is {}. -EBADMSG for anything
 * refused (400), -EFBIG over PROXY_BODY_MAX (413). */
int proxy_body_parse(const char *body, size_t size, json_object **ret);
