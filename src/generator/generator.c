/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#include "config-build.h"
#include "dockerproxy-policy.h"
#include "dockerproxy-registry.h"
#include "egress-policy.h"
#include "generator.h"
#include "log.h"
#include "protected-paths.h"
#include "strv.h"
#include "unit-file.h"
#include "unit-name.h"

#define AGENT_PATH_TEMPLATE LOOP_UNITDIR "/loop-agent@.path"
#define GATE_SOCKET_TEMPLATE LOOP_UNITDIR "/loop-gate@.socket"
#define GATE_ADMIN_SOCKET_TEMPLATE LOOP_UNITDIR "/loop-gate-admin@.socket"
#define DOCKERPROXY_SOCKET_TEMPLATE LOOP_UNITDIR "/loop-dockerproxy@.socket"
#define GATEWAY_SOCKET_TEMPLATE LOOP_UNITDIR "/loop-gateway@.socket"
#define RECONCILE_TIMER LOOP_UNITDIR "/loop-reconcile.timer"
#define TASKS_SOCKET_TEMPLATE LOOP_UNITDIR "/loop-tasks@.socket"
#define TASKS_SYNC_PATH_TEMPLATE LOOP_UNITDIR "/loop-tasks-sync@.path"
#define TASK_RESTORE_SERVICE LOOP_UNITDIR "/loop-task-restore.service"
#define BROWSER_SOCKET_TEMPLATE LOOP_UNITDIR "/loop-browser@.socket"

/* What the generator does once per run rather than once per channel: the cache of the policy
 * compilers (which parse the built-in rules and regcomp() each of them), computed once per distinct input:
 * keyed by the compilers' whole input as compact JSON, in json-c objects (hash tables); a value is null
 * for "compiles", else the compiler's message. And the directory every channel writes a drop-in into. */
typedef struct GeneratorCache {
        json_object *dockerproxy;
        json_object *egress;
        bool loop_target_d;             /* loop.target.d/ exists */
} GeneratorCache;

static void generator_cache_done(GeneratorCache *v) {
        json_object_put(v->dockerproxy);
        json_object_put(v->egress);
}

/* Computes a policy's verdict: >= 0 it compiles, < 0 it does not (*ret_error: why, when known). */
typedef int (*PolicyCompile)(void *userdata, char **ret_error);

/* The verdict of the input named key, from *cache or computed by compile() once: > 0 it compiles, 0 it
 * does not (*ret_error: why, when known), -ENOMEM. */
static int verdict_get(json_object **cache, const char *key, PolicyCompile compile, void *userdata,
                       char **ret_error) {
        _cleanup_free_ char *error = NULL;
        const char *known;
        json_object *v;
        int r;

        if (!*cache && !(*cache = json_object_new_object()))
                return -ENOMEM;
        if (!json_object_object_get_ex(*cache, key, &v)) {
                r = compile(userdata, &error);
                if (r == -ENOMEM)
                        return r;
                /* "" for a refusal without a message */
                v = NULL;
                if (r < 0 && !(v = json_object_new_string(strempty(error))))
                        return -ENOMEM;
                if (json_object_object_add(*cache, key, v) < 0) {
                        json_object_put(v);
                        return -ENOMEM;
                }
        }
        known = v ? json_object_get_string(v) : NULL;
        if (!known)
                return 1;
        if (!isempty(known) && !(*ret_error = strdup(known)))
                return -ENOMEM;
        return 0;
}

static int unit_new(UnitFile **ret) {
        return unit_file_new(GENERATOR_NAME, ret) < 0 ? log_oom() : 0;
}

/* Writes u as the new unit file name; a value the writer refused on the way fails it here. */
static int unit_write(UnitFile *u, int dir_fd, const char *name) {
        int r = unit_file_write(u, dir_fd, name, 0644);

        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", name);
        return 0;
}

static int data_write(int dir_fd, const char *name, mode_t mode, const char *text) {
        int r = unit_data_file_write(dir_fd, name, mode, text, strlen(text));

        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", name);
        return 0;
}

/* A JSON document as a data file, as compact as json-c writes it (no escaped slashes in paths). */
static int json_data_write(int dir_fd, const char *name, mode_t mode, json_object *doc) {
        const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!text)
                return log_oom();
        return data_write(dir_fd, name, mode, text);
}

/* Environment=NAME=N: a number the helper reads with env_uint(). */
static int set_environment_uint(UnitFile *u, const char *name, uint64_t value) {
        char buf[32];

        (void) snprintf(buf, sizeof buf, "%" PRIu64, value);
        return unit_file_set_environment_word(u, name, buf);
}

