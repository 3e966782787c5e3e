/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The project config, {work_dir}/.loop/config.json, lives in the work dir the agent can write to (the
 * agent's container has .loop/ read-only, but the work dir is shared with whatever else writes there).
 * Its merge rules are therefore narrower than a channel file's: it can override a few settings, but
 * whatever is security-relevant can only be narrowed, never widened: the image (it brings the
 * entrypoint that installs the gate and the seal), the Chrome image and the agent binary outside the
 * image's system directories are the operator's, mounts, extra dirs and copied files can only be dropped from the
 * operator's lists, the security gates only narrowed, and egress is not accepted at all. */

#include <assert.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "config-project.h"
#include "config-schema.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"

static const char * const project_replace[] = { "permissions" };
/* Lists a project can only take entries away from. */
static const char * const project_narrow[] = { "mounts", "copy_files", "extra_dirs" };
static const char * const project_override[] = {
        "claude_model", "container_memory_mb", "container_cpus", "keep_mcp_configs",
};
/* Where a project may point claude_bin_path: the image's own read-only system directories. */
static const char * const project_bin_prefixes[] = { "/usr/", "/opt/", "/bin/", "/sbin/" };

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;
        if (!o || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

/* Returns the child object at key, creating it when missing. */
static json_object *child(json_object *o, const char *key) {
        json_object *c = get(o, key);
        if (c && json_object_get_type(c) == json_type_object)
                return c;
        if (json_add(o, key, json_object_new_object()) < 0)
                return NULL;
        return get(o, key);
}

/* Relative mount sources ("./x", "../x", ".") are relative to the work dir; named volumes and ~ stay. */
static int resolve_mounts(json_object *mounts, const char *work_dir, json_object **ret) {
        _cleanup_(json_object_putp) json_object *r = json_object_new_array();

        if (!r)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                const char *m = json_object_get_string(json_object_array_get_idx(mounts, i));
                json_object *e;

                if (m[0] == '.') {
                        _cleanup_free_ char *s = NULL;
                        const char *rest = m[1] == ':' ? m + 1 : m;     /* ".:/dst" is the work dir itself */
                        if (asprintf(&s, "%s%s%s", work_dir, m[1] == ':' ? "" : "/", rest) < 0)
                                return -ENOMEM;
                        e = json_object_new_string(s);
                } else
                        e = json_object_new_string(m);
                if (!e || json_object_array_add(r, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(r);
        return 0;
}

/* Project rules come first, as upstream merges them, and the first matching rule decides: a project
 * "allow" (or "approve") rule there would override the operator's "deny" for what it matches, which
 * widens the gate. So a project may only add "deny" rules, which cannot widen anything wherever they
 * stand; its other rules are dropped with a warning. */
static int prepend_rules(json_object *dst, json_object *src, const char *key, const char *gate,
                         const char *project_path, ConfigProblems *problems) {
        json_object *p = get(src, key), *g = get(dst, key);
        _cleanup_(json_object_putp) json_object *r = NULL;

        if (!p)
                return 0;
        r = json_object_new_array();
        if (!r)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(p); i++) {
                json_object *rule = json_object_array_get_idx(p, i), *e;
                const char *d = json_object_get_string(get(rule, "decision"));

                if (!streq_ptr(d, "deny")) {
                        _cleanup_free_ char *k = NULL;
                        if (asprintf(&k, "gates.%s.%s[%zu]", gate, key, i) < 0 ||
                            config_problem_add(problems, false, project_path, k,
                                               "a project config can only add \"deny\" rules (they come before "
                                               "the operator's, so \"%s\" would widen the gate), ignoring it",
                                               strna(d)) < 0)
                                return -ENOMEM;
                        continue;
                }
                e = json_copy(rule);
                if (!e || json_object_array_add(r, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; g && i < json_object_array_length(g); i++) {
                json_object *e = json_copy(json_object_array_get_idx(g, i));
                if (!e || json_object_array_add(r, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
        }
        return json_add(dst, key, TAKE_PTR(r));
}

static int merge_by_key(json_object *dst, json_object *src) {
        json_object_object_foreach(src, key, val)
                if (json_add(dst, key, json_copy(val)) < 0)
                        return -ENOMEM;
        return 0;
}

/* enabled may go from true to false, never back. */
static int narrow_enabled(json_object *dst, json_object *src, bool base_enabled, const char *project_path,
                          const char *key, ConfigProblems *problems, bool *ret) {
        json_object *v = get(src, "enabled");
        bool wanted = v ? json_object_get_boolean(v) : true, e = base_enabled && wanted;

        if (v && wanted && !base_enabled &&
            config_problem_add(problems, false, project_path, key,
                               "a project config cannot enable what the operator disabled, ignoring") < 0)
                return -ENOMEM;
        *ret = e;
        return json_add(dst, "enabled", json_object_new_boolean(e));
}

static int apply_gates(json_object *merged, json_object *pgates, const LoopConfig *base,
                       const char *project_path, ConfigProblems *problems) {
        json_object *gates, *gate, *proxy, *v, *pg = get(pgates, "agentgate"), *pp = get(pgates, "docker_proxy");
        bool gate_on, proxy_on;
        int r;

        gates = child(merged, "gates");
        if (!gates || !(gate = child(gates, "agentgate")) || !(proxy = child(gates, "docker_proxy")))
                return -ENOMEM;

        /* The gate is what enforces the operator's rules: off, the agent may do whatever they deny. A
         * project keeps the operator's choice (upstream lets it turn the gate off: that widens). */
        v = get(pg, "enabled");
        gate_on = base->gates.agentgate.enabled;
        if (v && json_object_get_boolean(v) != gate_on &&
            config_problem_add(problems, false, project_path, "gates.agentgate.enabled",
                               gate_on ? "a project config cannot turn the gate off (it enforces the operator's "
                                         "rules), ignoring" :
                                         "a project config cannot enable what the operator disabled, ignoring") < 0)
                return -ENOMEM;
        r = json_add(gate, "enabled", json_object_new_boolean(gate_on));
        if (r < 0)
                return r;
        r = narrow_enabled(proxy, pp, base->gates.docker_proxy.enabled && gate_on, project_path,
                           "gates.docker_proxy.enabled", problems, &proxy_on);
        if (r < 0)
                return r;

        if ((r = prepend_rules(gate, pg, "path_rules", "agentgate", project_path, problems)) < 0 ||
            (r = prepend_rules(gate, pg, "command_rules", "agentgate", project_path, problems)) < 0 ||
            (r = prepend_rules(gate, pg, "file_rules", "agentgate", project_path, problems)) < 0 ||
            (r = prepend_rules(proxy, pp, "http_rules", "docker_proxy", project_path, problems)) < 0 ||
            (r = prepend_rules(proxy, pp, "body_rules", "docker_proxy", project_path, problems)) < 0)
                return r;
        return 0;
}

/* A project cannot move the work dir, and the default one depends on the channel name: keep the base's. */
static int config_load_keeping_work_dir(json_object *merged, const LoopConfig *base, LoopConfig *ret) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        int r;

        r = loop_config_from_json(merged, NULL, &c);
        if (r < 0)
                return r;
        r = free_and_strdup(&c.work_dir, base->work_dir);
        if (r < 0)
                return r;
        *ret = c;
        c = (LoopConfig) {};
        return 0;
}

static bool json_array_has_string(json_object *a, const char *s) {
        for (size_t i = 0; a && i < json_object_array_length(a); i++)
                if (streq_ptr(json_object_get_string(json_object_array_get_idx(a, i)), s))
                        return true;
        return false;
}

/* The project's list at key, keeping only what the operator's list holds too (mounts compared with
 * relative sources resolved, on both sides). */
static int apply_narrow_list(json_object *merged, json_object *project, const char *key, const char *work_dir,
                             const char *project_path, ConfigProblems *problems) {
        _cleanup_(json_object_putp) json_object *want = NULL, *have = NULL, *kept = json_object_new_array();
        json_object *p = get(project, key), *b = get(merged, key);
        int r;

        if (!p)
                return 0;
        if (!kept)
                return -ENOMEM;
        if (streq(key, "mounts")) {
                if ((r = resolve_mounts(p, work_dir, &want)) < 0 ||
                    (b && (r = resolve_mounts(b, work_dir, &have)) < 0))
                        return r;
        } else
                want = json_object_get(p);
        for (size_t i = 0; i < json_object_array_length(want); i++) {
                const char *e = json_object_get_string(json_object_array_get_idx(want, i));
                const char *raw = json_object_get_string(json_object_array_get_idx(p, i));

                if (json_array_has_string(b, e) || json_array_has_string(have, e) || json_array_has_string(b, raw)) {
                        json_object *v = json_object_new_string(json_array_has_string(b, raw) ? raw : e);
                        if (!v || json_object_array_add(kept, v) < 0) {
                                json_object_put(v);
                                return -ENOMEM;
                        }
                } else if (config_problem_add(problems, false, project_path, key,
                                              "\"%s\" is not in the operator's %s: a project config can only narrow "
                                              "them, ignoring it", raw, key) < 0)
                        return -ENOMEM;
        }
        return json_add(merged, key, TAKE_PTR(kept));
}

/* The browser: its image is the operator's, as the agent's is (the sidecar runs it outside the gate, under
 * a seccomp profile that lets Chrome's sandbox make namespaces, and talks to loop-browser@ on the host: an
 * image the agent built or imported must not become it); enabled only goes from true to false; the sizes
 * and the idle timeout are overridden. */
static int apply_browser(json_object *merged, json_object *pb, const LoopConfig *base, const char *project_path,
                         ConfigProblems *problems) {
        json_object *b;
        int r;

        if (!pb)
                return 0;
        b = child(merged, "browser");
        if (!b)
                return -ENOMEM;
        json_object_object_foreach(pb, key, val) {
                bool on;

                if (streq(key, "enabled"))
                        r = narrow_enabled(b, pb, base->browser.enabled, project_path, "browser.enabled", problems, &on);
                else if (!streq(key, "chrome_image"))
                        r = json_add(b, key, json_copy(val));
                else if (streq_ptr(json_object_get_string(val), base->browser.chrome_image))
                        r = 0;
                else
                        r = config_problem_add(problems, false, project_path, "browser.chrome_image",
                                               "a project config cannot choose the Chrome image (it runs outside "
                                               "the gate), ignoring it");
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The image and the agent binary: the operator's, unless the project names the same, or (the binary) a
 * path in the image's own system directories. */
static int apply_narrow_agent(json_object *merged, json_object *project, const LoopConfig *base, const char *work_dir,
                              const char *project_path, ConfigProblems *problems) {
        json_object *v = get(project, "container_image");
        const char *s;
        int r;

        if (v && !streq_ptr(json_object_get_string(v), base->container_image) &&
            config_problem_add(problems, false, project_path, "container_image",
                               "a project config cannot choose the image (it brings the entrypoint that installs "
                               "the gate and the seal), ignoring it") < 0)
                return -ENOMEM;

        v = get(project, "claude_bin_path");
        s = v ? json_object_get_string(v) : NULL;
        if (s) {
                /* decided on the cleaned forms: "/usr//x" is in the image, "/srv/w/./bin" in the work dir */
                _cleanup_free_ char *clean = path_clean(s), *wd = path_clean(work_dir);
                bool in_image = false;

                if ((!clean && path_is_absolute(s)) || (!wd && path_is_absolute(work_dir)))
                        return -ENOMEM;
                for (size_t i = 0; clean && i < ELEMENTSOF(project_bin_prefixes); i++)
                        in_image = in_image || startswith(clean, project_bin_prefixes[i]);
                if (in_image && (strstr(s, "/../") || !wd || path_is_inside(clean, wd)))
                        in_image = false;
                if (in_image || streq_ptr(s, base->claude_bin_path)) {
                        if ((r = json_add(merged, "claude_bin_path", json_copy(v))) < 0)
                                return r;
                } else if (config_problem_add(problems, false, project_path, "claude_bin_path",
                                              "a project config can only name an agent binary in the image's "
                                              "/usr, /opt, /bin or /sbin, ignoring \"%s\"", s) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int config_apply_project_json(const LoopConfig *base, json_object *project, const char *project_path,
                              const char *work_dir, LoopConfig *ret, ConfigProblems *problems) {
        _cleanup_(json_object_putp) json_object *merged = NULL;
        json_object *v;
        int r;

        assert(base && base->json && work_dir && ret && problems);

        r = schema_validate(&config_schema_root, project, SCOPE_PROJECT, project_path, problems);
        if (r < 0)
                return r;
        if (r > 0)
                return -EINVAL;

        merged = json_copy(base->json);
        if (!merged)
                return -ENOMEM;

        for (size_t i = 0; i < ELEMENTSOF(project_replace); i++) {
                v = get(project, project_replace[i]);
                if (v && (r = json_add(merged, project_replace[i], json_copy(v))) < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(project_narrow); i++) {
                r = apply_narrow_list(merged, project, project_narrow[i], work_dir, project_path, problems);
                if (r < 0)
                        return r;
        }
        r = apply_narrow_agent(merged, project, base, work_dir, project_path, problems);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(project_override); i++) {
                v = get(project, project_override[i]);
                if (v && (r = json_add(merged, project_override[i], json_copy(v))) < 0)
                        return r;
        }

        /* Setting one credential clears the other, so the project's choice is the one used. */
        v = get(project, "claude_code_oauth_token");
        if (v) {
                if ((r = json_add(merged, "claude_code_oauth_token", json_copy(v))) < 0)
                        return r;
                json_object_object_del(merged, "anthropic_api_key");
        }
        v = get(project, "anthropic_api_key");
        if (v) {
                if ((r = json_add(merged, "anthropic_api_key", json_copy(v))) < 0)
                        return r;
                if (!get(project, "claude_code_oauth_token"))
                        json_object_object_del(merged, "claude_code_oauth_token");
        }

        v = get(project, "envs");
        if (v) {
                json_object *e = child(merged, "envs");
                if (!e || (r = merge_by_key(e, v)) < 0)
                        return -ENOMEM;
        }
        v = get(get(project, "mcp"), "servers");
        if (v) {
                json_object *m = child(merged, "mcp"), *s = m ? child(m, "servers") : NULL;
                if (!s || (r = merge_by_key(s, v)) < 0)
                        return -ENOMEM;
        }
        r = apply_browser(merged, get(project, "browser"), base, project_path, problems);
        if (r < 0)
                return r;

        r = apply_gates(merged, get(project, "gates"), base, project_path, problems);
        if (r < 0)
                return r;

        return config_load_keeping_work_dir(merged, base, ret);
}

int config_apply_project(const LoopConfig *base, const char *work_dir, LoopConfig *ret, ConfigProblems *problems) {
        _cleanup_(json_object_putp) json_object *project = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL, *reason = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        size_t size;
        int r;

        if (asprintf(&path, "%s/.loop/config.json", work_dir) < 0)
                return -ENOMEM;

        /* The work dir belongs to the agent: never follow a symlink it planted for .loop or the file. */
        dir_fd = open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd >= 0) {
                _cleanup_close_ int loop_fd = openat(dir_fd, ".loop", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (loop_fd >= 0)
                        r = read_full_file_at(loop_fd, "config.json", CONFIG_FILE_MAX, true, &text, &size);
                else
                        r = errno == ENOENT ? -ENOENT : -errno;
        } else
                r = errno == ENOENT ? -ENOENT : -errno;

        if (r == -ENOENT)
                return config_load_keeping_work_dir(base->json, base, ret);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (config_problem_add(problems, true, path, NULL, "cannot be read: %s",
                                       r == -ELOOP ? "it is a symbolic link" :
                                       /* O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR */
                                       r == -ENOTDIR ? ".loop is a symbolic link or not a directory" :
                                       r == -EFBIG ? "too large" :
                                       r == -EBADFD ? "not a regular file" : strerror(-r)) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }

        r = config_parse_text(text, size, &project, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (config_problem_add(problems, true, path, NULL, "%s", reason) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }
        return config_apply_project_json(base, project, path, work_dir, ret, problems);
}
