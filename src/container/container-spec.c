/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* One container, computed from the configuration and facts about the host (seed 001). Nothing here talks to
 * the engine: the runner hands the plan to engine_container_create(), copies plan->copy_sources in and
 * starts it. Lines in plan->skipped name paths and variable names only, never a value: values may be
 * credentials. */

#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <strings.h>
#include <sys/stat.h>

#include "agent-env.h"
#include "container-spec.h"
#include "fs-util.h"
#include "json-util.h"
#include "protected-paths.h"
#include "io-util.h"
#include "random-util.h"
#include "seal.h"
#include "log.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"

#define PASSWD_BUFFER_MAX (1024U * 1024U)       /* getpw*_r() buffers grow up to this */
#define TIMEZONE_NAME_MAX 255U
#define TIMEZONE_FILE_MAX 4096U                 /* /etc/timezone is one short line */
#define CHROME_NANO_CPUS 500000000LL            /* 0.5 CPU, as upstream */
#define MIB (1024LL * 1024LL)

#define TMPFS_TMP "/tmp"
#define TMPFS_TMP_OPTIONS "rw,nosuid,nodev,size=1g"
#define TMPFS_RUN "/run"
#define TMPFS_RUN_OPTIONS "rw,nosuid,nodev,mode=0755,size=64m"
#define TMPFS_MASK_OPTIONS "ro,nosuid,nodev,noexec,mode=0555,size=4k"

static const char * const container_type_table[_CONTAINER_TYPE_MAX] = {
        [CONTAINER_AGENT] = "agent",
        [CONTAINER_SHELL] = "shell",
        [CONTAINER_CHROME] = "chrome",
};

const char *container_type_to_string(ContainerType t) {
        if (t < 0 || t >= _CONTAINER_TYPE_MAX)
                return NULL;
        return container_type_table[t];
}

ContainerType container_type_from_string(const char *s) {
        return (ContainerType) string_table_lookup(container_type_table, _CONTAINER_TYPE_MAX, s);
}

/* ---- small path and string helpers ---- */

static bool ascii_isdigit(char c) {
        return c >= '0' && c <= '9';
}