static int mkdirat_exist_ok(int dir_fd, const char *name) {
        if (mkdirat(dir_fd, name, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Failed to create directory %s: %m", name);
        return 0;
}

static int write_slice(int dir_fd, const Channel *c) {
        const ChannelLimits *l = &c->config.limits;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *name = NULL, *description = NULL;
        int r;

        name = channel_slice_name(c->name);
        if (!name || asprintf(&description, "loop channel %s", c->name) < 0)
                return log_oom();

        r = unit_new(&u);
        if (r < 0)
                return r;
        unit_file_section(u, "Unit");
        unit_file_set(u, "Description", description);
        unit_file_set(u, "Documentation", "man:loop(1)");
        unit_file_set_path(u, "SourcePath", c->path);
        unit_file_set(u, "Before", "slices.target");

        if (l->memory_max_mb > 0 || l->cpu_quota_percent > 0 || l->tasks_max > 0)
                unit_file_section(u, "Slice");
        if (l->memory_max_mb > 0)
                unit_file_setf(u, "MemoryMax", "%" PRIu64 "M", l->memory_max_mb);
        if (l->cpu_quota_percent > 0)
                unit_file_setf(u, "CPUQuota", "%" PRIu64 "%%", l->cpu_quota_percent);
        if (l->tasks_max > 0)
                unit_file_setf(u, "TasksMax", "%" PRIu64, l->tasks_max);

        return unit_write(u, dir_fd, name);
}

static int write_agent_dropin(int dir_fd, const Channel *c, const char *config_dir) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *dir = NULL, *name = NULL, *slice = NULL, *text = NULL, *description = NULL;
        int r;

        if (c->config.description) {
                r = unit_value_from_text(c->config.description, &text);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        log_warning_errno(r, "%s: description is not valid UTF-8 or ends with a backslash, "
                                          "leaving it out of the unit.", c->path);
        }

        slice = channel_slice_name(c->name);
        if (!slice ||
            asprintf(&dir, "loop-agent@%s.service.d", c->name) < 0 ||
            asprintf(&name, "%s/50-channel.conf", dir) < 0 ||
            (!isempty(text) && asprintf(&description, "loop agent for channel %s: %s", c->name, text) < 0))
                return log_oom();

        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;
        r = unit_new(&u);
        if (r < 0)
                return r;

        unit_file_section(u, "Unit");
        if (description)
                unit_file_set(u, "Description", description);
        unit_file_set_path(u, "SourcePath", c->path);
        unit_file_section(u, "Service");
        unit_file_set(u, "Slice", slice);
        unit_file_set_environment_word(u, "LOOP_CHANNEL", c->name);
        if (config_dir)
                unit_file_set_environment(u, "LOOP_CONFIG_DIR", config_dir);

        return unit_write(u, dir_fd, name);
}

/* The drop-in of a channel's helper service, with the lines every one of them starts with. */
static int channel_dropin_new(const Channel *c, UnitFile **ret) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        int r;

        r = unit_new(&u);
        if (r < 0)
                return r;
        unit_file_section(u, "Unit");
        unit_file_set_path(u, "SourcePath", c->path);
        unit_file_section(u, "Service");
        unit_file_set_environment_word(u, "LOOP_CHANNEL", c->name);
        *ret = TAKE_PTR(u);
        return 0;
}

/* A symlink in loop-channel@NAME.target.wants/, which generator_channel() made first. */
static int write_wants_symlink(int dir_fd, const Channel *c, const char *unit_prefix, const char *suffix,
                               const char *target) {
        _cleanup_free_ char *link = NULL;

        if (asprintf(&link, "loop-channel@%s.target.wants/%s@%s.%s", c->name, unit_prefix, c->name, suffix) < 0)
                return log_oom();
        if (symlinkat(target, dir_fd, link) < 0)
                return log_error_errno(errno, "Failed to create symlink %s: %m", link);
        return 0;
}

/* loop-gate@NAME.service's settings: loop.json holds credentials, so the service gets what it needs
 * from here instead of reading the config. The webhook URL may carry a chat's credential: it goes into a
 * file only root can read, which systemd hands to the service as a credential, never into Environment=
 * (visible to every user through `systemctl show`). */
