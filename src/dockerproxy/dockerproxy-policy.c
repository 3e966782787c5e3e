/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's policy: the document, its compilation and the checks (see the header). */

#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <strings.h>

#include "config-schema.h"
#include "dockerproxy-policy.h"
#include "policy-compile.h"
#include "path-util.h"
#include "io-util.h"
#include "json-util.h"
#include "string-util.h"
#include "strv.h"
#include "regex-util.h"

/* ---- the built-in rules ---- */

/* Bind sources no agent gets: the host's system, its users, its devices and kernel interfaces, and the
 * engines' and loop's own sockets and state. "/" is the root itself (everything is below it). */
static const char * const host_sources[] = {
        "/", "/etc", "/root", "/home", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
        "/proc", "/sys", "/dev", "/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd",
        "/run/loop", "/run/systemd", "/run/dbus", "/var/lib/docker", "/var/lib/containers", "/var/lib/loop",
        "/var/log", "/srv", NULL,
};

/* The engines' default capabilities plus the two the reference also allows. */
static const char * const default_capabilities[] = {
        "CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID", "SETFCAP",
        "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE", "SYS_NICE", "IPC_LOCK", NULL,
};

#define CREATE "POST ^/containers/create$"

/* loop's own images (the agent's, Chrome's): whoever could retag one would decide what the next agent
 * container runs, its entrypoint and the gate included. */
#define LOOP_IMAGE_RE "((localhost|docker\\\\.io)/)?(library/)?loop-"
static const char * const loop_image_prefixes[] = {
        "loop-", "localhost/loop-", "docker.io/loop-", "docker.io/library/loop-", "library/loop-", NULL,
};

/* Placeholders filled in by proxy_policy_document(): @HOST@ the host sources, @CAPS@ the capabilities,
 * @WORK@ the work dir (an empty list without one). */
