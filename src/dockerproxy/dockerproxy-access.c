/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <sys/random.h>

#include "dockerproxy-access.h"
#include "dockerproxy-build.h"
#include "dockerproxy-forward.h"
#include "dockerproxy-image.h"
#include "dockerproxy-nested.h"
#include "dockerproxy-ownership.h"
#include "dockerproxy-pin.h"
#include "dockerproxy-registry.h"
#include "dockerproxy-settings.h"
#include "gate-token.h"
#include "io-util.h"
#include "strv.h"
#include "text-escape.h"

/* The container, exec, volume or network a path names: /containers/REF[/...], /exec/REF/...,
 * /volumes/REF, /networks/REF[/...]. The collections' own endpoints (POST .../create and .../prune,
 * GET /containers/json) name none; anything else under them names one, exactly as the engine's router
 * (case-sensitive) reads it: GET /volumes/create is the inspect of a volume called "create". */
ProxyRefKind proxy_path_ref(const char *method, const char *path, char **ret) {
        const char *rest;
        ProxyRefKind kind;
        size_t n;

        *ret = NULL;
        if ((rest = startswith(path, "/containers/")))
                kind = PROXY_REF_CONTAINER;
        else if ((rest = startswith(path, "/exec/")))
                kind = PROXY_REF_EXEC;
        else if ((rest = startswith(path, "/volumes/")))
                kind = PROXY_REF_VOLUME;
        else if ((rest = startswith(path, "/networks/")))
                kind = PROXY_REF_NETWORK;
        else
                return PROXY_REF_NONE;
        n = strcspn(rest, "/");
        if (kind != PROXY_REF_EXEC && !rest[n] &&
            ((streq(method, "POST") && (streq(rest, "create") || streq(rest, "prune"))) ||
             (streq(method, "GET") && kind == PROXY_REF_CONTAINER && streq(rest, "json"))))
                return PROXY_REF_NONE;
        *ret = strndup(rest, n);
        return *ret ? kind : PROXY_REF_NONE;
}

/* Whether the container or exec c's path names belongs to the channel's nested containers. Replies
 * itself (404, 403, 502, 400) and returns < 0 when it does not. */
/* Containers named elsewhere than the path: POST /commit?container=X (its file system becomes an
 * image), POST /networks/ID/connect|disconnect {"Container": X} (its network next to the agent's). */
static ProxyRefKind other_ref(ProxyConn *c, json_object *body, char **ret) {
        const char *path = c->target.unversioned, *rest;
        json_object *v = NULL;

        *ret = NULL;
        if (!streq(c->head.method, "POST"))
                return PROXY_REF_NONE;
        if (strcasecmp(path, "/commit") == 0)
                v = proxy_query_get(&c->target, "container", NULL);
        else if ((rest = startswith(path, "/networks/")) && strchr(rest, '/') &&
                 (strcasecmp(strchr(rest, '/'), "/connect") == 0 || strcasecmp(strchr(rest, '/'), "/disconnect") == 0)) {
                json_object_object_foreach(body, k, e)
                        if (strcasecmp(k, "Container") == 0)
                                v = e;
        } else
                return PROXY_REF_NONE;
        /* missing or not a string: the engine refuses the request itself, nothing to own */
        if (!v || !json_object_is_type(v, json_type_string))
                return PROXY_REF_NONE;
        *ret = strdup(json_object_get_string(v));
        return *ret ? PROXY_REF_CONTAINER : PROXY_REF_NONE;
}

/* Whether the container, exec, volume or network ref belongs to the channel. Replies itself (404, 403,
 * 502, 400) and returns < 0 when it does not. */
static const char *json_get_string_or_null(json_object *o) {
        return json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

/* ---- objects that are not the channel's answer as missing ones ---- */

static ProxyObjectKind ref_object_kind(ProxyRefKind kind) {
        switch (kind) {
        case PROXY_REF_EXEC:
                return PROXY_OBJECT_EXEC;
        case PROXY_REF_VOLUME:
                return PROXY_OBJECT_VOLUME;
        case PROXY_REF_NETWORK:
                return PROXY_OBJECT_NETWORK;
        default:
                return PROXY_OBJECT_CONTAINER;
        }
}

/* 1 with a copy of the 404 body kept for kind, 0 when none is kept, -ENOMEM. */
static int not_found_cached(DockerProxy *p, ProxyObjectKind kind, char **ret) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&p->not_found_lock);

        if (!p->not_found[kind])
                return 0;
        *ret = strdup(p->not_found[kind]);
        return *ret ? 1 : -ENOMEM;
}

static void not_found_keep(DockerProxy *p, ProxyObjectKind kind, const char *body) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&p->not_found_lock);

        if (!p->not_found[kind])
                p->not_found[kind] = strdup(body);      /* NULL: asked again next time */
}