static int write_gate_dropin(int dir_fd, const Channel *c, const char *output_dir) {
        const GatesConfig *g = &c->config.gates;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *dir = NULL, *name = NULL, *webhook = NULL, *webhook_path = NULL, *credential = NULL;
        int r;

        if (asprintf(&dir, "loop-gate@%s.service.d", c->name) < 0 ||
            asprintf(&name, "%s/50-channel.conf", dir) < 0)
                return log_oom();
        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;

        if (g->webhook_url) {
                if (string_has_control(g->webhook_url) || strchr(g->webhook_url, ' '))
                        log_warning("%s: gates.webhook_url contains spaces or control characters, not using it.", c->path);
                else if (!unit_value_is_path(output_dir))
                        log_warning("Output dir %s cannot be named in a unit file, not passing the webhook URL.", output_dir);
                else {
                        if (asprintf(&webhook, "%s/webhook-url", dir) < 0 ||
                            asprintf(&webhook_path, "%s/%s", output_dir, webhook) < 0 ||
                            asprintf(&credential, "webhook-url:%s", webhook_path) < 0)
                                return log_oom();
                        r = data_write(dir_fd, webhook, 0600, g->webhook_url);
                        if (r < 0)
                                return r;
                }
        }

        r = channel_dropin_new(c, &u);
        if (r < 0)
                return r;
        set_environment_uint(u, "LOOP_GATE_APPROVAL_TIMEOUT_SEC", g->approval_timeout_sec);
        set_environment_uint(u, "LOOP_GATE_RATE_TOTAL", g->rate_limits.total);
        set_environment_uint(u, "LOOP_GATE_RATE_PENDING", g->rate_limits.pending);
        set_environment_uint(u, "LOOP_GATE_RATE_PER_MINUTE", g->rate_limits.per_minute);
        set_environment_uint(u, "LOOP_GATE_AUDIT_VERBOSE", g->audit.verbose);
        if (credential) {
                unit_file_set(u, "LoadCredential", credential);
                /* The webhook needs the network this unit otherwise does not have. */
                unit_file_set(u, "PrivateNetwork", "no");
                unit_file_set(u, "IPAddressDeny", "");
                unit_file_set(u, "RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6 AF_NETLINK");
        }
        return unit_write(u, dir_fd, name);
}

static int generate_gate(int dir_fd, const Channel *c, const char *output_dir) {
        int r;

        r = write_gate_dropin(dir_fd, c, output_dir);
        if (r < 0)
                return r;
        r = write_wants_symlink(dir_fd, c, "loop-gate", "socket", GATE_SOCKET_TEMPLATE);
        if (r < 0)
                return r;
        return write_wants_symlink(dir_fd, c, "loop-gate-admin", "socket", GATE_ADMIN_SOCKET_TEMPLATE);
}

/* The work dir as the Docker API policy compiler sees it: the merge refuses a relative one and "/", and the
 * built-in rules name it only in the values of source path checks (@WORK@ in dockerproxy-policy.c), where
 * the compiler refuses a relative path or one of PATH_MAX or more and otherwise takes any path. So every
 * work dir that passes these checks gives the same verdict as this one, and the verdict of a channel
 * document is computed once for all of them. */
#define DOCKERPROXY_VERDICT_WORK_DIR "/loop-generator-work-dir"

static bool dockerproxy_work_dir_is_plain(const char *w) {
        return w && w[0] == '/' && !streq(w, "/") && strlen(w) < PATH_MAX;
}

typedef struct DockerProxyInput {
        json_object *channel;
        const char *work_dir;
} DockerProxyInput;

static int dockerproxy_policy_compile(void *userdata, char **ret_error) {
        const DockerProxyInput *in = userdata;
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_(proxy_policy_freep) ProxyPolicy *compiled = NULL;
        int r;

        r = proxy_policy_document_merge(in->channel, in->work_dir, &doc);
        if (r < 0)
                return r;
        return proxy_policy_compile(doc, &compiled, ret_error);
}

/* Whether the merged policy of the channel document and work dir w compiles: > 0 yes, 0 no (*ret_error:
 * the compiler's message), -ENOMEM. Cached per channel document. */
static int dockerproxy_policy_verdict(GeneratorCache *cache, json_object *channel, const char *w,
                                      char **ret_error) {
        DockerProxyInput in = { .channel = channel, .work_dir = w };
        _cleanup_free_ char *key = NULL;
        int r;

        if (w && !dockerproxy_work_dir_is_plain(w)) {
                /* not what the cache stands for: compiled as it is */
                r = dockerproxy_policy_compile(&in, ret_error);
                return r == -ENOMEM ? r : r >= 0;
        }
        if (asprintf(&key, "%c%s", w ? 'w' : '-',
                     json_object_to_json_string_ext(channel, JSON_C_TO_STRING_PLAIN)) < 0)
                return -ENOMEM;
        in.work_dir = w ? DOCKERPROXY_VERDICT_WORK_DIR : NULL;
        return verdict_get(&cache->dockerproxy, key, dockerproxy_policy_compile, &in, ret_error);
}

