/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's request side: targets read as the engine reads them, the policy compiled and
 * decided, bodies parsed and checked, nested containers forced into the channel. */

#include <limits.h>
#include <sys/stat.h>

#include "dockerproxy-nested.h"
#include "dockerproxy-path.h"
#include "dockerproxy-policy.h"
#include "json-util.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-dockerproxy-XXXXXX";

/* ---- targets ---- */

static char *unversioned(const char *path) {
        _cleanup_(proxy_target_done) ProxyTarget t = {};

        if (proxy_target_parse(path, NULL, NULL, &t) < 0)
                return NULL;
        return strdup(t.unversioned);
}

static int target_error(const char *path, const char *query) {
        _cleanup_(proxy_target_done) ProxyTarget t = {};
        return proxy_target_parse(path, query, NULL, &t);
}

#define is_path(raw, want, name) ({ _cleanup_free_ char *_u = unversioned(raw); is_str(_u, want, name); })

static void test_paths(void) {
        _cleanup_(proxy_target_done) ProxyTarget t = {};
        _cleanup_free_ char *fwd = NULL;

        is_int(proxy_target_parse("/v1.41/containers/create", "name=web", NULL, &t), 0, "a versioned create parses");
        is_str(t.unversioned, "/containers/create", "the version prefix is stripped for matching");
        is_str(t.version, "v1.41", "the version is kept");
        is_str(t.path, "/v1.41/containers/create", "the forwarded path keeps the version");
        fwd = proxy_target_format(&t);
        is_str(fwd, "/v1.41/containers/create?name=web", "the forwarded target is path and query");

        is_path("/containers/create", "/containers/create", "an unversioned path stays");
        is_int(target_error("/v1/containers/json", NULL), -EBADMSG, "a one-number version is refused (Docker reads it as one)");
        is_path("//v1.41//containers///create/", "/containers/create", "repeated and trailing slashes are dropped");
        is_path("/v1.41/./containers/./create", "/containers/create", "dot segments are dropped");
        is_path("/v1.41/x/../containers/create", "/containers/create", "dot-dot resolves");
        is_path("/../../containers/create", "/containers/create", "dot-dot never climbs above the root");
        is_path("/v1.41/containers%2Fcreate", "/containers/create", "an encoded slash is a slash, as the engine decodes it");
        is_path("/v1.41/%63ontainers/create", "/containers/create", "percent-encoded letters are decoded");
        is_path("/v1.41/containers/%2e%2e/containers/create", "/containers/create", "encoded dot-dot resolves");
        is_path("/v1.41/Containers/Create", "/Containers/Create", "case is kept (rules ignore it)");
        is_path("/", "/", "the root stays the root");
        is_path("/v1.41", "/", "a bare version is the root");
        is_int(target_error("/v1.41x/containers/json", NULL), -EBADMSG, "a version with letters is refused (Podman reads it as one)");
        is_int(target_error("/v1.41/commit", "container=a&CONTAINER=b"), -EBADMSG,
               "two query keys equal but for case are refused (Podman reads parameters ignoring case)");
        is_int(target_error("/v1a/containers/json", NULL), -EBADMSG, "/v1a/ is refused (Podman's router takes v[0-9][0-9A-Za-z.-]*)");
        is_int(target_error("/v1.4-1/containers/json", NULL), -EBADMSG, "a version with a dash is refused");
        is_int(target_error("/v./containers/json", NULL), -EBADMSG, "/v./ is refused (Docker's router takes v[0-9.]+)");
        is_int(target_error("/v1.41.0/containers/json", NULL), -EBADMSG, "a three-part version is refused");
        is_int(target_error("/V1.41/containers/json", NULL), -EBADMSG, "a capital V version is refused");
        is_path("/vault/x", "/vault/x", "a first segment that no router reads as a version stays");

        is_int(target_error("/v1.41/containers%252fcreate", NULL), -EBADMSG, "double encoding is refused");
        is_int(target_error("/v1.41/containers%00/create", NULL), -EBADMSG, "an encoded NUL is refused");
        is_int(target_error("/v1.41/containers%20x", NULL), -EBADMSG, "an encoded space is refused");
        is_int(target_error("/v1.41/a%3fb", NULL), -EBADMSG, "an encoded '?' is refused");
        is_int(target_error("/v1.41/a%5cb", NULL), -EBADMSG, "an encoded backslash is refused");
        is_int(target_error("/v1.41/a%c3%a9", NULL), -EBADMSG, "encoded non-ASCII is refused");
        is_int(target_error("/v1.41/a%2", NULL), -EBADMSG, "a truncated escape is refused");
        is_int(target_error("/v1.41/a%zz", NULL), -EBADMSG, "a non-hex escape is refused");
        is_int(target_error("relative", NULL), -EBADMSG, "a relative path is refused");

        is_int(target_error("/containers/json", "all=1;filters=x"), -EBADMSG, "a ';' in the query is refused");
        is_int(target_error("/containers/json", "all=1&all=0"), -EBADMSG, "a query key given twice is refused");
        is_int(target_error("/containers/json", "all=%01"), -EBADMSG, "a control byte in a query value is refused");
        {
                _cleanup_(proxy_target_done) ProxyTarget l = {};
                _cleanup_free_ char *f = NULL;
                is_int(proxy_target_parse("/images/create", "fromSrc=-&changes=CMD%20x&changes=ENV%20A%3D1", NULL, &l), 0,
                       "a list parameter may repeat");
                f = proxy_target_format(&l);
                is_str(f, "/images/create?fromSrc=-&changes=CMD%20x&changes=ENV%20A%3D1", "both values are forwarded");
        }
        is_int(target_error("/containers/json", "=1"), -EBADMSG, "an empty query key is refused");
        {
                static const char * const known[] = { "fromImage", "tag" };
                _cleanup_(proxy_target_done) ProxyTarget a = {}, b = {}, e = {};
                ok(proxy_target_parse("/images/create", "fromImage=busybox&tag=1", NULL, &a) == 0 &&
                   proxy_query_only(&a, known, ELEMENTSOF(known)), "a query of known parameters only is allowed");
                ok(proxy_target_parse("/images/create", "fromImage=busybox&fromSrc=http://x", NULL, &b) == 0 &&
                   !proxy_query_only(&b, known, ELEMENTSOF(known)), "a parameter beyond the known ones is not");
                ok(proxy_target_parse("/images/create", "FROMIMAGE=busybox", NULL, &e) == 0 &&
                   !proxy_query_only(&e, known, ELEMENTSOF(known)), "nor a known one spelt otherwise");
        }
        {
                _cleanup_(proxy_target_done) ProxyTarget q = {};
                json_object *v;
                is_int(proxy_target_parse("/build", "networkmode=ho%73t&q=a+b&&x", NULL, &q), 0, "a query parses");
                ok(json_object_object_get_ex(q.query, "networkmode", &v) && streq(json_object_get_string(v), "host"),
                   "query values are percent-decoded");
                ok(json_object_object_get_ex(q.query, "q", &v) && streq(json_object_get_string(v), "a b"),
                   "'+' in a query value is a space");
                ok(json_object_object_get_ex(q.query, "x", &v) && streq(json_object_get_string(v), ""),
                   "a key without '=' has an empty value");
                _cleanup_free_ char *f = proxy_target_format(&q);
                is_str(f, "/build?networkmode=host&q=a%20b&x=", "the forwarded query is re-encoded");
        }
}

/* ---- policy ---- */