/* The engine's 404 body for a missing object of kind (src/dockerproxy/dockerproxy-ownership.h), asked once. */
static int engine_not_found_template(DockerProxy *p, ProxyObjectKind kind, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *req = NULL, *t = NULL;
        char buf[PROXY_NOT_FOUND_MAX + 1];
        size_t size = 0;
        HttpResponseHead h = {};
        int r;

        r = not_found_cached(p, kind, ret);
        if (r != 0)
                return r < 0 ? r : 0;

        fd = proxy_engine_connect(p);
        if (fd >= 0 && asprintf(&req, "GET %s HTTP/1.0\r\nHost: docker\r\n\r\n", proxy_probe_path(kind)) >= 0 &&
            proxy_send_all(fd, req, strlen(req)) >= 0) {
                uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_ENGINE_TIMEOUT_SEC * 1000000ULL;
                while (size < PROXY_NOT_FOUND_MAX) {
                        ssize_t k = proxy_recv_some(fd, buf + size, PROXY_NOT_FOUND_MAX - size, deadline);
                        if (k <= 0)
                                break;
                        size += (size_t) k;
                }
        }
        buf[size] = 0;
        r = http_response_head_parse(buf, size, PROXY_NOT_FOUND_MAX, &h);
        bool usable = r > 0 && h.status == 404 && !h.chunked && h.has_length && h.head_size + h.length == size &&
                strlen(buf + h.head_size) == h.length && proxy_not_found_is_template(buf + h.head_size);
        t = strdup(usable ? buf + h.head_size : proxy_not_found_fallback(kind));
        if (!t)
                return -ENOMEM;
        if (usable)             /* kept for the process's life: the engine does not change under it */
                not_found_keep(p, kind, t);
        *ret = TAKE_PTR(t);
        return 0;
}

