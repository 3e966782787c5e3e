/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#include "channel-defaults.h"
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

#define RECONCILE_TIMER LOOP_UNITDIR "/loop-reconcile.timer"
#define TASK_RESTORE_SERVICE LOOP_UNITDIR "/loop-task-restore.service"

/* The egress policies the units loop-gateway@.service and loop-browser@.service load as the credential
 * egress.json, named there with the instance (LoadCredential=egress.json:.../loop-egress/%i.gateway.json):
 * one directory for all channels, so a channel costs one file each, not a directory and a file. Two
 * files, not one: the browser's copy has no secrets. 0700 and 0600: root's only. */
#define EGRESS_DIR "loop-egress"
#define EGRESS_GATEWAY_SUFFIX ".gateway.json"
#define EGRESS_BROWSER_SUFFIX ".browser.json"

/* loop.target's Upholds= of every channel, in files of at most this many channels: the unit writer
 * refuses a unit above 1 MiB, and a line is at most 93 bytes ("Upholds=loop-channel@" + CHANNEL_NAME_MAX
 * + ".target\n"), so 8192 of them are 762 KiB. Up to that many channels (all real ones) it is one file. */
#define UPHOLDS_PER_FILE 8192U

/* What the generator does once per run rather than once per channel: the cache of the policy
 * compilers (which parse the built-in rules and regcomp() each of them), computed once per distinct input:
 * keyed by the compilers' whole input as compact JSON, in json-c objects (hash tables); a value is null
 * for "compiles", else the compiler's message. The directories every channel writes into, made once. And
 * loop.target's Upholds= of the channels generated so far, written once per UPHOLDS_PER_FILE channels. */
typedef struct GeneratorCache {
        json_object *dockerproxy;
        json_object *egress;
        bool egress_dir;                /* EGRESS_DIR/ exists */
        UnitFile *upholds;
        size_t n_upholds;               /* in upholds */
        size_t n_upholds_files;         /* written */
} GeneratorCache;

static void generator_cache_done(GeneratorCache *v) {
        json_object_put(v->dockerproxy);
        json_object_put(v->egress);
        unit_file_free(v->upholds);
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

static int write_slice(int dir_fd, const Channel *c, const char *name) {
        const ChannelLimits *l = &c->config.limits;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *description = NULL;
        int r;

        if (asprintf(&description, "loop channel %s", c->name) < 0)
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

/* Whether the channel's slice is the one the unit templates name (Slice=loop-%i.slice): it is unless the
 * name needs escaping (a "-", which in a slice's name makes a sub-slice). */
static bool slice_is_template(const char *slice, const Channel *c) {
        const char *p = startswith(slice, "loop-");
        size_t n = strlen(c->name);

        return p && strncmp(p, c->name, n) == 0 && streq(p + n, ".slice");
}

/* The drop-in of a channel's service, with the lines every one of them starts with: which file it is from
 * (`systemctl status` names it). The templates set everything that is the same for every channel
 * (LOOP_CHANNEL=%i, the slice, the egress credentials), so a drop-in holds only what differs. */
static int channel_dropin_new(const Channel *c, UnitFile **ret) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        int r;

        r = unit_new(&u);
        if (r < 0)
                return r;
        unit_file_section(u, "Unit");
        unit_file_set_path(u, "SourcePath", c->path);
        unit_file_section(u, "Service");
        *ret = TAKE_PTR(u);
        return 0;
}

/* Writes u as PREFIX@NAME.service.d/50-channel.conf. */
static int dropin_write(int dir_fd, const Channel *c, const char *prefix, UnitFile *u) {
        _cleanup_free_ char *dir = NULL, *name = NULL;
        int r;

        if (asprintf(&dir, "%s@%s.service.d", prefix, c->name) < 0 ||
            asprintf(&name, "%s/50-channel.conf", dir) < 0)
                return log_oom();
        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;
        return unit_write(u, dir_fd, name);
}

/* A drop-in that puts the service into the channel's slice, for a name the template's cannot spell. */
static int set_slice(UnitFile *u, const char *slice, const Channel *c) {
        return slice_is_template(slice, c) ? 0 : unit_file_set(u, "Slice", slice);
}

/* The runner's drop-in: the channel's description, the escaped slice, the config dir; none when none of
 * them is needed. */
static int write_agent_dropin(int dir_fd, const Channel *c, const char *config_dir, const char *slice) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *text = NULL, *description = NULL;
        int r;

        if (c->config.description) {
                r = unit_value_from_text(c->config.description, &text);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        log_warning_errno(r, "%s: description is not valid UTF-8 or ends with a backslash, "
                                          "leaving it out of the unit.", c->path);
        }
        if (!isempty(text) && asprintf(&description, "loop agent for channel %s: %s", c->name, text) < 0)
                return log_oom();
        if (!description && !config_dir && slice_is_template(slice, c))
                return 0;

        r = unit_new(&u);
        if (r < 0)
                return r;
        unit_file_section(u, "Unit");
        if (description)
                unit_file_set(u, "Description", description);
        unit_file_set_path(u, "SourcePath", c->path);
        unit_file_section(u, "Service");
        set_slice(u, slice, c);
        if (config_dir)
                unit_file_set_environment(u, "LOOP_CONFIG_DIR", config_dir);
        return dropin_write(dir_fd, c, "loop-agent", u);
}