/* The Docker API proxy: its policy document (the channel's rules and the built-in ones), compiled here
 * first so that a document the service would refuse never gets a socket: no proxy is a closed door. */
static int generate_dockerproxy(int dir_fd, const Channel *c, const char *output_dir, GeneratorCache *cache) {
        _cleanup_free_ char *dir = NULL, *conf = NULL, *policy = NULL, *policy_path = NULL, *credential = NULL,
                *error = NULL, *masks = NULL, *images = NULL, *egress_credential = NULL;
        _cleanup_strv_free_ char **kernel_masks = NULL;
        _cleanup_(json_object_putp) json_object *channel = NULL;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        const char *w = c->config.work_dir, *sock = c->config.engine.socket;
        const char *agent_image = strempty(c->config.container_image),
                *chrome_image = strempty(c->config.browser.chrome_image);
        int r;

        if (w && !unit_value_is_word(w)) {
                log_warning("%s: the work dir cannot be named in a unit file, no Docker API proxy.", c->path);
                return 0;
        }
        if (sock && !unit_value_is_word(sock)) {
                log_warning("%s: engine.socket cannot be named in a unit file, no Docker API proxy.", c->path);
                return 0;
        }
        if (!unit_value_is_path(output_dir)) {
                log_warning("Output dir %s cannot be named in a unit file, no Docker API proxy.", output_dir);
                return 0;
        }
        r = protected_paths_list(&c->config, PROTECTED_KERNEL, &kernel_masks);
        if (r < 0)
                return log_error_errno(r, "%s: cannot list the kernel paths to mask: %m", c->path);
        masks = strv_join(kernel_masks, ":");
        if (!masks)
                return log_oom();
        /* the proxy splits the list at ':' and hands each entry to the engine as it is */
        if (!unit_value_is_word(masks) || strpbrk(masks, "%$")) {
                log_warning("%s: the masked paths cannot be named in a unit file, no Docker API proxy.", c->path);
                return 0;
        }
        r = proxy_policy_channel_document(&c->config.gates.docker_proxy, &channel);
        if (r < 0)
                return log_error_errno(r, "%s: cannot build the Docker API policy: %m", c->path);
        r = dockerproxy_policy_verdict(cache, channel, w, &error);
        if (r < 0)
                return log_oom();
        if (r == 0) {
                log_warning("%s: the Docker API policy does not compile (%s), no Docker API proxy.", c->path,
                            strna(error));
                return 0;
        }

        if (asprintf(&dir, "loop-dockerproxy@%s.service.d", c->name) < 0 ||
            asprintf(&conf, "%s/50-channel.conf", dir) < 0 ||
            asprintf(&policy, "%s/policy.json", dir) < 0 ||
            asprintf(&policy_path, "%s/%s", output_dir, policy) < 0 ||
            asprintf(&credential, "policy:%s", policy_path) < 0 ||
            asprintf(&images, "%s%s%s", agent_image, isempty(agent_image) || isempty(chrome_image) ? "" : " ",
                     chrome_image) < 0)
                return log_oom();
        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;

        if (!proxy_policy_channel_document_is_empty(channel)) {
                r = json_data_write(dir_fd, policy, 0644, channel);
                if (r < 0)
                        return r;
        } else
                credential = mfree(credential);

        /* pulls and pushes go where the channel's egress policy lets the agent go: its rules without the
         * secrets, for the proxy to decide on; written when they allow anything at all (no egress gateway,
         * or one without rules or registries: no pulls, no pushes) */
        if (egress_config_enabled(c->config.json)) {
                _cleanup_(json_object_putp) json_object *registry_doc = NULL;
                _cleanup_free_ char *egress_policy = NULL, *egress_path = NULL;
                json_object *egress = NULL, *rules = NULL, *registries = NULL;

                (void) json_object_object_get_ex(c->config.json, "egress", &egress);
                r = proxy_registry_policy_document(egress, &registry_doc);
                if (r < 0)
                        return log_error_errno(r, "%s: cannot build the proxy's copy of the egress policy: %m", c->path);
                (void) json_object_object_get_ex(registry_doc, "rules", &rules);
                (void) json_object_object_get_ex(registry_doc, "registries", &registries);
                if ((json_object_is_type(rules, json_type_array) && json_object_array_length(rules) > 0) ||
                    (json_object_is_type(registries, json_type_array) && json_object_array_length(registries) > 0)) {
                        if (asprintf(&egress_policy, "%s/egress.json", dir) < 0 ||
                            asprintf(&egress_path, "%s/%s", output_dir, egress_policy) < 0 ||
                            asprintf(&egress_credential, "egress:%s", egress_path) < 0)
                                return log_oom();
                        r = json_data_write(dir_fd, egress_policy, 0644, registry_doc);
                        if (r < 0)
                                return r;
                }
        }

        r = channel_dropin_new(c, &u);
        if (r < 0)
                return r;
        if (credential)
                unit_file_set(u, "LoadCredential", credential);
        if (egress_credential)
                unit_file_set(u, "LoadCredential", egress_credential);
        if (!isempty(w))
                unit_file_set_environment_word(u, "LOOP_DOCKERPROXY_WORK_DIR", w);
        if (!isempty(sock))
                unit_file_set_environment_word(u, "LOOP_DOCKERPROXY_ENGINE_SOCKET", sock);
        /* what nested containers get of the channel's policy: the service does not read loop.json */
        set_environment_uint(u, "LOOP_DOCKERPROXY_CONTAINERS_MAX", c->config.gates.docker_proxy.containers_max);
        unit_file_set_environment_word(u, "LOOP_DOCKERPROXY_NETWORK",
                                       egress_config_enabled(c->config.json) &&
                                       !c->config.gates.docker_proxy.nested_network ? "none" : "engine");
        if (!isempty(masks))
                unit_file_set_environment_word(u, "LOOP_DOCKERPROXY_MASKED_PATHS", masks);
        set_environment_uint(u, "LOOP_DOCKERPROXY_BUILD", c->config.gates.docker_proxy.build);
        /* the operator's images, which no agent may tag over, commit over or remove */
        unit_file_set_environment(u, "LOOP_DOCKERPROXY_PROTECTED_IMAGES", images);
        r = unit_write(u, dir_fd, conf);
        if (r < 0)
                return r;
        return write_wants_symlink(dir_fd, c, "loop-dockerproxy", "socket", DOCKERPROXY_SOCKET_TEMPLATE);
}