/* Answers 404 for ref as the engine answers for a missing object of kind; why is for the journal. */
static int conn_reply_not_found(ProxyConn *c, ProxyRefKind kind, const char *ref, const char *why) {
        _cleanup_free_ char *template = NULL, *body = NULL;

        if (engine_not_found_template(c->proxy, ref_object_kind(kind), &template) < 0 ||
            proxy_not_found_format(template, ref, &body) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory");
        return proxy_conn_reply_body(c, 404, "ownership", why, body);
}

/* Whether the container, exec, volume or network ref belongs to the channel, resolved once: the engine
 * is asked about ref, the ownership checked on its answer, and the object's full id (a volume's name)
 * returned in *ret_id for the request to name instead of ref (a name or id prefix can be moved to
 * another container between a check and a use; an id cannot). Others' objects answer as missing ones.
 * Replies itself (404, 502, 400) and returns < 0 when it does not. ret_id may be NULL. */
int proxy_conn_check_ref(ProxyConn *c, ProxyRefKind kind, const char *ref, char **ret_id) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *inspect = NULL, *exec = NULL;
        const char *id = NULL, *exec_id = NULL;
        json_object *v;
        int r;

        if (!proxy_ref_is_valid(ref))
                return proxy_conn_reply(c, 400, "parse", "not a valid name or id"), -EINVAL;
        r = proxy_engine_open(c->proxy, &e);
        if (r < 0)
                return proxy_conn_reply(c, 500, "engine", "out of memory"), r;

        if (kind == PROXY_REF_VOLUME || kind == PROXY_REF_NETWORK) {
                r = kind == PROXY_REF_VOLUME ? engine_volume_inspect(e, ref, &inspect) : engine_network_inspect(e, ref, &inspect);
                if (r == -ENOENT)
                        return conn_reply_not_found(c, kind, ref, kind == PROXY_REF_VOLUME ? "no such volume" : "no such network"), r;
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about the volume or network"), r;
                /* the engine's default networks may be looked at (Testcontainers reads the bridge's gateway),
                 * answered by the proxy itself without the containers on them; nothing else */
                if (kind == PROXY_REF_NETWORK && !proxy_object_is_nested_of(inspect, c->proxy->channel) &&
                    proxy_network_is_engine_default(inspect) && streq(c->head.method, "GET") &&
                    streq(c->target.unversioned + strlen("/networks/"), ref)) {
                        if (proxy_network_redact(inspect) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        json_object_put(c->default_network);
                        c->default_network = TAKE_PTR(inspect);
                        return 0;
                }
                if (!proxy_object_is_nested_of(inspect, c->proxy->channel))
                        return conn_reply_not_found(c, kind, ref, kind == PROXY_REF_VOLUME ?
                                                    "the volume is not one of the channel's own (answered as missing)" :
                                                    "the network is not one of the channel's own (answered as missing)"), -EPERM;
                id = proxy_inspect_id(ref_object_kind(kind), inspect);
                if (!id)
                        return proxy_conn_reply(c, 502, "engine", "the engine did not say which object it is"), -EBADMSG;
                if (ret_id && !(*ret_id = strdup(id)))
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return 0;
        }

        if (kind == PROXY_REF_EXEC) {
                r = engine_exec_inspect(e, ref, &exec);
                if (r == -ENOENT)
                        return conn_reply_not_found(c, PROXY_REF_EXEC, ref, "no such exec instance"), r;
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about the exec instance"), r;
                exec_id = proxy_inspect_id(PROXY_OBJECT_EXEC, exec);
                if (!json_object_object_get_ex(exec, "ContainerID", &v) || !(ref = json_get_string_or_null(v)) || !exec_id)
                        return proxy_conn_reply(c, 502, "engine", "the engine did not say whose exec instance this is"), -EBADMSG;
        }
        r = engine_container_inspect(e, ref, &inspect);
        if (r == -ENOENT && kind == PROXY_REF_EXEC)
                return conn_reply_not_found(c, PROXY_REF_EXEC, exec_id, "the exec instance's container is gone"), r;
        if (r == -ENOENT)
                return conn_reply_not_found(c, PROXY_REF_CONTAINER, ref, "no such container"), r;
        if (r < 0)
                return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about the container"), r;
        if (!proxy_container_is_nested_of(inspect, c->proxy->channel)) {
                if (kind == PROXY_REF_EXEC)
                        return conn_reply_not_found(c, PROXY_REF_EXEC, exec_id, "the exec instance's container is not one of "
                                                    "the channel's own (answered as missing)"), -EPERM;
                return conn_reply_not_found(c, PROXY_REF_CONTAINER, ref, "the container is not one of the channel's own "
                                            "(answered as missing)"), -EPERM;
        }
        id = kind == PROXY_REF_EXEC ? exec_id : proxy_inspect_id(PROXY_OBJECT_CONTAINER, inspect);
        if (!id)
                return proxy_conn_reply(c, 502, "engine", "the engine did not say which container it is"), -EBADMSG;
        if (ret_id && !(*ret_id = strdup(id)))
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return 0;
}

/* What the path names, and a container named in the query or body, must be the channel's; the request
 * goes on naming their ids. */
int proxy_conn_check_ownership(ProxyConn *c, json_object *body) {
        _cleanup_free_ char *ref = NULL, *other = NULL, *id = NULL, *other_id = NULL;
        ProxyRefKind kind;
        int r;
        const char *reserved = proxy_container_name_reserved(c->head.method, &c->target);

        if (reserved) {
                _cleanup_free_ char *msg = NULL, *shown = text_escape_display(reserved, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "the container name %s is loop's own: names beginning with \"loop-\" "
                                       "are the runner's (its Chrome, shell and agent containers)", shown) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return proxy_conn_reply(c, 403, "names", msg), -EPERM;
        }

        kind = proxy_path_ref(c->head.method, c->target.unversioned, &ref);
        if (kind != PROXY_REF_NONE) {
                if ((r = proxy_conn_check_ref(c, kind, ref, &id)) < 0)
                        return r;
                if (id && !streq(id, ref) && kind != PROXY_REF_VOLUME) {
                        static const char * const prefixes[] = {
                                [PROXY_REF_CONTAINER] = "/containers/", [PROXY_REF_EXEC] = "/exec/", [PROXY_REF_NETWORK] = "/networks/",
                        };
                        r = proxy_target_replace_ref(&c->target, prefixes[kind], ref, id);
                        if (r < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), r;
                }
        }
        kind = other_ref(c, body, &other);
        if (kind != PROXY_REF_NONE) {
                if ((r = proxy_conn_check_ref(c, kind, other, &other_id)) < 0)
                        return r;
                if (strcasecmp(c->target.unversioned, "/commit") == 0) {
                        /* the parameter as the engine documents it, the only one */
                        const char *spelt = NULL;
                        if (proxy_query_get(&c->target, "container", &spelt)) {
                                _cleanup_free_ char *key = strdup(spelt);
                                if (!key)
                                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                                json_object_object_del(c->target.query, key);
                        }
                        r = json_object_object_add(c->target.query, "container", json_object_new_string(other_id));
                }
                else {
                        /* the body's key as the engine documents it, the only one (proxy_body_parse()
                         * refused keys that differ in case only) */
                        json_object_object_foreach(body, k, e) {
                                (void) e;
                                if (strcasecmp(k, "Container") == 0) {
                                        _cleanup_free_ char *key = strdup(k);
                                        if (!key)
                                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                                        json_object_object_del(body, key);
                                        break;
                                }
                        }
                        r = json_object_object_add(body, "Container", json_object_new_string(other_id));
                        c->body_changed = true;
                }
                if (r < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        }
        return 0;
}

/* ---- names per channel ---- */

static bool network_is_engine_default_name(const char *name) {
        return streq(name, "bridge") || streq(name, "default") || streq(name, "podman") || streq(name, "none");
}

static int conn_refuse_name(ProxyConn *c, const char *what, const char *name) {
        _cleanup_free_ char *msg = NULL, *shown = text_escape_display(name, PROXY_DISPLAY_MAX);

        if (!shown || asprintf(&msg, "the %s name %s is not the channel's: names of channel %s's %ss begin with "
                               "\"%s-\" or \"%s_\"", what, shown, c->proxy->channel, what, c->proxy->channel,
                               c->proxy->channel) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return proxy_conn_reply(c, 403, "names", msg), -EPERM;
}

/* A volume or network create names its object the channel's way; a volume without a name gets one. */
int proxy_conn_check_create_name(ProxyConn *c, json_object *body, bool volume) {
        json_object *name = NULL;
        _cleanup_free_ char *made = NULL;
        uint8_t random[16];

        if (json_object_object_get_ex(body, "Name", &name) && !isempty(json_object_get_string(name))) {
                if (!proxy_name_is_channels(c->proxy->channel, json_object_get_string(name)))
                        return conn_refuse_name(c, volume ? "volume" : "network", json_object_get_string(name));
                return 0;
        }
        if (!volume)
                return 0;               /* the engine refuses a network without a name */
        if (getrandom(random, sizeof(random), 0) != (ssize_t) sizeof(random))
                return proxy_conn_reply(c, 500, NULL, "no random bytes for a volume's name"), -EIO;
        if (asprintf(&made, "%s-%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x", c->proxy->channel,
                     random[0], random[1], random[2], random[3], random[4], random[5], random[6], random[7], random[8],
                     random[9], random[10], random[11], random[12], random[13], random[14], random[15]) < 0 ||
            json_object_object_add(body, "Name", json_object_new_string(made)) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return 0;
}

/* A container create's named volumes, networks and namespace-sharing containers must be the channel's.
 * A named volume that does not exist yet is made here, with the channel's labels, rather than by the
 * engine without them. Replies itself when refused. */
int proxy_conn_check_references(ProxyConn *c, json_object *body) {
        _cleanup_(proxy_references_done) ProxyReferences refs = {};
        _cleanup_(engine_freep) Engine *e = NULL;
        int r;

        r = proxy_container_references(body, &refs);
        if (r == -ENOMEM)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), r;
        if (r < 0)
                return proxy_conn_reply(c, 400, "parse", "the create body names volumes or networks unreadably"), r;
        STRV_FOREACH(v, refs.volumes)
                if (!proxy_name_is_channels(c->proxy->channel, *v))
                        return conn_refuse_name(c, "volume", *v);
        STRV_FOREACH(n, refs.networks)
                if (!network_is_engine_default_name(*n) && !proxy_name_is_channels(c->proxy->channel, *n))
                        return conn_refuse_name(c, "network", *n);
        STRV_FOREACH(v, refs.volumes) {
                _cleanup_(json_object_putp) json_object *inspect = NULL, *create = NULL, *made = NULL;
                if (!proxy_ref_is_valid(*v))
                        return proxy_conn_reply(c, 400, "parse", "not a valid volume name"), -EINVAL;
                if (!e) {
                        if (proxy_engine_open(c->proxy, &e) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                }
                r = engine_volume_inspect(e, *v, &inspect);
                if (r != -ENOENT) {
                        if ((r = proxy_conn_check_ref(c, PROXY_REF_VOLUME, *v, NULL)) < 0)
                                return r;
                        continue;
                }
                create = json_object_new_object();
                if (!create || json_object_object_add(create, "Name", json_object_new_string(*v)) < 0 ||
                    proxy_labels_force(create, c->proxy->channel) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                r = engine_volume_create(e, create, &made);
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot create the named volume"), r;
        }
        STRV_FOREACH(n, refs.networks)
                if ((r = proxy_conn_check_ref(c, PROXY_REF_NETWORK, *n, NULL)) < 0)
                        return r;
        /* namespaces of another container: the channel's own, named by id from here on */
        json_object *hc = NULL;
        if (json_object_object_get_ex(body, "HostConfig", &hc) && json_object_is_type(hc, json_type_object)) {
                static const char * const modes[] = { "NetworkMode", "PidMode", "IpcMode" };
                for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
                        _cleanup_free_ char *id = NULL, *mode = NULL;
                        json_object *m = NULL;
                        const char *ref;
                        if (!json_object_object_get_ex(hc, modes[i], &m) || !json_object_is_type(m, json_type_string) ||
                            !(ref = startswith(json_object_get_string(m), "container:")))
                                continue;
                        if ((r = proxy_conn_check_ref(c, PROXY_REF_CONTAINER, ref, &id)) < 0)
                                return r;
                        if (asprintf(&mode, "container:%s", id) < 0 ||
                            json_object_object_add(hc, modes[i], json_object_new_string(mode)) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                }
        }
        return 0;
}

int proxy_count_nested(DockerProxy *p, Engine *e, uint64_t *ret) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ char *label = NULL;
        uint64_t n = 0;
        int r;

        if (asprintf(&label, PROXY_LABEL_CHANNEL "=%s", p->channel) < 0)
                return -ENOMEM;
        r = engine_container_list(e, label, true, &list);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(list); i++)
                n += streq_ptr(engine_container_label(json_object_array_get_idx(list, i), PROXY_LABEL_TYPE),
                               PROXY_TYPE_NESTED);
        *ret = n;
        return 0;
}

/* POST /containers/ID/start: the binds are judged again as they are now, symlinks resolved anew. A
 * source swapped for a symlink after the create (a directory of the workspace replaced by a link to
 * /etc) would otherwise be mounted wherever it points at start. Replies itself when refused; else
 * *ret_inspect is the container's inspect reply (its pins, checked again with the channel frozen). */
int proxy_conn_recheck_start(ProxyConn *c, const char *ref, json_object **ret_inspect) {
        _cleanup_(json_object_putp) json_object *inspect = NULL, *doc = NULL;
        json_object *hc;
        ProxyVerdict v;
        int r;

        r = proxy_conn_inspect_container(c, ref, &inspect);
        if (r < 0)
                return r;
        {
                _cleanup_free_ char *changed = NULL, *msg = NULL, *shown = NULL;
                r = proxy_binds_verify(inspect, &changed);
                if (r == -EXDEV) {
                        shown = text_escape_display(changed, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "the bind source %s changed since the container was created "
                                               "(checked again at start)", shown) < 0)
                                return -ENOMEM;
                        return proxy_conn_reply(c, 403, "bind-pin", msg), -EPERM;
                }
                if (r < 0)
                        return proxy_conn_reply(c, 403, "bind-pin", "the container's bind pins cannot be read"), r;
        }
        doc = json_object_new_object();
        if (!doc)
                return -ENOMEM;
        /* only the binds: the rest of what an engine reports (Podman's Runtime "oci", its defaults) is
         * not what the agent asked for and was judged at create */
        if (json_object_object_get_ex(inspect, "HostConfig", &hc)) {
                json_object *binds = NULL, *mounts = NULL, *h = json_object_new_object();
                if (!h)
                        return -ENOMEM;
                if (json_object_object_get_ex(hc, "Binds", &binds))
                        json_object_object_add(h, "Binds", json_object_get(binds));
                if (json_object_object_get_ex(hc, "Mounts", &mounts))
                        json_object_object_add(h, "Mounts", json_object_get(mounts));
                json_object_object_add(doc, "HostConfig", h);
        }
        proxy_policy_check_body(c->proxy->policy, "POST", "/containers/create", NULL, doc, NULL, &v);
        if (v.matched && v.decision == DECISION_DENY) {
                _cleanup_free_ char *msg = NULL;
                snprintf(c->rule_buf, sizeof(c->rule_buf), "%s", v.rule_id);
                if (asprintf(&msg, "%s (checked again at start)", v.message ?: "denied") < 0)
                        return -ENOMEM;
                return proxy_conn_reply(c, 403, c->rule_buf, msg), -EPERM;
        }
        *ret_inspect = TAKE_PTR(inspect);
        return 0;
}

/* ---- approvals ---- */

/* The container a process runs in: the 64-hex id in its cgroup (…/libpod-ID.scope, …/docker-ID.scope,
 * /docker/ID). -ENOMEDIUM when it runs in none (a process of the host). */
static int peer_container_id(pid_t pid, char **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t size;
        int r;

        if (pid <= 0 || asprintf(&path, "/proc/%d/cgroup", (int) pid) < 0)
                return -ESRCH;
        r = read_full_file_at(AT_FDCWD, path, 64 * 1024, true, &text, &size);
        if (r < 0)
                return r;
        for (char *p = text; *p; p++) {
                size_t n = strspn(p, "0123456789abcdef");
                if (n == 64 && (p == text || !strchr("0123456789abcdef", p[-1]))) {
                        *ret = strndup(p, 64);
                        return *ret ? 0 : -ENOMEM;
                }
                p += n ? n - 1 : 0;
        }
        return -ENOMEDIUM;
}

/* Who may use the channel's proxy: processes in the channel's own containers (label loop-channel=NAME,
 * not a nested one: those never get the socket), and root on the host (the operator, tests). The socket
 * is 0666 so that the agent's uid can connect; this is the check that keeps everyone else out. Answers
 * are cached per container for PROXY_PEER_CACHE_USEC. */
#define PROXY_PEER_CACHE_USEC (5ULL * 1000000ULL)
#define PROXY_PEER_CACHE_SIZE 16U

static pthread_mutex_t peer_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        char id[65];
        char name[GATE_CONTAINER_ID_MAX + 1];
        bool allowed;
        uint64_t until;
} peer_cache[PROXY_PEER_CACHE_SIZE];

/* The cached answer for container id: 0 (allowed, its name in *ret_name), -EPERM, or -ENOENT when none
 * is cached or it expired. */
static int peer_cache_lookup(const char *id, uint64_t now, char **ret_name) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&peer_cache_lock);

        for (size_t i = 0; i < PROXY_PEER_CACHE_SIZE; i++)
                if (streq(peer_cache[i].id, id) && peer_cache[i].until > now) {
                        *ret_name = peer_cache[i].allowed ? strdup(peer_cache[i].name) : NULL;
                        return peer_cache[i].allowed ? 0 : -EPERM;
                }
        return -ENOENT;
}