static ProxyPolicy *policy_for(const char *channel_rules, const char *work_dir) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        ProxyPolicy *p = NULL;
        _cleanup_free_ char *err = NULL;

        if (proxy_policy_document(NULL, work_dir, &doc) < 0)
                return NULL;
        if (channel_rules) {
                /* channel rules come first, as the document puts cfg's rules */
                json_object *extra = json_tokener_parse(channel_rules), *a, *ea;
                json_object_object_foreach(extra, k, v) {
                        json_object_object_get_ex(doc, k, &a);
                        _cleanup_(json_object_putp) json_object *merged = json_object_new_array();
                        for (size_t i = 0; i < json_object_array_length(v); i++)
                                json_object_array_add(merged, json_object_get(json_object_array_get_idx(v, i)));
                        for (size_t i = 0; i < json_object_array_length(a); i++)
                                json_object_array_add(merged, json_object_get(json_object_array_get_idx(a, i)));
                        ea = TAKE_PTR(merged);
                        json_object_object_add(doc, k, ea);
                }
                json_object_put(extra);
        }
        if (proxy_policy_compile(doc, &p, &err) < 0) {
                printf("# compile: %s\n", strna(err));
                return NULL;
        }
        return p;
}

/* The whole decision for a request as the proxy makes it. */
static Decision decide(const ProxyPolicy *p, const char *method, const char *raw_path, const char *query,
                       const char *body, char rule[static PROXY_RULE_ID_MAX]) {
        _cleanup_(proxy_target_done) ProxyTarget t = {};
        _cleanup_(json_object_putp) json_object *doc = NULL;
        ProxyVerdict http, b, v;

        if (proxy_target_parse(raw_path, query, NULL, &t) < 0)
                return _DECISION_INVALID;
        proxy_policy_check_http(p, method, t.unversioned, &http);
        if (body && proxy_body_parse(body, strlen(body), &doc) < 0)
                return _DECISION_INVALID;
        proxy_policy_check_body(p, method, t.unversioned, "application/json", doc, t.query, &b);
        proxy_verdict_combine(&http, &b, proxy_policy_default_decision(p), &v);
        snprintf(rule, PROXY_RULE_ID_MAX, "%s", v.rule_id);
        return v.decision;
}

static Decision create(const ProxyPolicy *p, const char *host_config) {
        _cleanup_free_ char *body = NULL;
        char rule[PROXY_RULE_ID_MAX];

        if (asprintf(&body, "{\"Image\":\"busybox\",\"HostConfig\":%s}", host_config) < 0)
                return _DECISION_INVALID;
        return decide(p, "POST", "/v1.41/containers/create", NULL, body, rule);
}

static void test_policy_http(void) {
        _cleanup_(proxy_policy_freep) ProxyPolicy *p = policy_for(NULL, NULL);
        char rule[PROXY_RULE_ID_MAX];

        ok(p != NULL, "the default document compiles");
        if (!p)
                return;
        is_int(decide(p, "GET", "/v1.41/containers/json", NULL, NULL, rule), DECISION_ALLOW, "listing containers is allowed");
        is_str(rule, "default", "by the default decision");
        is_int(decide(p, "GET", "/v1.41/swarm", NULL, NULL, rule), DECISION_DENY, "swarm is denied");
        is_str(rule, "http[0]", "by the first default http rule");
        is_int(decide(p, "GET", "/v1.41/Secrets", NULL, NULL, rule), DECISION_DENY, "secrets are denied whatever the case");
        is_int(decide(p, "GET", "/v1.41/x/../plugins", NULL, NULL, rule), DECISION_DENY, "plugins are denied after dot-dot");
        is_int(decide(p, "GET", "/v1.41/nodes%2F", NULL, NULL, rule), DECISION_DENY, "nodes are denied with an encoded slash");
        is_int(decide(p, "POST", "/v1.41/libpod/containers/create", NULL, NULL, rule), DECISION_DENY, "the libpod API is denied");
        is_int(decide(p, "POST", "/v1.41/containers/abc/exec", NULL, "{\"Cmd\":[\"ls\"]}", rule), DECISION_APPROVE,
               "exec create asks a human");
        is_int(decide(p, "POST", "/v1.41/exec/abc/start", NULL, "{}", rule), DECISION_APPROVE, "exec start asks a human");
        is_int(decide(p, "GET", "/v1.41/containers/abc/archive", "path=/etc", NULL, rule), DECISION_APPROVE,
               "reading a container archive asks a human");
        is_int(decide(p, "POST", "/v1.41/containers/abc/exec", NULL, "{\"Privileged\":true,\"Cmd\":[\"sh\"]}", rule),
               DECISION_DENY, "a privileged exec is denied, not asked");

        _cleanup_(proxy_policy_freep) ProxyPolicy *q = policy_for(
                "{\"http_rules\":[{\"methods\":[\"POST\"],\"paths\":[\"^/containers/[^/]+/exec$\",\"^/exec/[^/]+/start$\"],"
                "\"decision\":\"allow\"},{\"methods\":[\"*\"],\"paths\":[\"^/images/\"],\"decision\":\"deny\",\"message\":\"no\"}]}", NULL);
        ok(q != NULL, "a document with channel rules compiles");
        if (!q)
                return;
        is_int(decide(q, "POST", "/v1.41/containers/abc/exec", NULL, "{}", rule), DECISION_ALLOW,
               "a channel rule before the defaults allows exec");
        is_str(rule, "http[0]", "the channel's rule is named");
        is_int(decide(q, "DELETE", "/images/busybox", NULL, NULL, rule), DECISION_DENY, "a channel deny with * methods");
        is_int(decide(q, "POST", "/v1.41/containers/abc/exec", NULL, "{\"Privileged\":true}", rule), DECISION_DENY,
               "an http allow does not beat a body deny");
}

