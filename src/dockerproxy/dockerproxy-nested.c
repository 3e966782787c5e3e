/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

#include "config.h"
#include "dockerproxy-nested.h"
#include "json-util.h"
#include "strv.h"

/* ["ALL"] */
static json_object *json_object_new_string_array_all(void) {
        json_object *a = json_object_new_array();

        if (a && json_object_array_add(a, json_object_new_string("ALL")) < 0)
                return json_object_put(a), NULL;
        return a;
}

/* The value of key in o ignoring case, and the key as spelt in o. */
static json_object *get_icase(json_object *o, const char *key, const char **ret_key) {
        json_object_object_foreach(o, k, v)
                if (strcasecmp(k, key) == 0) {
                        if (ret_key)
                                *ret_key = k;
                        return v;
                }
        return NULL;
}

/* The child of o under key, of type (an object or an array; created when missing or null), under the key
 * as the engine documents it: a spelling of the agent's is replaced, so that nothing else can read
 * another. -EBADMSG when key holds something else. */
static int child_typed(json_object *o, const char *key, json_type type, json_object **ret) {
        const char *spelt = NULL;
        json_object *v = get_icase(o, key, &spelt);

        assert(type == json_type_object || type == json_type_array);

        if (v && json_object_is_type(v, type)) {
                if (!streq(spelt, key)) {
                        _cleanup_free_ char *copy = strdup(spelt);
                        if (!copy)
                                return -ENOMEM;
                        json_object_get(v);
                        json_object_object_del(o, copy);
                        if (json_object_object_add(o, key, v) < 0) {
                                json_object_put(v);
                                return -ENOMEM;
                        }
                }
                *ret = v;
                return 0;
        }
        if (v && !json_object_is_type(v, json_type_null))
                return -EBADMSG;
        v = type == json_type_object ? json_object_new_object() : json_object_new_array();
        if (!v || json_object_object_add(o, spelt ?: key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

static int child_object(json_object *o, const char *key, json_object **ret) {
        return child_typed(o, key, json_type_object, ret);
}

static int child_array(json_object *o, const char *key, json_object **ret) {
        return child_typed(o, key, json_type_array, ret);
}

/* Sets key (ignoring case: the spelling the agent used is replaced, so no second key can win) to v. */
static int set_icase(json_object *o, const char *key, json_object *v) {
        const char *spelt = NULL;

        if (!v)
                return -ENOMEM;
        if (get_icase(o, key, &spelt)) {
                _cleanup_free_ char *copy = strdup(spelt);
                if (!copy) {
                        json_object_put(v);
                        return -ENOMEM;
                }
                json_object_object_del(o, copy);
        }
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Adds the strings of add (n of them) to the array a that it lacks. */
static int array_add_missing(json_object *a, const char * const *add, size_t n) {
        for (size_t i = 0; i < n; i++) {
                bool found = false;
                for (size_t j = 0; !found && j < json_object_array_length(a); j++)
                        found = streq_ptr(json_object_get_string(json_object_array_get_idx(a, j)), add[i]);
                if (!found && json_object_array_add(a, json_object_new_string(add[i])) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A security option the channel decides: "seccomp=..." / "seccomp:...", Podman's "unmask=...", and
 * no-new-privileges in any form (the proxy's own goes last, so no later one of the caller's wins). */
static bool security_opt_is_forced(const char *s) {
        size_t n = strcspn(s, "=:");
        return (n == 7 && strncasecmp(s, "seccomp", 7) == 0) || (n == 6 && strncasecmp(s, "unmask", 6) == 0) ||
                (n == 17 && strncasecmp(s, "no-new-privileges", 17) == 0);
}

static int force_security_opt(json_object *secopt, const ProxyNestedPolicy *policy) {
        _cleanup_(json_object_putp) json_object *kept = json_object_new_array();
        int r;

        if (!kept)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(secopt); i++) {
                json_object *e = json_object_array_get_idx(secopt, i);
                if (!json_object_is_type(e, json_type_string))
                        return -EBADMSG;
                if (!security_opt_is_forced(json_object_get_string(e)) &&
                    json_object_array_add(kept, json_object_get(e)) < 0)
                        return -ENOMEM;
        }
        /* the array is the body's: emptied and refilled in place */
        if (json_object_array_length(secopt) > 0 &&
            json_object_array_del_idx(secopt, 0, json_object_array_length(secopt)) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(kept); i++)
                if (json_object_array_add(secopt, json_object_get(json_object_array_get_idx(kept, i))) < 0)
                        return -ENOMEM;

        if (json_object_array_add(secopt, json_object_new_string("no-new-privileges")) < 0)
                return -ENOMEM;
        if (policy->seccomp_option && (r = array_add_missing(secopt, &policy->seccomp_option, 1)) < 0)
                return r;
        if (policy->podman && policy->masked_paths && policy->masked_paths[0]) {
                _cleanup_free_ char *joined = strv_join(policy->masked_paths, ":"), *mask = NULL;
                if (!joined || asprintf(&mask, "mask=%s", joined) < 0)
                        return -ENOMEM;
                const char *m = mask;
                if ((r = array_add_missing(secopt, &m, 1)) < 0)
                        return r;
        }
        return 0;
}

/* Podman takes nosuid and nodev as bind options: every bind gets them (Docker takes neither, in Binds
 * or in Mounts). A Mounts entry of type bind becomes a Binds entry for that. */
static int bind_with_options(const char *spec, char **ret) {
        const char *dst = strchr(spec, ':'), *opts = dst ? strchr(dst + 1, ':') : NULL;
        _cleanup_free_ char *s = NULL;

        if (!dst)
                return -EBADMSG;
        if (!opts)
                return asprintf(ret, "%s:nosuid,nodev", spec) < 0 ? -ENOMEM : 0;
        s = strdup(spec);
        if (!s)
                return -ENOMEM;
        for (const char *want[] = { "nosuid", "nodev" }, **w = want; w < want + 2; w++) {
                bool found = false;
                for (const char *p = strrchr(s, ':') + 1; *p;) {
                        size_t n = strcspn(p, ",");
                        found = found || (n == strlen(*w) && strncmp(p, *w, n) == 0);
                        p += n + (p[n] == ',');
                }
                if (!found) {
                        char *t = NULL;
                        bool empty = s[strlen(s) - 1] == ':';
                        if (asprintf(&t, "%s%s%s", s, empty ? "" : ",", *w) < 0)
                                return -ENOMEM;
                        free(s);
                        s = t;
                }
        }
        *ret = TAKE_PTR(s);
        return 0;
}

static int binds_nosuid_nodev(json_object *hc) {
        json_object *binds, *mounts = get_icase(hc, "Mounts", NULL);
        int r;

        if ((r = child_array(hc, "Binds", &binds)) < 0)
                return r;
        if (json_object_is_type(mounts, json_type_array))
                for (size_t i = json_object_array_length(mounts); i > 0; i--) {
                        json_object *m = json_object_array_get_idx(mounts, i - 1), *t, *src, *dst, *ro, *bo, *prop = NULL;
                        _cleanup_free_ char *spec = NULL;
                        if (!json_object_is_type(m, json_type_object))
                                return -EBADMSG;
                        t = get_icase(m, "Type", NULL);
                        if (!t || strcasecmp(strempty(json_object_get_string(t)), "bind") != 0)
                                continue;
                        src = get_icase(m, "Source", NULL);
                        dst = get_icase(m, "Target", NULL);
                        ro = get_icase(m, "ReadOnly", NULL);
                        bo = get_icase(m, "BindOptions", NULL);
                        if (json_object_is_type(bo, json_type_object))
                                prop = get_icase(bo, "Propagation", NULL);
                        if (!json_object_is_type(src, json_type_string) || !json_object_is_type(dst, json_type_string))
                                return -EBADMSG;
                        const char *p = json_object_is_type(prop, json_type_string) ? json_object_get_string(prop) : "";
                        bool readonly = json_object_get_boolean(ro);
                        if (asprintf(&spec, "%s:%s%s%s%s%s", json_object_get_string(src), json_object_get_string(dst),
                                     readonly || !isempty(p) ? ":" : "", readonly ? "ro" : "",
                                     readonly && !isempty(p) ? "," : "", p) < 0)
                                return -ENOMEM;
                        if (json_object_array_add(binds, json_object_new_string(spec)) < 0 ||
                            json_object_array_del_idx(mounts, i - 1, 1) < 0)
                                return -ENOMEM;
                }
        for (size_t i = 0; i < json_object_array_length(binds); i++) {
                json_object *b = json_object_array_get_idx(binds, i);
                _cleanup_free_ char *spec = NULL;
                if (!json_object_is_type(b, json_type_string))
                        return -EBADMSG;
                r = bind_with_options(json_object_get_string(b), &spec);
                if (r < 0)
                        return r;
                if (json_object_array_put_idx(binds, i, json_object_new_string(spec)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int proxy_container_force(json_object *body, const ProxyNestedPolicy *policy) {
        static const char * const docker_masked[] = { PROXY_DOCKER_MASKED_PATHS };
        static const char * const docker_readonly[] = { PROXY_DOCKER_READONLY_PATHS };
        json_object *hc, *secopt, *capdrop, *pids, *masked, *readonly;
        const char *channel = policy->channel, *cgroup_parent = policy->cgroup_parent;
        int r;

        r = proxy_labels_force(body, channel);
        if (r < 0)
                return r;

        if ((r = child_object(body, "HostConfig", &hc)) < 0 ||
            (r = child_array(hc, "SecurityOpt", &secopt)) < 0 ||
            (r = child_array(hc, "CapDrop", &capdrop)) < 0)
                return r;
        if ((r = force_security_opt(secopt, policy)) < 0)
                return r;
        if ((r = child_array(hc, "MaskedPaths", &masked)) < 0 ||
            (r = array_add_missing(masked, docker_masked, ELEMENTSOF(docker_masked))) < 0 ||
            (r = array_add_missing(masked, (const char * const *) policy->masked_paths, strv_length(policy->masked_paths))) < 0 ||
            (r = child_array(hc, "ReadonlyPaths", &readonly)) < 0 ||
            (r = array_add_missing(readonly, docker_readonly, ELEMENTSOF(docker_readonly))) < 0)
                return r;
        if (policy->network_none) {
                const char *spelt = NULL;
                if (get_icase(body, "NetworkingConfig", &spelt)) {
                        _cleanup_free_ char *copy = strdup(spelt);
                        if (!copy)
                                return -ENOMEM;
                        json_object_object_del(body, copy);
                }
                if ((r = set_icase(hc, "NetworkMode", json_object_new_string("none"))) < 0)
                        return r;
        }
        /* every capability dropped; what CapAdd gives back was checked (dockerproxy-body.h) */
        (void) capdrop;
        if ((r = set_icase(hc, "CapDrop", json_object_new_string_array_all())) < 0)
                return r;
        if (policy->podman && (r = binds_nosuid_nodev(hc)) < 0)
                return r;

        pids = get_icase(hc, "PidsLimit", NULL);
        if (!pids || !json_object_is_type(pids, json_type_int) || json_object_get_int64(pids) <= 0 ||
            json_object_get_int64(pids) > PROXY_PIDS_LIMIT)
                if ((r = set_icase(hc, "PidsLimit", json_object_new_int64(PROXY_PIDS_LIMIT))) < 0)
                        return r;
        if (cgroup_parent && (r = set_icase(hc, "CgroupParent", json_object_new_string(cgroup_parent))) < 0)
                return r;
        return 0;
}

int proxy_query_scope_to_channel(json_object *query, const char *channel) {
        _cleanup_(json_object_putp) json_object *filters = NULL;
        _cleanup_free_ char *label = NULL;
        json_object *v, *l;
        const char *text;

        if (asprintf(&label, PROXY_LABEL_CHANNEL "=%s", channel) < 0)
                return -ENOMEM;
        v = get_icase(query, "filters", NULL);
        text = v ? json_object_get_string(v) : NULL;
        if (!v && channel_name_check(channel, NULL) >= 0) {
                /* the common list, without filters of its own: the channel's as one string (its name needs
                 * no JSON escaping), not a JSON document built and printed for every request */
                _cleanup_free_ char *scoped = NULL;
                if (asprintf(&scoped, "{\"label\":[\"%s\",\"" PROXY_LABEL_TYPE "=" PROXY_TYPE_NESTED "\"]}", label) < 0)
                        return -ENOMEM;
                v = json_object_new_string(scoped);
                if (!v || json_object_object_add(query, "filters", v) < 0) {
                        json_object_put(v);
                        return -ENOMEM;
                }
                return 0;
        }
        if (!isempty(text)) {
                if (strlen(text) > PROXY_FILTERS_MAX)
                        return -EBADMSG;
                filters = json_tokener_parse(text);
                if (!filters || !json_object_is_type(filters, json_type_object))
                        return -EBADMSG;
        } else {
                filters = json_object_new_object();
                if (!filters)
                        return -ENOMEM;
        }

        /* one "label" key, however the agent spelt it: the engine would merge them */
        {
                const char *spelt = NULL;
                size_t n = 0;
                json_object_object_foreach(filters, k, e) {
                        (void) e;
                        if (strcasecmp(k, "label") == 0) {
                                n++;
                                spelt = k;
                        }
                }
                if (n > 1 || (spelt && !streq(spelt, "label")))
                        return -EBADMSG;
        }
        l = get_icase(filters, "label", NULL);
        if (!l) {
                l = json_object_new_array();
                if (!l || json_object_object_add(filters, "label", l) < 0) {
                        json_object_put(l);
                        return -ENOMEM;
                }
        }
        /* label filters are all required: the channel's, and nested (not the agent's own container) */
        const char *labels[] = { label, PROXY_LABEL_TYPE "=" PROXY_TYPE_NESTED };
        for (size_t i = 0; i < ELEMENTSOF(labels); i++)
                if (json_object_is_type(l, json_type_array)) {
                        if (json_object_array_add(l, json_object_new_string(labels[i])) < 0)
                                return -ENOMEM;
                } else if (json_object_is_type(l, json_type_object)) {
                        if (json_add(l, labels[i], json_object_new_boolean(true)) < 0)
                                return -ENOMEM;
                } else
                        return -EBADMSG;

        const char *spelt = NULL;
        if (get_icase(query, "filters", &spelt)) {
                _cleanup_free_ char *copy = strdup(spelt);
                if (!copy)
                        return -ENOMEM;
                json_object_object_del(query, copy);
        }
        v = json_object_new_string(json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN));
        if (!v || json_object_object_add(query, "filters", v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

bool proxy_container_is_nested_of(json_object *inspect, const char *channel) {
        json_object *config, *labels, *c, *t;

        if (!json_object_object_get_ex(inspect, "Config", &config) ||
            !json_object_object_get_ex(config, "Labels", &labels) ||
            !json_object_is_type(labels, json_type_object) ||
            !json_object_object_get_ex(labels, PROXY_LABEL_CHANNEL, &c) ||
            !json_object_object_get_ex(labels, PROXY_LABEL_TYPE, &t))
                return false;
        return streq_ptr(json_object_get_string(c), channel) &&
                streq_ptr(json_object_get_string(t), PROXY_TYPE_NESTED);
}

int proxy_labels_force(json_object *body, const char *channel) {
        json_object *labels;
        int r;

        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        if ((r = child_object(body, "Labels", &labels)) < 0 ||
            (r = set_icase(labels, PROXY_LABEL_CHANNEL, json_object_new_string(channel))) < 0 ||
            (r = set_icase(labels, PROXY_LABEL_TYPE, json_object_new_string(PROXY_TYPE_NESTED))) < 0)
                return r;
        return 0;
}

bool proxy_object_is_nested_of(json_object *inspect, const char *channel) {
        json_object *labels, *c, *t;

        if (!json_object_object_get_ex(inspect, "Labels", &labels) ||
            !json_object_is_type(labels, json_type_object) ||
            !json_object_object_get_ex(labels, PROXY_LABEL_CHANNEL, &c) ||
            !json_object_object_get_ex(labels, PROXY_LABEL_TYPE, &t))
                return false;
        return streq_ptr(json_object_get_string(c), channel) &&
                streq_ptr(json_object_get_string(t), PROXY_TYPE_NESTED);
}

void proxy_references_done(ProxyReferences *r) {
        r->volumes = strv_free(r->volumes);
        r->networks = strv_free(r->networks);
        r->containers = strv_free(r->containers);
}

static int reference_add(char ***l, const char *name, size_t n) {
        _cleanup_free_ char *s = strndup(name, n);

        if (!s)
                return -ENOMEM;
        if (strv_contains(*l, s))
                return 0;
        if (strv_length(*l) >= PROXY_REFERENCES_MAX)
                return -EBADMSG;
        return strv_consume(l, TAKE_PTR(s));
}

static bool network_is_default(const char *n) {
        return streq(n, "bridge") || streq(n, "default") || streq(n, "podman") || streq(n, "none");
}

static int network_reference(ProxyReferences *r, const char *mode) {
        const char *c;

        if (isempty(mode) || network_is_default(mode))
                return 0;
        if ((c = startswith(mode, "container:")))
                return reference_add(&r->containers, c, strlen(c));
        return reference_add(&r->networks, mode, strlen(mode));
}

int proxy_container_references(json_object *body, ProxyReferences *ret) {
        _cleanup_(proxy_references_done) ProxyReferences r = {};
        json_object *hc, *binds, *mounts, *mode, *nc, *endpoints;
        int k;

        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        hc = get_icase(body, "HostConfig", NULL);
        if (hc && !json_object_is_type(hc, json_type_object) && !json_object_is_type(hc, json_type_null))
                return -EBADMSG;
        binds = hc ? get_icase(hc, "Binds", NULL) : NULL;
        for (size_t i = 0; json_object_is_type(binds, json_type_array) && i < json_object_array_length(binds); i++) {
                const char *b = json_object_get_string(json_object_array_get_idx(binds, i));
                if (!json_object_is_type(json_object_array_get_idx(binds, i), json_type_string))
                        return -EBADMSG;
                /* "source:target[:options]": a source that is not a path names a volume */
                if (b[0] != '/' && strchr(b, ':') && (k = reference_add(&r.volumes, b, strcspn(b, ":"))) < 0)
                        return k;
        }
        mounts = hc ? get_icase(hc, "Mounts", NULL) : NULL;
        for (size_t i = 0; json_object_is_type(mounts, json_type_array) && i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i), *type, *source;
                if (!json_object_is_type(m, json_type_object))
                        return -EBADMSG;
                type = get_icase(m, "Type", NULL);
                source = get_icase(m, "Source", NULL);
                /* no Type is a volume, as the policy reads it */
                if ((!type || (json_object_is_type(type, json_type_string) && strcasecmp(json_object_get_string(type), "volume") == 0)) &&
                    json_object_is_type(source, json_type_string) && !isempty(json_object_get_string(source)) &&
                    (k = reference_add(&r.volumes, json_object_get_string(source), strlen(json_object_get_string(source)))) < 0)
                        return k;
        }
        mode = hc ? get_icase(hc, "NetworkMode", NULL) : NULL;
        if (mode && !json_object_is_type(mode, json_type_string) && !json_object_is_type(mode, json_type_null))
                return -EBADMSG;
        if (json_object_is_type(mode, json_type_string) && (k = network_reference(&r, json_object_get_string(mode))) < 0)
                return k;
        nc = get_icase(body, "NetworkingConfig", NULL);
        endpoints = json_object_is_type(nc, json_type_object) ? get_icase(nc, "EndpointsConfig", NULL) : NULL;
        if (json_object_is_type(endpoints, json_type_object)) {
                json_object_object_foreach(endpoints, name, e) {
                        (void) e;
                        if (!network_is_default(name) && (k = reference_add(&r.networks, name, strlen(name))) < 0)
                                return k;
                }
        }
        *ret = r;
        r = (ProxyReferences) {};
        return 0;
}

/* Resolves src (n bytes) and records the pin in pins; *ret the resolved path. */
static int pin_one(const char *src, size_t n, json_object *pins, char **ret) {
        _cleanup_free_ char *path = strndup(src, n);
        char resolved[PATH_MAX];
        json_object *pin;
        struct stat st;

        if (!path)
                return -ENOMEM;
        if (!realpath(path, resolved) || stat(resolved, &st) < 0)
                return -errno;
        if (strchr(resolved, ':') || strchr(resolved, ','))     /* would end the bind's source early */
                return -EINVAL;
        if (json_object_array_length(pins) >= PROXY_REFERENCES_MAX)
                return -EBADMSG;
        pin = json_object_new_array();
        if (!pin || json_object_array_add(pins, pin) < 0) {
                json_object_put(pin);
                return -ENOMEM;
        }
        if (json_object_array_add(pin, json_object_new_uint64((uint64_t) st.st_dev)) < 0 ||
            json_object_array_add(pin, json_object_new_uint64((uint64_t) st.st_ino)) < 0 ||
            json_object_array_add(pin, json_object_new_string(resolved)) < 0)
                return -ENOMEM;
        *ret = strdup(resolved);
        return *ret ? 0 : -ENOMEM;
}

int proxy_binds_pin(json_object *body) {
        _cleanup_(json_object_putp) json_object *pins = json_object_new_array();
        json_object *hc, *binds, *mounts, *labels;
        int r;

        if (!pins)
                return -ENOMEM;
        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        hc = get_icase(body, "HostConfig", NULL);
        if (hc && !json_object_is_type(hc, json_type_object) && !json_object_is_type(hc, json_type_null))
                return -EBADMSG;
        binds = hc ? get_icase(hc, "Binds", NULL) : NULL;
        for (size_t i = 0; json_object_is_type(binds, json_type_array) && i < json_object_array_length(binds); i++) {
                json_object *e = json_object_array_get_idx(binds, i);
                _cleanup_free_ char *resolved = NULL, *spec = NULL;
                if (!json_object_is_type(e, json_type_string))
                        return -EBADMSG;
                const char *b = json_object_get_string(e);
                if (b[0] != '/')
                        continue;       /* a named volume */
                size_t n = strcspn(b, ":");
                if ((r = pin_one(b, n, pins, &resolved)) < 0)
                        return r;
                if (asprintf(&spec, "%s%s", resolved, b + n) < 0 ||
                    json_object_array_put_idx(binds, i, json_object_new_string(spec)) < 0)
                        return -ENOMEM;
        }
        mounts = hc ? get_icase(hc, "Mounts", NULL) : NULL;
        for (size_t i = 0; json_object_is_type(mounts, json_type_array) && i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i), *type, *source;
                _cleanup_free_ char *resolved = NULL;
                const char *spelt = NULL;
                if (!json_object_is_type(m, json_type_object))
                        return -EBADMSG;
                type = get_icase(m, "Type", NULL);
                if (!json_object_is_type(type, json_type_string) || strcasecmp(json_object_get_string(type), "bind") != 0)
                        continue;
                source = get_icase(m, "Source", &spelt);
                if (!json_object_is_type(source, json_type_string))
                        return -EBADMSG;
                if ((r = pin_one(json_object_get_string(source), strlen(json_object_get_string(source)), pins, &resolved)) < 0)
                        return r;
                if ((r = set_icase(m, "Source", json_object_new_string(resolved))) < 0)
                        return r;
        }
        /* the engine restarting it on its own would mount the binds again by path, unchecked */
        if (json_object_array_length(pins) > 0) {
                json_object *policy = json_object_new_object();
                if (!policy || json_add(policy, "Name", json_object_new_string("no")) < 0) {
                        json_object_put(policy);
                        return -ENOMEM;
                }
                if ((r = set_icase(hc, "RestartPolicy", policy)) < 0)
                        return r;
        }
        if ((r = child_object(body, "Labels", &labels)) < 0)
                return r;
        return set_icase(labels, PROXY_LABEL_PINS,
                         json_object_new_string(json_object_to_json_string_ext(pins, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
}

/* The pins of an inspected container, from its label: *ret NULL (and 0) when it has none. */
static int binds_pins_parse(json_object *inspect, json_object **ret) {
        _cleanup_(json_object_putp) json_object *pins = NULL;
        json_object *config, *labels, *label;

        *ret = NULL;
        if (!json_object_object_get_ex(inspect, "Config", &config) ||
            !json_object_object_get_ex(config, "Labels", &labels) ||
            !json_object_object_get_ex(labels, PROXY_LABEL_PINS, &label))
                return 0;
        if (!json_object_is_type(label, json_type_string))
                return -EBADMSG;
        pins = json_tokener_parse(json_object_get_string(label));
        if (!json_object_is_type(pins, json_type_array))
                return -EBADMSG;
        *ret = TAKE_PTR(pins);
        return 0;
}

int proxy_binds_verify(json_object *inspect, char **ret_path) {
        _cleanup_(json_object_putp) json_object *pins = NULL;
        int r;

        r = binds_pins_parse(inspect, &pins);
        if (r < 0 || !pins)
                return r;
        for (size_t i = 0; i < json_object_array_length(pins); i++) {
                json_object *pin = json_object_array_get_idx(pins, i);
                char resolved[PATH_MAX];
                struct stat st;
                const char *path;

                if (!json_object_is_type(pin, json_type_array) || json_object_array_length(pin) != 3 ||
                    !json_object_is_type(json_object_array_get_idx(pin, 2), json_type_string))
                        return -EBADMSG;
                path = json_object_get_string(json_object_array_get_idx(pin, 2));
                if (!realpath(path, resolved) || !streq(resolved, path) || stat(resolved, &st) < 0 ||
                    (uint64_t) st.st_dev != json_object_get_uint64(json_object_array_get_idx(pin, 0)) ||
                    (uint64_t) st.st_ino != json_object_get_uint64(json_object_array_get_idx(pin, 1))) {
                        *ret_path = strdup(path);
                        return *ret_path ? -EXDEV : -ENOMEM;
                }
        }
        return 0;
}

int proxy_binds_pinned(json_object *inspect) {
        _cleanup_(json_object_putp) json_object *pins = NULL;
        int r;

        r = binds_pins_parse(inspect, &pins);
        if (r < 0 || !pins)
                return r;
        return (int) MIN(json_object_array_length(pins), (size_t) INT32_MAX);
}

int proxy_container_host_binds(json_object *body) {
        json_object *hc, *binds, *mounts;
        int n = 0;

        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        hc = get_icase(body, "HostConfig", NULL);
        if (!hc || json_object_is_type(hc, json_type_null))
                return 0;
        if (!json_object_is_type(hc, json_type_object))
                return -EBADMSG;
        binds = get_icase(hc, "Binds", NULL);
        for (size_t i = 0; json_object_is_type(binds, json_type_array) && i < json_object_array_length(binds); i++) {
                json_object *e = json_object_array_get_idx(binds, i);
                if (!json_object_is_type(e, json_type_string))
                        return -EBADMSG;
                n += json_object_get_string(e)[0] == '/';
        }
        mounts = get_icase(hc, "Mounts", NULL);
        for (size_t i = 0; json_object_is_type(mounts, json_type_array) && i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i), *type;
                if (!json_object_is_type(m, json_type_object))
                        return -EBADMSG;
                type = get_icase(m, "Type", NULL);
                n += json_object_is_type(type, json_type_string) && strcasecmp(json_object_get_string(type), "bind") == 0;
        }
        return n;
}

static int user_set(json_object *body, uid_t uid, gid_t gid) {
        char user[32];

        snprintf(user, sizeof(user), "%" PRIu32 ":%" PRIu32, (uint32_t) uid, (uint32_t) gid);
        return set_icase(body, "User", json_object_new_string(user));
}

int proxy_container_run_as(json_object *body, uid_t uid, gid_t gid) {
        json_object *hc, *capadd, *kept;
        const char *spelt = NULL;
        int r;

        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        if ((r = user_set(body, uid, gid)) < 0 || (r = child_object(body, "HostConfig", &hc)) < 0)
                return r;
        if (get_icase(hc, "GroupAdd", &spelt)) {
                _cleanup_free_ char *copy = strdup(spelt);
                if (!copy)
                        return -ENOMEM;
                json_object_object_del(hc, copy);
        }
        capadd = get_icase(hc, "CapAdd", NULL);
        if (!capadd || json_object_is_type(capadd, json_type_null))
                return 0;
        if (!json_object_is_type(capadd, json_type_array))
                return -EBADMSG;
        kept = json_object_new_array();
        if (!kept)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(capadd); i++) {
                json_object *e = json_object_array_get_idx(capadd, i);
                const char *cap = json_object_get_string(e);
                if (!json_object_is_type(e, json_type_string)) {
                        json_object_put(kept);
                        return -EBADMSG;
                }
                if (strncasecmp(cap, "CAP_", 4) == 0)
                        cap += 4;
                if (strcasecmp(cap, "SETUID") == 0 || strcasecmp(cap, "SETGID") == 0)
                        continue;
                if (json_object_array_add(kept, json_object_get(e)) < 0) {
                        json_object_put(e);
                        json_object_put(kept);
                        return -ENOMEM;
                }
        }
        return set_icase(hc, "CapAdd", kept);
}

bool proxy_inspect_binds_host(json_object *inspect) {
        json_object *mounts, *hc, *binds;

        if (proxy_binds_pinned(inspect) != 0)       /* pins, or a label that cannot be read: fail closed */
                return true;
        if (json_object_object_get_ex(inspect, "HostConfig", &hc) && json_object_object_get_ex(hc, "Binds", &binds))
                for (size_t i = 0; json_object_is_type(binds, json_type_array) && i < json_object_array_length(binds); i++) {
                        const char *b = json_object_get_string(json_object_array_get_idx(binds, i));
                        if (!b || b[0] == '/')
                                return true;
                }
        if (json_object_object_get_ex(inspect, "Mounts", &mounts))
                for (size_t i = 0; json_object_is_type(mounts, json_type_array) && i < json_object_array_length(mounts); i++) {
                        json_object *type;
                        if (!json_object_object_get_ex(json_object_array_get_idx(mounts, i), "Type", &type) ||
                            !json_object_is_type(type, json_type_string) || strcasecmp(json_object_get_string(type), "bind") == 0)
                                return true;
                }
        return false;
}

int proxy_exec_run_as(json_object *body, uid_t uid, gid_t gid) {
        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        return user_set(body, uid, gid);
}

/* "size=" of tmpfs options: bytes, with k, m or g. */
static int tmpfs_size_parse(const char *v, uint64_t *ret) {
        char *end;
        uint64_t n, mult = 1;

        if (!isdigit((unsigned char) v[0]))
                return -EINVAL;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno != 0)
                return -EINVAL;
        switch (tolower((unsigned char) *end)) {
        case 0:
                break;
        case 'k':
                mult = 1024ULL;
                break;
        case 'm':
                mult = 1024ULL * 1024ULL;
                break;
        case 'g':
                mult = 1024ULL * 1024ULL * 1024ULL;
                break;
        default:
                return -EINVAL;         /* "%" (of memory) and anything else */
        }
        if (*end && end[1])
                return -EINVAL;
        if (n > UINT64_MAX / mult)
                return -EINVAL;
        *ret = n * mult;
        return 0;
}

/* One tmpfs's flags (comma-separated options, or the words of TmpfsOptions.Options). */
typedef struct TmpfsFlags {
        bool exec, suid, dev, has_size;
        uint64_t size;
        bool bad_size, bad_mode;
} TmpfsFlags;

static void tmpfs_flag(TmpfsFlags *f, const char *o, size_t n) {
        if (n == 4 && strncmp(o, "exec", 4) == 0)
                f->exec = true;
        else if (n == 4 && strncmp(o, "suid", 4) == 0)
                f->suid = true;
        else if (n == 3 && strncmp(o, "dev", 3) == 0)
                f->dev = true;
        else if (n > 5 && strncmp(o, "size=", 5) == 0) {
                _cleanup_free_ char *s = strndup(o + 5, n - 5);
                f->has_size = true;
                if (!s || tmpfs_size_parse(s, &f->size) < 0 || f->size > PROXY_TMPFS_SIZE_MAX)
                        f->bad_size = true;
        } else if (n > 5 && strncmp(o, "mode=", 5) == 0) {
                _cleanup_free_ char *s = strndup(o + 5, n - 5);
                char *end;
                unsigned long m;
                errno = 0;
                m = s ? strtoul(s, &end, 8) : 0;
                if (!s || errno != 0 || *end || end == s || (m & ~01777UL))
                        f->bad_mode = true;
        }
}

static const char *tmpfs_flags_refusal(const TmpfsFlags *f) {
        if (f->exec && f->suid)
                return "a tmpfs with both exec and suid is refused";
        if (f->dev)
                return "a tmpfs with device files (dev) is refused";
        if (f->bad_size)
                return "a tmpfs size beyond 4 GiB, or relative to memory, is refused";
        if (f->bad_mode)
                return "a tmpfs mode beyond 01777 is refused";
        return NULL;
}

int proxy_tmpfs_check(json_object *body, const char **ret_reason) {
        json_object *hc, *tmpfs, *mounts;
        const char *why;
        int r;

        *ret_reason = NULL;
        if (!json_object_is_type(body, json_type_object))
                return -EBADMSG;
        hc = get_icase(body, "HostConfig", NULL);
        if (!json_object_is_type(hc, json_type_object))
                return json_object_is_type(hc, json_type_null) || !hc ? 0 : -EBADMSG;

        tmpfs = get_icase(hc, "Tmpfs", NULL);
        if (tmpfs && !json_object_is_type(tmpfs, json_type_object) && !json_object_is_type(tmpfs, json_type_null))
                return -EBADMSG;
        if (json_object_is_type(tmpfs, json_type_object)) {
                json_object_object_foreach(tmpfs, target, opts) {
                        TmpfsFlags f = {};
                        if (!json_object_is_type(opts, json_type_string))
                                return -EBADMSG;
                        const char *o = json_object_get_string(opts);
                        for (const char *p = o; *p;) {
                                size_t n = strcspn(p, ",");
                                tmpfs_flag(&f, p, n);
                                p += n + (p[n] == ',');
                        }
                        if ((why = tmpfs_flags_refusal(&f))) {
                                *ret_reason = why;
                                return -EPERM;
                        }
                        if (!f.has_size) {
                                _cleanup_free_ char *capped = NULL;
                                if (asprintf(&capped, "%s%ssize=%" PRIu64 "k", o, *o ? "," : "",
                                             (uint64_t) (PROXY_TMPFS_SIZE_DEFAULT / 1024U)) < 0)
                                        return -ENOMEM;
                                if (json_add(tmpfs, target, json_object_new_string(capped)) < 0)
                                        return -ENOMEM;
                        }
                }
        }

        mounts = get_icase(hc, "Mounts", NULL);
        for (size_t i = 0; json_object_is_type(mounts, json_type_array) && i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i), *type, *to, *size, *mode, *options;
                TmpfsFlags f = {};
                if (!json_object_is_type(m, json_type_object))
                        return -EBADMSG;
                type = get_icase(m, "Type", NULL);
                if (!json_object_is_type(type, json_type_string) || strcasecmp(json_object_get_string(type), "tmpfs") != 0)
                        continue;
                to = get_icase(m, "TmpfsOptions", NULL);
                if (to && !json_object_is_type(to, json_type_object) && !json_object_is_type(to, json_type_null))
                        return -EBADMSG;
                if (!json_object_is_type(to, json_type_object)) {
                        to = NULL;
                        if ((r = child_object(m, "TmpfsOptions", &to)) < 0)
                                return r;
                }
                size = get_icase(to, "SizeBytes", NULL);
                mode = get_icase(to, "Mode", NULL);
                options = get_icase(to, "Options", NULL);
                if ((size && !json_object_is_type(size, json_type_int) && !json_object_is_type(size, json_type_null)) ||
                    (mode && !json_object_is_type(mode, json_type_int) && !json_object_is_type(mode, json_type_null)) ||
                    (options && !json_object_is_type(options, json_type_array) && !json_object_is_type(options, json_type_null)))
                        return -EBADMSG;
                if (json_object_is_type(size, json_type_int) && json_object_get_int64(size) > 0) {
                        f.has_size = true;
                        f.bad_size = (uint64_t) json_object_get_int64(size) > PROXY_TMPFS_SIZE_MAX;
                }
                if (json_object_is_type(size, json_type_int) && json_object_get_int64(size) < 0)
                        f.bad_size = true;
                if (json_object_is_type(mode, json_type_int) && (json_object_get_int64(mode) < 0 ||
                                                                 (json_object_get_int64(mode) & ~(int64_t) 01777)))
                        f.bad_mode = true;
                for (size_t j = 0; json_object_is_type(options, json_type_array) && j < json_object_array_length(options); j++) {
                        json_object *o = json_object_array_get_idx(options, j), *w;
                        /* [["exec"], ["size", "1g"]]: a flag, or a key and its value */
                        if (!json_object_is_type(o, json_type_array) || json_object_array_length(o) == 0 ||
                            !json_object_is_type((w = json_object_array_get_idx(o, 0)), json_type_string))
                                return -EBADMSG;
                        if (json_object_array_length(o) == 1)
                                tmpfs_flag(&f, json_object_get_string(w), strlen(json_object_get_string(w)));
                        else {
                                json_object *val = json_object_array_get_idx(o, 1);
                                _cleanup_free_ char *kv = NULL;
                                if (!json_object_is_type(val, json_type_string) ||
                                    asprintf(&kv, "%s=%s", json_object_get_string(w), json_object_get_string(val)) < 0)
                                        return -EBADMSG;
                                tmpfs_flag(&f, kv, strlen(kv));
                        }
                }
                if ((why = tmpfs_flags_refusal(&f))) {
                        *ret_reason = why;
                        return -EPERM;
                }
                if (!f.has_size && (r = set_icase(to, "SizeBytes", json_object_new_int64((int64_t) PROXY_TMPFS_SIZE_DEFAULT))) < 0)
                        return r;
        }
        return 0;
}

bool proxy_network_is_engine_default(json_object *network) {
        static const char * const defaults[] = { PROXY_DEFAULT_NETWORKS };
        json_object *name, *labels, *ch;
        const char *n;

        if (!json_object_is_type(network, json_type_object) ||
            !json_object_object_get_ex(network, "Name", &name) || !(n = json_object_get_string(name)))
                return false;
        /* a network some channel made under such a name is that channel's, not the engine's */
        if (json_object_object_get_ex(network, "Labels", &labels) && json_object_is_type(labels, json_type_object) &&
            json_object_object_get_ex(labels, PROXY_LABEL_CHANNEL, &ch))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
                if (streq(n, defaults[i]))
                        return true;
        return false;
}

int proxy_network_redact(json_object *network) {
        json_object *empty = json_object_new_object();

        if (!empty)
                return -ENOMEM;
        /* every key spelt "containers" in any case: the engine's, and no second one left behind */
        for (;;) {
                const char *spelt = NULL;
                if (!get_icase(network, "Containers", &spelt))
                        break;
                _cleanup_free_ char *copy = strdup(spelt);
                if (!copy) {
                        json_object_put(empty);
                        return -ENOMEM;
                }
                json_object_object_del(network, copy);
        }
        return json_object_object_add(network, "Containers", empty) < 0 ? -ENOMEM : 0;
}

int proxy_network_list_scope(json_object *list, const char *channel, json_object **ret) {
        _cleanup_(json_object_putp) json_object *out = NULL;

        if (!json_object_is_type(list, json_type_array))
                return -EBADMSG;
        out = json_object_new_array();
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *n = json_object_array_get_idx(list, i);
                bool mine = json_object_is_type(n, json_type_object) && proxy_object_is_nested_of(n, channel);
                if (!mine && !proxy_network_is_engine_default(n))
                        continue;
                json_object *copy = NULL;
                if (json_object_deep_copy(n, &copy, NULL) < 0)
                        return -ENOMEM;
                if ((!mine && proxy_network_redact(copy) < 0) || json_object_array_add(out, copy) < 0) {
                        json_object_put(copy);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* The build parameters a build may carry, and those it may carry only empty (the docker CLI sends
 * some always, empty). Anything else is refused: Podman's compat build reads many more (isolation,
 * nsoptions, addcaps, devices, seccomp, securityopt, secrets, volumes, rusagelogfile, ...), and each
 * one either widens what the RUN steps' containers may do or names a path on the host. */
static const char * const build_params_allowed[] = {
        "t", "q", "nocache", "rm", "forcerm", "pull", "squash", "dockerfile", "target", "platform", "buildargs",
        "labels", "cachefrom", "cpusetcpus", "cpusetmems", "cpushares", "cpuquota", "cpuperiod", "memory", "memswap",
        "shmsize", "networkmode", "buildid", "version",
        /* Podman's compat build, harmless */
        "layers", "pullpolicy", "outputformat", "timestamp",
};
static const char * const build_params_empty_only[] = {
        "cgroupparent", "isolation", "extrahosts", "securityopt", "outputs", "session", "remote", "ulimits",
};

int proxy_build_force(json_object *query, bool network_none, char **ret_network, char **ret_refused) {
        json_object *v;

        *ret_network = NULL;
        *ret_refused = NULL;
        json_object_object_foreach(query, k, val) {
                bool allowed = false;
                for (size_t i = 0; i < ELEMENTSOF(build_params_allowed) && !allowed; i++)
                        allowed = streq(k, build_params_allowed[i]);
                for (size_t i = 0; i < ELEMENTSOF(build_params_empty_only) && !allowed; i++)
                        if (streq(k, build_params_empty_only[i])) {
                                const char *s = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
                                /* the CLI sends ulimits as JSON even when there are none */
                                allowed = s && (isempty(s) || (streq(k, "ulimits") && (streq(s, "null") || streq(s, "[]"))));
                        }
                if (!allowed) {
                        *ret_refused = strdup(k);
                        return *ret_refused ? -EPERM : -ENOMEM;
                }
        }
        /* the classic builder only: BuildKit (version 2) builds through a session, which is refused */
        v = json_object_object_get(query, "version");
        if (v && !(json_object_is_type(v, json_type_string) && (streq(json_object_get_string(v), "1") ||
                                                                isempty(json_object_get_string(v))))) {
                *ret_refused = strdup("version");
                return *ret_refused ? -EPERM : -ENOMEM;
        }
        if (network_none) {
                v = json_object_new_string("none");
                if (!v || json_object_object_add(query, "networkmode", v) < 0) {
                        json_object_put(v);
                        return -ENOMEM;
                }
                return 0;
        }
        /* a named network the RUN steps join must be the channel's (the caller checks); the engine's
         * defaults are as a create's */
        v = json_object_object_get(query, "networkmode");
        if (v && !json_object_is_type(v, json_type_string))
                return -EBADMSG;
        const char *mode = v ? json_object_get_string(v) : NULL;
        /* host and container:X are the policy's to refuse */
        if (!isempty(mode) && !streq(mode, "default") && !streq(mode, "bridge") && !streq(mode, "podman") &&
            !streq(mode, "none") && !streq(mode, "host") && !startswith(mode, "container:")) {
                *ret_network = strdup(mode);
                if (!*ret_network)
                        return -ENOMEM;
        }
        return 0;
}

int proxy_info_redact(json_object *info, json_object **ret) {
        static const char * const kept[] = {
                "ServerVersion", "OperatingSystem", "OSType", "OSVersion", "Architecture", "NCPU", "MemTotal",
                "KernelVersion", "Driver", "CgroupDriver", "CgroupVersion", "DefaultRuntime", "SecurityOptions",
                "Debug", "ExperimentalBuild", "LoggingDriver", "MemoryLimit", "SwapLimit", "PidsLimit",
                "CpuCfsPeriod", "CpuCfsQuota", "CPUShares", "CPUSet", "OomKillDisable", "IPv4Forwarding",
        };
        _cleanup_(json_object_putp) json_object *o = NULL;

        if (!json_object_is_type(info, json_type_object))
                return -EBADMSG;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(kept); i++) {
                json_object *v = NULL, *copy = NULL;
                if (!json_object_object_get_ex(info, kept[i], &v))
                        continue;
                if (json_object_deep_copy(v, &copy, NULL) < 0 || json_object_object_add(o, kept[i], copy) < 0) {
                        json_object_put(copy);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(o);
        return 0;
}

bool proxy_name_is_channels(const char *channel, const char *name) {
        const char *rest = name && channel ? startswith(name, channel) : NULL;
        return rest && (rest[0] == '-' || rest[0] == '_') && rest[1];
}