/* Keeps the answer for container id in the slot that expires first. */
static void peer_cache_store(const char *id, const char *name, bool allowed, uint64_t now) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&peer_cache_lock);
        size_t slot = 0;

        for (size_t i = 1; i < PROXY_PEER_CACHE_SIZE; i++)
                if (peer_cache[i].until < peer_cache[slot].until)
                        slot = i;
        snprintf(peer_cache[slot].id, sizeof(peer_cache[slot].id), "%s", id);
        snprintf(peer_cache[slot].name, sizeof(peer_cache[slot].name), "%s", strempty(name));
        peer_cache[slot].allowed = allowed;
        peer_cache[slot].until = now + PROXY_PEER_CACHE_USEC;
}

int proxy_conn_peer_check(ProxyConn *c, uid_t uid, char **ret_name) {
        _cleanup_free_ char *id = NULL;
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        json_object *config, *labels, *ch, *type, *name;
        uint64_t now = clock_usec(CLOCK_MONOTONIC);
        bool allowed;
        const char *n = NULL;
        int r;

        *ret_name = NULL;
        r = peer_container_id(c->peer_pid, &id);
        if (r == -ENOMEDIUM)
                return uid == 0 ? 0 : -EPERM;
        if (r < 0)
                return -EPERM;

        r = peer_cache_lookup(id, now, ret_name);
        if (r != -ENOENT)
                return r;

        r = proxy_engine_open(c->proxy, &e);
        if (r < 0)
                return r;
        r = engine_container_inspect(e, id, &inspect);
        if (r < 0)
                return r == -ENOENT ? -EPERM : r;
        allowed = json_object_object_get_ex(inspect, "Config", &config) &&
                json_object_object_get_ex(config, "Labels", &labels) &&
                json_object_object_get_ex(labels, PROXY_LABEL_CHANNEL, &ch) &&
                streq_ptr(json_object_get_string(ch), c->proxy->channel) &&
                !(json_object_object_get_ex(labels, PROXY_LABEL_TYPE, &type) &&
                  streq_ptr(json_object_get_string(type), PROXY_TYPE_NESTED));
        if (json_object_object_get_ex(inspect, "Name", &name) && json_object_get_string(name)) {
                n = json_object_get_string(name);
                n += *n == '/';
                if (!gate_container_id_is_valid(n))
                        n = NULL;
        }

        peer_cache_store(id, n, allowed, now);

        if (allowed && n)
                *ret_name = strdup(n);
        return allowed ? 0 : -EPERM;
}