static void test_policy_compile_errors(void) {
        static const struct { const char *doc, *what; } bad[] = {
                { "{\"http_rules\":[{\"paths\":[\"(\"],\"decision\":\"deny\"}]}", "a bad regex" },
                { "{\"http_rules\":[{\"paths\":[\"\"],\"decision\":\"deny\"}]}", "an empty regex" },
                { "{\"http_rules\":[{\"methods\":[\"get\"],\"decision\":\"deny\"}]}", "a lower-case method" },
                { "{\"http_rules\":[{\"decision\":\"maybe\"}]}", "an unknown decision" },
                { "{\"body_rules\":[{\"applies_to\":\"POST\",\"decision\":\"deny\"}]}", "applies_to without a regex" },
                { "{\"body_rules\":[{\"applies_to\":\"POST ^/x$\",\"decision\":\"deny\",\"json_checks\":[{\"path\":\"a..b\",\"op\":\"present\"}]}]}", "an empty path segment" },
                { "{\"body_rules\":[{\"applies_to\":\"POST ^/x$\",\"decision\":\"deny\",\"json_checks\":[{\"path\":\"a[x]\",\"op\":\"present\"}]}]}", "a non-numeric index" },
                { "{\"body_rules\":[{\"applies_to\":\"POST ^/x$\",\"decision\":\"deny\",\"json_checks\":[{\"path\":\"a\",\"op\":\"similar\"}]}]}", "an unknown op" },
                { "{\"body_rules\":[{\"applies_to\":\"POST ^/x$\",\"decision\":\"deny\",\"json_checks\":[{\"path\":\"a\",\"op\":\"source_path_in\",\"values\":[\"etc\"]}]}]}", "a relative source path" },
                { "{\"default_decision\":\"sometimes\"}", "an unknown default decision" },
                { "{\"rules\":[]}", "an unknown key" },
                { "[]", "a document that is not an object" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(json_object_putp) json_object *doc = json_tokener_parse(bad[i].doc);
                _cleanup_(proxy_policy_freep) ProxyPolicy *p = NULL;
                _cleanup_free_ char *err = NULL;
                int r = proxy_policy_compile(doc, &p, &err);
                ok(r == -EINVAL && err && !p, "%s is a compile error (%s)", bad[i].what, strna(err));
        }
}

static void test_policy_body(void) {
        _cleanup_free_ char *work = NULL, *etc_link = NULL, *root_link = NULL, *inside = NULL, *j = NULL;
        _cleanup_(proxy_policy_freep) ProxyPolicy *p = NULL;
        char rule[PROXY_RULE_ID_MAX];

        if (asprintf(&work, "%s/work", tmpdir) < 0 || mkdir(work, 0755) < 0 ||
            asprintf(&inside, "%s/work/data", tmpdir) < 0 || mkdir(inside, 0755) < 0 ||
            asprintf(&etc_link, "%s/work/etc", tmpdir) < 0 || symlink("/etc", etc_link) < 0 ||
            asprintf(&root_link, "%s/work/root", tmpdir) < 0 || symlink("/", root_link) < 0) {
                ok(false, "the test's work dir is set up");
                return;
        }
        p = policy_for(NULL, work);
        ok(p != NULL, "the default document with a work dir compiles");
        if (!p)
                return;

        is_int(create(p, "{}"), DECISION_ALLOW, "a plain create is allowed");
        if (asprintf(&j, "{\"Binds\":[\"%s:/data\"]}", inside) < 0)
                return;
        is_int(create(p, j), DECISION_ALLOW, "a bind from inside the work dir is allowed");
        j = mfree(j);
        if (asprintf(&j, "{\"Binds\":[\"%s:/x\"]}", etc_link) < 0)
                return;
        is_int(create(p, j), DECISION_DENY, "a symlink in the work dir pointing at /etc is denied");
        j = mfree(j);
        if (asprintf(&j, "{\"Binds\":[\"%s:/x:ro\"]}", root_link) < 0)
                return;
        is_int(create(p, j), DECISION_DENY, "a symlink in the work dir pointing at / is denied");
        j = mfree(j);
        if (asprintf(&j, "{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"%s\",\"Target\":\"/x\"}]}", etc_link) < 0)
                return;
        is_int(create(p, j), DECISION_DENY, "a Mounts bind through a symlink to /etc is denied");
        j = mfree(j);
        if (asprintf(&j, "{\"Binds\":[\"%s/missing:/x\"]}", work) < 0)
                return;
        is_int(create(p, j), DECISION_DENY, "a bind source that does not resolve is denied");

        is_int(create(p, "{\"Binds\":[\"/:/host\"]}"), DECISION_DENY, "binding / is denied");
        is_int(create(p, "{\"Binds\":[\"/etc/../etc:/x\"]}"), DECISION_DENY, "binding /etc through dot-dot is denied");
        is_int(create(p, "{\"Binds\":[\"/var/run/docker.sock:/var/run/docker.sock\"]}"), DECISION_DENY,
               "binding the Docker socket is denied");
        is_int(create(p, "{\"Binds\":[\"/proc:/p\"]}"), DECISION_DENY, "binding /proc is denied");
        is_int(create(p, "{\"binds\":[\"/etc:/x\"]}"), DECISION_DENY, "a lower-case Binds key is read too");
        is_int(create(p, "{\"Binds\":[\"/tmp:/x\"]}"), DECISION_APPROVE, "a bind from outside the work dir asks a human");
        is_int(create(p, "{\"Binds\":[\"cache:/x\"]}"), DECISION_ALLOW, "a named volume is allowed");
        is_int(create(p, "{\"Binds\":[\"./rel:/x\"]}"), DECISION_DENY, "a relative bind source is denied");
        is_int(create(p, "{\"Mounts\":[{\"Type\":\"volume\",\"Source\":\"v\",\"Target\":\"/x\","
                         "\"VolumeOptions\":{\"DriverConfig\":{\"Name\":\"local\",\"Options\":{\"type\":\"none\",\"o\":\"bind\",\"device\":\"/etc\"}}}}]}"),
               DECISION_DENY, "a volume mount with driver options is denied");
        is_int(create(p, "{\"Mounts\":[{\"Type\":\"npipe\",\"Source\":\"x\",\"Target\":\"/x\"}]}"), DECISION_DENY,
               "a mount type other than bind, volume or tmpfs is denied");
        is_int(create(p, "{\"Mounts\":[{\"Type\":\"tmpfs\",\"Target\":\"/x\"}]}"), DECISION_ALLOW, "a tmpfs mount is allowed");
        is_int(create(p, "{\"Privileged\":true}"), DECISION_DENY, "Privileged is denied");
        is_int(create(p, "{\"Privileged\":false}"), DECISION_ALLOW, "Privileged false is allowed");
        is_int(create(p, "{\"PidMode\":\"host\"}"), DECISION_DENY, "the host pid namespace is denied");
        is_int(create(p, "{\"NetworkMode\":\"HOST\"}"), DECISION_DENY, "the host network namespace is denied in any case");
        is_int(create(p, "{\"IpcMode\":\"host\"}"), DECISION_DENY, "the host ipc namespace is denied");
        is_int(create(p, "{\"UsernsMode\":\"host\"}"), DECISION_DENY, "the host user namespace is denied");
        is_int(create(p, "{\"CgroupnsMode\":\"host\"}"), DECISION_DENY, "the host cgroup namespace is denied");
        is_int(create(p, "{\"UTSMode\":\"host\"}"), DECISION_DENY, "the host uts namespace is denied");
        is_int(create(p, "{\"PidMode\":\"container:abc\"}"), DECISION_APPROVE, "joining another container's pids asks");
        is_int(create(p, "{\"CgroupParent\":\"/\"}"), DECISION_DENY, "CgroupParent is denied");
        is_int(create(p, "{\"Runtime\":\"kata\"}"), DECISION_DENY, "another runtime is denied");
        is_int(create(p, "{\"Runtime\":\"runc\"}"), DECISION_ALLOW, "runc is allowed");
        is_int(create(p, "{\"CapAdd\":[\"SYS_ADMIN\"]}"), DECISION_DENY, "CapAdd SYS_ADMIN is denied");
        is_int(create(p, "{\"CapAdd\":[\"cap_sys_admin\"]}"), DECISION_DENY, "cap_sys_admin in lower case is denied");
        is_int(create(p, "{\"CapAdd\":[\"ALL\"]}"), DECISION_DENY, "CapAdd ALL is denied");
        is_int(create(p, "{\"CapAdd\":[\"CAP_NET_BIND_SERVICE\",\"sys_nice\"]}"), DECISION_ALLOW,
               "default capabilities and SYS_NICE are allowed");
        is_int(create(p, "{\"SecurityOpt\":[\"seccomp=unconfined\"]}"), DECISION_DENY, "seccomp=unconfined is denied");
        is_int(create(p, "{\"SecurityOpt\":[\"apparmor:unconfined\"]}"), DECISION_DENY, "apparmor:unconfined is denied");
        is_int(create(p, "{\"SecurityOpt\":[\"label=disable\"]}"), DECISION_DENY, "label=disable is denied");
        is_int(create(p, "{\"SecurityOpt\":[\"no-new-privileges=false\"]}"), DECISION_DENY, "no-new-privileges=false is denied");
        is_int(create(p, "{\"Devices\":[{\"PathOnHost\":\"/dev/sda\"}]}"), DECISION_DENY, "Devices are denied");
        is_int(create(p, "{\"DeviceCgroupRules\":[\"b *:* rwm\"]}"), DECISION_DENY, "DeviceCgroupRules are denied");
        is_int(create(p, "{\"VolumesFrom\":[\"other\"]}"), DECISION_DENY, "VolumesFrom is denied");
        is_int(create(p, "{\"Sysctls\":{\"kernel.shm_rmid_forced\":\"1\"}}"), DECISION_DENY, "Sysctls are denied");
        is_int(create(p, "{\"MaskedPaths\":[]}"), DECISION_DENY, "emptied MaskedPaths are denied");
        is_int(create(p, "{\"ReadonlyPaths\":[]}"), DECISION_DENY, "emptied ReadonlyPaths are denied");
        is_int(create(p, "{\"PortBindings\":{\"80/tcp\":[{\"HostPort\":\"8080\"}]}}"), DECISION_DENY, "host ports are denied");
        is_int(create(p, "{\"Binds\":[\"cache:/x:rshared\"]}"), DECISION_DENY, "shared bind propagation is denied");

        is_int(decide(p, "POST", "/v1.41/containers/abc/update", NULL, "{\"Privileged\":true}", rule), DECISION_DENY,
               "update to privileged is denied");
        is_int(decide(p, "POST", "/v1.41/containers/abc/update", NULL, "{\"Devices\":[{\"PathOnHost\":\"/dev/mem\"}]}", rule),
               DECISION_DENY, "update adding devices is denied");
        is_int(decide(p, "POST", "/v1.41/containers/abc/update", NULL, "{\"Memory\":1000000}", rule), DECISION_ALLOW,
               "update of a memory limit is allowed");
        is_int(decide(p, "POST", "/v1.41/volumes/create", NULL,
                      "{\"Name\":\"v\",\"DriverOpts\":{\"type\":\"none\",\"o\":\"bind\",\"device\":\"/etc\"}}", rule),
               DECISION_DENY, "a local volume with bind options is denied");
        is_int(decide(p, "POST", "/v1.41/volumes/create", NULL, "{\"Name\":\"v\",\"Driver\":\"sshfs\"}", rule),
               DECISION_DENY, "a volume driver other than local is denied");
        is_int(decide(p, "POST", "/v1.41/volumes/create", NULL, "{\"Name\":\"v\"}", rule), DECISION_ALLOW,
               "a plain volume is allowed");
        is_int(decide(p, "POST", "/v1.41/build", "networkmode=host", NULL, rule), DECISION_DENY,
               "a build on the host network is denied (query)");
        is_int(decide(p, "POST", "/v1.41/build", "t=x&networkmode=default", NULL, rule), DECISION_ALLOW,
               "a build on the default network is allowed");
        is_int(decide(p, "POST", "/v1.41/build", "remote=http://x/y.git", NULL, rule), DECISION_DENY,
               "a build from a remote is denied");
        is_int(decide(p, "POST", "/v1.41/networks/create", NULL, "{\"Name\":\"n\",\"Driver\":\"macvlan\"}", rule),
               DECISION_DENY, "a macvlan network is denied");
        is_int(decide(p, "POST", "/v1.41/build", "t=mine:1&t=loop-agent:latest", NULL, rule), DECISION_DENY,
               "a build tagged as loop's agent image is denied");
        is_int(decide(p, "POST", "/v1.41/build", "t=localhost/Loop-Agent", NULL, rule), DECISION_DENY,
               "...whatever the registry prefix and case");
        is_int(decide(p, "POST", "/v1.41/build", "t=mine:1", NULL, rule), DECISION_ALLOW, "a build with another tag is allowed");
        is_int(decide(p, "POST", "/v1.41/images/evil/tag", "repo=docker.io/library/loop-agent&tag=latest", NULL, rule),
               DECISION_DENY, "retagging an image as loop's agent image is denied");
        is_int(decide(p, "POST", "/v1.41/commit", "container=x&repo=loop-chrome", "{}", rule), DECISION_DENY,
               "committing into loop's chrome image is denied");
        is_int(decide(p, "POST", "/v1.41/images/create", "fromImage=loop-agent&tag=latest", NULL, rule), DECISION_DENY,
               "pulling over loop's agent image is denied");
        is_int(decide(p, "DELETE", "/v1.41/images/localhost/loop-agent:latest", NULL, NULL, rule), DECISION_DENY,
               "removing loop's agent image is denied");
        is_int(decide(p, "DELETE", "/v1.41/images/mine:1", NULL, NULL, rule), DECISION_ALLOW, "removing another image is allowed");
        is_int(decide(p, "POST", "/v1.41/images/load", NULL, NULL, rule), DECISION_APPROVE,
               "loading a tarball of images asks a human (it may name any image)");
}

static int body_error(const char *s) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        return proxy_body_parse(s, strlen(s), &o);
}