static const char default_rules[] =
"{"
"\"http_rules\": ["
" {\"paths\": [\"^/(swarm|nodes|services|tasks|secrets|configs|plugins|distribution)(/|$)\"], \"decision\": \"deny\","
"  \"message\": \"swarm, plugin and distribution endpoints are not available to agents\"},"
" {\"paths\": [\"^/libpod(/|$)\"], \"decision\": \"deny\","
"  \"message\": \"Podman's own API is not filtered; use the Docker API\"},"
" {\"paths\": [\"^/(session|grpc)$\"], \"decision\": \"deny\","
"  \"message\": \"BuildKit sessions are not available through the proxy (use the classic builder)\"},"
" {\"methods\": [\"POST\"], \"paths\": [\"^/containers/[^/]+/exec$\", \"^/exec/[^/]+/start$\"], \"decision\": \"approve\","
"  \"message\": \"run a command in a container\"},"
" {\"methods\": [\"PUT\", \"GET\", \"HEAD\"], \"paths\": [\"^/containers/[^/]+/archive$\"], \"decision\": \"approve\","
"  \"message\": \"copy files into or out of a container\"},"
" {\"methods\": [\"GET\"], \"paths\": [\"^/containers/[^/]+/export$\"], \"decision\": \"approve\","
"  \"message\": \"export a container's file system\"},"
" {\"methods\": [\"DELETE\"], \"paths\": [\"^/images/" LOOP_IMAGE_RE "\"], \"decision\": \"deny\","
"  \"message\": \"loop's own images are not the agent's to change\"},"
" {\"methods\": [\"POST\"], \"paths\": [\"^/images/load$\"], \"decision\": \"approve\","
"  \"message\": \"load images from a tarball (it may name any image)\"}"
"],"
"\"body_rules\": ["
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"bind mounts of host system paths are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.Binds[*]\", \"op\": \"source_path_in\", \"values\": @HOST@, \"except\": @WORK@},"
"                   {\"path\": \"HostConfig.Mounts[*]\", \"op\": \"source_path_in\", \"values\": @HOST@, \"except\": @WORK@}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"privileged containers are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.Privileged\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"host namespaces are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.PidMode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"HostConfig.NetworkMode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"HostConfig.IpcMode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"HostConfig.UsernsMode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"HostConfig.CgroupnsMode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"HostConfig.UTSMode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"NetworkingConfig.EndpointsConfig.host\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"a cgroup parent is the proxy's to set\","
"  \"json_checks\": [{\"path\": \"HostConfig.CgroupParent\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"only the default runtimes are allowed\","
"  \"json_checks\": [{\"path\": \"HostConfig.Runtime\", \"op\": \"not_in\", \"values\": [\"\", \"runc\", \"crun\"]}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"capabilities beyond the engine's defaults are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.CapAdd[*]\", \"op\": \"capability_not_in\", \"values\": @CAPS@},"
"                   {\"path\": \"HostConfig.Capabilities[*]\", \"op\": \"capability_not_in\", \"values\": @CAPS@}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"security options that disable confinement are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.SecurityOpt[*]\", \"op\": \"contains_any\","
"                    \"values\": [\"unconfined\", \"disable\", \"seccomp\", \"no-new-privileges=false\", \"no-new-privileges:false\"]}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"host devices are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.Devices\", \"op\": \"present\"},"
"                   {\"path\": \"HostConfig.DeviceCgroupRules\", \"op\": \"present\"},"
"                   {\"path\": \"HostConfig.DeviceRequests\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"VolumesFrom is refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.VolumesFrom\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"sysctls are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.Sysctls\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"masked and read-only kernel paths stay\","
"  \"json_checks\": [{\"path\": \"HostConfig.MaskedPaths\", \"op\": \"empty_array\"},"
"                   {\"path\": \"HostConfig.ReadonlyPaths\", \"op\": \"empty_array\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"ports on the host are refused\","
"  \"json_checks\": [{\"path\": \"HostConfig.PortBindings\", \"op\": \"present\"},"
"                   {\"path\": \"HostConfig.PublishAllPorts\", \"op\": \"present\"}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"deny\", \"message\": \"only bind, volume and tmpfs mounts without driver options or shared propagation\","
"  \"json_checks\": [{\"path\": \"HostConfig.Mounts[*].Type\", \"op\": \"not_in\", \"values\": [\"bind\", \"volume\", \"tmpfs\"]},"
"                   {\"path\": \"HostConfig.Mounts[*].VolumeOptions.DriverConfig\", \"op\": \"present\"},"
"                   {\"path\": \"HostConfig.Mounts[*].BindOptions.Propagation\", \"op\": \"contains_any\", \"values\": [\"shared\", \"slave\"]},"
"                   {\"path\": \"HostConfig.Binds[*]\", \"op\": \"contains_any\","
"                    \"values\": [\":shared\", \",shared\", \":rshared\", \",rshared\", \":slave\", \",slave\", \":rslave\", \",rslave\"]},"
"                   {\"path\": \"HostConfig.VolumeDriver\", \"op\": \"not_in\", \"values\": [\"\", \"local\"]}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"approve\", \"message\": \"join another container's namespaces\","
"  \"json_checks\": [{\"path\": \"HostConfig.PidMode\", \"op\": \"starts_with_any\", \"values\": [\"container:\"]},"
"                   {\"path\": \"HostConfig.IpcMode\", \"op\": \"starts_with_any\", \"values\": [\"container:\"]},"
"                   {\"path\": \"HostConfig.NetworkMode\", \"op\": \"starts_with_any\", \"values\": [\"container:\"]}]},"
" {\"applies_to\": \"" CREATE "\", \"decision\": \"approve\", \"message\": \"bind mount from outside the workspace\","
"  \"json_checks\": [{\"path\": \"HostConfig.Binds[*]\", \"op\": \"source_path_not_in\", \"values\": @WORK@},"
"                   {\"path\": \"HostConfig.Mounts[*]\", \"op\": \"source_path_not_in\", \"values\": @WORK@}]},"
" {\"applies_to\": \"POST ^/containers/[^/]+/update$\", \"decision\": \"deny\", \"message\": \"updates that widen a container are refused\","
"  \"json_checks\": [{\"path\": \"Privileged\", \"op\": \"present\"},"
"                   {\"path\": \"HostConfig.Privileged\", \"op\": \"present\"},"
"                   {\"path\": \"CapAdd\", \"op\": \"present\"},"
"                   {\"path\": \"HostConfig.CapAdd\", \"op\": \"present\"},"
"                   {\"path\": \"Devices\", \"op\": \"present\"},"
"                   {\"path\": \"DeviceCgroupRules\", \"op\": \"present\"},"
"                   {\"path\": \"DeviceRequests\", \"op\": \"present\"},"
"                   {\"path\": \"CgroupParent\", \"op\": \"present\"}]},"
" {\"applies_to\": \"POST ^/containers/[^/]+/exec$\", \"decision\": \"deny\", \"message\": \"privileged exec is refused\","
"  \"json_checks\": [{\"path\": \"Privileged\", \"op\": \"present\"}]},"
" {\"applies_to\": \"POST ^/volumes/create$\", \"decision\": \"deny\", \"message\": \"volumes that bind host paths or use other drivers are refused\","
"  \"json_checks\": [{\"path\": \"Driver\", \"op\": \"not_in\", \"values\": [\"\", \"local\"]},"
"                   {\"path\": \"DriverOpts.o\", \"op\": \"contains_any\", \"values\": [\"bind\"]},"
"                   {\"path\": \"DriverOpts.type\", \"op\": \"not_in\", \"values\": [\"tmpfs\"]},"
"                   {\"path\": \"DriverOpts.device\", \"op\": \"source_path_in\", \"values\": @HOST@, \"except\": @WORK@}]},"
" {\"applies_to\": \"POST ^/volumes/create$\", \"decision\": \"approve\", \"message\": \"a volume backed by a device\","
"  \"json_checks\": [{\"path\": \"DriverOpts.device\", \"op\": \"present\"}]},"
" {\"applies_to\": \"POST ^/networks/create$\", \"decision\": \"deny\", \"message\": \"only bridge networks\","
"  \"json_checks\": [{\"path\": \"Driver\", \"op\": \"not_in\", \"values\": [\"\", \"bridge\"]},"
"                   {\"path\": \"ConfigOnly\", \"op\": \"present\"}, {\"path\": \"ConfigFrom\", \"op\": \"present\"}]},"
" {\"applies_to\": \"POST ^/build$\", \"decision\": \"deny\", \"message\": \"builds on the host network, in a chosen cgroup or from a remote are refused\","
"  \"json_checks\": [{\"path\": \"networkmode\", \"op\": \"equals\", \"values\": [\"host\"]},"
"                   {\"path\": \"networkmode\", \"op\": \"starts_with_any\", \"values\": [\"container:\"]},"
"                   {\"path\": \"cgroupparent\", \"op\": \"present\"},"
"                   {\"path\": \"remote\", \"op\": \"present\"}]},"
" {\"applies_to\": \"POST ^/images/create$\", \"decision\": \"deny\", \"message\": \"imports from a URL are refused\","
"  \"json_checks\": [{\"path\": \"fromSrc\", \"op\": \"contains_any\", \"values\": [\":\"]}]},"
" {\"applies_to\": \"POST ^/(build|commit|images/create|images/.+/tag)$\", \"decision\": \"deny\","
"  \"message\": \"loop's own images are not the agent's to change\","
"  \"json_checks\": [{\"path\": \"t[*]\", \"op\": \"starts_with_any\", \"values\": @LOOPIMG@},"
"                   {\"path\": \"repo\", \"op\": \"starts_with_any\", \"values\": @LOOPIMG@},"
"                   {\"path\": \"fromImage\", \"op\": \"starts_with_any\", \"values\": @LOOPIMG@}]}"
"]}";

static int json_strv(const char * const *l, json_object **ret) {
        *ret = json_strings_new(l, SIZE_MAX);
        return *ret ? 0 : -ENOMEM;
}