/* A container that binds host paths gets no exec as another user, nor files copied in by the engine (which
 * extracts a tar as root, with the owners and setuid bits it names, into a bind as well). */
int proxy_conn_check_host_binds(ProxyConn *c, const char *ref, const char *tail, json_object *body) {
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        uid_t uid;
        gid_t gid;
        int r;

        if (proxy_conn_inspect_container(c, ref, &inspect) < 0)
                return -EIO;    /* answered */
        if (!proxy_inspect_binds_host(inspect))
                return 0;
        if (strcasecmp(tail, "/archive") == 0)
                return proxy_conn_reply(c, 403, "bind-owner", "files cannot be copied into a container that binds host "
                                  "paths (the engine would write them with the owners and modes the archive names)"), -EPERM;
        r = proxy_conn_run_as(c, &uid, &gid);
        if (r < 0)
                return proxy_conn_reply(c, 403, "bind-owner", "a container that binds host paths runs as the agent's "
                                  "uid, which this caller does not have (root in the agent's container)"), -EPERM;
        if (r > 0 && proxy_exec_run_as(body, uid, gid) < 0)
                return proxy_conn_reply(c, 400, "parse", "the exec body has fields of the wrong type"), -EBADMSG;
        if (r > 0)
                c->body_changed = true;
        return 0;
}