static void test_bodies(void) {
        _cleanup_free_ char *deep = NULL, *big = NULL;
        _cleanup_(proxy_policy_freep) ProxyPolicy *p = policy_for(NULL, NULL);

        is_int(body_error("{\"HostConfig\":{\"Privileged\":true}}"), 0, "a JSON body parses");
        is_int(body_error(""), 0, "an empty body is an empty object");
        is_int(body_error("{\"a\":1,\"a\":2}"), -EBADMSG, "two equal keys are 400");
        is_int(body_error("{\"HostConfig\":{\"Privileged\":false,\"privileged\":true}}"), -EBADMSG,
               "two keys differing only in case are 400");
        is_int(body_error("{\"HostConfig\":{\"Privileged\":false,\"\\u0050rivileged\":true}}"), -EBADMSG,
               "a key spelt with a unicode escape is the same key");
        is_int(body_error("{\"\\u017fecurityOpt\":[]}"), -EBADMSG, "a non-ASCII key (which Go folds onto ASCII) is 400");
        is_int(body_error("{\"Privileged\\u0000x\":true}"), -EBADMSG, "a key with an escaped NUL is 400");
        is_int(body_error("{\"Image\":\"a\\u0000b\"}"), -EBADMSG, "a string with an escaped NUL is 400");
        is_int(body_error("{\"a\":1"), -EBADMSG, "a truncated body is 400");
        is_int(body_error("{\"a\":1}x"), -EBADMSG, "trailing garbage is 400");
        is_int(body_error("{\"a\":1} "), 0, "trailing whitespace is fine");
        is_int(body_error("{'a':1}"), -EBADMSG, "single quotes are 400");
        is_int(body_error("{\"a\":\"\xff\"}"), -EBADMSG, "invalid UTF-8 is 400");
        is_int(body_error("{\"a\":[1,]}"), -EBADMSG, "a trailing comma is 400");
        is_int(body_error("{\"a\":\"x\\y\"}"), -EBADMSG, "a bad escape is 400");
        is_int(body_error("{\"a\":\"b\":\"c\"}"), -EBADMSG, "a value where a key belongs is 400");
        is_int(body_error("{\"s\":\"k\\\":\",\"k\":1}"), 0, "a string value ending in an escaped quote and colon is no key");

        deep = malloc(2 * (PROXY_JSON_DEPTH_MAX + 2) + 1);
        if (deep) {
                size_t n = 0;
                for (int i = 0; i < PROXY_JSON_DEPTH_MAX + 2; i++)
                        deep[n++] = '[';
                for (int i = 0; i < PROXY_JSON_DEPTH_MAX + 2; i++)
                        deep[n++] = ']';
                deep[n] = 0;
                is_int(body_error(deep), -EBADMSG, "nesting deeper than the cap is 400");
        }
        big = malloc(PROXY_BODY_MAX + 2);
        if (big) {
                _cleanup_(json_object_putp) json_object *o = NULL;
                memset(big, ' ', PROXY_BODY_MAX + 1);
                big[PROXY_BODY_MAX + 1] = 0;
                is_int(proxy_body_parse(big, PROXY_BODY_MAX + 1, &o), -EFBIG, "a body over 1 MiB is 413");
        }

        if (p) {
                char rule[PROXY_RULE_ID_MAX];
                is_int(decide(p, "POST", "/containers/create", NULL, "{\"hostconfig\":{\"PRIVILEGED\":true}}", rule),
                       DECISION_DENY, "keys are matched ignoring case");
                is_int(decide(p, "POST", "/containers/create", NULL, "{\"HostConfig\":{\"\\u0050rivileged\":true}}", rule),
                       DECISION_DENY, "a key spelt with a unicode escape is matched");
                ok(proxy_policy_wants_body(p, "POST", "/containers/create", NULL), "a create body is checked");
                ok(!proxy_policy_wants_body(p, "GET", "/containers/json", NULL), "a list has no body rule");
                ok(proxy_path_body_is_stream("POST", "/build"), "a build context is a stream");
                ok(proxy_path_body_is_stream("PUT", "/containers/x/archive"), "an archive upload is a stream");
                ok(!proxy_path_body_is_stream("POST", "/containers/create"), "a create body is no stream");
        }
}

