/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "cgroup-freeze.h"
#include "dockerproxy-image.h"
#include "dockerproxy-settings.h"
#include "gate-token.h"
#include "io-util.h"
#include "log.h"
#include "seccomp-profile.h"
#include "strv.h"
#include "unit-name.h"

/* Whether the proxy's network namespace has no interface but loopback (PrivateNetwork=). Read from
 * /proc/self/net/dev: if_nameindex() asks netlink, which RestrictAddressFamilies=AF_UNIX refuses. */
bool proxy_network_is_isolated(void) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        char *line, *save = NULL;
        unsigned n = 0;

        if (read_full_file_at(AT_FDCWD, "/proc/self/net/dev", 64 * 1024, false, &text, &size) < 0)
                return false;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *colon = strchr(line, ':');
                if (n++ < 2 || !colon)          /* the two header lines */
                        continue;
                *colon = 0;
                line += strspn(line, " ");
                if (!streq(line, "lo"))
                        return false;
        }
        return n >= 2;
}

/* ---- setup ---- */

/* The service's runtime directory: the seccomp profile for Podman, the record of frozen cgroups. */
int proxy_state_dir(const char *channel, char **ret) {
        const char *rt = getenv("RUNTIME_DIRECTORY");

        if (!isempty(rt) && !strchr(rt, ':'))           /* one directory (RuntimeDirectory= names one) */
                return (*ret = strdup(rt)) ? 0 : -ENOMEM;
        return asprintf(ret, "%s/%s/dockerproxy", loop_runtime_dir(), channel) < 0 ? -ENOMEM : 0;
}

/* What a proxy that died during a frozen start left frozen (its record) is thawed: at the service's
 * start, and by "--thaw CHANNEL" from the unit's ExecStopPost=. */
int proxy_thaw_leftovers(const char *state_dir) {
        int r = cgroup_freeze_record_thaw(state_dir);

        if (r < 0)
                return log_error_errno(r, "Cannot thaw the cgroups recorded in %s/%s: %m", state_dir, CGROUP_FREEZE_RECORD);
        if (r > 0)
                log_notice("Thawed %d cgroup(s) a Docker API proxy left frozen (%s/%s).", r, state_dir, CGROUP_FREEZE_RECORD);
        return 0;
}

void proxy_done(DockerProxy *p) {
        free(p->channel);
        free(p->engine_socket);
        free(p->gate_socket);
        free(p->cgroup_parent);
        free(p->state_dir);
        strv_free(p->masked_paths);
        free(p->work_dir);
        egress_policy_free(p->egress);
        strv_free(p->protected_images);
        free(p->seccomp_option);
        proxy_policy_free(p->policy);
        for (size_t i = 0; i < _PROXY_OBJECT_KIND_MAX; i++)
                free(p->not_found[i]);
        audit_limiter_free(p->refusals);
        *p = (DockerProxy) {};
}