int proxy_conn_check_update(ProxyConn *c, const char *ref, json_object *body) {
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        bool restart = false;
        int r;

        json_object_object_foreach(body, k, v) {
                if (strcasecmp(k, "RestartPolicy") != 0 || json_object_is_type(v, json_type_null))
                        continue;
                restart = true;         /* unless it says "no" (or nothing) */
                if (json_object_is_type(v, json_type_object)) {
                        const char *name = NULL;
                        json_object_object_foreach(v, k2, n)
                                if (strcasecmp(k2, "Name") == 0)
                                        name = json_object_is_type(n, json_type_string) ? json_object_get_string(n) : "?";
                        restart = name && !streq(name, "") && !streq(name, "no");
                }
        }
        if (!restart)
                return 0;
        r = proxy_conn_inspect_container(c, ref, &inspect);
        if (r < 0)
                return r;
        r = proxy_binds_pinned(inspect);
        if (r != 0)
                return proxy_conn_reply(c, 403, "bind-pin", "a container with binds may not get a restart policy (the "
                                  "engine would mount its binds again unchecked)"), -EPERM;
        return 0;
}

/* ---- the operator's images ---- */

/* Refuses (403, and returns -EPERM) when ref, or repo with tag, names a protected repository. */
int proxy_conn_check_image_name(ProxyConn *c, const char *repo, const char *tag, bool made) {
        _cleanup_free_ char *ref = NULL, *msg = NULL, *shown = NULL;

        if (isempty(repo))
                return 0;
        if (asprintf(&ref, "%s%s%s", repo, isempty(tag) ? "" : ":", strempty(tag)) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        /* a name a tag, commit, build or import gives is the channel's own: no channel makes or
         * overwrites another's */
        if (made && !proxy_image_ref_is_protected(ref, c->proxy->protected_images) &&
            !proxy_image_ref_is_channels(ref, c->proxy->channel)) {
                if (!proxy_channel_names_images(c->proxy->channel)) {
                        if (asprintf(&msg, "channel %s makes no images through the proxy: image names are lower case "
                                     "and the channel's name is not one (a channel named in lower case can make "
                                     "images named after it)", c->proxy->channel) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        return proxy_conn_reply(c, 403, "image", msg), -EPERM;
                }
                shown = text_escape_display(ref, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "%s is not a name of channel %s's own: the images a channel makes are "
                                       "named %s-... or %s_... (on any registry, e.g. localhost/%s-app)", shown,
                                       c->proxy->channel, c->proxy->channel, c->proxy->channel, c->proxy->channel) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return proxy_conn_reply(c, 403, "image", msg), -EPERM;
        }
        if (!proxy_image_ref_is_protected(ref, c->proxy->protected_images))
                return 0;
        shown = text_escape_display(ref, PROXY_DISPLAY_MAX);
        if (!shown || asprintf(&msg, "%s names one of the operator's images (or is no image reference): they are "
                               "not tagged, committed, built, imported or removed through the proxy", shown) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return proxy_conn_reply(c, 403, "image", msg), -EPERM;
}

/* A parameter ignoring case, as Podman reads it; a list (or anything but a string) is refused by the
 * caller as an unreadable reference. */
const char *proxy_conn_query_string(ProxyConn *c, const char *key) {
        json_object *v = proxy_query_get(&c->target, key, NULL);
        return v ? (json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "\x01") : NULL;
}

/* A pull or a push reaches the registry of the reference from the engine, past the egress gateway: only
 * where the channel's egress policy lets the agent go (dockerproxy-registry.h). A pull may not name the
 * operator's images either (it would replace them). Refuses (403) and returns -EPERM otherwise. */
int proxy_conn_check_registry(ProxyConn *c, const char *what, const char *repo, const char *tag) {
        _cleanup_free_ char *ref = NULL, *registry = NULL, *msg = NULL, *shown = NULL;
        const char *rule = NULL;
        int r;

        if (isempty(repo) || (tag && !*tag))
                tag = NULL;
        /* as the engines join them: a tag that is a digest follows an '@' */
        if (isempty(repo) || asprintf(&ref, "%s%s%s", repo, !tag ? "" : strchr(tag, ':') ? "@" : ":", strempty(tag)) < 0)
                return proxy_conn_reply(c, isempty(repo) ? 400 : 500, what, isempty(repo) ? "no image named" : "out of memory"), -EINVAL;
        if (streq(what, "pull") && proxy_conn_check_image_name(c, ref, NULL, false) < 0)
                return -EPERM;
        r = proxy_registry_allows(c->proxy->egress, ref, &registry, &rule);
        if (r == -ENOMEM)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), r;
        if (r < 0) {
                shown = text_escape_display(ref, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "%s is not an image reference whose registry can be told", shown) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                return proxy_conn_reply(c, 403, what, msg), -EPERM;
        }
        free(c->reason);
        if (asprintf(&c->reason, "registry %s, egress %s", registry, rule) < 0)
                c->reason = NULL;
        if (r > 0)
                return 0;
        if (asprintf(&msg, "%s %s are refused: the channel's egress policy does not allow that registry "
                     "(%s; the operator allows it in egress.registries or egress.rules)",
                     streq(what, "push") ? "pushes to" : "pulls from", registry,
                     c->proxy->egress ? rule : "the channel has no egress gateway") < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        return proxy_conn_reply(c, 403, what, msg), -EPERM;
}

/* Tags, commits, builds and imports may not name a protected repository; a removal may not remove one,
 * by its name or by an id whose image carries one of its tags. Replies itself when refused. */
int proxy_conn_check_images(ProxyConn *c, const ProxyEndpoint *endpoint) {
        const char *pattern = endpoint->pattern;
        int r;

        if (streq(pattern, "/images/**/tag") || streq(pattern, "/commit") || streq(pattern, "/images/create"))
                return proxy_conn_check_image_name(c, proxy_conn_query_string(c, "repo"), proxy_conn_query_string(c, "tag"), true);
        if (streq(pattern, "/build")) {
                json_object *t = NULL;
                if (!json_object_object_get_ex(c->target.query, "t", &t))
                        return 0;
                for (size_t i = 0; i < json_object_array_length(t); i++)
                        if ((r = proxy_conn_check_image_name(c, json_object_get_string(json_object_array_get_idx(t, i)), NULL, true)) < 0)
                                return r;
                return 0;
        }
        if (streq(pattern, "/images/**") && streq(c->head.method, "DELETE")) {
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_(json_object_putp) json_object *inspect = NULL;
                const char *name = c->target.unversioned + strlen("/images/");
                json_object *tags = NULL;

                if ((r = proxy_conn_check_image_name(c, name, NULL, false)) < 0)
                        return r;
                if (proxy_engine_open(c->proxy, &e) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                r = engine_image_inspect(e, name, &inspect);
                if (r == -ENOENT)
                        return 0;       /* the engine says so itself */
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about the image"), r;
                if (json_object_object_get_ex(inspect, "RepoTags", &tags) && json_object_is_type(tags, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(tags); i++)
                                if ((r = proxy_conn_check_image_name(c, json_object_get_string(json_object_array_get_idx(tags, i)), NULL, false)) < 0)
                                        return r;
        }
        return 0;
}

/* ---- build contexts ---- */

/* Reads the request's body (Content-Length or chunked, decoded) into *ret. Replies itself on error. */
/* A build's base images: each FROM names a local image (asked of the engine once, by the normalised
 * reference), never one the engine would pull (that would reach a registry past the egress policy, and
 * bring ONBUILD triggers nobody checked: pull it first, through the proxy), and the base's own ONBUILD
 * triggers pass the Dockerfile allow-list. Refuses (403) and returns -EPERM otherwise. */
int proxy_conn_check_build_bases(ProxyConn *c, char **bases) {
        _cleanup_(engine_freep) Engine *e = NULL;
        int r;

        if (strv_length(bases) == 0)
                return 0;
        if (proxy_engine_kind(c->proxy) == ENGINE_UNKNOWN)
                return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked which it is"), -EIO;
        if (proxy_engine_open(c->proxy, &e) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        STRV_FOREACH(b, bases) {
                _cleanup_(proxy_image_ref_done) ProxyImageRef ref = {};
                _cleanup_(json_object_putp) json_object *inspect = NULL;
                _cleanup_free_ char *normalized = NULL, *shown = text_escape_display(*b, PROXY_DISPLAY_MAX),
                        *msg = NULL, *why = NULL;
                json_object *config, *onbuild = NULL;

                if (!shown)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                if (proxy_image_ref_parse(*b, &ref) < 0 || !(normalized = proxy_image_ref_format(&ref))) {
                        if (asprintf(&msg, "FROM %s is refused (not an image reference)", shown) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        c->decision = "deny";
                        return proxy_conn_reply(c, 403, "build", msg), -EPERM;
                }
                r = engine_image_inspect(e, normalized, &inspect);
                if (r == -ENOENT) {
                        if (asprintf(&msg, "FROM %s is refused: it is not a local image, and the engine would pull it "
                                     "(pull it first through the proxy, from a registry the channel's egress policy "
                                     "allows, or build it here)", shown) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        c->decision = "deny";
                        return proxy_conn_reply(c, 403, "build", msg), -EPERM;
                }
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about a base image"), r;
                /* Podman's compat inspect never shows OnBuild; an image in Docker's format may have
                 * triggers (buildah runs them), one in OCI's has none: the former is refused there */
                if (c->proxy->engine_kind != ENGINE_DOCKER) {
                        _cleanup_(json_object_putp) json_object *libpod = NULL;
                        json_object *type;
                        r = engine_image_inspect_libpod(e, normalized, &libpod);
                        if (r < 0 && r != -ENOENT)
                                return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about a base image"), r;
                        if (r < 0 || !json_object_object_get_ex(libpod, "ManifestType", &type) ||
                            !startswith(strempty(json_object_get_string(type)), "application/vnd.oci.")) {
                                if (asprintf(&msg, "FROM %s is refused: on Podman an image in Docker's format may carry "
                                             "ONBUILD triggers that the engine's API does not show (an OCI image, "
                                             "e.g. one built or imported with Podman, is read)", shown) < 0)
                                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                                c->decision = "deny";
                                return proxy_conn_reply(c, 403, "build", msg), -EPERM;
                        }
                }
                if (json_object_object_get_ex(inspect, "Config", &config))
                        (void) json_object_object_get_ex(config, "OnBuild", &onbuild);
                r = proxy_build_onbuild_check(onbuild, c->proxy->channel, &why);
                if (r == -ENOMEM)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), r;
                if (r < 0) {
                        _cleanup_free_ char *why_shown = text_escape_display(why, PROXY_DISPLAY_MAX);
                        if (!why_shown || asprintf(&msg, "FROM %s is refused: its ONBUILD triggers do not pass the "
                                                   "Dockerfile allow-list (trigger %s)", shown, why_shown) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
                        c->decision = "deny";
                        return proxy_conn_reply(c, 403, "build", msg), -EPERM;
                }
        }
        return 0;
}