/* ---- nested containers ---- */

static void test_nested(void) {
        _cleanup_(json_object_putp) json_object *b = NULL, *q = NULL, *q2 = NULL;
        json_object *hc, *v;

        b = json_tokener_parse("{\"Image\":\"x\",\"labels\":{\"loop-channel\":\"other\",\"mine\":\"1\"},"
                               "\"HostConfig\":{\"CapAdd\":[\"NET_RAW\"],\"PidsLimit\":-1}}");
        ProxyNestedPolicy web = { .channel = "web", .cgroup_parent = "loop-web.slice" };
        is_int(proxy_container_force(b, &web), 0, "a create body is forced into the channel");
        ok(json_object_object_get_ex(b, "Labels", &v) && json_object_object_get_ex(v, "mine", NULL) &&
           !json_object_object_get_ex(b, "labels", NULL), "the agent's labels stay, under one Labels key");
        ok(json_object_object_get_ex(v, "loop-channel", &v) && streq(json_object_get_string(v), "web"),
           "loop-channel names the channel, whatever the agent set");
        json_object_object_get_ex(b, "HostConfig", &hc);
        ok(json_object_object_get_ex(hc, "SecurityOpt", &v) &&
           streq(json_object_get_string(json_object_array_get_idx(v, 0)), "no-new-privileges"),
           "no-new-privileges is set");
        ok(json_object_object_get_ex(hc, "CapDrop", &v) && json_object_array_length(v) == 1 &&
           streq(json_object_get_string(json_object_array_get_idx(v, 0)), "ALL"),
           "every capability is dropped (CapDrop ALL), whatever the agent dropped");
        {
                _cleanup_(json_object_putp) json_object *s = json_tokener_parse(
                        "{\"Image\":\"x\",\"HostConfig\":{\"securityopt\":[\"label=disable\"]}}");
                json_object *shc, *sv;
                ok(proxy_container_force(s, &web) == 0 && json_object_object_get_ex(s, "HostConfig", &shc) &&
                   json_object_object_get_ex(shc, "SecurityOpt", &sv) && !json_object_object_get_ex(shc, "securityopt", NULL),
                   "an array the agent spelt otherwise (securityopt) stands under the engine's one key");
        }
        ok(json_object_object_get_ex(hc, "PidsLimit", &v) && json_object_get_int64(v) == PROXY_PIDS_LIMIT,
           "an unlimited pids limit becomes the proxy's");
        ok(json_object_object_get_ex(hc, "CgroupParent", &v) && streq(json_object_get_string(v), "loop-web.slice"),
           "the container goes into the channel's slice");
        {
                _cleanup_(json_object_putp) json_object *bad = json_tokener_parse("{\"HostConfig\":[]}");
                ProxyNestedPolicy plain = { .channel = "web" };
                is_int(proxy_container_force(bad, &plain), -EBADMSG, "a HostConfig that is no object is refused");
        }
        {
                char *masks[] = { (char *) "/proc/version", (char *) "/proc/kcore", NULL };
                ProxyNestedPolicy strict = { .channel = "web", .seccomp_option = "seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\"}",
                                             .masked_paths = masks, .network_none = true };
                _cleanup_(json_object_putp) json_object *c = json_tokener_parse(
                        "{\"Image\":\"x\",\"NetworkingConfig\":{\"EndpointsConfig\":{\"br\":{}}},"
                        "\"HostConfig\":{\"SecurityOpt\":[\"Seccomp=unconfined\",\"seccomp:/tmp/p.json\",\"unmask=ALL\",\"label=disable\"],"
                        "\"MaskedPaths\":[\"/proc/mine\"],\"ReadonlyPaths\":[],\"networkmode\":\"host\"}}");
                json_object *h, *a, *n;
                bool has_ours = false, has_theirs = false, has_version = false, has_mine = false, has_sys = false;

                is_int(proxy_container_force(c, &strict), 0, "a create body is forced into a strict channel's policy");
                json_object_object_get_ex(c, "HostConfig", &h);
                json_object_object_get_ex(h, "SecurityOpt", &a);
                for (size_t i = 0; i < json_object_array_length(a); i++) {
                        const char *s = json_object_get_string(json_object_array_get_idx(a, i));
                        has_ours |= streq(s, strict.seccomp_option);
                        has_theirs |= strncasecmp(s, "seccomp", 7) == 0 && !streq(s, strict.seccomp_option);
                        has_theirs |= strncasecmp(s, "unmask", 6) == 0;
                }
                ok(has_ours && !has_theirs, "the channel's seccomp profile replaces the agent's, and unmask= is dropped");
                ok(json_object_array_length(a) == 3, "other security options stay, no-new-privileges is added");
                json_object_object_get_ex(h, "MaskedPaths", &a);
                for (size_t i = 0; i < json_object_array_length(a); i++) {
                        const char *s = json_object_get_string(json_object_array_get_idx(a, i));
                        has_version |= streq(s, "/proc/version");
                        has_mine |= streq(s, "/proc/mine");
                }
                ok(has_version && has_mine, "MaskedPaths grows by the channel's masks and keeps the agent's");
                json_object_object_get_ex(h, "ReadonlyPaths", &a);
                for (size_t i = 0; i < json_object_array_length(a); i++)
                        has_sys |= streq(json_object_get_string(json_object_array_get_idx(a, i)), "/proc/sys");
                ok(has_sys, "an empty ReadonlyPaths gets Docker's read-only paths back");
                ok(json_object_object_get_ex(h, "NetworkMode", &n) && streq(json_object_get_string(n), "none") &&
                   !json_object_object_get_ex(h, "networkmode", NULL), "the network mode is none, however it was spelt");
                ok(!json_object_object_get_ex(c, "NetworkingConfig", NULL), "the networks the agent named are dropped");
        }
        {
                ProxyNestedPolicy pod = { .channel = "web", .podman = true,
                                          .masked_paths = (char *[]) { (char *) "/proc/version", NULL } };
                _cleanup_(json_object_putp) json_object *c = json_tokener_parse("{\"Image\":\"x\"}");
                json_object *h, *a, *n;
                bool mask = false;
                is_int(proxy_container_force(c, &pod), 0, "a create body is forced for Podman");
                json_object_object_get_ex(c, "HostConfig", &h);
                json_object_object_get_ex(h, "SecurityOpt", &a);
                for (size_t i = 0; i < json_object_array_length(a); i++)
                        mask |= streq(json_object_get_string(json_object_array_get_idx(a, i)), "mask=/proc/version");
                ok(mask, "Podman gets the channel's masks as mask=");
                ok(!json_object_object_get_ex(h, "NetworkMode", &n), "a channel that allows a network leaves the mode alone");
                is_int(proxy_container_force(c, &pod), 0, "forcing twice works");
                json_object_object_get_ex(h, "SecurityOpt", &a);
                is_int((int) json_object_array_length(a), 2, "and adds nothing twice");
        }
        {
                _cleanup_(json_object_putp) json_object *c = json_tokener_parse(
                        "{\"Image\":\"x\",\"HostConfig\":{\"Binds\":[\"/srv/w:/w\",\"data:/d:ro\",\"data:/e\"],"
                        "\"mounts\":[{\"type\":\"Volume\",\"Source\":\"cache\",\"Target\":\"/c\"},{\"Type\":\"volume\",\"Target\":\"/anon\"},"
                        "{\"Type\":\"bind\",\"Source\":\"/srv/x\",\"Target\":\"/x\"}],\"NetworkMode\":\"container:db\"},"
                        "\"NetworkingConfig\":{\"EndpointsConfig\":{\"backend\":{},\"bridge\":{}}}}");
                _cleanup_(proxy_references_done) ProxyReferences refs = {};
                is_int(proxy_container_references(c, &refs), 0, "a create body's references are read");
                ok(strv_length(refs.volumes) == 2 && streq(refs.volumes[0], "data") && streq(refs.volumes[1], "cache"),
                   "named volumes of Binds and Mounts are found once each; paths and anonymous volumes are not volumes");
                ok(strv_length(refs.networks) == 1 && streq(refs.networks[0], "backend"),
                   "networks named in NetworkingConfig are found, the default bridge is not");
                ok(strv_length(refs.containers) == 1 && streq(refs.containers[0], "db"),
                   "a container whose network namespace is joined is found");
        }
        {
                _cleanup_(json_object_putp) json_object *c = json_tokener_parse("{\"HostConfig\":{\"NetworkMode\":\"shared\"}}");
                _cleanup_(json_object_putp) json_object *bad = json_tokener_parse("{\"HostConfig\":{\"Binds\":[7]}}");
                _cleanup_(proxy_references_done) ProxyReferences refs = {}, none = {};
                is_int(proxy_container_references(c, &refs), 0, "a create body with a network mode is read");
                ok(strv_length(refs.networks) == 1 && streq(refs.networks[0], "shared"), "a network named as the mode is found");
                is_int(proxy_container_references(bad, &none), -EBADMSG, "a bind that is no string is refused");
        }
        {
                _cleanup_(json_object_putp) json_object *vol = json_tokener_parse("{\"Name\":\"data\",\"labels\":{\"loop-channel\":\"other\"}}");
                _cleanup_(json_object_putp) json_object *mine = json_tokener_parse(
                        "{\"Name\":\"data\",\"Labels\":{\"loop-channel\":\"web\",\"loop-type\":\"nested\"}}");
                _cleanup_(json_object_putp) json_object *theirs = json_tokener_parse(
                        "{\"Name\":\"data\",\"Labels\":{\"loop-channel\":\"db\",\"loop-type\":\"nested\"}}");
                _cleanup_(json_object_putp) json_object *bare = json_tokener_parse("{\"Name\":\"data\",\"Labels\":null}");
                json_object *l, *x;
                is_int(proxy_labels_force(vol, "web"), 0, "a volume create body is labelled");
                ok(json_object_object_get_ex(vol, "Labels", &l) && json_object_object_get_ex(l, "loop-channel", &x) &&
                   streq(json_object_get_string(x), "web") && !json_object_object_get_ex(vol, "labels", NULL),
                   "it carries the channel's label, whatever the agent set, under one Labels key");
                ok(proxy_object_is_nested_of(mine, "web"), "a volume of the channel is recognised");
                ok(!proxy_object_is_nested_of(theirs, "web"), "another channel's is not");
                ok(!proxy_object_is_nested_of(bare, "web"), "nor one without labels");
        }
        {
                _cleanup_(json_object_putp) json_object *c = json_tokener_parse("{\"HostConfig\":{\"SecurityOpt\":[1]}}");
                ProxyNestedPolicy plain = { .channel = "web" };
                is_int(proxy_container_force(c, &plain), -EBADMSG, "a security option that is no string is refused");
        }

        q = json_object_new_object();
        is_int(proxy_query_scope_to_channel(q, "web"), 0, "a list without filters is scoped");
        ok(json_object_object_get_ex(q, "filters", &v) &&
           streq(json_object_get_string(v), "{\"label\":[\"loop-channel=web\",\"loop-type=nested\"]}"),
           "the filter names the channel and nested containers");
        q2 = json_tokener_parse("{\"filters\":\"{\\\"label\\\":{\\\"a=b\\\":true},\\\"status\\\":[\\\"exited\\\"]}\"}");
        is_int(proxy_query_scope_to_channel(q2, "web"), 0, "a list with the map form of filters is scoped");
        ok(json_object_object_get_ex(q2, "filters", &v) && strstr(json_object_get_string(v), "\"loop-channel=web\":true") &&
           strstr(json_object_get_string(v), "\"a=b\":true"), "the agent's filters stay and the channel's is added");
        {
                _cleanup_(json_object_putp) json_object *q3 = json_tokener_parse("{\"filters\":\"{\\\"Label\\\":[]}\"}");
                is_int(proxy_query_scope_to_channel(q3, "web"), -EBADMSG, "a label filter spelt in another case is refused");
                _cleanup_(json_object_putp) json_object *q4 = json_tokener_parse("{\"filters\":\"not json\"}");
                is_int(proxy_query_scope_to_channel(q4, "web"), -EBADMSG, "filters that are not JSON are refused");
        }
        {
                _cleanup_(json_object_putp) json_object *mine = json_tokener_parse(
                        "{\"Config\":{\"Labels\":{\"loop-channel\":\"web\",\"loop-type\":\"nested\"}}}");
                _cleanup_(json_object_putp) json_object *agent = json_tokener_parse(
                        "{\"Config\":{\"Labels\":{\"loop-channel\":\"web\",\"loop-type\":\"agent\"}}}");
                ok(proxy_container_is_nested_of(mine, "web"), "a nested container of the channel is recognised");
                ok(!proxy_container_is_nested_of(mine, "db"), "another channel's is not");
                ok(!proxy_container_is_nested_of(agent, "web"), "the channel's agent container is not a nested one");
        }
}