/* loop-channel@NAME.target wants PREFIX@NAME.SUFFIX. */
static int channel_wants(UnitFile *target, const Channel *c, const char *prefix, const char *suffix) {
        return unit_file_setf(target, "Wants", "%s@%s.%s", prefix, c->name, suffix);
}

/* loop-gate@NAME.service's settings: loop.json holds credentials, so the service gets what it needs
 * from here instead of reading the config. The webhook URL may carry a chat's credential: it goes into a
 * file only root can read, which systemd hands to the service as a credential, never into Environment=
 * (visible to every user through `systemctl show`). */
static bool gate_settings_are_default(const GatesConfig *g) {
        return g->approval_timeout_sec == CHANNEL_GATE_APPROVAL_TIMEOUT_SEC_DEFAULT &&
               g->rate_limits.total == CHANNEL_GATE_RATE_TOTAL_DEFAULT &&
               g->rate_limits.pending == CHANNEL_GATE_RATE_PENDING_DEFAULT &&
               g->rate_limits.per_minute == CHANNEL_GATE_RATE_PER_MINUTE_DEFAULT &&
               g->audit.verbose == CHANNEL_GATE_AUDIT_VERBOSE_DEFAULT;
}

static int write_gate_dropin(int dir_fd, const Channel *c, const char *output_dir) {
        const GatesConfig *g = &c->config.gates;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *dir = NULL, *webhook = NULL, *webhook_path = NULL, *credential = NULL;
        bool use_webhook = false;
        int r;

        if (g->webhook_url) {
                if (string_has_control(g->webhook_url) || strchr(g->webhook_url, ' '))
                        log_warning("%s: gates.webhook_url contains spaces or control characters, not using it.", c->path);
                else if (!unit_value_is_path(output_dir))
                        log_warning("Output dir %s cannot be named in a unit file, not passing the webhook URL.", output_dir);
                else
                        use_webhook = true;
        }
        if (!use_webhook && gate_settings_are_default(g))
                return 0;       /* the service's defaults are these (channel-defaults.h) */

        if (use_webhook) {
                if (asprintf(&dir, "loop-gate@%s.service.d", c->name) < 0 ||
                    asprintf(&webhook, "%s/webhook-url", dir) < 0 ||
                    asprintf(&webhook_path, "%s/%s", output_dir, webhook) < 0 ||
                    asprintf(&credential, "webhook-url:%s", webhook_path) < 0)
                        return log_oom();
                r = mkdirat_exist_ok(dir_fd, dir);
                if (r < 0)
                        return r;
                r = data_write(dir_fd, webhook, 0600, g->webhook_url);
                if (r < 0)
                        return r;
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
        return dropin_write(dir_fd, c, "loop-gate", u);
}

static int generate_gate(int dir_fd, const Channel *c, const char *output_dir, UnitFile *target) {
        int r;

        r = write_gate_dropin(dir_fd, c, output_dir);
        if (r < 0)
                return r;
        channel_wants(target, c, "loop-gate", "socket");
        channel_wants(target, c, "loop-gate-admin", "socket");
        return 0;
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

/* Whether the proxy's settings are those loop-dockerproxy@.service sets itself (meson.build's
 * dockerproxy_template, in config-build.h and the template alike): then it needs no drop-in. */
static bool dockerproxy_settings_are_template(const Channel *c, const char *w, const char *sock, const char *network,
                                              const char *masks, const char *images) {
        _cleanup_free_ char *template_work_dir = NULL;

        if (asprintf(&template_work_dir, LOOP_STATE_DIR "/%s/work", c->name) < 0)
                return false;   /* the drop-in then: never wrong */
        return streq_ptr(w, template_work_dir) && isempty(sock) &&
               c->config.gates.docker_proxy.containers_max == DOCKERPROXY_TEMPLATE_CONTAINERS_MAX &&
               streq(network, "none") && streq(masks, DOCKERPROXY_TEMPLATE_MASKED_PATHS) &&
               !c->config.gates.docker_proxy.build && streq(images, DOCKERPROXY_TEMPLATE_PROTECTED_IMAGES);
}

/* The Docker API proxy: its policy document (the channel's rules and the built-in ones), compiled here
 * first so that a document the service would refuse never gets a socket: no proxy is a closed door. */
static int generate_dockerproxy(int dir_fd, const Channel *c, const char *output_dir, GeneratorCache *cache,
                                UnitFile *target) {
        _cleanup_free_ char *dir = NULL, *conf = NULL, *policy = NULL, *policy_path = NULL, *credential = NULL,
                *error = NULL, *masks = NULL, *images = NULL, *egress_credential = NULL, *egress_policy = NULL;
        _cleanup_strv_free_ char **kernel_masks = NULL;
        _cleanup_(json_object_putp) json_object *channel = NULL, *registry_doc = NULL;
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        const char *w = c->config.work_dir, *sock = c->config.engine.socket;
        const char *agent_image = strempty(c->config.container_image),
                *chrome_image = strempty(c->config.browser.chrome_image);
        /* what nested containers get of the channel's policy: the service does not read loop.json */
        const char *network = egress_config_enabled(c->config.json) &&
                              !c->config.gates.docker_proxy.nested_network ? "none" : "engine";
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
            asprintf(&images, "%s%s%s", agent_image, isempty(agent_image) || isempty(chrome_image) ? "" : " ",
                     chrome_image) < 0)
                return log_oom();
        if (!proxy_policy_channel_document_is_empty(channel) &&
            (asprintf(&policy, "%s/policy.json", dir) < 0 ||
             asprintf(&policy_path, "%s/%s", output_dir, policy) < 0 ||
             asprintf(&credential, "policy:%s", policy_path) < 0))
                return log_oom();

        /* pulls and pushes go where the channel's egress policy lets the agent go: its rules without the
         * secrets, for the proxy to decide on; written when they allow anything at all (no egress gateway,
         * or one without rules or registries: no pulls, no pushes) */
        if (egress_config_enabled(c->config.json)) {
                _cleanup_free_ char *egress_path = NULL;
                json_object *egress = NULL, *rules = NULL, *registries = NULL;

                (void) json_object_object_get_ex(c->config.json, "egress", &egress);
                r = proxy_registry_policy_document(egress, &registry_doc);
                if (r < 0)
                        return log_error_errno(r, "%s: cannot build the proxy's copy of the egress policy: %m", c->path);
                (void) json_object_object_get_ex(registry_doc, "rules", &rules);
                (void) json_object_object_get_ex(registry_doc, "registries", &registries);
                if (((json_object_is_type(rules, json_type_array) && json_object_array_length(rules) > 0) ||
                     (json_object_is_type(registries, json_type_array) && json_object_array_length(registries) > 0)) &&
                    (asprintf(&egress_policy, "%s/egress.json", dir) < 0 ||
                     asprintf(&egress_path, "%s/%s", output_dir, egress_policy) < 0 ||
                     asprintf(&egress_credential, "egress:%s", egress_path) < 0))
                        return log_oom();
        }

        if (!credential && !egress_credential &&
            dockerproxy_settings_are_template(c, w, sock, network, masks, images))
                return channel_wants(target, c, "loop-dockerproxy", "socket");

        r = mkdirat_exist_ok(dir_fd, dir);
        if (r < 0)
                return r;
        if (policy) {
                r = json_data_write(dir_fd, policy, 0644, channel);
                if (r < 0)
                        return r;
        }
        if (egress_policy) {
                r = json_data_write(dir_fd, egress_policy, 0644, registry_doc);
                if (r < 0)
                        return r;
        }

        /* Every setting, each one replacing the template's (an empty value: none) */
        r = channel_dropin_new(c, &u);
        if (r < 0)
                return r;
        if (credential)
                unit_file_set(u, "LoadCredential", credential);
        if (egress_credential)
                unit_file_set(u, "LoadCredential", egress_credential);
        unit_file_set_environment(u, "LOOP_DOCKERPROXY_WORK_DIR", strempty(w));
        if (!isempty(sock))
                unit_file_set_environment_word(u, "LOOP_DOCKERPROXY_ENGINE_SOCKET", sock);
        set_environment_uint(u, "LOOP_DOCKERPROXY_CONTAINERS_MAX", c->config.gates.docker_proxy.containers_max);
        unit_file_set_environment_word(u, "LOOP_DOCKERPROXY_NETWORK", network);
        unit_file_set_environment(u, "LOOP_DOCKERPROXY_MASKED_PATHS", masks);
        set_environment_uint(u, "LOOP_DOCKERPROXY_BUILD", c->config.gates.docker_proxy.build);
        /* the operator's images, which no agent may tag over, commit over or remove */
        unit_file_set_environment(u, "LOOP_DOCKERPROXY_PROTECTED_IMAGES", images);
        r = unit_write(u, dir_fd, conf);
        if (r < 0)
                return r;
        return channel_wants(target, c, "loop-dockerproxy", "socket");
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

/* Writes an egress policy into EGRESS_DIR/NAME.SUFFIX, where the unit templates look for it. */
static int egress_file_write(int dir_fd, const Channel *c, const char *suffix, json_object *doc,
                             GeneratorCache *cache) {
        _cleanup_free_ char *name = NULL;

        if (!cache->egress_dir) {
                if (mkdirat(dir_fd, EGRESS_DIR, 0700) < 0 && errno != EEXIST)
                        return log_error_errno(errno, "Failed to create directory %s: %m", EGRESS_DIR);
                cache->egress_dir = true;
        }
        if (asprintf(&name, EGRESS_DIR "/%s%s", c->name, suffix) < 0)
                return log_oom();
        return json_data_write(dir_fd, name, 0600, doc);
}

static int generate_gateway(int dir_fd, const Channel *c, GeneratorCache *cache, UnitFile *target) {
        _cleanup_(json_object_putp) json_object *doc = json_object_new_object();
        json_object *egress;
        int r;

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

        r = egress_file_write(dir_fd, c, EGRESS_GATEWAY_SUFFIX, doc, cache);
        if (r < 0)
                return r;
        return channel_wants(target, c, "loop-gateway", "socket");
}

/* The channel's scheduled tasks: the helper's limits (it cannot read loop.json) when they are not the
 * defaults, its socket and the path unit that turns changed task files into timers. */
static int generate_tasks(int dir_fd, const Channel *c, UnitFile *target) {
        const TasksConfig *t = &c->config.tasks;
        int r;

        if (t->max != CHANNEL_TASKS_MAX_DEFAULT || t->min_interval_sec != CHANNEL_TASKS_MIN_INTERVAL_SEC_DEFAULT ||
            t->prompt_max != CHANNEL_TASKS_PROMPT_MAX_DEFAULT) {
                _cleanup_(unit_file_freep) UnitFile *u = NULL;

                r = channel_dropin_new(c, &u);
                if (r < 0)
                        return r;
                set_environment_uint(u, "LOOP_TASKS_MAX", t->max);
                set_environment_uint(u, "LOOP_TASKS_MIN_INTERVAL_SEC", t->min_interval_sec);
                set_environment_uint(u, "LOOP_TASKS_PROMPT_MAX", t->prompt_max);
                r = dropin_write(dir_fd, c, "loop-tasks", u);
                if (r < 0)
                        return r;
        }
        channel_wants(target, c, "loop-tasks", "socket");
        return channel_wants(target, c, "loop-tasks-sync", "path");
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

/* The channel's browser (issue 21): the egress policy (the gateway's, less its secrets: both decide alike)
 * where the template looks for it; a drop-in for an idle timeout that is not the default, or to load no
 * policy when the channel has no egress gateway; Chrome's service in the channel's slice, and the socket. */
static int generate_browser(int dir_fd, const Channel *c, const char *slice, GeneratorCache *cache,
                            UnitFile *target) {
        bool egress = egress_config_enabled(c->config.json);
        int r;

        if (egress) {
                _cleanup_(json_object_putp) json_object *doc = NULL;

                if (browser_policy_doc(c, &doc) < 0)
                        return log_oom();
                r = egress_file_write(dir_fd, c, EGRESS_BROWSER_SUFFIX, doc, cache);
                if (r < 0)
                        return r;
        }
        if (!egress || c->config.browser.idle_timeout_sec != CHANNEL_BROWSER_IDLE_SEC_DEFAULT) {
                _cleanup_(unit_file_freep) UnitFile *u = NULL;

                r = channel_dropin_new(c, &u);
                if (r < 0)
                        return r;
                if (c->config.browser.idle_timeout_sec != CHANNEL_BROWSER_IDLE_SEC_DEFAULT)
                        set_environment_uint(u, "LOOP_BROWSER_IDLE_SEC", c->config.browser.idle_timeout_sec);
                if (!egress)
                        /* the template's file is not there: the empty assignment drops it */
                        unit_file_set(u, "LoadCredential", "");
                r = dropin_write(dir_fd, c, "loop-browser", u);
                if (r < 0)
                        return r;
        }
        if (!slice_is_template(slice, c)) {
                _cleanup_(unit_file_freep) UnitFile *chrome = NULL;

                r = channel_dropin_new(c, &chrome);
                if (r < 0)
                        return r;
                set_slice(chrome, slice, c);
                r = dropin_write(dir_fd, c, "loop-chrome", chrome);
                if (r < 0)
                        return r;
        }
        return channel_wants(target, c, "loop-browser", "socket");
}

/* loop.target upholds loop-channel@NAME.target (units/loop-channel@.target.in says why: a channel added
 * while loop.target runs is armed by the next daemon-reload): one Upholds= line per channel, in one file
 * for up to UPHOLDS_PER_FILE channels, written by upholds_flush(). */
static int upholds_flush(int dir_fd, GeneratorCache *cache) {
        _cleanup_(unit_file_freep) UnitFile *u = TAKE_PTR(cache->upholds);
        _cleanup_free_ char *name = NULL;
        int r;

        if (!u)
                return 0;
        cache->n_upholds = 0;
        if (cache->n_upholds_files == 0) {
                r = mkdirat_exist_ok(dir_fd, "loop.target.d");
                if (r < 0)
                        return r;
                name = strdup("loop.target.d/50-channels.conf");
        } else if (asprintf(&name, "loop.target.d/50-channels-%zu.conf", cache->n_upholds_files + 1) < 0)
                name = NULL;
        if (!name)
                return log_oom();
        cache->n_upholds_files++;
        return unit_write(u, dir_fd, name);
}

static int upholds_add(int dir_fd, const Channel *c, GeneratorCache *cache) {
        int r;

        if (!cache->upholds) {
                r = unit_new(&cache->upholds);
                if (r < 0)
                        return r;
                unit_file_section(cache->upholds, "Unit");
        }
        unit_file_setf(cache->upholds, "Upholds", "loop-channel@%s.target", c->name);
        if (++cache->n_upholds >= UPHOLDS_PER_FILE)
                return upholds_flush(dir_fd, cache);
        return 0;
}

/* loop-channel@NAME.target, which takes the place of the template for this channel: the same unit, and
 * the channel's file. Its Wants= are added as the channel's units are written. */
static int channel_target_new(const Channel *c, UnitFile **ret) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        _cleanup_free_ char *description = NULL;
        int r;

        if (asprintf(&description, "loop channel %s", c->name) < 0)
                return log_oom();
        r = unit_new(&u);
        if (r < 0)
                return r;
        unit_file_section(u, "Unit");
        unit_file_set(u, "Description", description);
        unit_file_set(u, "Documentation", "man:loop(1) man:loop.units(7)");
        unit_file_set_path(u, "SourcePath", c->path);
        unit_file_set(u, "PartOf", "loop.target");
        unit_file_set(u, "Wants", "loop-reconcile.timer");
        *ret = TAKE_PTR(u);
        return 0;
}

/* The units of one valid, enabled channel into dir_fd (output_dir is its path, named in LoadCredential=).
 * config_dir: the config dir the programs started by the units must read (NULL: the default one).
 * Logs what it refuses; a helper whose settings cannot be written is left out with a message, which is
 * not a failure. < 0 (logged) when the channel's units could not all be written. */
static int generator_channel(int dir_fd, const Channel *c, const char *config_dir, const char *output_dir,
                             GeneratorCache *cache) {
        _cleanup_(unit_file_freep) UnitFile *target = NULL;
        _cleanup_free_ char *target_name = NULL, *slice = NULL;
        int r;

        /* The name was checked by the config module: [A-Za-z0-9][A-Za-z0-9_.-]*, safe in a file name and
         * as a unit instance; the path lies below the config dir, which was checked in generator_run(). */
        slice = channel_slice_name(c->name);
        if (!slice || asprintf(&target_name, "loop-channel@%s.target", c->name) < 0)
                return log_oom();
        r = channel_target_new(c, &target);
        if (r < 0)
                return r;

        r = write_slice(dir_fd, c, slice);
        if (r < 0)
                return r;
        r = write_agent_dropin(dir_fd, c, config_dir, slice);
        if (r < 0)
                return r;
        channel_wants(target, c, "loop-agent", "path");
        r = generate_tasks(dir_fd, c, target);
        if (r < 0)
                return r;
        if (egress_config_enabled(c->config.json)) {
                r = generate_gateway(dir_fd, c, cache, target);
                if (r < 0)
                        return r;
        }
        if (c->config.browser.enabled) {
                r = generate_browser(dir_fd, c, slice, cache, target);
                if (r < 0)
                        return r;
        }
        if (c->config.gates.agentgate.enabled) {
                r = generate_gate(dir_fd, c, output_dir, target);
                if (r < 0)
                        return r;
        }
        if (c->config.gates.agentgate.enabled && c->config.gates.docker_proxy.enabled) {
                r = generate_dockerproxy(dir_fd, c, output_dir, cache, target);
                if (r < 0)
                        return r;
        }
        return unit_write(target, dir_fd, target_name);
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
                if (r >= 0)
                        r = upholds_add(dir_fd, c, &cache);
                if (r < 0 && ret == 0)
                        ret = r;  /* already logged; the other channels are still written */
                else if (r >= 0)
                        generated++;
        }
        r = upholds_flush(dir_fd, &cache);
        if (r < 0 && ret == 0)
                ret = r;

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