/* The egress gateway gets its policy and the real credentials as one credential file only root can read;
 * the service sees it under $CREDENTIALS_DIRECTORY, never in its environment. A policy that does not
 * compile is written anyway: the gateway then refuses everything and journals why (fail closed), which an
 * operator finds where they look first. */
typedef struct EgressInput {
        json_object *egress;
        const char *api_host;
} EgressInput;

static int egress_policy_check(void *userdata, char **ret_error) {
        const EgressInput *in = userdata;
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;

        return egress_policy_compile(in->egress, in->api_host, &p, ret_error);
}

/* Whether the channel's egress policy compiles: > 0 yes, else no (*ret_error: why, when known); -ENOMEM.
 * Cached per distinct egress section and API host, which are all the compiler reads. */
static int egress_policy_verdict(GeneratorCache *cache, json_object *config, char **ret_error) {
        _cleanup_free_ char *api_host = NULL, *key = NULL;
        EgressInput in = {};

        if (egress_config_api_host(config, &api_host) < 0)
                return 0;       /* as the gateway, which gets no policy then either */
        (void) json_object_object_get_ex(config, "egress", &in.egress);
        in.api_host = api_host;
        /* the host first: it holds no newline (a JSON text may) */
        if (asprintf(&key, "%s\n%s", strempty(api_host),
                     in.egress ? json_object_to_json_string_ext(in.egress, JSON_C_TO_STRING_PLAIN) : "") < 0)
                return -ENOMEM;
        return verdict_get(&cache->egress, key, egress_policy_check, &in, ret_error);
}