/* Bind pins and tmpfs limits: what a create gets and what start checks. */
static void test_pins_and_tmpfs(void) {
        _cleanup_free_ char *dir = NULL, *link = NULL, *body_text = NULL, *expect = NULL, *moved = NULL, *changed = NULL;
        _cleanup_(json_object_putp) json_object *body = NULL, *inspect = NULL;
        json_object *hc, *binds, *mounts, *labels, *pins;
        const char *why;

        if (asprintf(&dir, "%s/pin-src", tmpdir) < 0 || asprintf(&link, "%s/pin-link", tmpdir) < 0 ||
            asprintf(&moved, "%s/pin-moved", tmpdir) < 0 || mkdir(dir, 0755) < 0 || symlink("pin-src", link) < 0) {
                ok(false, "the pin test's directories are made");
                return;
        }
        if (asprintf(&body_text, "{\"Image\":\"x\",\"Labels\":{\"loop-bind-pins\":\"[]\"},\"HostConfig\":{\"Binds\":[\"%s:/a:ro\",\"vol:/v\"],"
                     "\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"%s\",\"Target\":\"/b\"},{\"Type\":\"tmpfs\",\"Target\":\"/t\"}]}}",
                     link, link) < 0 || asprintf(&expect, "%s:/a:ro", dir) < 0)
                return;
        body = json_tokener_parse(body_text);
        is_int(proxy_binds_pin(body), 0, "a create body's bind sources are pinned");
        json_object_object_get_ex(body, "HostConfig", &hc);
        json_object_object_get_ex(hc, "Binds", &binds);
        json_object_object_get_ex(hc, "Mounts", &mounts);
        ok(streq(json_object_get_string(json_object_array_get_idx(binds, 0)), expect),
           "a bind through a symlink is sent resolved, with its target and options");
        ok(streq(json_object_get_string(json_object_array_get_idx(binds, 1)), "vol:/v"), "a named volume is left alone");
        {
                json_object *rp, *name;
                ok(json_object_object_get_ex(hc, "RestartPolicy", &rp) && json_object_object_get_ex(rp, "Name", &name) &&
                   streq(json_object_get_string(name), "no"), "a container with pinned binds is not restarted by the engine");
        }
        {
                json_object *src;
                ok(json_object_object_get_ex(json_object_array_get_idx(mounts, 0), "Source", &src) &&
                   streq(json_object_get_string(src), dir), "a bind mount's source is sent resolved");
        }
        json_object_object_get_ex(body, "Labels", &labels);
        ok(json_object_object_get_ex(labels, PROXY_LABEL_PINS, &pins) &&
           strstr(json_object_get_string(pins), dir) && !streq(json_object_get_string(pins), "[]"),
           "the pins replace the label the agent set");

        /* the engine's inspect carries the labels under Config */
        inspect = json_object_new_object();
        json_object *config = json_object_new_object();
        json_object_object_add(config, "Labels", json_object_get(labels));
        json_object_object_add(inspect, "Config", config);
        is_int(proxy_binds_verify(inspect, &changed), 0, "the pins hold while nothing changed");
        if (rename(dir, moved) < 0 || mkdir(dir, 0755) < 0) {
                ok(false, "the source is swapped");
                return;
        }
        is_int(proxy_binds_verify(inspect, &changed), -EXDEV, "a source replaced by another directory breaks its pin");
        ok(streq_ptr(changed, dir), "...and the changed path is named");
        changed = mfree(changed);
        if (rmdir(dir) < 0 || symlink(moved, dir) < 0) {
                ok(false, "the source is swapped for a symlink");
                return;
        }
        is_int(proxy_binds_verify(inspect, &changed), -EXDEV, "a source replaced by a symlink to the same directory breaks its pin");
        {
                _cleanup_(json_object_putp) json_object *bad = json_tokener_parse(
                        "{\"Config\":{\"Labels\":{\"loop-bind-pins\":\"[[1,2]]\"}}}");
                _cleanup_(json_object_putp) json_object *missing = json_tokener_parse(
                        "{\"HostConfig\":{\"Binds\":[\"/nonexistent-loop-test/x:/x\"]}}");
                _cleanup_free_ char *p = NULL;
                is_int(proxy_binds_verify(bad, &p), -EBADMSG, "a malformed pin label is refused");
                is_int(proxy_binds_pin(missing), -ENOENT, "a bind source that does not exist cannot be pinned");
        }

        /* tmpfs */
        {
                _cleanup_(json_object_putp) json_object *t = json_tokener_parse(
                        "{\"HostConfig\":{\"Tmpfs\":{\"/a\":\"\",\"/b\":\"rw,noexec,size=1g\"},"
                        "\"Mounts\":[{\"Type\":\"tmpfs\",\"Target\":\"/c\"},{\"Type\":\"tmpfs\",\"Target\":\"/d\",\"TmpfsOptions\":{\"SizeBytes\":1024,\"Mode\":1023}}]}}");
                json_object *h, *tm, *v, *m, *to;
                is_int(proxy_tmpfs_check(t, &why), 0, "sane tmpfs mounts pass");
                json_object_object_get_ex(t, "HostConfig", &h);
                json_object_object_get_ex(h, "Tmpfs", &tm);
                ok(json_object_object_get_ex(tm, "/a", &v) && streq(json_object_get_string(v), "size=65536k"),
                   "a tmpfs without a size gets 64 MiB");
                ok(json_object_object_get_ex(tm, "/b", &v) && streq(json_object_get_string(v), "rw,noexec,size=1g"),
                   "one with a size keeps it");
                json_object_object_get_ex(h, "Mounts", &m);
                ok(json_object_object_get_ex(json_object_array_get_idx(m, 0), "TmpfsOptions", &to) &&
                   json_object_object_get_ex(to, "SizeBytes", &v) && json_object_get_int64(v) == (int64_t) PROXY_TMPFS_SIZE_DEFAULT,
                   "a tmpfs mount without a size gets 64 MiB");
        }
        static const struct {
                const char *body, *name;
        } refused[] = {
                { "{\"HostConfig\":{\"Tmpfs\":{\"/a\":\"exec,suid\"}}}", "exec and suid together" },
                { "{\"HostConfig\":{\"Tmpfs\":{\"/a\":\"dev\"}}}", "device files" },
                { "{\"HostConfig\":{\"Tmpfs\":{\"/a\":\"size=5g\"}}}", "a size beyond the cap" },
                { "{\"HostConfig\":{\"Tmpfs\":{\"/a\":\"size=50%\"}}}", "a size relative to memory" },
                { "{\"HostConfig\":{\"Tmpfs\":{\"/a\":\"mode=4777\"}}}", "a setuid mode" },
                { "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"tmpfs\",\"TmpfsOptions\":{\"SizeBytes\":5368709120}}]}}", "a mount beyond the cap" },
                { "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"tmpfs\",\"TmpfsOptions\":{\"Mode\":2559}}]}}", "a mount with a setuid mode" },
                { "{\"HostConfig\":{\"Mounts\":[{\"Type\":\"tmpfs\",\"TmpfsOptions\":{\"Options\":[[\"exec\"],[\"suid\"]]}}]}}", "mount options exec and suid" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                _cleanup_(json_object_putp) json_object *t = json_tokener_parse(refused[i].body);
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "a tmpfs with %s is refused", refused[i].name) < 0)
                        return;
                is_int(proxy_tmpfs_check(t, &why), -EPERM, "%s", name);
        }
        {
                _cleanup_(json_object_putp) json_object *t = json_tokener_parse("{\"HostConfig\":{\"Tmpfs\":{\"/a\":1}}}");
                is_int(proxy_tmpfs_check(t, &why), -EBADMSG, "tmpfs options that are no string are refused");
        }
}