int proxy_settings(DockerProxy *p) {
        _cleanup_free_ char *error = NULL, *cred_policy = NULL;
        const char *sock = getenv("LOOP_DOCKERPROXY_ENGINE_SOCKET"), *policy = getenv("LOOP_DOCKERPROXY_POLICY");
        const char *work_dir = getenv("LOOP_DOCKERPROXY_WORK_DIR"), *creds = getenv("CREDENTIALS_DIRECTORY");
        int r;

        if ((r = env_uint("LOOP_DOCKERPROXY_CONTAINERS_MAX", PROXY_CONTAINERS_MAX_DEFAULT, 10000, &p->containers_max)) < 0 ||
            (r = env_uint("LOOP_DOCKERPROXY_IDLE_SEC", PROXY_IDLE_SEC_DEFAULT, 86400, &p->idle_usec)) < 0)
                return r;
        p->idle_usec = MAX(p->idle_usec, 1U) * 1000000ULL;

        const char *build = getenv("LOOP_DOCKERPROXY_BUILD");
        if (!isempty(build) && !streq(build, "0") && !streq(build, "1"))
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_BUILD=%s is neither 0 nor 1.", build);
        p->build = streq_ptr(build, "1");

        for (const char *i = strempty(getenv("LOOP_DOCKERPROXY_PROTECTED_IMAGES")); *i;) {
                size_t n = strcspn(i, " ");
                if (n > 0) {
                        _cleanup_(proxy_image_ref_done) ProxyImageRef ref = {};
                        _cleanup_free_ char *image = strndup(i, n);
                        if (!image)
                                return log_oom();
                        if (proxy_image_ref_parse(image, &ref) < 0)
                                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_PROTECTED_IMAGES: %s is not an image reference.", image);
                        if (strv_consume(&p->protected_images, TAKE_PTR(image)) < 0)
                                return log_oom();
                }
                i += n + (i[n] == ' ');
        }

        const char *network = getenv("LOOP_DOCKERPROXY_NETWORK"), *masks = getenv("LOOP_DOCKERPROXY_MASKED_PATHS");
        if (!isempty(network) && !streq(network, "none") && !streq(network, "engine"))
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_NETWORK=%s is neither \"none\" nor \"engine\".", network);
        p->network_none = streq_ptr(network, "none");
        for (const char *m = strempty(masks); *m;) {
                size_t n = strcspn(m, ":");
                _cleanup_free_ char *path = strndup(m, n);
                if (!path)
                        return log_oom();
                if (!(startswith(path, "/proc/") || startswith(path, "/sys/")) || strstr(path, "/../") || endswith(path, "/.."))
                        return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_MASKED_PATHS: %s is not a /proc or /sys path.", path);
                if (strv_consume(&p->masked_paths, TAKE_PTR(path)) < 0)
                        return log_oom();
                m += n + (m[n] == ':');
        }
        if (proxy_state_dir(p->channel, &p->state_dir) < 0)
                return log_oom();

        if (isempty(sock))
                sock = access("/run/podman/podman.sock", F_OK) >= 0 ? "/run/podman/podman.sock" : "/var/run/docker.sock";
        if (sock[0] != '/')
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_ENGINE_SOCKET=%s is not an absolute path.", sock);
        p->engine_socket = strdup(sock);
        if (asprintf(&p->gate_socket, "%s/%s/gate.sock", loop_runtime_dir(), p->channel) < 0 || !p->engine_socket)
                return log_oom();

        if (isempty(policy) && !isempty(creds)) {
                if (asprintf(&cred_policy, "%s/policy", creds) < 0)
                        return log_oom();
                if (access(cred_policy, F_OK) >= 0)
                        policy = cred_policy;
        }
        if (!isempty(work_dir) && (work_dir[0] != '/' || streq(work_dir, "/")))
                return log_error_errno(EINVAL, "LOOP_DOCKERPROXY_WORK_DIR=%s must be absolute and not /.", work_dir);
        if (!isempty(work_dir) && !(p->work_dir = strdup(work_dir)))
                return log_oom();
        {
                _cleanup_free_ char *cred_egress = NULL, *text = NULL, *egress_error = NULL;
                _cleanup_(json_object_putp) json_object *doc = NULL;
                const char *egress = getenv("LOOP_DOCKERPROXY_EGRESS");
                size_t size;
                if (isempty(egress) && !isempty(creds)) {
                        if (asprintf(&cred_egress, "%s/egress", creds) < 0)
                                return log_oom();
                        if (access(cred_egress, F_OK) >= 0)
                                egress = cred_egress;
                }
                if (!isempty(egress)) {
                        r = read_full_file_at(AT_FDCWD, egress, PROXY_BODY_MAX, false, &text, &size);
                        if (r < 0)
                                return log_error_errno(r, "Cannot read the egress policy %s: %m", egress);
                        doc = json_tokener_parse(text);
                        if (!doc)
                                return log_error_errno(EINVAL, "The egress policy %s is not JSON.", egress);
                        r = egress_policy_compile(doc, NULL, &p->egress, &egress_error);
                        if (r < 0)
                                return log_error_errno(r, "The egress policy %s refused: %s", egress, strna(egress_error));
                }
        }
        if (!isempty(policy)) {
                r = proxy_policy_load_channel_file(policy, isempty(work_dir) ? NULL : work_dir, &p->policy, &error);
                if (r < 0)
                        return log_error_errno(r, "Policy %s refused: %s", policy, strna(error));
        } else {
                _cleanup_(json_object_putp) json_object *doc = NULL;
                r = proxy_policy_document(NULL, isempty(work_dir) ? NULL : work_dir, &doc);
                if (r < 0)
                        return log_error_errno(r, "Cannot build the default policy: %m");
                r = proxy_policy_compile(doc, &p->policy, &error);
                if (r < 0)
                        return log_error_errno(r, "The built-in policy does not compile: %s", strna(error));
        }
        return 0;
}

/* Which engine it is (the seccomp profile is given differently), and whether it manages cgroups through
 * systemd (then containers go into the channel's slice). An engine down at start is asked again at the
 * first create. */
void proxy_probe_engine(DockerProxy *p) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *info = NULL;
        json_object *driver;

        if (proxy_engine_open(p, &e) < 0)
                return;
        engine_set_timeout(e, 5);
        if (engine_info(e, &info) < 0)
                return;
        p->engine_kind = engine_kind(e);
        if (sd_booted() > 0 && !p->cgroup_parent && json_object_object_get_ex(info, "CgroupDriver", &driver) &&
            streq(strempty(json_object_get_string(driver)), "systemd"))
                p->cgroup_parent = channel_slice_name(p->channel);
}

/* Which engine it is: found at start, else asked now (under create_lock, once for all workers). */
EngineKind proxy_engine_kind(DockerProxy *p) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&p->create_lock);

        if (p->engine_kind == ENGINE_UNKNOWN)
                proxy_probe_engine(p);
        return p->engine_kind;
}

/* The workload profile's security option for the engine (seccomp-profile.h), made once, under
 * create_lock. */
int proxy_seccomp_option(DockerProxy *p) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&p->create_lock);
        int r;

        if (p->seccomp_option)
                return 0;
        if (p->engine_kind == ENGINE_UNKNOWN)
                proxy_probe_engine(p);
        if (p->engine_kind == ENGINE_UNKNOWN)
                return -EHOSTDOWN;
        if (p->engine_kind == ENGINE_PODMAN)
                /* the directory and what is missing above it, readable by the engine */
                for (char *s = p->state_dir + 1;; s++)
                        if (*s == '/' || !*s) {
                                char saved = *s;
                                *s = 0;
                                int k = mkdir(p->state_dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
                                *s = saved;
                                if (k < 0)
                                        return log_warning_errno(k, "Cannot make %s for the seccomp profile: %m", p->state_dir);
                                if (!saved)
                                        break;
                        }
        r = seccomp_profile_security_opt(p->engine_kind, p->state_dir, &p->seccomp_option);
        if (r < 0)
                return log_warning_errno(r, "Cannot make the seccomp workload profile for nested containers: %m");
        return 0;
}