static int generate_gateway(int dir_fd, const Channel *c, const char *output_dir, GeneratorCache *cache) {
        _cleanup_(json_object_putp) json_object *doc = json_object_new_object();
        _cleanup_free_ char *dir = NULL, *name = NULL, *cred = NULL, *cred_path = NULL, *credential = NULL;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        json_object *egress;
        int r;

        if (!unit_value_is_path(output_dir))
                return log_error_errno(EINVAL, "Output dir %s cannot be named in a unit file, no egress gateway for %s.",
                                       output_dir, c->name);
        if (!doc)
                return log_oom();
        if (json_object_object_get_ex(c->config.json, "egress", &egress) &&
            json_object_object_add(doc, "egress", json_object_get(egress)) < 0)
                return log_oom();
        if (!isempty(c->config.claude_code_oauth_token) &&
            json_object_object_add(doc, "claude_code_oauth_token", json_object_new_string(c->config.claude_code_oauth_token)) < 0)
                return log_oom();
        if (!isempty(c->config.anthropic_api_key) &&
            json_object_object_add(doc, "anthropic_api_key", json_object_new_string(c->config.anthropic_api_key)) < 0)
                return log_oom();
        {
                _cleanup_free_ char *error = NULL;

                r = egress_policy_verdict(cache, c->config.json, &error);
                if (r == -ENOMEM)
                        return log_oom();
                if (r <= 0)
                        log_error("%s: the egress policy does not compile, the gateway of channel %s will refuse every "
                                  "request: %s", c->path, c->name, strna(error));
        }

        if (asprintf(&dir, "loop-gateway@%s.service.d", c->name) < 0 ||
            asprintf(&name, "%s/50-channel.conf", dir) < 0 ||
            asprintf(&cred, "%s/egress.json", dir) < 0 ||
            asprintf(&cred_path, "%s/%s", output_dir, cred) < 0 ||
            asprintf(&credential, "egress.json:%s", cred_path) < 0)
                return log_oom();
        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;

        r = json_data_write(dir_fd, cred, 0600, doc);
        if (r < 0)
                return r;

        r = channel_dropin_new(c, &u);
        if (r < 0)
                return r;
        unit_file_set(u, "LoadCredential", credential);
        r = unit_write(u, dir_fd, name);
        if (r < 0)
                return r;
        return write_wants_symlink(dir_fd, c, "loop-gateway", "socket", GATEWAY_SOCKET_TEMPLATE);
}

/* The channel's scheduled tasks: the helper's limits (it cannot read loop.json), its socket and the path
 * unit that turns changed task files into timers. */
static int generate_tasks(int dir_fd, const Channel *c) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *dir = NULL, *conf = NULL;
        int r;

        if (asprintf(&dir, "loop-tasks@%s.service.d", c->name) < 0 || asprintf(&conf, "%s/50-channel.conf", dir) < 0)
                return log_oom();
        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;
        r = channel_dropin_new(c, &u);
        if (r < 0)
                return r;
        set_environment_uint(u, "LOOP_TASKS_MAX", c->config.tasks.max);
        set_environment_uint(u, "LOOP_TASKS_MIN_INTERVAL_SEC", c->config.tasks.min_interval_sec);
        set_environment_uint(u, "LOOP_TASKS_PROMPT_MAX", c->config.tasks.prompt_max);
        r = unit_write(u, dir_fd, conf);
        if (r < 0)
                return r;
        r = write_wants_symlink(dir_fd, c, "loop-tasks", "socket", TASKS_SOCKET_TEMPLATE);
        if (r < 0)
                return r;
        return write_wants_symlink(dir_fd, c, "loop-tasks-sync", "path", TASKS_SYNC_PATH_TEMPLATE);
}

/* The gateway's policy without its secrets, for the browser service (which answers the agents' calls and
 * so must hold nothing worth stealing): a credential rule becomes the allow rule it is to a URL check,
 * and the upstream proxy (with its password) is left out. No model API key is in it either. */