/* A container that binds host paths runs as the agent: User forced, GroupAdd dropped, no SETUID/SETGID. */
static void test_run_as(void) {
        _cleanup_(json_object_putp) json_object *body = json_tokener_parse(
                "{\"user\":\"0\",\"HostConfig\":{\"Binds\":[\"/w:/w\",\"vol:/v\"],\"groupadd\":[\"0\"],"
                "\"CapAdd\":[\"CAP_SETUID\",\"setgid\",\"KILL\"],\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/x\",\"Target\":\"/x\"},"
                "{\"Type\":\"volume\",\"Source\":\"v\",\"Target\":\"/y\"}]}}");
        _cleanup_(json_object_putp) json_object *none = json_tokener_parse(
                "{\"HostConfig\":{\"Binds\":[\"vol:/v\"],\"Mounts\":[{\"Type\":\"tmpfs\",\"Target\":\"/t\"}]}}");
        _cleanup_(json_object_putp) json_object *bad = json_tokener_parse("{\"HostConfig\":{\"Binds\":[1]}}");
        _cleanup_(json_object_putp) json_object *exec = json_tokener_parse("{\"User\":\"root\",\"Cmd\":[\"sh\"]}");
        _cleanup_(json_object_putp) json_object *pinned = json_tokener_parse(
                "{\"Config\":{\"Labels\":{\"loop-bind-pins\":\"[[1,2,\\\"/w\\\"]]\"}}}");
        _cleanup_(json_object_putp) json_object *mounted = json_tokener_parse(
                "{\"Config\":{\"Labels\":{}},\"Mounts\":[{\"Type\":\"volume\"},{\"Type\":\"bind\"}]}");
        _cleanup_(json_object_putp) json_object *volume_only = json_tokener_parse(
                "{\"Config\":{\"Labels\":{}},\"HostConfig\":{\"Binds\":[\"v:/v\"]},\"Mounts\":[{\"Type\":\"volume\"}]}");
        json_object *hc, *v;

        is_int(proxy_container_host_binds(body), 2, "a create's host binds are counted (Binds paths, Mounts of type bind)");
        is_int(proxy_container_host_binds(none), 0, "named volumes and tmpfs are not host binds");
        is_int(proxy_container_host_binds(bad), -EBADMSG, "a bind that is not a string is refused");
        is_int(proxy_container_run_as(body, 1000, 1001), 0, "a create with host binds is made to run as the agent");
        ok(json_object_object_get_ex(body, "User", &v) && streq(json_object_get_string(v), "1000:1001") &&
           !json_object_object_get_ex(body, "user", NULL), "...User is the agent's uid:gid, whatever the caller spelt");
        json_object_object_get_ex(body, "HostConfig", &hc);
        ok(!json_object_object_get_ex(hc, "groupadd", NULL) && !json_object_object_get_ex(hc, "GroupAdd", NULL),
           "...with no group added");
        ok(json_object_object_get_ex(hc, "CapAdd", &v) && json_object_array_length(v) == 1 &&
           streq(json_object_get_string(json_object_array_get_idx(v, 0)), "KILL"),
           "...and SETUID and SETGID taken from CapAdd (in any spelling), the rest kept");
        is_int(proxy_exec_run_as(exec, 1000, 1001), 0, "an exec is made to run as the agent");
        ok(json_object_object_get_ex(exec, "User", &v) && streq(json_object_get_string(v), "1000:1001"),
           "...its User replaced");
        ok(proxy_inspect_binds_host(pinned), "a container with pinned binds binds host paths");
        ok(proxy_inspect_binds_host(mounted), "a container with a mount of type bind binds host paths");
        ok(!proxy_inspect_binds_host(volume_only), "a container with named volumes only does not");
}