static bool ascii_isalnum(char c) {
        return ascii_isdigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* "~" and "~/x" expand to home; "~user" is refused; anything else is copied as is. */
static int expand_home(const char *s, const char *home, char **ret) {
        char *r;

        if (s[0] != '~')
                r = strdup(s);
        else if (s[1] != 0 && s[1] != '/')
                return -EINVAL;
        else if (!path_is_absolute(home))
                return -EINVAL;
        else
                r = path_join_clean(home, s + 1);
        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

/* An absolute, clean host path: ~ expanded, relative paths resolved against base (the work dir). */
static int host_path_resolve(const char *s, const char *home, const char *base, char **ret) {
        _cleanup_free_ char *p = NULL;
        int r;

        r = expand_home(s, home, &p);
        if (r < 0)
                return r;
        if (path_is_absolute(p)) {
                *ret = path_simplify(TAKE_PTR(p));
                return 0;
        }
        if (!path_is_absolute(base))
                return -EINVAL;
        *ret = path_join_clean(base, p);
        return *ret ? 0 : -ENOMEM;
}

/* ---- the host user ---- */

static int parse_uid(const char *s, uid_t *ret) {
        unsigned long long v;
        char *end;

        if (isempty(s))
                return -EINVAL;
        for (const char *p = s; *p; p++)
                if (!ascii_isdigit(*p))
                        return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        /* (uid_t) -1 means "no change" to chown() and friends: never a real user. */
        if (errno != 0 || *end != 0 || v >= UINT32_MAX)
                return -ERANGE;
        *ret = (uid_t) v;
        return 0;
}

int host_user_resolve(const char *spec, HostUser *ret) {
        _cleanup_free_ char *buf = NULL, *name = NULL, *home = NULL;
        struct passwd pw, *result = NULL;
        bool by_uid = false;
        uid_t uid = 0;
        size_t size;
        long l;
        int r;

        assert(ret);

        if (!spec) {
                uid = getuid();
                by_uid = true;
        } else if (isempty(spec))
                return -EINVAL;
        else if (parse_uid(spec, &uid) >= 0)
                by_uid = true;
        else if (ascii_isdigit(spec[0]) && strspn(spec, "0123456789") == strlen(spec))
                return -ERANGE;         /* all digits, but not a valid uid */

        l = sysconf(_SC_GETPW_R_SIZE_MAX);
        size = l > 0 ? (size_t) l : 4096U;
        for (;;) {
                buf = malloc(size);
                if (!buf)
                        return -ENOMEM;
                r = by_uid ? getpwuid_r(uid, &pw, buf, size, &result)
                           : getpwnam_r(spec, &pw, buf, size, &result);
                if (r != ERANGE)
                        break;
                buf = mfree(buf);
                if (size >= PASSWD_BUFFER_MAX)
                        return -ERANGE;
                size *= 2;
        }
        /* getpw*_r(3): these errors, like 0 with no result, all mean "no such user". */
        if (r == 0 && !result)
                return -ESRCH;
        if (r == ENOENT || r == ESRCH || r == EBADF || r == EPERM)
                return -ESRCH;
        if (r != 0)
                return -r;
        if (isempty(result->pw_name))
                return -EINVAL;

        name = strdup(result->pw_name);
        /* A passwd entry without a usable home still runs: HOME=/ is what login(1) falls back to. */
        home = strdup(path_is_absolute(result->pw_dir) ? result->pw_dir : "/");
        if (!name || !home)
                return -ENOMEM;
        path_simplify(home);

        *ret = (HostUser) {
                .name = TAKE_PTR(name),
                .uid = result->pw_uid,
                .gid = result->pw_gid,
                .home = TAKE_PTR(home),
        };
        return 0;
}

void host_user_done(HostUser *u) {
        if (!u)
                return;
        u->name = mfree(u->name);
        u->home = mfree(u->home);
}

/* ---- names ---- */

char *container_name_sanitize(const char *s) {
        char *r = malloc(CONTAINER_NAME_BASE_MAX + 1);
        size_t n = 0;

        if (!r)
                return NULL;
        for (const char *p = strempty(s); *p && n < CONTAINER_NAME_BASE_MAX; p++) {
                char c = *p;

                if (c >= 'A' && c <= 'Z')
                        c = (char) (c - 'A' + 'a');
                else if (!ascii_isalnum(c))
                        c = '-';
                /* Collapses runs and trims the front in one go. */
                if (c == '-' && (n == 0 || r[n - 1] == '-'))
                        continue;
                r[n++] = c;
        }
        while (n > 0 && r[n - 1] == '-')
                n--;
        if (n == 0) {
                free(r);
                /* "___" or "" must still give a valid engine name. */
                return strdup("agent");
        }
        r[n] = 0;
        return r;
}

int container_name_new(const char *channel, const char *custom_work_dir, char **ret) {
        _cleanup_free_ char *dir = NULL, *base = NULL;
        const char *src;
        uint8_t rnd[3];
        char *name;
        int r;

        assert(ret);

        if (!isempty(custom_work_dir)) {
                char *slash;

                dir = strdup(custom_work_dir);
                if (!dir)
                        return -ENOMEM;
                for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
                        dir[n - 1] = 0;
                slash = strrchr(dir, '/');
                src = slash ? slash + 1 : dir;
        } else if (!isempty(channel))
                src = channel;
        else
                return -EINVAL;

        base = container_name_sanitize(src);
        if (!base)
                return -ENOMEM;
        r = random_bytes(rnd, sizeof rnd);
        if (r < 0)
                return r;
        if (asprintf(&name, "loop-%s-%02x%02x%02x", base, rnd[0], rnd[1], rnd[2]) < 0)
                return -ENOMEM;
        *ret = name;
        return 0;
}

char *container_name_chrome(const char *channel) {
        _cleanup_free_ char *base = container_name_sanitize(channel);
        char *name;

        if (!base || asprintf(&name, "loop-chrome-%s", base) < 0)
                return NULL;
        return name;
}

/* ---- time zone ---- */

/* A zone name we pass on as TZ: not a path (absolute or escaping with ".."), no whitespace or controls. */
static bool timezone_name_valid(const char *s) {
        if (isempty(s) || s[0] == '/' || strlen(s) > TIMEZONE_NAME_MAX || strstr(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f)
                        return false;
        return true;
}

/* The zone name in a /etc/localtime target: what follows the last ".../zoneinfo/", without the "posix/"
 * or "right/" variants' directory. */
static const char *zoneinfo_name(const char *target) {
        const char *found = NULL, *rest;

        for (const char *p = target; (p = strstr(p, "zoneinfo/")); p++)
                if (p == target || p[-1] == '/')
                        found = p + strlen("zoneinfo/");
        if (!found)
                return NULL;
        if ((rest = startswith(found, "posix/")) || (rest = startswith(found, "right/")))
                found = rest;
        return found;
}

char *timezone_detect(const char *tz_env, const char *root) {
        _cleanup_free_ char *path = NULL, *contents = NULL, *target = NULL;
        const char *name;
        size_t root_len;

        if (tz_env) {
                name = tz_env[0] == ':' ? tz_env + 1 : tz_env;
                if (timezone_name_valid(name))
                        return strdup(name);
        }

        root = strempty(root);
        root_len = strlen(root);
        while (root_len > 0 && root[root_len - 1] == '/')
                root_len--;

        if (asprintf(&path, "%.*s/etc/timezone", (int) root_len, root) < 0)
                return NULL;
        if (read_full_file_at(AT_FDCWD, path, TIMEZONE_FILE_MAX, false, &contents, NULL) >= 0) {
                char *s = contents, *e;

                s[strcspn(s, "\n")] = 0;
                s += strspn(s, " \t\r");
                e = s + strlen(s);
                while (e > s && strchr(" \t\r", e[-1]))
                        *--e = 0;
                if (timezone_name_valid(s))
                        return strdup(s);
        }

        path = mfree(path);
        if (asprintf(&path, "%.*s/etc/localtime", (int) root_len, root) < 0)
                return NULL;
        if (readlinkat_malloc(AT_FDCWD, path, &target) >= 0) {
                name = zoneinfo_name(target);
                if (name && timezone_name_valid(name))
                        return strdup(name);
        }

        return strdup("UTC");
}

/* ---- the host alias and proxies ---- */

const char *engine_host_alias(EngineKind k) {
        return k == ENGINE_PODMAN ? "host.containers.internal" : "host.docker.internal";
}

static bool host_is_loopback(const char *h, size_t n) {
        static const char * const names[] = { "localhost", "127.0.0.1", "[::1]" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strlen(names[i]) == n && strncasecmp(names[i], h, n) == 0)
                        return true;
        return false;
}

char *proxy_rewrite(const char *value, const char *alias) {
        const char *sep, *authority, *end, *host, *host_end, *at;
        char *r;

        if (!value)
                return NULL;
        alias = alias ?: engine_host_alias(ENGINE_UNKNOWN);

        /* ":3128": a port on this host, as some tools accept. */
        if (value[0] == ':') {
                size_t digits = strspn(value + 1, "0123456789");
                if (digits > 0 && digits <= 5 && value[1 + digits] == 0) {
                        if (asprintf(&r, "http://%s%s", alias, value) < 0)
                                return NULL;
                        return r;
                }
                return strdup(value);
        }

        sep = strstr(value, "://");
        if (!sep || sep == value)
                return strdup(value);
        for (const char *p = value; p < sep; p++)
                if (!ascii_isalnum(*p) && !strchr("+-.", *p))
                        return strdup(value);

        /* SCHEME://[USERINFO@]HOST[:PORT][/...]: only HOST is looked at and replaced. */
        authority = sep + 3;
        end = authority + strcspn(authority, "/?#");
        host = authority;
        for (at = authority; at < end; at++)
                if (*at == '@')
                        host = at + 1;
        if (*host == '[') {
                host_end = memchr(host, ']', (size_t) (end - host));
                if (!host_end)
                        return strdup(value);
                host_end++;
        } else {
                host_end = memchr(host, ':', (size_t) (end - host)) ?: end;
        }
        if (host_end != end && *host_end != ':')
                return strdup(value);
        if (!host_is_loopback(host, (size_t) (host_end - host)))
                return strdup(value);

        if (asprintf(&r, "%.*s%s%s", (int) (host - value), value, alias, host_end) < 0)
                return NULL;
        return r;
}

/* ---- mount specs ---- */

/* The engines' rule for volume names: [a-zA-Z0-9][a-zA-Z0-9_.-]+ */
static bool volume_name_valid(const char *s) {
        if (strlen(s) < 2 || !ascii_isalnum(s[0]))
                return false;
        for (const char *p = s; *p; p++)
                if (!ascii_isalnum(*p) && !strchr("_.-", *p))
                        return false;
        return true;
}

static bool mount_options_valid(const char *o) {
        if (isempty(o))
                return false;
        for (const char *p = o; *p; p++) {
                if ((unsigned char) *p <= ' ' || *p == 0x7f)
                        return false;
                if (*p == ',' && (p == o || p[1] == 0 || p[1] == ','))
                        return false;
        }
        return true;
}

int mount_spec_parse(const char *spec, const char *home, MountSpec *ret) {
        _cleanup_free_ char *source = NULL, *target = NULL, *options = NULL, *t = NULL;
        const char *c1, *c2;
        bool named;
        int r;

        assert(ret);

        if (isempty(spec))
                return -EINVAL;
        c1 = strchr(spec, ':');
        if (!c1 || c1 == spec)
                return -EINVAL;
        c2 = strchr(c1 + 1, ':');
        if (c2 && strchr(c2 + 1, ':'))
                return -EINVAL;

        source = strndup(spec, (size_t) (c1 - spec));
        t = c2 ? strndup(c1 + 1, (size_t) (c2 - c1 - 1)) : strdup(c1 + 1);
        if (!source || !t)
                return -ENOMEM;
        if (isempty(t))
                return -EINVAL;
        if (c2) {
                if (!mount_options_valid(c2 + 1))
                        return -EINVAL;
                options = strdup(c2 + 1);
                if (!options)
                        return -ENOMEM;
        }

        named = !strchr(source, '/') && source[0] != '~' && source[0] != '.';
        if (named) {
                if (!volume_name_valid(source))
                        return -EINVAL;
        } else {
                _cleanup_free_ char *s = NULL;

                r = expand_home(source, home, &s);
                if (r < 0)
                        return r;
                /* Relative sources stay relative: the caller resolves them against the work dir. */
                free(source);
                source = path_is_absolute(s) ? path_simplify(TAKE_PTR(s)) : TAKE_PTR(s);
        }

        r = expand_home(t, home, &target);
        if (r < 0)
                return r;
        if (!path_is_absolute(target))
                return -EINVAL;
        path_simplify(target);

        *ret = (MountSpec) {
                .source = TAKE_PTR(source),
                .target = TAKE_PTR(target),
                .options = TAKE_PTR(options),
                .named_volume = named,
        };
        return 0;
}

void mount_spec_done(MountSpec *m) {
        if (!m)
                return;
        m->source = mfree(m->source);
        m->target = mfree(m->target);
        m->options = mfree(m->options);
}

/* ---- the plan ---- */

/* The capabilities the entrypoint needs, as root, to add the agent's passwd entry, chown CHOWN_PATHS and
 * switch to the agent's uid/gid; SETPCAP lets it empty the bounding set too. It clears every capability
 * before exec, so the agent has none. */
static const char * const entrypoint_caps[] = { "CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "SETPCAP" };

/* Set by loop from facts it knows; a configured value for these would lie to the entrypoint (which chowns
 * CHOWN_PATHS as root) or to the agent. */
static const char * const env_owned_by_loop[] = {
        "CHANNEL_ID", "HOME", "HOST_USER", "AGENT_UID", "AGENT_GID", "CHOWN_PATHS",
        SEAL_CONNECT_TCP_ENV,           /* a project's envs must not widen the channel's connect_tcp */
};

static const char * const proxy_variables[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy" };
static const char * const no_proxy_variables[] = { "NO_PROXY", "no_proxy" };

typedef struct Bind {
        char *spec;                     /* as HostConfig.Binds takes it */
        char *target;                   /* absolute, clean */
        bool named_volume;
} Bind;

typedef struct PlanBuilder {
        const ContainerInput *in;
        char *home;                     /* clean */
        char *work_dir;                 /* clean; NULL for the Chrome sidecar */
        Bind *binds;
        size_t n_binds;
        bool tmpfs_tmp, tmpfs_run;
        bool home_volume;
        bool home_dir;                  /* HOME is the channel's persistent home dir from the runner */
        char **mask_dirs;               /* masked directories below the work dir: empty read-only tmpfs */
        char **kernel_masks;            /* /proc and /sys paths the engine masks */
        char **kernel_unmasks;          /* the engine's own defaults unmask_paths names (Podman) */
        ContainerPlan *plan;
} PlanBuilder;

static void plan_builder_done(PlanBuilder *b) {
        for (size_t i = 0; i < b->n_binds; i++) {
                free(b->binds[i].spec);
                free(b->binds[i].target);
        }
        free(b->binds);
        free(b->home);
        free(b->work_dir);
        strv_free(b->mask_dirs);
        strv_free(b->kernel_masks);
        strv_free(b->kernel_unmasks);
}

ContainerPlan *container_plan_free(ContainerPlan *p) {
        if (!p)
                return NULL;
        json_object_put(p->body);
        strv_free(p->copy_sources);
        strv_free(p->copy_targets);
        strv_free(p->chown_paths);
        strv_free(p->skipped);
        free(p);
        return NULL;
}

_printf_(2, 3)
static int plan_skip(ContainerPlan *p, const char *format, ...) {
        va_list ap;
        char *line;
        int r;

        va_start(ap, format);
        r = strprintf_va(&line, format, ap);
        va_end(ap);
        if (r < 0)
                return r;
        log_debug("Container plan: %s", line);
        return strv_consume(&p->skipped, line);
}

/* A later bind at the same target replaces an earlier one (the engine would refuse the duplicate): the
 * work dir wins over a configured mount, and the runner's own binds win over everything. */
static int builder_add_bind(PlanBuilder *b, char *spec, const char *target, bool named_volume) {
        _cleanup_free_ char *s = spec, *t = NULL;
        Bind *n;
        int r;

        if (!s)
                return -ENOMEM;
        t = strdup(target);
        if (!t)
                return -ENOMEM;

        for (size_t i = 0; i < b->n_binds;) {
                if (!streq(b->binds[i].target, t)) {
                        i++;
                        continue;
                }
                r = plan_skip(b->plan, "mount %s: replaced by the later mount %s at the same target",
                              b->binds[i].spec, s);
                if (r < 0)
                        return r;
                free(b->binds[i].spec);
                free(b->binds[i].target);
                memmove(b->binds + i, b->binds + i + 1, (b->n_binds - i - 1) * sizeof(Bind));
                b->n_binds--;
        }

        n = reallocarray(b->binds, b->n_binds + 1, sizeof(Bind));
        if (!n)
                return -ENOMEM;
        b->binds = n;
        b->binds[b->n_binds++] = (Bind) {
                .spec = TAKE_PTR(s),
                .target = TAKE_PTR(t),
                .named_volume = named_volume,
        };
        return 0;
}

static const Bind *builder_find_bind_over(const PlanBuilder *b, const char *path) {
        for (size_t i = 0; i < b->n_binds; i++)
                if (path_is_inside(path, b->binds[i].target))
                        return &b->binds[i];
        return NULL;
}

static bool builder_has_bind_at(const PlanBuilder *b, const char *path) {
        for (size_t i = 0; i < b->n_binds; i++)
                if (streq(b->binds[i].target, path))
                        return true;
        return false;
}

/* 0 when path exists; otherwise a skip line "WHAT: ..." and 1. */
static int builder_check_exists(PlanBuilder *b, const char *what, const char *path, struct stat *ret_st) {
        struct stat st;

        if (stat(path, &st) >= 0) {
                if (ret_st)
                        *ret_st = st;
                return 0;
        }
        if (errno == ENOENT || errno == ENOTDIR)
                return plan_skip(b->plan, "%s: %s does not exist, skipped", what, path) ?: 1;
        return plan_skip(b->plan, "%s: %s cannot be accessed (%s), skipped", what, path, strerror(errno)) ?: 1;
}

static char *bind_spec(const char *source, const char *target, const char *options) {
        char *s;

        if (asprintf(&s, "%s:%s%s%s", source, target, options ? ":" : "", strempty(options)) < 0)
                return NULL;
        return s;
}

static int builder_add_config_mounts(PlanBuilder *b) {
        int r;

        STRV_FOREACH(m, b->in->config->mounts) {
                _cleanup_(mount_spec_done) MountSpec ms = {};
                _cleanup_free_ char *source = NULL, *what = NULL;

                if (asprintf(&what, "mount %s", *m) < 0)
                        return -ENOMEM;

                r = mount_spec_parse(*m, b->home, &ms);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = plan_skip(b->plan, "%s: not SOURCE:TARGET[:OPTIONS] with a usable source and an "
                                      "absolute target, skipped", what);
                        if (r < 0)
                                return r;
                        continue;
                }

                if (ms.named_volume)
                        source = strdup(ms.source);
                else {
                        r = host_path_resolve(ms.source, b->home, b->work_dir, &source);
                        if (r < 0)
                                return r;
                        if (strchr(source, ':')) {
                                r = plan_skip(b->plan, "%s: a source path with ':' cannot be bind-mounted, skipped",
                                              what);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        r = builder_check_exists(b, what, source, NULL);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                }
                if (!source)
                        return -ENOMEM;

                r = builder_add_bind(b, bind_spec(source, ms.target, ms.options), ms.target, ms.named_volume);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int builder_add_git_excludes(PlanBuilder *b) {
        const char *f = b->in->git_excludes_file;
        _cleanup_free_ char *path = NULL;
        int r;

        if (isempty(f))
                return 0;
        if (!path_is_absolute(f) || strchr(f, ':'))
                return plan_skip(b->plan, "git excludes file %s: not an absolute path without ':', skipped", f);
        path = strdup(f);
        if (!path)
                return -ENOMEM;
        path_simplify(path);
        r = builder_check_exists(b, "git excludes file", path, NULL);
        if (r != 0)
                return r < 0 ? r : 0;
        return builder_add_bind(b, bind_spec(path, path, "ro"), path, false);
}

/* A worktree's .git file points into the main checkout, so a work dir inside parent_dir brings the whole
 * parent along; otherwise git in the container could not find its objects. */
static int builder_add_work_dir(PlanBuilder *b) {
        _cleanup_free_ char *parent = NULL;
        const char *dir = b->work_dir;

        if (b->in->config->parent_dir) {
                if (!path_is_absolute(b->in->config->parent_dir) || strchr(b->in->config->parent_dir, ':'))
                        return -EINVAL;
                parent = strdup(b->in->config->parent_dir);
                if (!parent)
                        return -ENOMEM;
                path_simplify(parent);
                if (path_is_inside(b->work_dir, parent))
                        dir = parent;
                else
                        log_debug("Work dir %s is not inside parent_dir %s, mounting the work dir only.",
                                  b->work_dir, parent);
        }
        return builder_add_bind(b, bind_spec(dir, dir, "rw"), dir, false);
}

static int builder_add_extra_dirs(PlanBuilder *b) {
        int r;

        STRV_FOREACH(d, b->in->config->extra_dirs) {
                _cleanup_free_ char *path = NULL, *what = NULL;

                if (asprintf(&what, "extra dir %s", *d) < 0)
                        return -ENOMEM;
                r = host_path_resolve(*d, b->home, b->work_dir, &path);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || strchr(path, ':')) {
                        r = plan_skip(b->plan, "%s: not a usable path (~user, or ':' in it), skipped", what);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = builder_check_exists(b, what, path, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = builder_add_bind(b, bind_spec(path, path, "rw"), path, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The runner's own binds (sockets, policy files) are trusted and not checked for existence; a malformed
 * one is a programming error. */
static int builder_add_extra_binds(PlanBuilder *b) {
        int r;

        STRV_FOREACH(s, b->in->extra_binds) {
                _cleanup_(mount_spec_done) MountSpec ms = {};

                r = mount_spec_parse(*s, b->home, &ms);
                if (r < 0)
                        return log_debug_errno(r, "Invalid bind from the runner: %s", *s);
                if (!ms.named_volume && !path_is_absolute(ms.source))
                        return log_debug_errno(EINVAL, "Relative bind source from the runner: %s", *s);
                r = builder_add_bind(b, bind_spec(ms.source, ms.target, ms.options), ms.target, ms.named_volume);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Which files can be copied in before start. The root file system is read-only, and Docker refuses an
 * archive PUT there ("container rootfs is marked read-only"); it accepts one into a volume. So a file is
 * copied only into the home (the anonymous home volume, or the channel's home dir from the runner, which is
 * meant to receive them), and never where another mount covers it: on a bind mount (exactly
 * the path, or any directory above it) the copy would overwrite the host's file, or fail with "device or
 * resource busy"; on a named volume it would leak into every container sharing it; under a tmpfs it would
 * be hidden at start. */
static int builder_add_copy_files(PlanBuilder *b) {
        int r;

        STRV_FOREACH(f, b->in->config->copy_files) {
                _cleanup_free_ char *path = NULL, *what = NULL;
                const Bind *over;
                struct stat st;

                if (asprintf(&what, "copy file %s", *f) < 0)
                        return -ENOMEM;
                r = host_path_resolve(*f, b->home, b->work_dir, &path);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = plan_skip(b->plan, "%s: not a usable path (~user is not supported), skipped", what);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (strv_contains(b->plan->copy_targets, path))
                        continue;
                /* CHOWN_PATHS is colon-separated: a ':' would make the entrypoint chown something else. */
                if (strchr(path, ':')) {
                        r = plan_skip(b->plan, "%s: a path with ':' cannot be listed in CHOWN_PATHS, skipped", what);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = builder_check_exists(b, what, path, &st);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                if (!S_ISREG(st.st_mode)) {
                        r = plan_skip(b->plan, "%s: %s is not a regular file, skipped", what, path);
                        if (r < 0)
                                return r;
                        continue;
                }

                /* The home volume is mounted over a tmpfs above it (mounts go shallow to deep), so only
                 * what is outside it can be hidden by one. */
                over = builder_find_bind_over(b, path);
                if (over && !(b->home_dir && streq(over->target, b->home)))
                        r = plan_skip(b->plan, "%s: %s is mounted there (%s), skipped", what, over->target, over->spec);
                else if ((b->home_volume || b->home_dir) && path_is_inside(path, b->home) && !streq(path, b->home)) {
                        r = strv_extend(&b->plan->copy_sources, path);
                        if (r >= 0)
                                r = strv_extend(&b->plan->copy_targets, path);
                } else if (b->tmpfs_tmp && path_is_inside(path, TMPFS_TMP))
                        r = plan_skip(b->plan, "%s: the tmpfs on " TMPFS_TMP " would hide it, skipped", what);
                else if (b->tmpfs_run && path_is_inside(path, TMPFS_RUN))
                        r = plan_skip(b->plan, "%s: the tmpfs on " TMPFS_RUN " would hide it, skipped", what);
                else
                        r = plan_skip(b->plan, "%s: outside the container's writable home %s (the root file system "
                                      "is read-only), skipped", what, b->home);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Named volumes arrive root-owned, copied files carry the archive's owner: both are fixed by the
 * entrypoint. Bind mounts are never listed: that would chown the host's files. */
/* ---- protection (protected-paths.h) ---- */

static bool bind_is_read_only(const Bind *bind) {
        const char *c1 = strchr(bind->spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

        return c2 && comma_list_contains(c2 + 1, SIZE_MAX, "ro");
}

/* The host's service sockets never enter the container, whatever a config mount or extra dir says: such
 * binds are dropped with a notice (symlinks resolved, so a link to /run/systemd is seen through). The
 * work dir is the agent's whole job: one that would expose a service stops the run. */
static int builder_drop_host_services(PlanBuilder *b) {
        const char *engine_socket = b->in->config->engine.socket;
        int r;

        for (size_t i = 0; i < b->n_binds;) {
                Bind *bind = &b->binds[i];
                _cleanup_free_ char *source = NULL, *resolved = NULL;
                const char *what;

                if (bind->named_volume) {
                        i++;
                        continue;
                }
                source = strndup(bind->spec, strcspn(bind->spec, ":"));
                if (!source)
                        return -ENOMEM;
                resolved = realpath(source, NULL);
                what = protected_host_service_exposed(source, engine_socket) ?:
                       protected_host_service_exposed(resolved, engine_socket);
                if (!what) {
                        i++;
                        continue;
                }
                if (b->work_dir && (streq(bind->target, b->work_dir) || path_is_inside(b->work_dir, bind->target)))
                        return log_error_errno(EPERM, "The work dir mount %s would expose %s to the agent, not running.",
                                               bind->spec, what);
                r = plan_skip(b->plan, "mount %s: would expose %s to the agent, refused", bind->spec, what);
                if (r < 0)
                        return r;
                free(bind->spec);
                free(bind->target);
                memmove(b->binds + i, b->binds + i + 1, (b->n_binds - i - 1) * sizeof(Bind));
                b->n_binds--;
        }
        return 0;
}

/* Protected paths below the work dir are bound read-only over themselves, masked ones get /dev/null (a
 * file) or an empty read-only tmpfs (a directory); both only when they exist (a bind would create the
 * missing path on the host). A symbolic link is not followed: the engine would resolve it on its own.
 * The read-only ones include git's control surface of the work dir's repository, also where a worktree's
 * .git file points into parent_dir (protected_paths_guarded()). */
static int builder_add_protected_paths(PlanBuilder *b) {
        _cleanup_strv_free_ char **protect = NULL, **mask = NULL, **masked_abs = NULL, **found = NULL;
        _cleanup_free_ char *root = NULL;
        int r;

        if ((r = protected_paths_guarded(b->in->config, &root, &protect)) < 0 ||
            (r = protected_paths_list(b->in->config, PROTECTED_MASKED, &mask)) < 0)
                return r;
        STRV_FOREACH(rel, mask) {
                char *p = path_join_clean(b->work_dir, *rel);
                if (!p || strv_consume(&masked_abs, p) < 0)
                        return -ENOMEM;
        }
        /* The same credential files deeper in the tree (api/.env, .env.local), unless unmask_paths names them. */
        r = protected_paths_secrets_found(b->work_dir, &found);
        if (r == -ENOMEM)
                return r;
        if (r == -E2BIG)
                return log_error_errno(r, "More than %u secret files (.env, .npmrc, ...) below %s to mask, not running.",
                                       PROTECTED_SECRETS_MAX, b->work_dir);
        if (r > 0 && (r = plan_skip(b->plan, "the search for secret files below %s stopped after %u entries; the "
                                    "gate's read rules cover the rest", b->work_dir, PROTECTED_SECRETS_WALK_MAX)) < 0)
                return r;
        STRV_FOREACH(f, found) {
                const char *rel = path_is_inside(*f, b->work_dir) ? *f + strlen(b->work_dir) + (streq(b->work_dir, "/") ? 0 : 1) : NULL;

                if (strv_contains(masked_abs, *f) || (rel && strv_contains(b->in->config->unmask_paths, rel)))
                        continue;
                if ((r = strv_extend(&masked_abs, *f)) < 0)
                        return r;
        }

        for (unsigned k = 0; k < 2; k++)
                STRV_FOREACH(entry, k == 0 ? protect : masked_abs) {
                        const char *path = *entry;
                        struct stat st;

                        /* A masked file a host tool runs (.envrc) is guarded too, and stays masked. */
                        if (k == 0 && strv_contains(masked_abs, path))
                                continue;
                        if (lstat(path, &st) < 0) {
                                if (errno == ENOENT || errno == ENOTDIR)
                                        continue;
                                r = plan_skip(b->plan, "%s path %s cannot be accessed (%s): not %s", k == 0 ? "protected" : "masked",
                                              path, strerror(errno), k == 0 ? "read-only" : "masked");
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (S_ISLNK(st.st_mode)) {
                                _cleanup_free_ char *target = NULL;

                                /* What it leads to is guarded in the tree (protected_paths_guarded()); say
                                 * where that is, and when it is not in the container at all. */
                                if (k == 0 && protected_path_link_target(root, path, &target) == -ENOMEM)
                                        return -ENOMEM;
                                if (target && !path_is_inside(target, root))
                                        r = plan_skip(b->plan, "protected path %s is a symbolic link to %s, outside the "
                                                      "mounted tree %s: not read-only, and its target is not in the "
                                                      "container", path, target, root);
                                else
                                        r = plan_skip(b->plan, "%s path %s is a symbolic link: not %s%s%s", k == 0 ? "protected" : "masked",
                                                      path, k == 0 ? "read-only" : "masked", target ? "; protected instead: " : "",
                                                      strempty(target));
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        /* A path cannot be both writable and protected (the config check says so first). */
                        for (size_t i = 0; i < b->n_binds; i++)
                                if (path_is_inside(b->binds[i].target, path) && !bind_is_read_only(&b->binds[i]))
                                        return log_error_errno(EINVAL, "Mount %s is writable but %s is %s, not running.",
                                                               b->binds[i].spec, path, k == 0 ? "protected" : "masked");
                        if (k == 1 && S_ISDIR(st.st_mode) && b->in->empty_dir)
                                r = builder_add_bind(b, bind_spec(b->in->empty_dir, path, "ro"), path, false);
                        else if (k == 1 && S_ISDIR(st.st_mode))
                                r = strv_extend(&b->mask_dirs, path);
                        else
                                r = builder_add_bind(b, bind_spec(k == 0 ? path : "/dev/null", path, "ro"), path, false);
                        if (r < 0)
                                return r;
                }

        r = protected_paths_list(b->in->config, PROTECTED_KERNEL, &b->kernel_masks);
        if (r < 0)
                return r;
        STRV_FOREACH(u, b->in->config->unmask_paths)
                if ((startswith(*u, "/proc/") || startswith(*u, "/sys/")) && (r = strv_extend(&b->kernel_unmasks, *u)) < 0)
                        return r;
        return 0;
}

static int builder_collect_chown_paths(PlanBuilder *b) {
        int r;

        for (size_t i = 0; i < b->n_binds; i++)
                if (b->binds[i].named_volume && !strv_contains(b->plan->chown_paths, b->binds[i].target)) {
                        r = strv_extend(&b->plan->chown_paths, b->binds[i].target);
                        if (r < 0)
                                return r;
                }
        STRV_FOREACH(t, b->plan->copy_targets)
                if (!strv_contains(b->plan->chown_paths, *t)) {
                        r = strv_extend(&b->plan->chown_paths, *t);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static const char *env_lookup(char * const *env, const char *key) {
        size_t l = strlen(key);

        STRV_FOREACH(e, env)
                if (strncmp(*e, key, l) == 0 && (*e)[l] == '=')
                        return *e + l + 1;
        return NULL;
}

static int env_push(char ***env, const char *key, const char *value) {
        char *kv;

        if (asprintf(&kv, "%s=%s", key, value) < 0)
                return -ENOMEM;
        return strv_consume(env, kv);
}

static bool env_key_in(const char *key, size_t n, const char * const *names, size_t n_names) {
        for (size_t i = 0; i < n_names; i++)
                if (strlen(names[i]) == n && strncmp(names[i], key, n) == 0)
                        return true;
        return false;
}

/* Read by the dynamic loader or the shell as a program starts, before its first line could clear them.
 * The root side never sees the configured envs (they travel in LOOP_AGENT_ENV to the agent alone); these
 * are dropped for the agent's side too, so its first programs (loop-agent-init, the agent) start as the
 * image made them. */
static bool env_key_starts_loader_or_shell(const char *key, size_t n) {
        static const char * const names[] = {
                "BASH_ENV", "BASHOPTS", "ENV", "GCONV_PATH", "GLIBC_TUNABLES", "SHELLOPTS",
        };

        return (n >= 3 && strncmp(key, "LD_", 3) == 0) ||
               (n >= 10 && strncmp(key, "BASH_FUNC_", 10) == 0) ||
               env_key_in(key, n, names, ELEMENTSOF(names));
}

/* existing + "," + alias, unless the list already names alias. */
static char *no_proxy_merge(const char *existing, const char *alias) {
        const char *p = strempty(existing);
        size_t len;
        char *r;

        for (;;) {
                size_t n;

                p += strspn(p, " \t,");
                if (!*p)
                        break;
                n = strcspn(p, ",");
                len = n;
                while (len > 0 && strchr(" \t", p[len - 1]))
                        len--;
                if (len == strlen(alias) && strncasecmp(p, alias, len) == 0)
                        return strdup(existing);
                p += n;
        }
        if (isempty(existing))
                return strdup(alias);
        len = strlen(existing);
        if (asprintf(&r, "%s%s%s", existing, existing[len - 1] == ',' ? "" : ",", alias) < 0)
                return NULL;
        return r;
}

/* Keeps the last entry of each name, in its place: later sources win. */
static void env_dedupe_keep_last(char **env) {
        size_t n = strv_length(env), k = 0;

        for (size_t i = 0; i < n; i++) {
                size_t l = strcspn(env[i], "=");
                bool later = false;

                for (size_t j = i + 1; j < n && !later; j++)
                        later = strncmp(env[i], env[j], l + 1) == 0;
                if (later)
                        free(env[i]);
                else
                        env[k++] = env[i];
        }
        if (env)
                env[k] = NULL;
}

static int builder_add_config_envs(PlanBuilder *b, char ***env) {
        int r;

        STRV_FOREACH(e, b->in->config->envs) {
                const char *eq = strchr(*e, '='), *value;
                _cleanup_free_ char *key = NULL, *expanded = NULL;

                if (!eq || eq == *e) {
                        /* No name to show: the entry itself might be a value. */
                        r = plan_skip(b->plan, "env: an entry without NAME= was ignored");
                        if (r < 0)
                                return r;
                        continue;
                }
                key = strndup(*e, (size_t) (eq - *e));
                if (!key)
                        return -ENOMEM;
                /* LOOP_*: what loop tells the root entrypoint, its helpers and the agent's side (LOOP_AGENT_ENV
                 * is this very list); none is the config's to set. */
                if (env_key_in(key, strlen(key), env_owned_by_loop, ELEMENTSOF(env_owned_by_loop)) ||
                    startswith(key, "LOOP_")) {
                        r = plan_skip(b->plan, "env %s: set by loop, the configured value is ignored", key);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (env_key_starts_loader_or_shell(key, strlen(key))) {
                        r = plan_skip(b->plan, "env %s: a loader or shell start-up variable, ignored", key);
                        if (r < 0)
                                return r;
                        continue;
                }

                value = eq + 1;
                if (streq(value, "~"))
                        value = b->home;
                else if (startswith(value, "~/")) {
                        if (asprintf(&expanded, "%s%s", streq(b->home, "/") ? "" : b->home, value + 1) < 0)
                                return -ENOMEM;
                        value = expanded;
                }
                r = env_push(env, key, value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The agent behind the egress gateway: it holds only the dummy key, and its one way out is the relay
 * on its own loopback (the container has no other interface). */
static int builder_egress_env(const ContainerInput *in, char ***env) {
        const LoopConfig *c = in->config;
        const char *dummy = in->egress_dummy ?: EGRESS_DUMMY_KEY_NONE;
        char proxy_url[64], api_url[64];
        int r = 0;

        (void) snprintf(proxy_url, sizeof proxy_url, "http://127.0.0.1:%d", EGRESS_RELAY_PROXY_PORT);
        (void) snprintf(api_url, sizeof api_url, "http://127.0.0.1:%d", EGRESS_RELAY_API_PORT);

        if (!isempty(c->claude_code_oauth_token))
                r = env_push(env, "CLAUDE_CODE_OAUTH_TOKEN", dummy);
        else
                r = env_push(env, "ANTHROPIC_API_KEY", dummy);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(proxy_variables); i++)
                if ((r = env_push(env, proxy_variables[i], proxy_url)) < 0)
                        return r;
        for (size_t i = 0; i < ELEMENTSOF(no_proxy_variables); i++)
                if ((r = env_push(env, no_proxy_variables[i], "localhost,127.0.0.1,::1")) < 0)
                        return r;
        if ((r = env_push(env, "ANTHROPIC_BASE_URL", api_url)) < 0)
                return r;
        return env_push(env, "LOOP_EGRESS_ENABLED", "1");
}

static int builder_build_env(PlanBuilder *b, char ***ret) {
        _cleanup_strv_free_ char **env = NULL, **agent_env = NULL;
        const ContainerInput *in = b->in;
        const LoopConfig *c = in->config;
        const char *alias = engine_host_alias(in->engine), *h = streq(b->home, "/") ? "" : b->home;
        bool agent = in->type != CONTAINER_CHROME, proxied = false;
        char *s;
        int r;

        if ((r = env_push(&env, "CHANNEL_ID", in->channel)) < 0 ||
            (r = env_push(&env, "HOME", b->home)) < 0 ||
            (r = env_push(&env, "HOST_USER", in->user->name)) < 0)
                return r;
        if (asprintf(&s, "AGENT_UID=%u", (unsigned) in->user->uid) < 0 || (r = strv_consume(&env, s)) < 0)
                return -ENOMEM;
        if (asprintf(&s, "AGENT_GID=%u", (unsigned) in->user->gid) < 0 || (r = strv_consume(&env, s)) < 0)
                return -ENOMEM;
        if ((r = env_push(&env, "TZ", isempty(in->timezone) ? "UTC" : in->timezone)) < 0)
                return r;
        if (asprintf(&s, "PATH=%s/.local/bin:%s/bin:%s/go/bin:/usr/local/go/bin:" CONTAINER_AGENT_PATH_SUFFIX,
                     h, h, h) < 0 || (r = strv_consume(&env, s)) < 0)
                return -ENOMEM;
        if (b->plan->chown_paths) {
                _cleanup_free_ char *joined = strv_join(b->plan->chown_paths, ":");
                if (!joined || (r = env_push(&env, "CHOWN_PATHS", joined)) < 0)
                        return -ENOMEM;
        }

        /* The seal's TCP connect ports (loop seal reads them); behind the egress gateway the relay's two
         * loopback ports are always among them, or the agent would have no way out at all. */
        if (agent && c->connect_tcp) {
                const char *own = streq(c->connect_tcp, "none") ? NULL : c->connect_tcp;

                if (in->egress_gateway) {
                        if (asprintf(&s, "%s%s%d,%d", strempty(own), own ? "," : "", EGRESS_RELAY_PROXY_PORT,
                                     EGRESS_RELAY_API_PORT) < 0)
                                return -ENOMEM;
                } else if (!(s = strdup(c->connect_tcp)))
                        return -ENOMEM;
                r = env_push(&env, SEAL_CONNECT_TCP_ENV, s);
                free(s);
                if (r < 0)
                        return r;
        }

        /* The Chrome sidecar renders untrusted pages: it gets no credential and none of the user's envs;
         * behind the egress gateway its one way out is the relay too (Chrome's --proxy-server). */
        if (!agent && in->egress_gateway) {
                char proxy_url[64];

                (void) snprintf(proxy_url, sizeof proxy_url, "http://127.0.0.1:%d", EGRESS_RELAY_PROXY_PORT);
                if ((r = env_push(&env, "LOOP_CHROME_PROXY", proxy_url)) < 0 ||
                    (r = env_push(&env, "LOOP_EGRESS_ENABLED", "1")) < 0)
                        return r;
        } else if (agent && in->egress_gateway) {
                r = builder_egress_env(in, &env);
                if (r < 0)
                        return r;
        } else if (agent) {
                r = 0;
                if (!isempty(c->claude_code_oauth_token))
                        r = env_push(&env, "CLAUDE_CODE_OAUTH_TOKEN", c->claude_code_oauth_token);
                else if (!isempty(c->anthropic_api_key))
                        r = env_push(&env, "ANTHROPIC_API_KEY", c->anthropic_api_key);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; !in->egress_gateway && i < ELEMENTSOF(proxy_variables); i++) {
                _cleanup_free_ char *v = NULL;
                const char *host = env_lookup(in->host_env, proxy_variables[i]);

                if (isempty(host))
                        continue;
                v = proxy_rewrite(host, alias);
                if (!v || (r = env_push(&env, proxy_variables[i], v)) < 0)
                        return -ENOMEM;
                proxied = true;
        }
        /* Calls to the host (the loop helpers) must not go through the proxy. */
        for (size_t i = 0; proxied && i < ELEMENTSOF(no_proxy_variables); i++) {
                _cleanup_free_ char *v = no_proxy_merge(env_lookup(in->host_env, no_proxy_variables[i]), alias);
                if (!v || (r = env_push(&env, no_proxy_variables[i], v)) < 0)
                        return -ENOMEM;
        }

        if (agent) {
                r = builder_add_config_envs(b, &agent_env);
                if (r < 0)
                        return r;
        }

        STRV_FOREACH(e, in->extra_env) {
                const char *eq = strchr(*e, '=');
                if (!eq || eq == *e)
                        return log_debug_errno(EINVAL, "An env entry from the runner has no NAME=.");
                r = strv_extend(&env, *e);
                if (r < 0)
                        return r;
        }

        /* The configured envs reach the agent alone, after the privilege drop, over what loop set (as they
         * did when they came later in Env), but not over what the runner adds (DOCKER_HOST, the CA bundle). */
        env_dedupe_keep_last(agent_env);
        if (agent_env) {
                _cleanup_free_ char *encoded = NULL;
                size_t k = 0;

                for (size_t i = 0; agent_env[i]; i++) {
                        _cleanup_free_ char *key = strndup(agent_env[i], strcspn(agent_env[i], "="));

                        if (!key)
                                return -ENOMEM;
                        if (env_lookup(in->extra_env, key))
                                free(agent_env[i]);
                        else
                                agent_env[k++] = agent_env[i];
                }
                agent_env[k] = NULL;
                r = agent_env_encode(agent_env, &encoded);
                if (r == -E2BIG)
                        return log_error_errno(r, "The configured envs take more than %u bytes, not running.",
                                               AGENT_ENV_DECODED_MAX);
                if (r < 0)
                        return r;
                if (k > 0 && (r = env_push(&env, AGENT_ENV_VARIABLE, encoded)) < 0)
                        return r;
        }

        env_dedupe_keep_last(env);
        *ret = TAKE_PTR(env);
        return 0;
}

static size_t path_depth(const char *p) {
        size_t n = 0;
        for (; *p; p++)
                n += *p == '/';
        return n;
}

/* By depth, then by target, so the order is deterministic. */
static int bind_cmp_depth(const void *a, const void *b) {
        const Bind *x = a, *y = b;
        size_t dx = path_depth(x->target), dy = path_depth(y->target);
        return dx != dy ? (dx < dy ? -1 : 1) : strcmp(x->target, y->target);
}

static int builder_build_host_config(PlanBuilder *b, json_object **ret) {
        _cleanup_(json_object_putp) json_object *hc = json_object_new_object(), *binds = NULL, *tmpfs = NULL;
        const ContainerInput *in = b->in;
        const LoopConfig *c = in->config;
        bool chrome = in->type == CONTAINER_CHROME;
        uint64_t memory_mb = chrome ? c->browser.memory_mb : c->container_memory_mb;
        static const char * const all[] = { "ALL" };
        const char *security_opt[5] = { "no-new-privileges" };
        _cleanup_free_ char *podman_mask = NULL, *podman_unmask = NULL;
        size_t n_security_opt = 1;
        int64_t nano_cpus;
        int r;

        if (!hc)
                return -ENOMEM;
        /* The workload profile for the agent's containers; Chrome's (seccomp_profile_security_opt_chrome())
         * lets its own sandbox make its namespaces. */
        if (in->seccomp_option) {
                if (!startswith(in->seccomp_option, "seccomp="))
                        return -EINVAL;
                security_opt[n_security_opt++] = in->seccomp_option;
        }
        /* Docker replaces its default list with MaskedPaths (ours repeats it); Podman adds "mask=" to its
         * own and takes "unmask=" for what the channel wants back. */
        if (b->kernel_masks && in->engine == ENGINE_PODMAN) {
                _cleanup_free_ char *m = strv_join(b->kernel_masks, ":"), *u = strv_join(b->kernel_unmasks, ":");
                if (!m || !u)
                        return -ENOMEM;
                if (*m && asprintf(&podman_mask, "mask=%s", m) < 0)
                        return -ENOMEM;
                if (*u && asprintf(&podman_unmask, "unmask=%s", u) < 0)
                        return -ENOMEM;
                if (podman_mask)
                        security_opt[n_security_opt++] = podman_mask;
                if (podman_unmask)
                        security_opt[n_security_opt++] = podman_unmask;
                /* The agent sees only its own processes (the gate's supervisor is root's); Docker has no
                 * option for it. */
                security_opt[n_security_opt++] = "proc-opts=hidepid=2";
        } else if (b->kernel_masks && (r = json_add(hc, "MaskedPaths", json_strings_new((const char * const *) b->kernel_masks, SIZE_MAX))) < 0)
                return r;
        /* Memory=0 or NanoCpus=0 mean "unlimited" to the engine: refuse rather than run unlimited. */
        if (memory_mb == 0 || memory_mb > (uint64_t) (INT64_MAX / MIB))
                return -EINVAL;
        if (chrome)
                nano_cpus = CHROME_NANO_CPUS;
        else {
                if (!(c->container_cpus > 0) || c->container_cpus > 1e6)
                        return -EINVAL;
                /* Rounded by hand: libloop does not link libm. */
                nano_cpus = (int64_t) (c->container_cpus * 1e9 + 0.5);
                if (nano_cpus <= 0)
                        return -EINVAL;
        }

        /* Parents before children: an engine that mounts in the given order (Podman 4.3 does) would
         * otherwise hide a bind under one mounted later above it, e.g. the work dir under the home. */
        if (b->n_binds > 1)
                qsort(b->binds, b->n_binds, sizeof(Bind), bind_cmp_depth);

        binds = json_object_new_array();
        if (!binds)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_binds; i++) {
                json_object *v = json_object_new_string(b->binds[i].spec);
                if (!v || json_object_array_add(binds, v) < 0) {
                        json_object_put(v);
                        return -ENOMEM;
                }
        }

        tmpfs = json_object_new_object();
        if (!tmpfs)
                return -ENOMEM;
        if (b->tmpfs_tmp && (r = json_add(tmpfs, TMPFS_TMP, json_object_new_string(TMPFS_TMP_OPTIONS))) < 0)
                return r;
        if (b->tmpfs_run && (r = json_add(tmpfs, TMPFS_RUN, json_object_new_string(TMPFS_RUN_OPTIONS))) < 0)
                return r;
        STRV_FOREACH(d, b->mask_dirs)
                if ((r = json_add(tmpfs, *d, json_object_new_string(TMPFS_MASK_OPTIONS))) < 0)
                        return r;

        if ((r = json_add(hc, "Binds", TAKE_PTR(binds))) < 0 ||
            (r = json_add(hc, "Memory", json_object_new_int64((int64_t) memory_mb * MIB))) < 0 ||
            (r = json_add(hc, "MemorySwap", json_object_new_int64((int64_t) memory_mb * MIB))) < 0 ||
            (r = json_add(hc, "NanoCpus", json_object_new_int64(nano_cpus))) < 0 ||
            (r = json_add(hc, "PidsLimit", json_object_new_int64(CONTAINER_PIDS_LIMIT))) < 0 ||
            (r = json_add(hc, "CapDrop", json_strings_new(all, ELEMENTSOF(all)))) < 0 ||
            (r = json_add(hc, "CapAdd", json_strings_new(entrypoint_caps, ELEMENTSOF(entrypoint_caps)))) < 0 ||
            (r = json_add(hc, "SecurityOpt", json_strings_new(security_opt, n_security_opt))) < 0 ||
            (r = json_add(hc, "ReadonlyRootfs", json_object_new_boolean(true))) < 0 ||
            (r = json_add(hc, "Tmpfs", TAKE_PTR(tmpfs))) < 0 ||
            (r = json_add(hc, "Init", json_object_new_boolean(false))) < 0)
                return r;

        /* No interface but loopback: the agent's way out is `loop relay` and the egress gateway. */
        if (in->egress_gateway &&
            (r = json_add(hc, "NetworkMode", json_object_new_string("none"))) < 0)
                return r;

        /* Podman adds host.containers.internal itself, and 4.3 does not know "host-gateway". */
        if (in->engine == ENGINE_DOCKER && !in->egress_gateway) {
                _cleanup_free_ char *h = NULL;
                const char *l[1];

                if (asprintf(&h, "%s:host-gateway", engine_host_alias(ENGINE_DOCKER)) < 0)
                        return -ENOMEM;
                l[0] = h;
                if ((r = json_add(hc, "ExtraHosts", json_strings_new(l, 1))) < 0)
                        return r;
        }
        if (!isempty(in->cgroup_parent) && (r = json_add(hc, "CgroupParent", json_object_new_string(in->cgroup_parent))) < 0)
                return r;

        /* loop follows the container's log. The engines' own defaults may not allow that: Podman under
         * systemd defaults to the journald driver, which cannot follow with the file events backend, and
         * Docker's default is whatever daemon.json says. A file-backed driver follows on every setup. */
        {
                _cleanup_(json_object_putp) json_object *lc = json_object_new_object();
                const char *driver = in->engine == ENGINE_PODMAN ? "k8s-file" : "json-file";
                if (!lc || (r = json_add(lc, "Type", json_object_new_string(driver))) < 0 ||
                    (r = json_add(hc, "LogConfig", TAKE_PTR(lc))) < 0)
                        return -ENOMEM;
        }

        *ret = TAKE_PTR(hc);
        return 0;
}

static int builder_build_body(PlanBuilder *b, char **env) {
        _cleanup_(json_object_putp) json_object *body = json_object_new_object(), *labels = NULL, *hc = NULL;
        const ContainerInput *in = b->in;
        bool chrome = in->type == CONTAINER_CHROME;
        const char *image = chrome ? in->config->browser.chrome_image : in->config->container_image;
        int r;

        if (!body)
                return -ENOMEM;
        if (isempty(image))
                return -EINVAL;

        labels = json_object_new_object();
        if (!labels)
                return -ENOMEM;
        if ((r = json_add(labels, "app", json_object_new_string("loop-agent"))) < 0 ||
            (r = json_add(labels, "loop-channel", json_object_new_string(in->channel))) < 0 ||
            (r = json_add(labels, "loop-type", json_object_new_string(container_type_to_string(in->type)))) < 0)
                return r;
        if (in->owner && (r = json_add(labels, "loop-owner", json_object_new_string(in->owner))) < 0)
                return r;

        r = builder_build_host_config(b, &hc);
        if (r < 0)
                return r;

        if ((r = json_add(body, "Image", json_object_new_string(image))) < 0)
                return r;
        if (in->cmd && (r = json_add(body, "Cmd", json_strings_new((const char * const *) in->cmd, SIZE_MAX))) < 0)
                return r;
        if (b->work_dir && (r = json_add(body, "WorkingDir", json_object_new_string(b->work_dir))) < 0)
                return r;
        if ((r = json_add(body, "Env", json_strings_new((const char * const *) env, SIZE_MAX))) < 0 ||
            (r = json_add(body, "Labels", TAKE_PTR(labels))) < 0 ||
            (r = json_add(body, "Tty", json_object_new_boolean(false))) < 0 ||
            (r = json_add(body, "OpenStdin", json_object_new_boolean(false))) < 0 ||
            (r = json_add(body, "AttachStdin", json_object_new_boolean(false))) < 0 ||
            (r = json_add(body, "AttachStdout", json_object_new_boolean(true))) < 0 ||
            (r = json_add(body, "AttachStderr", json_object_new_boolean(true))) < 0)
                return r;
        if (b->home_volume) {
                _cleanup_(json_object_putp) json_object *volumes = json_object_new_object();
                if (!volumes || (r = json_add(volumes, b->home, json_object_new_object())) < 0 ||
                    (r = json_add(body, "Volumes", TAKE_PTR(volumes))) < 0)
                        return -ENOMEM;
        }
        if ((r = json_add(body, "HostConfig", TAKE_PTR(hc))) < 0)
                return r;

        b->plan->body = TAKE_PTR(body);
        return 0;
}

int container_plan_build(const ContainerInput *in, ContainerPlan **ret) {
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        _cleanup_(plan_builder_done) PlanBuilder b = {};
        _cleanup_strv_free_ char **env = NULL;
        bool chrome;
        int r;

        assert(in);
        assert(ret);

        if (!in->config || !in->user || isempty(in->channel) || !container_type_to_string(in->type))
                return -EINVAL;
        if (isempty(in->user->name) || !path_is_absolute(in->user->home))
                return -EINVAL;
        chrome = in->type == CONTAINER_CHROME;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        b.in = in;
        b.plan = p;
        b.home = strdup(in->user->home);
        if (!b.home)
                return -ENOMEM;
        path_simplify(b.home);

        if (!chrome) {
                const char *w = in->config->work_dir;

                if (!path_is_absolute(w) || strchr(w, ':'))
                        return log_debug_errno(EINVAL, "Work dir %s cannot be bind-mounted.", strna(w));
                b.work_dir = strdup(w);
                if (!b.work_dir)
                        return -ENOMEM;
                path_simplify(b.work_dir);

                if ((r = builder_add_config_mounts(&b)) < 0 ||
                    (r = builder_add_git_excludes(&b)) < 0 ||
                    (r = builder_add_work_dir(&b)) < 0 ||
                    (r = builder_add_extra_dirs(&b)) < 0)
                        return r;
        }
        /* Before extra_binds, so the runner could still replace it; after the config mounts, so a mount at
         * HOME from config cannot replace the channel's home. */
        if (in->home_dir) {
                if (!path_is_absolute(in->home_dir) || streq(b.home, "/"))
                        return -EINVAL;
                r = builder_add_bind(&b, bind_spec(in->home_dir, b.home, "rw"), b.home, false);
                if (r < 0)
                        return r;
                b.home_dir = true;
        }
        if (!chrome && (r = builder_drop_host_services(&b)) < 0)
                return r;
        r = builder_add_extra_binds(&b);
        if (r < 0)
                return r;
        if (!chrome && (r = builder_add_protected_paths(&b)) < 0)
                return r;

        b.tmpfs_tmp = !builder_has_bind_at(&b, TMPFS_TMP);
        b.tmpfs_run = !builder_has_bind_at(&b, TMPFS_RUN);
        /* HOME must be writable on a read-only root (the agent keeps its state there) and is where copied
         * files go: an anonymous volume, removed with the container. Not when a mount already provides it. */
        b.home_volume = !streq(b.home, "/") && !builder_find_bind_over(&b, b.home);

        if (!chrome) {
                r = builder_add_copy_files(&b);
                if (r < 0)
                        return r;
        }
        r = builder_collect_chown_paths(&b);
        if (r < 0)
                return r;

        r = builder_build_env(&b, &env);
        if (r < 0)
                return r;
        r = builder_build_body(&b, env);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(p);
        return 0;
}