static int browser_policy_doc(const Channel *c, json_object **ret) {
        _cleanup_(json_object_putp) json_object *doc = json_object_new_object(), *egress = NULL;
        json_object *e, *rules;

        if (!doc)
                return -ENOMEM;
        if (json_object_object_get_ex(c->config.json, "egress", &e) && json_object_is_type(e, json_type_object)) {
                if (json_object_deep_copy(e, &egress, NULL) < 0)
                        return -ENOMEM;
                json_object_object_del(egress, "upstream_proxy");
                json_object_object_del(egress, "ca_file");
                if (json_object_object_get_ex(egress, "rules", &rules) && json_object_is_type(rules, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(rules); i++) {
                                json_object *rule = json_object_array_get_idx(rules, i), *d;
                                if (json_object_is_type(rule, json_type_object) &&
                                    json_object_object_get_ex(rule, "decision", &d) &&
                                    streq_ptr(json_object_get_string(d), "credential")) {
                                        json_object_object_del(rule, "credential");
                                        if (json_object_object_add(rule, "decision", json_object_new_string("allow")) < 0)
                                                return -ENOMEM;
                                }
                        }
                if (json_object_object_add(doc, "egress", TAKE_PTR(egress)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(doc);
        return 0;
}

/* The channel's browser (issue 21): the host side's idle timeout and the egress policy (the gateway's, less
 * its secrets: both decide alike), Chrome's service in the channel's slice, and the socket. */
static int generate_browser(int dir_fd, const Channel *c, const char *output_dir) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL, *chrome = NULL;
        _cleanup_free_ char *dir = NULL, *conf = NULL, *chrome_dir = NULL, *chrome_conf = NULL, *credential = NULL,
                            *slice = NULL;
        int r;

        if (asprintf(&dir, "loop-browser@%s.service.d", c->name) < 0 || asprintf(&conf, "%s/50-channel.conf", dir) < 0 ||
            asprintf(&chrome_dir, "loop-chrome@%s.service.d", c->name) < 0 ||
            asprintf(&chrome_conf, "%s/50-channel.conf", chrome_dir) < 0 ||
            !(slice = channel_slice_name(c->name)))
                return log_oom();
        if ((r = mkdirat_exist_ok(dir_fd, dir)) < 0 || (r = mkdirat_exist_ok(dir_fd, chrome_dir)) < 0)
                return r;
        r = channel_dropin_new(c, &u);
        if (r < 0)
                return r;
        set_environment_uint(u, "LOOP_BROWSER_IDLE_SEC", c->config.browser.idle_timeout_sec);
        if (egress_config_enabled(c->config.json) && unit_value_is_path(output_dir)) {
                _cleanup_(json_object_putp) json_object *doc = NULL;
                _cleanup_free_ char *cred = NULL;

                if (browser_policy_doc(c, &doc) < 0 || asprintf(&cred, "%s/egress.json", dir) < 0 ||
                    asprintf(&credential, "egress.json:%s/%s", output_dir, cred) < 0)
                        return log_oom();
                r = json_data_write(dir_fd, cred, 0600, doc);
                if (r < 0)
                        return r;
                unit_file_set(u, "LoadCredential", credential);
        }
        r = unit_write(u, dir_fd, conf);
        if (r < 0)
                return r;
        r = channel_dropin_new(c, &chrome);
        if (r < 0)
                return r;
        unit_file_set(chrome, "Slice", slice);
        r = unit_write(chrome, dir_fd, chrome_conf);
        if (r < 0)
                return r;
        return write_wants_symlink(dir_fd, c, "loop-browser", "socket", BROWSER_SOCKET_TEMPLATE);
}

/* loop.target upholds loop-channel@NAME.target, which wants the channel's units (units/loop-channel@.target.in
 * says why: a channel added while loop.target runs is armed by the next daemon-reload). */
static int write_channel_upheld(int dir_fd, const Channel *c, GeneratorCache *cache) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *conf = NULL, *target = NULL;
        int r;

        if (asprintf(&conf, "loop.target.d/50-channel-%s.conf", c->name) < 0 ||
            asprintf(&target, "loop-channel@%s.target", c->name) < 0)
                return log_oom();
        if (!cache->loop_target_d) {
                r = mkdirat_exist_ok(dir_fd, "loop.target.d");
                if (r < 0)
                        return r;
                cache->loop_target_d = true;
        }
        r = unit_file_new("loop-generator", &u);
        if (r < 0)
                return log_oom();
        unit_file_section(u, "Unit");
        unit_file_set(u, "Upholds", target);
        return unit_write(u, dir_fd, conf);
}

/* The units of one valid, enabled channel into dir_fd (output_dir is its path, named in LoadCredential=).
 * config_dir: the config dir the programs started by the units must read (NULL: the default one).
 * Logs what it refuses; a helper whose settings cannot be written is left out with a message, which is
 * not a failure. < 0 (logged) when the channel's units could not all be written. */
static int generator_channel(int dir_fd, const Channel *c, const char *config_dir, const char *output_dir,
                             GeneratorCache *cache) {
        _cleanup_free_ char *wants = NULL;
        int r;

        if (asprintf(&wants, "loop-channel@%s.target.wants", c->name) < 0)
                return log_oom();

        /* The name was checked by the config module: [A-Za-z0-9][A-Za-z0-9_.-]*, safe in a file name and
         * as a unit instance; the path lies below the config dir, which was checked in generator_run(). */
        r = write_slice(dir_fd, c);
        if (r < 0)
                return r;
        r = write_agent_dropin(dir_fd, c, config_dir);
        if (r < 0)
                return r;
        r = write_channel_upheld(dir_fd, c, cache);
        if (r < 0)
                return r;
        r = mkdirat_exist_ok(dir_fd, wants);
        if (r < 0)
                return r;
        r = write_wants_symlink(dir_fd, c, "loop-agent", "path", AGENT_PATH_TEMPLATE);
        if (r < 0)
                return r;
        r = generate_tasks(dir_fd, c);
        if (r < 0)
                return r;
        if (egress_config_enabled(c->config.json)) {
                r = generate_gateway(dir_fd, c, output_dir, cache);
                if (r < 0)
                        return r;
        }
        if (c->config.browser.enabled) {
                r = generate_browser(dir_fd, c, output_dir);
                if (r < 0)
                        return r;
        }
        if (c->config.gates.agentgate.enabled) {
                r = generate_gate(dir_fd, c, output_dir);
                if (r < 0)
                        return r;
        }
        if (c->config.gates.agentgate.enabled && c->config.gates.docker_proxy.enabled)
                return generate_dockerproxy(dir_fd, c, output_dir, cache);
        return 0;
}

/* Whether p is an error in the file of a channel: those are reported once per channel, with its reason. */
static bool problem_is_channel_error(const ConfigSet *set, const ConfigProblem *p) {
        _cleanup_free_ char *name = NULL;
        const char *base, *suffix;
        const Channel *c;

        if (!p->error || !p->file)
                return false;
        base = strrchr(p->file, '/');
        base = base ? base + 1 : p->file;
        suffix = endswith(base, ".json");
        if (!suffix)
                return false;
        name = strndup(base, (size_t) (suffix - base));
        if (!name)
                return false;   /* logging it twice is better than not at all */
        c = config_set_find_channel(set, name);
        return c && streq(c->path, p->file);
}

static void log_problems(const ConfigSet *set) {
        for (size_t i = 0; i < set->problems.n; i++) {
                const ConfigProblem *p = &set->problems.items[i];
                _cleanup_free_ char *s = NULL;

                if (problem_is_channel_error(set, p))
                        continue;
                s = config_problem_to_string(p);
                if (!s) {
                        log_oom();
                        return;
                }
                log_full(p->error ? LOG_ERR : LOG_WARNING, "%s", s);
        }
}

/* The config dir ends up in SourcePath= and Environment=: it must be a path systemd accepts as it is. */
static int check_config_dir(const char *dir) {
        if (dir[0] != '/')
                return log_error_errno(EINVAL, "Config dir \"%s\" is not an absolute path.", dir);
        if (!unit_value_is_path(dir))
                return log_error_errno(EINVAL, "Config dir path contains control characters or invalid UTF-8, "
                                       "or ends with a space or a backslash.");
        return 0;
}

int generator_run(const char *config_dir, const char *output_dir) {
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(generator_cache_done) GeneratorCache cache = {};
        _cleanup_close_ int dir_fd = -EBADF;
        size_t generated = 0;
        int r, ret = 0;

        r = check_config_dir(config_dir);
        if (r < 0)
                return r;

        dir_fd = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return log_error_errno(errno, "Failed to open output directory %s: %m", output_dir);

        r = config_load(config_dir, &set);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir);

        log_problems(set);
        if (set->n_channels == 0)
                log_debug("No channel files in %s/channels.d, nothing to generate.", config_dir);

        for (size_t i = 0; i < set->n_channels; i++) {
                const Channel *c = &set->channels[i];

                if (!c->valid) {
                        log_error("%s: invalid, skipping channel %s: %s", c->path, c->name, strna(c->reason));
                        continue;
                }
                if (!c->config.enabled) {
                        log_info("%s: channel %s is disabled, skipping.", c->path, c->name);
                        continue;
                }

                /* Programs started by the units must read the same config dir as we did. */
                r = generator_channel(dir_fd, c, streq(config_dir, LOOP_CONFIG_DIR_DEFAULT) ? NULL : config_dir,
                                      output_dir, &cache);
                if (r < 0 && ret == 0)
                        ret = r;  /* already logged; the other channels are still written */
                else if (r >= 0)
                        generated++;
        }

        /* The registry's reconcile loop runs while there is a channel whose containers it looks after. */
        if (generated > 0) {
                r = mkdirat_exist_ok(dir_fd, "loop.target.wants");
                if (r >= 0 && symlinkat(RECONCILE_TIMER, dir_fd, "loop.target.wants/loop-reconcile.timer") < 0)
                        r = log_error_errno(errno, "Failed to create symlink loop.target.wants/loop-reconcile.timer: %m");
                if (r >= 0 && symlinkat(TASK_RESTORE_SERVICE, dir_fd, "loop.target.wants/loop-task-restore.service") < 0)
                        r = log_error_errno(errno, "Failed to create symlink loop.target.wants/loop-task-restore.service: %m");
                if (r < 0 && ret == 0)
                        ret = r;
        }

        return ret;
}