static json_object *http_rule_to_json(const HttpRule *h) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o ||
            json_add(o, "methods", json_strings_new((const char * const *) h->methods, SIZE_MAX)) < 0 ||
            json_add(o, "paths", json_strings_new((const char * const *) h->paths, SIZE_MAX)) < 0 ||
            json_add(o, "decision", json_object_new_string(decision_to_string(h->decision))) < 0 ||
            (h->message && json_add(o, "message", json_object_new_string(h->message)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

static json_object *json_check_to_json(const JsonCheck *c) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o ||
            json_add(o, "path", json_object_new_string(c->path)) < 0 ||
            json_add(o, "op", json_object_new_string(json_check_op_to_string(c->op))) < 0 ||
            json_add(o, "values", json_strings_new((const char * const *) c->values, SIZE_MAX)) < 0 ||
            json_add(o, "except", json_strings_new((const char * const *) c->except, SIZE_MAX)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static json_object *body_rule_to_json(const BodyRule *b) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(), *checks = json_object_new_array();

        if (!o || !checks)
                return NULL;
        for (size_t j = 0; j < b->n_json_checks; j++)
                if (json_push(checks, json_check_to_json(&b->json_checks[j])) < 0)
                        return NULL;
        if (json_add(o, "applies_to", json_object_new_string(b->applies_to)) < 0 ||
            json_add(o, "content_types", json_strings_new((const char * const *) b->content_types, SIZE_MAX)) < 0 ||
            (b->max_body_bytes > 0 && json_add(o, "max_body_bytes", json_object_new_uint64(b->max_body_bytes)) < 0) ||
            json_add(o, "json_checks", TAKE_PTR(checks)) < 0 ||
            json_add(o, "decision", json_object_new_string(decision_to_string(b->decision))) < 0 ||
            (b->message && json_add(o, "message", json_object_new_string(b->message)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

int proxy_policy_channel_document(const DockerProxyConfig *cfg, json_object **ret) {
        _cleanup_(json_object_putp) json_object *doc = json_object_new_object(), *http = json_object_new_array(),
                *body = json_object_new_array();

        /* every add checked: a rule or a default decision lost to a failed allocation would change what
         * the policy allows */
        if (!doc || !http || !body)
                return -ENOMEM;
        for (size_t i = 0; cfg && i < cfg->n_http_rules; i++)
                if (json_push(http, http_rule_to_json(&cfg->http_rules[i])) < 0)
                        return -ENOMEM;
        for (size_t i = 0; cfg && i < cfg->n_body_rules; i++)
                if (json_push(body, body_rule_to_json(&cfg->body_rules[i])) < 0)
                        return -ENOMEM;
        if (json_add(doc, "default_decision",
                     json_object_new_string(decision_to_string(cfg ? cfg->default_decision : DECISION_ALLOW))) < 0 ||
            json_add(doc, "http_rules", TAKE_PTR(http)) < 0 ||
            json_add(doc, "body_rules", TAKE_PTR(body)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}

bool proxy_policy_channel_document_is_empty(json_object *doc) {
        json_object *v;

        if (json_object_object_get_ex(doc, "default_decision", &v) &&
            !streq_ptr(json_object_get_string(v), "allow"))
                return false;
        return (!json_object_object_get_ex(doc, "http_rules", &v) || json_object_array_length(v) == 0) &&
                (!json_object_object_get_ex(doc, "body_rules", &v) || json_object_array_length(v) == 0);
}

int proxy_policy_document_merge(json_object *channel, const char *work_dir, json_object **ret) {
        _cleanup_(json_object_putp) json_object *doc = NULL, *defaults = NULL, *hosts = NULL, *caps = NULL, *work = NULL,
                *images = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        const char *w[] = { work_dir, NULL };
        json_object *v, *dh, *db;
        int r;

        if (work_dir && (work_dir[0] != '/' || streq(work_dir, "/")))
                return -EINVAL;
        if (channel && !json_object_is_type(channel, json_type_object))
                return -EINVAL;
        if ((r = json_strv(host_sources, &hosts)) < 0 ||
            (r = json_strv(default_capabilities, &caps)) < 0 ||
            (r = json_strv(work_dir ? w : NULL, &work)) < 0 ||
            (r = json_strv(loop_image_prefixes, &images)) < 0)
                return r;
        a = str_replace_all(default_rules, "@HOST@", json_object_to_json_string_ext(hosts, JSON_C_TO_STRING_PLAIN));
        b = a ? str_replace_all(a, "@CAPS@", json_object_to_json_string_ext(caps, JSON_C_TO_STRING_PLAIN)) : NULL;
        c = b ? str_replace_all(b, "@WORK@", json_object_to_json_string_ext(work, JSON_C_TO_STRING_PLAIN)) : NULL;
        d = c ? str_replace_all(c, "@LOOPIMG@", json_object_to_json_string_ext(images, JSON_C_TO_STRING_PLAIN)) : NULL;
        if (!d)
                return -ENOMEM;
        defaults = json_tokener_parse(d);
        assert(defaults);       /* a built-in document that does not parse is a bug */

        doc = json_object_new_object();
        if (!doc)
                return -ENOMEM;
        /* the channel's keys as they are (the compiler judges them), its rules first; every add checked:
         * built-in rules lost to a failed allocation would allow what they deny. Values are taken with
         * json_object_get(), which cannot fail (a JSON null is NULL, not an error). */
        if (channel) {
                json_object_object_foreach(channel, key, val)
                        if (json_object_object_add(doc, key, json_object_get(val)) < 0) {
                                json_object_put(val);
                                return -ENOMEM;
                        }
        }
        if (!json_object_object_get_ex(doc, "default_decision", NULL) &&
            json_add(doc, "default_decision", json_object_new_string("allow")) < 0)
                return -ENOMEM;
        json_object_object_get_ex(defaults, "http_rules", &dh);
        json_object_object_get_ex(defaults, "body_rules", &db);
        const char *keys[] = { "http_rules", "body_rules" };
        json_object *builtin[] = { dh, db };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                _cleanup_(json_object_putp) json_object *merged = json_object_new_array();
                json_object *from[2] = { NULL, builtin[k] };

                if (!merged)
                        return -ENOMEM;
                if (json_object_object_get_ex(doc, keys[k], &v)) {
                        if (!json_object_is_type(v, json_type_array))
                                return -EINVAL;
                        from[0] = v;
                }
                for (size_t f = 0; f < ELEMENTSOF(from); f++)
                        for (size_t i = 0; from[f] && i < json_object_array_length(from[f]); i++) {
                                json_object *e = json_object_array_get_idx(from[f], i);
                                if (json_object_array_add(merged, json_object_get(e)) < 0) {
                                        json_object_put(e);
                                        return -ENOMEM;
                                }
                        }
                if (json_add(doc, keys[k], TAKE_PTR(merged)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(doc);
        return 0;
}

int proxy_policy_document(const DockerProxyConfig *cfg, const char *work_dir, json_object **ret) {
        _cleanup_(json_object_putp) json_object *channel = NULL;
        int r;

        r = proxy_policy_channel_document(cfg, &channel);
        if (r < 0)
                return r;
        return proxy_policy_document_merge(channel, work_dir, ret);
}

/* ---- compiled policy ---- */

typedef enum StepType { STEP_KEY, STEP_INDEX, STEP_ALL } StepType;

typedef struct Step {
        StepType type;
        char *key;
        size_t index;
} Step;

typedef struct Check {
        Step *steps;
        size_t n_steps;
        JsonCheckOp op;
        char **values;                  /* capabilities normalised; paths cleaned */
        char **except;
} Check;

typedef struct ProxyHttpRule {
        char **methods;                 /* NULL: any */
        regex_t *regexes;
        size_t n_regexes;
        Decision decision;
        char *message;
        char id[PROXY_RULE_ID_MAX];
} ProxyHttpRule;

typedef struct ProxyBodyRule {
        char *method;                   /* NULL: any */
        regex_t regex;
        bool regex_compiled;
        char **content_types;
        size_t max_body;
        Check *checks;
        size_t n_checks;
        Decision decision;
        char *message;
        char id[PROXY_RULE_ID_MAX];
} ProxyBodyRule;

struct ProxyPolicy {
        Decision default_decision;
        ProxyHttpRule *http;
        size_t n_http;
        ProxyBodyRule *body;
        size_t n_body;
};

ProxyPolicy *proxy_policy_free(ProxyPolicy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_http; i++) {
                ProxyHttpRule *h = &p->http[i];
                strv_free(h->methods);
                for (size_t j = 0; j < h->n_regexes; j++)
                        regfree(&h->regexes[j]);
                free(h->regexes);
                free(h->message);
        }
        free(p->http);
        for (size_t i = 0; i < p->n_body; i++) {
                ProxyBodyRule *b = &p->body[i];
                free(b->method);
                if (b->regex_compiled)
                        regfree(&b->regex);
                strv_free(b->content_types);
                for (size_t j = 0; j < b->n_checks; j++) {
                        for (size_t k = 0; k < b->checks[j].n_steps; k++)
                                free(b->checks[j].steps[k].key);
                        free(b->checks[j].steps);
                        strv_free(b->checks[j].values);
                        strv_free(b->checks[j].except);
                }
                free(b->checks);
                free(b->message);
        }
        free(p->body);
        free(p);
        return NULL;
}

Decision proxy_policy_default_decision(const ProxyPolicy *p) {
        return p->default_decision;
}

static int compile_strv(PolicyCompiler *c, json_object *o, const char *key, const char *where, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        json_object *a;
        size_t n;
        int r;

        r = policy_compile_strings(c, o, where, key, &a, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = strv_extend(&l, json_object_get_string(json_object_array_get_idx(a, i)));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int compile_regex(PolicyCompiler *c, regex_t *re, const char *pattern, const char *where) {
        int r;

        if (isempty(pattern))
                return policy_compile_fail(c, "%s: empty regex", where);
        r = regcomp_bounded(re, pattern, REG_EXTENDED | REG_NOSUB | REG_ICASE);
        if (r != 0) {
                char buf[256];
                regerror(r, re, buf, sizeof(buf));
                return policy_compile_fail(c, "%s: bad regex \"%s\": %s", where, pattern, buf);
        }
        return 0;
}

static bool method_is_valid(const char *m) {
        if (streq(m, "*"))
                return true;
        if (isempty(m) || strlen(m) > 32)
                return false;
        for (const char *p = m; *p; p++)
                if (*p < 'A' || *p > 'Z')
                        return false;
        return true;
}

static int compile_http_rule(PolicyCompiler *c, json_object *o, size_t i, ProxyHttpRule *h) {
        _cleanup_strv_free_ char **paths = NULL;
        char where[64];
        int r;

        snprintf(where, sizeof(where), "http_rules[%zu]", i);
        snprintf(h->id, sizeof(h->id), "http[%zu]", i);
        if (!json_object_is_type(o, json_type_object))
                return policy_compile_fail(c, "%s: must be an object", where);
        if ((r = compile_strv(c, o, "methods", where, &h->methods)) < 0 ||
            (r = compile_strv(c, o, "paths", where, &paths)) < 0 ||
            (r = policy_compile_decision(c, o, where, &h->decision)) < 0 ||
            (r = policy_compile_message(c, o, where, &h->message)) < 0)
                return r;
        STRV_FOREACH(m, h->methods)
                if (!method_is_valid(*m))
                        return policy_compile_fail(c, "%s.methods: \"%s\" is not an HTTP method", where, *m);
        if (strv_contains(h->methods, "*"))
                h->methods = strv_free(h->methods);
        h->regexes = calloc(strv_length(paths) ?: 1, sizeof(regex_t));
        if (!h->regexes)
                return -ENOMEM;
        STRV_FOREACH(p, paths) {
                r = compile_regex(c, &h->regexes[h->n_regexes], *p, where);
                if (r < 0)
                        return r;
                h->n_regexes++;
        }
        return 0;
}

/* "A.B[*].C", "A[0]" */
static int compile_path(PolicyCompiler *c, const char *path, const char *where, Check *k) {
        size_t *n = &k->n_steps;        /* counted as they are made: what a failure leaves is freed */

        if (isempty(path))
                return policy_compile_fail(c, "%s.path: empty", where);
        k->steps = calloc(strlen(path) + 1, sizeof(Step));
        if (!k->steps)
                return -ENOMEM;
        for (const char *p = path; *p;) {
                size_t len = strcspn(p, ".[");
                if (len == 0)
                        return policy_compile_fail(c, "%s.path: \"%s\" has an empty segment", where, path);
                k->steps[*n].type = STEP_KEY;
                k->steps[*n].key = strndup(p, len);
                if (!k->steps[(*n)++].key)
                        return -ENOMEM;
                p += len;
                while (*p == '[') {
                        const char *e = strchr(p, ']');
                        if (!e || e == p + 1)
                                return policy_compile_fail(c, "%s.path: \"%s\" has a bad [index]", where, path);
                        if (e == p + 2 && p[1] == '*')
                                k->steps[(*n)++].type = STEP_ALL;
                        else {
                                size_t idx = 0;
                                for (const char *d = p + 1; d < e; d++) {
                                        if (*d < '0' || *d > '9' || idx > 1000000)
                                                return policy_compile_fail(c, "%s.path: \"%s\" has a bad [index]", where, path);
                                        idx = idx * 10 + (size_t) (*d - '0');
                                }
                                k->steps[*n].type = STEP_INDEX;
                                k->steps[(*n)++].index = idx;
                        }
                        p = e + 1;
                }
                if (*p == '.')
                        p++;
                else if (*p)
                        return policy_compile_fail(c, "%s.path: \"%s\" is not a JSON path", where, path);
        }
        return 0;
}

static void capability_normalize(char *s) {
        const char *p = s;
        size_t i = 0;

        if (strncasecmp(p, "CAP_", 4) == 0)
                p += 4;
        for (; *p; p++)
                s[i++] = (char) toupper((unsigned char) *p);
        s[i] = 0;
}

static int compile_check(PolicyCompiler *c, json_object *o, const char *where, Check *k) {
        char *clean;
        json_object *v;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return policy_compile_fail(c, "%s: must be an object", where);
        if (!json_object_object_get_ex(o, "path", &v) || !json_object_is_type(v, json_type_string))
                return policy_compile_fail(c, "%s.path: must be a string", where);
        r = compile_path(c, json_object_get_string(v), where, k);
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(o, "op", &v) || !json_object_is_type(v, json_type_string) ||
            json_check_op_from_string(json_object_get_string(v)) < 0)
                return policy_compile_fail(c, "%s.op: unknown check operation", where);
        k->op = json_check_op_from_string(json_object_get_string(v));
        if ((r = compile_strv(c, o, "values", where, &k->values)) < 0 ||
            (r = compile_strv(c, o, "except", where, &k->except)) < 0)
                return r;
        if (k->op == JSON_CHECK_CAPABILITY_NOT_IN)
                STRV_FOREACH(s, k->values)
                        capability_normalize(*s);
        if (k->op == JSON_CHECK_SOURCE_PATH_IN || k->op == JSON_CHECK_SOURCE_PATH_NOT_IN) {
                char **lists[] = { k->values, k->except };
                for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                        for (char **s = lists[l]; s && *s; s++) {
                                if ((*s)[0] != '/')
                                        return policy_compile_fail(c, "%s: \"%s\" is not an absolute path", where, *s);
                                if (strlen(*s) >= PATH_MAX)
                                        return policy_compile_fail(c, "%s: a path is too long", where);
                                clean = path_clean(*s);
                                if (!clean)
                                        return -ENOMEM;
                                free(*s);
                                *s = clean;
                        }
        }
        return 0;
}

static int compile_body_rule(PolicyCompiler *c, json_object *o, size_t i, ProxyBodyRule *b) {
        char where[64];
        json_object *v, *checks;
        const char *applies, *sp;
        int r;

        snprintf(where, sizeof(where), "body_rules[%zu]", i);
        snprintf(b->id, sizeof(b->id), "body[%zu]", i);
        if (!json_object_is_type(o, json_type_object))
                return policy_compile_fail(c, "%s: must be an object", where);
        if (!json_object_object_get_ex(o, "applies_to", &v) || !json_object_is_type(v, json_type_string))
                return policy_compile_fail(c, "%s.applies_to: must be a string \"METHOD REGEX\"", where);
        applies = json_object_get_string(v);
        sp = strchr(applies, ' ');
        if (!sp)
                return policy_compile_fail(c, "%s.applies_to: must have the form \"METHOD REGEX\"", where);
        b->method = strndup(applies, (size_t) (sp - applies));
        if (!b->method)
                return -ENOMEM;
        if (!method_is_valid(b->method))
                return policy_compile_fail(c, "%s.applies_to: \"%s\" is not an HTTP method", where, b->method);
        if (streq(b->method, "*"))
                b->method = mfree(b->method);
        sp += strspn(sp, " ");
        r = compile_regex(c, &b->regex, sp, where);
        if (r < 0)
                return r;
        b->regex_compiled = true;

        if ((r = compile_strv(c, o, "content_types", where, &b->content_types)) < 0 ||
            (r = policy_compile_decision(c, o, where, &b->decision)) < 0 ||
            (r = policy_compile_message(c, o, where, &b->message)) < 0)
                return r;
        b->max_body = PROXY_BODY_MAX;
        if (json_object_object_get_ex(o, "max_body_bytes", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t m;
                if (!json_object_is_type(v, json_type_int) || (m = json_object_get_int64(v)) < 0)
                        return policy_compile_fail(c, "%s.max_body_bytes: must be a number of bytes", where);
                if (m > 0 && (uint64_t) m < PROXY_BODY_MAX)
                        b->max_body = (size_t) m;
        }
        if (!json_object_object_get_ex(o, "json_checks", &checks) || json_object_is_type(checks, json_type_null))
                return 0;
        if (!json_object_is_type(checks, json_type_array))
                return policy_compile_fail(c, "%s.json_checks: must be an array", where);
        b->checks = calloc(json_object_array_length(checks) ?: 1, sizeof(Check));
        if (!b->checks)
                return -ENOMEM;
        for (size_t j = 0; j < json_object_array_length(checks); j++) {
                char w[128];
                snprintf(w, sizeof(w), "%s.json_checks[%zu]", where, j);
                b->n_checks++;
                r = compile_check(c, json_object_array_get_idx(checks, j), w, &b->checks[j]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int proxy_policy_compile(json_object *doc, ProxyPolicy **ret, char **ret_error) {
        _cleanup_(proxy_policy_freep) ProxyPolicy *p = NULL;
        json_object *v, *http = NULL, *body = NULL;
        PolicyCompiler c = {};
        int r;

        assert(ret);

        if (!doc || !json_object_is_type(doc, json_type_object)) {
                r = policy_compile_fail(&c, "policy: must be a JSON object");
                goto finish;
        }
        json_object_object_foreach(doc, key, val) {
                (void) val;
                if (!streq(key, "default_decision") && !streq(key, "http_rules") && !streq(key, "body_rules")) {
                        r = policy_compile_fail(&c, "policy: unknown key \"%s\"", key);
                        goto finish;
                }
        }
        p = calloc(1, sizeof(ProxyPolicy));
        if (!p) {
                r = -ENOMEM;
                goto finish;
        }
        p->default_decision = DECISION_ALLOW;
        if (json_object_object_get_ex(doc, "default_decision", &v)) {
                if (!json_object_is_type(v, json_type_string) || decision_from_string(json_object_get_string(v)) < 0) {
                        r = policy_compile_fail(&c, "default_decision: must be allow, deny or approve");
                        goto finish;
                }
                p->default_decision = decision_from_string(json_object_get_string(v));
        }
        if ((json_object_object_get_ex(doc, "http_rules", &http) && !json_object_is_type(http, json_type_array)) ||
            (json_object_object_get_ex(doc, "body_rules", &body) && !json_object_is_type(body, json_type_array))) {
                r = policy_compile_fail(&c, "policy: http_rules and body_rules must be arrays");
                goto finish;
        }
        if ((http && json_object_array_length(http) > PROXY_POLICY_RULES_MAX) ||
            (body && json_object_array_length(body) > PROXY_POLICY_RULES_MAX)) {
                r = policy_compile_fail(&c, "policy: more than %u rules of one kind", PROXY_POLICY_RULES_MAX);
                goto finish;
        }
        p->http = calloc(http ? json_object_array_length(http) + 1 : 1, sizeof(ProxyHttpRule));
        p->body = calloc(body ? json_object_array_length(body) + 1 : 1, sizeof(ProxyBodyRule));
        if (!p->http || !p->body) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; http && i < json_object_array_length(http); i++) {
                p->n_http++;
                r = compile_http_rule(&c, json_object_array_get_idx(http, i), i, &p->http[i]);
                if (r < 0)
                        goto finish;
        }
        for (size_t i = 0; body && i < json_object_array_length(body); i++) {
                p->n_body++;
                r = compile_body_rule(&c, json_object_array_get_idx(body, i), i, &p->body[i]);
                if (r < 0)
                        goto finish;
        }
        *ret = TAKE_PTR(p);
        r = 0;
finish:
        if (ret_error)
                *ret_error = TAKE_PTR(c.error);
        free(c.error);
        return r;
}

int proxy_policy_load_channel_file(const char *path, const char *work_dir, ProxyPolicy **ret, char **ret_error) {
        _cleanup_(json_object_putp) json_object *channel = NULL, *doc = NULL;
        _cleanup_free_ char *text = NULL, *reason = NULL;
        size_t size;
        int r;

        r = read_full_file_at(AT_FDCWD, path, PROXY_POLICY_FILE_MAX, false, &text, &size);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "cannot read the policy file %s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = config_parse_text(text, size, &channel, &reason);
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(reason);
                return r;
        }
        r = proxy_policy_document_merge(channel, work_dir, &doc);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "%s: not a policy document (an object whose rules are arrays)", path) < 0)
                        *ret_error = NULL;
                return r;
        }
        return proxy_policy_compile(doc, ret, ret_error);
}

/* ---- http rules ---- */

static void verdict_set(ProxyVerdict *v, Decision d, const char *id, const char *message, bool matched) {
        size_t n = strnlen(id, sizeof(v->rule_id) - 1);  /* cut as snprintf() would: this runs a request */

        *v = (ProxyVerdict) { .decision = d, .message = message, .matched = matched };
        memcpy(v->rule_id, id, n);
        v->rule_id[n] = 0;
}

void proxy_policy_check_http(const ProxyPolicy *p, const char *method, const char *path, ProxyVerdict *ret) {
        for (size_t i = 0; i < p->n_http; i++) {
                const ProxyHttpRule *h = &p->http[i];
                bool hit = h->n_regexes == 0;

                if (h->methods && !strv_contains(h->methods, method))
                        continue;
                for (size_t j = 0; !hit && j < h->n_regexes; j++)
                        hit = regexec(&h->regexes[j], path, 0, NULL, 0) == 0;
                if (hit) {
                        verdict_set(ret, h->decision, h->id, h->message, true);
                        return;
                }
        }
        verdict_set(ret, p->default_decision, "default", NULL, false);
}

/* ---- body rules ---- */

static bool body_rule_applies(const ProxyBodyRule *b, const char *method, const char *path) {
        return (!b->method || streq(b->method, method)) && regexec(&b->regex, path, 0, NULL, 0) == 0;
}

bool proxy_path_body_is_stream(const char *method, const char *path) {
        static const char * const streams[] = {
                "/build", "/images/load", "/images/create",
        };

        for (size_t i = 0; i < ELEMENTSOF(streams); i++)
                if (strcasecmp(path, streams[i]) == 0)
                        return true;
        /* PUT /containers/ID/archive: a tar stream */
        const char *rest = startswith(path, "/containers/");
        if (rest && strcasecmp(method, "PUT") == 0) {
                const char *slash = strchr(rest, '/');
                return slash && slash != rest && strcasecmp(slash, "/archive") == 0;
        }
        return false;
}

bool proxy_policy_wants_body(const ProxyPolicy *p, const char *method, const char *path, size_t *ret_max) {
        size_t max = PROXY_BODY_MAX;
        bool any = false;

        for (size_t i = 0; i < p->n_body; i++)
                if (body_rule_applies(&p->body[i], method, path)) {
                        any = true;
                        max = MIN(max, p->body[i].max_body);
                }
        if (ret_max)
                *ret_max = max;
        return any;
}

typedef enum Fired { FIRED_NO, FIRED_YES, FIRED_UNRESOLVED } Fired;

typedef struct Values {
        json_object *v[PROXY_CHECK_VALUES_MAX];
        size_t n;
        bool overflow;
} Values;

static json_object *object_get_icase(json_object *o, const char *key) {
        json_object_object_foreach(o, k, v)
                if (strcasecmp(k, key) == 0)
                        return v;
        return NULL;
}

static void collect(json_object *v, const Step *steps, size_t n_steps, Values *out) {
        if (!v || out->overflow)
                return;
        if (n_steps == 0) {
                if (out->n >= PROXY_CHECK_VALUES_MAX)
                        out->overflow = true;
                else
                        out->v[out->n++] = v;
                return;
        }
        switch (steps[0].type) {
        case STEP_KEY:
                if (json_object_is_type(v, json_type_object))
                        collect(object_get_icase(v, steps[0].key), steps + 1, n_steps - 1, out);
                break;
        case STEP_INDEX:
                if (json_object_is_type(v, json_type_array) && steps[0].index < json_object_array_length(v))
                        collect(json_object_array_get_idx(v, steps[0].index), steps + 1, n_steps - 1, out);
                break;
        case STEP_ALL:
                if (json_object_is_type(v, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(v) && !out->overflow; i++)
                                collect(json_object_array_get_idx(v, i), steps + 1, n_steps - 1, out);
                else if (json_object_is_type(v, json_type_object)) {
                        json_object_object_foreach(v, k, e) {
                                (void) k;
                                collect(e, steps + 1, n_steps - 1, out);
                        }
                }
                break;
        }
}

/* The value as the engine would compare it: strings as they are, numbers and booleans spelt out. */
static const char *scalar_string(json_object *v, char buf[static 32]) {
        switch (json_object_get_type(v)) {
        case json_type_string:
                return json_object_get_string(v);
        case json_type_boolean:
                return json_object_get_boolean(v) ? "true" : "false";
        case json_type_int:
                snprintf(buf, 32, "%" PRId64, json_object_get_int64(v));
                return buf;
        default:
                return NULL;
        }
}

static bool strv_contains_icase(char * const *l, const char *s) {
        STRV_FOREACH(x, l)
                if (strcasecmp(*x, s) == 0)
                        return true;
        return false;
}

/* "/" in a list of host sources names a bind of the whole root, not everything below it: the default list
 * refuses "/" beside "/etc" and "/home" without refusing every other path. */
static bool path_under_any(const char *path, char * const *dirs) {
        STRV_FOREACH(d, dirs)
                if (streq(*d, "/") ? streq(path, "/") : path_is_inside(path, *d))
                        return true;
        return false;
}

/* A named volume: what the engines accept as a volume name. */
static bool volume_name_is_valid(const char *s) {
        if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '.' || *p == '-'))
                        return false;
        return true;
}

/* The host source a value names: *ret NULL for a named volume or a mount of another type; -EINVAL for
 * a source that is neither a path nor a volume name. */
static int bind_source(json_object *v, char **ret) {
        const char *src;
        size_t len;

        *ret = NULL;
        if (json_object_is_type(v, json_type_object)) {
                json_object *type = object_get_icase(v, "Type"), *s = object_get_icase(v, "Source");
                const char *t = type && json_object_is_type(type, json_type_string) ? json_object_get_string(type) : "volume";
                if (strcasecmp(t, "bind") != 0) {
                        /* a volume's source is its name */
                        if (strcasecmp(t, "volume") == 0 && s && json_object_is_type(s, json_type_string) &&
                            !isempty(json_object_get_string(s)) && !volume_name_is_valid(json_object_get_string(s)))
                                return -EINVAL;
                        return 0;
                }
                if (!s || !json_object_is_type(s, json_type_string))
                        return -EINVAL;
                src = json_object_get_string(s);
                len = strlen(src);
        } else if (json_object_is_type(v, json_type_string)) {
                src = json_object_get_string(v);
                len = strcspn(src, ":");
        } else
                return -EINVAL;

        if (len == 0 || len >= PATH_MAX)
                return -EINVAL;
        if (src[0] != '/') {
                _cleanup_free_ char *name = strndup(src, len);
                if (!name)
                        return -ENOMEM;
                return volume_name_is_valid(name) ? 0 : -EINVAL;
        }
        *ret = strndup(src, len);
        return *ret ? 0 : -ENOMEM;
}

static Fired check_source_path(const Check *k, json_object *v) {
        _cleanup_free_ char *src = NULL;
        char resolved[PATH_MAX];
        bool under;

        if (bind_source(v, &src) < 0)
                return FIRED_UNRESOLVED;
        if (!src)
                return FIRED_NO;
        if (!realpath(src, resolved))
                return FIRED_UNRESOLVED;
        if (path_under_any(resolved, k->except))
                return FIRED_NO;
        under = path_under_any(resolved, k->values);
        return (k->op == JSON_CHECK_SOURCE_PATH_IN) == under ? FIRED_YES : FIRED_NO;
}

static Fired check_value(const Check *k, json_object *v) {
        char buf[32];
        const char *s;

        switch (k->op) {
        case JSON_CHECK_PRESENT:
                return json_value_is_empty(v, false) ? FIRED_NO : FIRED_YES;
        case JSON_CHECK_EMPTY_ARRAY:
                return json_object_is_type(v, json_type_array) && json_object_array_length(v) == 0 ? FIRED_YES : FIRED_NO;
        case JSON_CHECK_EQUALS:
                s = scalar_string(v, buf);
                return s && strv_contains_icase(k->values, s) ? FIRED_YES : FIRED_NO;
        case JSON_CHECK_CONTAINS_ANY:
        case JSON_CHECK_STARTS_WITH_ANY:
                if (!json_object_is_type(v, json_type_string))
                        return FIRED_NO;
                s = json_object_get_string(v);
                STRV_FOREACH(x, k->values)
                        if (k->op == JSON_CHECK_CONTAINS_ANY ? strcasestr(s, *x) != NULL
                                                             : strncasecmp(s, *x, strlen(*x)) == 0)
                                return FIRED_YES;
                return FIRED_NO;
        case JSON_CHECK_NOT_IN:
                if (json_object_is_type(v, json_type_null))
                        return FIRED_NO;
                s = scalar_string(v, buf);
                return s && strv_contains_icase(k->values, s) ? FIRED_NO : FIRED_YES;
        case JSON_CHECK_CAPABILITY_NOT_IN: {
                char cap[64];
                if (json_object_is_type(v, json_type_null))
                        return FIRED_NO;
                if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) >= (int) sizeof(cap))
                        return FIRED_YES;
                snprintf(cap, sizeof(cap), "%s", json_object_get_string(v));
                capability_normalize(cap);
                return strv_contains(k->values, cap) ? FIRED_NO : FIRED_YES;
        }
        case JSON_CHECK_SOURCE_PATH_IN:
        case JSON_CHECK_SOURCE_PATH_NOT_IN:
                return check_source_path(k, v);
        default:
                return FIRED_UNRESOLVED;
        }
}

static Fired check_fires(const Check *k, json_object *doc) {
        Values *vals;
        Fired f = FIRED_NO;

        if (!doc)
                return FIRED_NO;
        vals = calloc(1, sizeof(Values));
        if (!vals)
                return FIRED_UNRESOLVED;
        collect(doc, k->steps, k->n_steps, vals);
        if (vals->overflow)
                f = FIRED_UNRESOLVED;
        for (size_t i = 0; i < vals->n && f != FIRED_YES; i++) {
                Fired g = check_value(k, vals->v[i]);
                if (g != FIRED_NO)
                        f = g;
        }
        free(vals);
        return f;
}

static bool content_type_matches(char * const *types, const char *content_type) {
        char media[128];
        size_t n;

        if (strv_length(types) == 0)
                return true;
        if (isempty(content_type))
                return false;
        n = strcspn(content_type, "; \t");
        if (n >= sizeof(media))
                return false;
        memcpy(media, content_type, n);
        media[n] = 0;
        return strv_contains_icase(types, media);
}

void proxy_policy_check_body(const ProxyPolicy *p, const char *method, const char *path, const char *content_type,
                             json_object *body, json_object *query, ProxyVerdict *ret) {
        for (size_t i = 0; i < p->n_body; i++) {
                const ProxyBodyRule *b = &p->body[i];

                if (!body_rule_applies(b, method, path) || !content_type_matches(b->content_types, content_type))
                        continue;
                for (size_t j = 0; j < b->n_checks; j++) {
                        json_object *docs[] = { body, query };
                        for (size_t d = 0; d < ELEMENTSOF(docs); d++) {
                                Fired f = check_fires(&b->checks[j], docs[d]);
                                /* an unresolvable value only fires a deny: an approve or allow rule must
                                 * not be the way around a deny further down */
                                if (f == FIRED_YES || (f == FIRED_UNRESOLVED && b->decision == DECISION_DENY)) {
                                        verdict_set(ret, b->decision, b->id, b->message, true);
                                        return;
                                }
                        }
                }
        }
        verdict_set(ret, p->default_decision, "default", NULL, false);
}

void proxy_verdict_combine(const ProxyVerdict *http, const ProxyVerdict *body, Decision default_decision,
                           ProxyVerdict *ret) {
        const ProxyVerdict *pick;

        if (http->matched && http->decision == DECISION_DENY)
                pick = http;
        else if (body && body->matched && body->decision == DECISION_DENY)
                pick = body;
        else if (http->matched && http->decision == DECISION_APPROVE)
                pick = http;
        else if (body && body->matched && body->decision == DECISION_APPROVE)
                pick = body;
        else if (http->matched)
                pick = http;
        else if (body && body->matched)
                pick = body;
        else {
                verdict_set(ret, default_decision, "default", NULL, false);
                return;
        }
        *ret = *pick;
}

/* ---- bodies ---- */

/* Keys in the text: every string followed by ':' (in valid JSON that is exactly the keys). A key holding
 * an escaped NUL is refused here: json-c would cut it short. */
static int count_raw_keys(const char *s, size_t n, size_t *ret) {
        size_t keys = 0;

        for (size_t i = 0; i < n; i++) {
                size_t start;
                bool nul = false;

                if (s[i] != '"')
                        continue;
                start = i++;
                for (; i < n && s[i] != '"'; i++)
                        if (s[i] == '\\') {
                                if (i + 5 < n && strncmp(s + i + 1, "u0000", 5) == 0)
                                        nul = true;
                                i++;
                        }
                (void) start;
                size_t j = i + 1;
                while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n'))
                        j++;
                if (j < n && s[j] == ':') {
                        if (nul)
                                return -EBADMSG;
                        keys++;
                }
        }
        *ret = keys;
        return 0;
}

static int compare_str(const void *a, const void *b) {
        return strcmp(*(const char * const *) a, *(const char * const *) b);
}

/* Walks the tree: keys ASCII, no two equal ignoring case, no string with a NUL inside. Counts keys. */
static int check_tree(json_object *v, size_t *n_keys) {
        if (json_object_is_type(v, json_type_string))
                return strlen(json_object_get_string(v)) == (size_t) json_object_get_string_len(v) ? 0 : -EBADMSG;
        if (json_object_is_type(v, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        int r = check_tree(json_object_array_get_idx(v, i), n_keys);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (!json_object_is_type(v, json_type_object))
                return 0;

        size_t n = (size_t) json_object_object_length(v), i = 0;
        _cleanup_free_ char **keys = NULL;
        int r = 0;

        *n_keys += n;
        if (*n_keys > PROXY_JSON_KEYS_MAX)
                return -EBADMSG;
        keys = calloc(n ?: 1, sizeof(char *));
        if (!keys)
                return -ENOMEM;
        json_object_object_foreach(v, k, e) {
                for (const char *p = k; *p; p++)
                        if ((unsigned char) *p >= 0x80 || (unsigned char) *p < 0x20) {
                                r = -EBADMSG;
                                goto finish;
                        }
                keys[i] = strdup(k);
                if (!keys[i]) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (char *p = keys[i]; *p; p++)
                        *p = (char) tolower((unsigned char) *p);
                i++;
                r = check_tree(e, n_keys);
                if (r < 0)
                        goto finish;
        }
        qsort(keys, i, sizeof(char *), compare_str);
        for (size_t j = 1; j < i; j++)
                if (streq(keys[j - 1], keys[j])) {
                        r = -EBADMSG;
                        break;
                }
finish:
        for (size_t j = 0; j < n; j++)
                free(keys[j]);
        return r;
}

static bool span_is_whitespace(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\r\n", s[i]) || s[i] == 0)
                        return false;
        return true;
}

int proxy_body_parse(const char *body, size_t size, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        size_t raw_keys = 0, tree_keys = 0;
        int r;

        if (size > PROXY_BODY_MAX)
                return -EFBIG;
        if (span_is_whitespace(body, size)) {
                o = json_object_new_object();
                if (!o)
                        return -ENOMEM;
                *ret = TAKE_PTR(o);
                return 0;
        }
        r = json_parse_untrusted(body, size, PROXY_BODY_MAX, PROXY_JSON_DEPTH_MAX, true, &o, NULL);
        if (r == -ENOMEM || r == -EFBIG)
                return r;
        if (r < 0)
                return -EBADMSG;

        r = count_raw_keys(body, size, &raw_keys);
        if (r < 0)
                return r;
        r = check_tree(o, &tree_keys);
        if (r < 0)
                return r;
        /* json-c keeps the last of two equal keys; the count of keys written says there were two */
        if (raw_keys != tree_keys)
                return -EBADMSG;
        *ret = TAKE_PTR(o);
        return 0;
}
