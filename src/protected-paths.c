/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "log.h"
#include "macro.h"
#include "protected-paths.h"
#include "strv.h"

/* Below the work dir: what steers the host's tools or the next agent run (a git hook runs on the
 * human's next commit, .mcp.json and .claude start programs, .loop/config.json is loop's project file)
 * is mounted read-only. */
static const char * const default_read_only[] = {
        ".git/config", ".git/hooks", ".gitmodules", ".claude", ".codex", ".devcontainer", ".idea", ".mcp.json",
        ".loop",
};

/* Below the work dir: credentials a project tends to keep next to its code are masked. */
static const char * const default_masked[] = {
        ".env", ".envrc", ".npmrc", ".aws", ".kube", ".docker/config.json", ".netrc", ".pgpass", ".pypirc",
        ".cargo/credentials.toml",
};

/* The engines' own defaults (Docker replaces its list with ours when MaskedPaths is given, so they are
 * repeated) and the reference's: kernel symbols and memory, module and device lists, the sysrq trigger,
 * debug, tracing and security file systems, bpf pins, firmware and DMI data. */
static const char * const default_kernel[] = {
        "/proc/acpi", "/proc/asound", "/proc/devices", "/proc/diskstats", "/proc/kallsyms", "/proc/kcore",
        "/proc/keys", "/proc/latency_stats", "/proc/modules", "/proc/partitions", "/proc/sched_debug",
        "/proc/scsi", "/proc/sysrq-trigger", "/proc/timer_list", "/proc/timer_stats", "/proc/version",
        "/sys/devices/virtual/dmi", "/sys/devices/virtual/powercap", "/sys/firmware", "/sys/fs/bpf",
        "/sys/kernel/debug", "/sys/kernel/security", "/sys/kernel/tracing", "/sys/kernel/vmcoreinfo",
        "/sys/module",
};

/* Host services a container must never reach: a journald socket would let it forge the audit stream,
 * systemd's or D-Bus's would let it ask for a command to run as root, an engine's is root itself. */
static const struct {
        const char *path;
        const char *what;
} host_services[] = {
        { "/run/systemd",        "systemd's and journald's sockets" },
        { "/run/dbus",           "the D-Bus system bus" },
        { "/run/user",           "users' session buses and rootless engine sockets" },
        { "/run/podman",         "Podman's API socket" },
        { "/run/docker.sock",    "Docker's API socket" },
        { "/run/docker",         "Docker's runtime state" },
        { "/run/containerd",     "containerd's socket" },
        { "/run/containers",     "the container engines' runtime state" },
        { "/run/runc",           "runc's state" },
        { "/run/crun",           "crun's state" },
        { "/run/loop",           "loop's helper sockets of every channel" },
        { "/var/lib/docker",     "Docker's storage" },
        { "/var/lib/containers", "Podman's storage" },
        { "/var/lib/containerd", "containerd's storage" },
        { "/dev/log",            "the journal's syslog socket" },
};