static void test_default_networks(void) {
        _cleanup_(json_object_putp) json_object *list = json_tokener_parse(
                "[{\"Name\":\"bridge\",\"Id\":\"b1\",\"Labels\":{},\"Containers\":{\"c1\":{\"Name\":\"other-channels\"}}},"
                "{\"Name\":\"host\",\"Id\":\"h1\",\"Labels\":null,\"containers\":{\"c2\":{}}},"
                "{\"Name\":\"mine\",\"Id\":\"m1\",\"Labels\":{\"loop-channel\":\"web\",\"loop-type\":\"nested\"},\"Containers\":{\"c3\":{}}},"
                "{\"Name\":\"theirs\",\"Id\":\"t1\",\"Labels\":{\"loop-channel\":\"db\",\"loop-type\":\"nested\"}},"
                "{\"Name\":\"none\",\"Id\":\"n1\",\"Labels\":{\"loop-channel\":\"db\",\"loop-type\":\"nested\"}},"
                "{\"Name\":\"operators\",\"Id\":\"o1\"}]");
        _cleanup_(json_object_putp) json_object *shown = NULL;
        json_object *n, *x;

        ok(proxy_network_is_engine_default(json_object_array_get_idx(list, 0)), "bridge is an engine default network");
        ok(proxy_network_is_engine_default(json_object_array_get_idx(list, 1)), "so is host");
        ok(!proxy_network_is_engine_default(json_object_array_get_idx(list, 4)),
           "a network another channel made under a default's name is not");
        ok(!proxy_network_is_engine_default(json_object_array_get_idx(list, 5)), "nor an operator's network");
        is_int(proxy_network_list_scope(list, "web", &shown), 0, "a network list is scoped");
        is_int((int) json_object_array_length(shown), 3, "it keeps bridge, host and the channel's own network");
        n = json_object_array_get_idx(shown, 0);
        ok(json_object_object_get_ex(n, "Containers", &x) && json_object_object_length(x) == 0,
           "a default network is shown without the containers on it");
        n = json_object_array_get_idx(shown, 1);
        ok(!json_object_object_get_ex(n, "containers", NULL) && json_object_object_get_ex(n, "Containers", &x) &&
           json_object_object_length(x) == 0, "...however the engine spelt the key");
        n = json_object_array_get_idx(shown, 2);
        ok(json_object_object_get_ex(n, "Name", &x) && streq(json_object_get_string(x), "mine") &&
           json_object_object_get_ex(n, "Containers", &x) && json_object_object_length(x) == 1,
           "the channel's own network is shown as it is");
        {
                _cleanup_(json_object_putp) json_object *o = json_tokener_parse("{\"Name\":\"bridge\"}"), *r = NULL;
                is_int(proxy_network_list_scope(o, "web", &r), -EBADMSG, "a network list that is no array is refused");
        }
}

static void test_build(void) {
        /* what the docker CLI (classic builder) sends for "docker build -t x ." */
        static const char cli[] = "{\"t\":[\"x\"],\"rm\":\"1\",\"cpusetcpus\":\"\",\"networkmode\":\"default\","
                "\"cpusetmems\":\"\",\"cpushares\":\"0\",\"cpuquota\":\"0\",\"cpuperiod\":\"0\",\"memory\":\"0\","
                "\"memswap\":\"0\",\"cgroupparent\":\"\",\"shmsize\":\"0\",\"dockerfile\":\"Dockerfile\",\"target\":\"\","
                "\"ulimits\":\"null\",\"buildargs\":\"{}\",\"labels\":\"{}\",\"cachefrom\":\"[]\",\"version\":\"1\"}";
        static const struct {
                const char *query, *refused;
        } refused[] = {
                { "{\"extrahosts\":\"host.docker.internal:host-gateway\"}", "extrahosts" },
                { "{\"isolation\":\"chroot\"}", "isolation" },
                { "{\"nsoptions\":\"[{\\\"Name\\\":\\\"network\\\",\\\"Host\\\":true}]\"}", "nsoptions" },
                { "{\"addcaps\":\"CAP_SYS_ADMIN\"}", "addcaps" },
                { "{\"securityopt\":\"seccomp=unconfined\"}", "securityopt" },
                { "{\"secrets\":\"id=s,src=/etc/shadow\"}", "secrets" },
                { "{\"rusagelogfile\":\"/etc/cron.d/x\"}", "rusagelogfile" },
                { "{\"ulimits\":\"[{\\\"Name\\\":\\\"nproc\\\",\\\"Soft\\\":-1}]\"}", "ulimits" },
                { "{\"NetworkMode\":\"host\"}", "NetworkMode" },
                { "{\"version\":\"2\"}", "version" },
        };
        _cleanup_(json_object_putp) json_object *q = json_tokener_parse(cli);
        _cleanup_free_ char *net = NULL, *why = NULL;
        json_object *v;

        is_int(proxy_build_force(q, true, &net, &why), 0, "what the docker CLI sends for a build passes");
        ok(json_object_object_get_ex(q, "networkmode", &v) && streq(json_object_get_string(v), "none"),
           "the build's networkmode becomes none when nested containers have no network");
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                _cleanup_(json_object_putp) json_object *r = json_tokener_parse(refused[i].query);
                _cleanup_free_ char *n = NULL, *w = NULL;
                is_int(proxy_build_force(r, true, &n, &w), -EPERM, "a build with %s is refused", refused[i].refused);
                ok(streq_ptr(w, refused[i].refused), "...naming %s", refused[i].refused);
        }
        {
                _cleanup_(json_object_putp) json_object *r = json_tokener_parse("{\"networkmode\":\"theirs\"}");
                _cleanup_free_ char *n = NULL, *w = NULL;
                is_int(proxy_build_force(r, false, &n, &w), 0, "with nested networks on, a build may name a network");
                ok(streq_ptr(n, "theirs"), "...which is returned, to be checked as the channel's");
                ok(json_object_object_get_ex(r, "networkmode", &v) && streq(json_object_get_string(v), "theirs"),
                   "...and kept");
        }
        {
                _cleanup_(json_object_putp) json_object *r = json_tokener_parse("{\"networkmode\":\"bridge\"}");
                _cleanup_free_ char *n = NULL, *w = NULL;
                is_int(proxy_build_force(r, false, &n, &w), 0, "with nested networks on, the default network passes");
                ok(!n, "...without a network to check");
        }
}

int main(void) {
        if (!mkdtemp(tmpdir))
                return 1;
        test_paths();
        test_policy_http();
        test_policy_compile_errors();
        test_policy_body();
        test_bodies();
        test_nested();
        test_pins_and_tmpfs();
        test_run_as();
        test_default_networks();
        test_build();
        {
                _cleanup_free_ char *cmd = NULL;
                if (asprintf(&cmd, "rm -rf '%s'", tmpdir) < 0 || system(cmd) != 0)
                        diag("could not remove the test's directory");
        }
        return done_testing();
}