static bool path_is_inside(const char *path, const char *dir) {
        size_t n = strlen(dir);

        if (streq(dir, "/"))
                return path[0] == '/';
        return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static bool path_has_dotdot_or_dot(const char *p) {
        for (const char *s = p; *s;) {
                size_t n = strcspn(s, "/");
                if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                        return true;
                s += n;
                s += *s == '/';
        }
        return false;
}

const char *protected_path_check_entry(const char *v) {
        if (isempty(v))
                return "must not be empty";
        if (v[0] == '/')
                return "must be relative to the work dir";
        if (path_has_dotdot_or_dot(v))
                return "must not contain \".\" or \"..\" components";
        if (strstr(v, "//") || v[strlen(v) - 1] == '/')
                return "must be a clean path (no \"//\", no trailing \"/\")";
        for (const char *p = v; *p; p++)
                if ((unsigned char) *p < ' ' || *p == 0x7f || *p == ':')
                        return "must not contain ':' or control characters";
        return NULL;
}

const char *protected_path_check_unmask_entry(const char *v) {
        if (v && (startswith(v, "/proc/") || startswith(v, "/sys/"))) {
                if (path_has_dotdot_or_dot(v + 1))
                        return "must not contain \".\" or \"..\" components";
                return NULL;
        }
        if (v && v[0] == '/')
                return "must be relative to the work dir, or a /proc or /sys path";
        return protected_path_check_entry(v);
}

static int list_add(char ***l, const char *v, char * const *unmask) {
        if (strv_contains(*l, v) || strv_contains(unmask, v))
                return 0;
        return strv_extend(l, v);
}

int protected_paths_list(const LoopConfig *c, ProtectedKind kind, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const char * const *defaults;
        char * const *configured;
        size_t n;
        int r;

        switch (kind) {
        case PROTECTED_READ_ONLY:
                defaults = default_read_only, n = ELEMENTSOF(default_read_only), configured = c->protect_paths;
                break;
        case PROTECTED_MASKED:
                defaults = default_masked, n = ELEMENTSOF(default_masked), configured = c->mask_paths;
                break;
        case PROTECTED_KERNEL:
                defaults = default_kernel, n = ELEMENTSOF(default_kernel), configured = NULL;
                break;
        default:
                return -EINVAL;
        }

        for (size_t i = 0; i < n; i++)
                if ((r = list_add(&l, defaults[i], c->unmask_paths)) < 0)
                        return r;
        STRV_FOREACH(p, configured)
                if ((r = list_add(&l, *p, c->unmask_paths)) < 0)
                        return r;
        /* An empty list is a list, not "unset". */
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

static bool mount_options_read_only(const char *o) {
        while (o && *o) {
                size_t n = strcspn(o, ",");
                if (n == 2 && strncmp(o, "ro", 2) == 0)
                        return true;
                o += n;
                o += *o == ',';
        }
        return false;
}

/* The absolute destination of a writable mount spec, or NULL (read-only, ~, malformed). */
static char *mount_writable_destination(const char *spec) {
        const char *c1 = strchr(spec, ':'), *c2;

        if (!c1 || c1[1] != '/')
                return NULL;
        c2 = strchr(c1 + 1, ':');
        if (c2 && mount_options_read_only(c2 + 1))
                return NULL;
        return c2 ? strndup(c1 + 1, (size_t) (c2 - c1 - 1)) : strdup(c1 + 1);
}

static char *path_strip_trailing_slashes(char *p) {
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/')
                p[--n] = 0;
        return p;
}

static int check_writable(const char *work_dir, char * const *protect, char * const *mask, const char *dest,
                          const char *what, char **ret_reason) {
        for (unsigned k = 0; k < 2; k++)
                STRV_FOREACH(p, k == 0 ? protect : mask) {
                        _cleanup_free_ char *abs = NULL;

                        if (asprintf(&abs, "%s/%s", streq(work_dir, "/") ? "" : work_dir, *p) < 0)
                                return -ENOMEM;
                        if (!path_is_inside(dest, abs))
                                continue;
                        if (asprintf(ret_reason, "%s %s is writable but %s is %s (%s); mount it read-only or "
                                     "list it in unmask_paths", what, dest, abs,
                                     k == 0 ? "protected" : "masked", *p) < 0)
                                return -ENOMEM;
                        return 1;
                }
        return 0;
}

int protected_paths_check_config(const LoopConfig *c, char **ret_reason) {
        _cleanup_strv_free_ char **protect = NULL, **mask = NULL;
        _cleanup_free_ char *work_dir = NULL;
        char *reason = NULL;
        int r;

        *ret_reason = NULL;
        if (isempty(c->work_dir) || c->work_dir[0] != '/')
                return 0;
        work_dir = path_strip_trailing_slashes(strdup(c->work_dir));
        if (!work_dir)
                return -ENOMEM;
        if ((r = protected_paths_list(c, PROTECTED_READ_ONLY, &protect)) < 0 ||
            (r = protected_paths_list(c, PROTECTED_MASKED, &mask)) < 0)
                return r;

        STRV_FOREACH(m, c->mounts) {
                _cleanup_free_ char *dest = mount_writable_destination(*m);
                if (!dest)
                        continue;
                path_strip_trailing_slashes(dest);
                r = check_writable(work_dir, protect, mask, dest, "mount destination", &reason);
                if (r != 0) {
                        *ret_reason = reason;
                        return r < 0 ? r : 0;
                }
        }
        STRV_FOREACH(d, c->extra_dirs) {
                _cleanup_free_ char *dest = NULL;
                if ((*d)[0] != '/')
                        continue;
                dest = path_strip_trailing_slashes(strdup(*d));
                if (!dest)
                        return -ENOMEM;
                r = check_writable(work_dir, protect, mask, dest, "extra dir", &reason);
                if (r != 0) {
                        *ret_reason = reason;
                        return r < 0 ? r : 0;
                }
        }
        return 0;
}

const char *protected_host_service_exposed(const char *source, const char *engine_socket) {
        _cleanup_free_ char *normalized = NULL;
        const char *s = source;

        if (!s || s[0] != '/')
                return NULL;
        /* /var/run is a symlink to /run on every current distribution; callers resolve symlinks, but a
         * lexical check (config) sees the spelling. */
        if (path_is_inside(s, "/var/run")) {
                if (asprintf(&normalized, "/run%s", s + strlen("/var/run")) < 0)
                        return "the host's /run";       /* fail closed */
                s = normalized;
        }
        for (size_t i = 0; i < ELEMENTSOF(host_services); i++)
                if (path_is_inside(s, host_services[i].path) || path_is_inside(host_services[i].path, s))
                        return host_services[i].what;
        if (engine_socket && engine_socket[0] == '/' &&
            (path_is_inside(s, engine_socket) || path_is_inside(engine_socket, s)))
                return "the engine's API socket";
        return NULL;
}
