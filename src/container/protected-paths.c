/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "config-build.h"
#include "dirent-util.h"
#include "fs-util.h"
#include "gate-policy.h"
#include "path-util.h"
#include "io-util.h"
#include "log.h"
#include "macro.h"
#include "protected-paths.h"
#include "string-util.h"
#include "strv.h"

/* Below the work dir: what steers the host's tools or the next agent run (a git hook runs on the
 * human's next commit, .mcp.json and .claude start programs, .loop/config.json is loop's project file)
 * is mounted read-only. Of .loop only the project file: the runner writes the MCP config beside it on the
 * host during runs, which a watch of the whole directory would take for tampering. */
static const char * const default_read_only[] = {
        ".git/config", ".git/hooks", ".gitmodules", ".claude", ".codex", ".devcontainer", ".idea", ".mcp.json",
        ".vscode", ".loop/config.json",
};

/* Masked files that a tool on the host also runs (direnv sources .envrc on cd): besides masked, they
 * must not appear or change. */
static const char * const default_masked_auto_run[] = {
        ".envrc",
};

/* git's control surface in one git dir: every file it reads configuration, hooks, excludes and
 * attributes or other object stores from. A planted core.fsmonitor or hook runs on the human's next
 * git status; a commondir pointing into the tree brings a config of the agent's along. */
static const char * const git_control_files[] = {
        "config", "config.worktree", "commondir", "hooks", "info", "objects/info/alternates",
        "objects/info/http-alternates",
};
/* What a linked worktree's private git dir (worktrees/NAME) holds that steers git. */
static const char * const git_worktree_control_files[] = {
        "commondir", "config.worktree",
};

/* Below the work dir: credentials a project tends to keep next to its code are masked. */
static const char * const default_masked[] = {
        ".env", ".envrc", ".npmrc", ".aws", ".kube", ".docker/config.json", ".netrc", ".pgpass", ".pypirc",
        ".cargo/credentials.toml",
};

/* The engines' own defaults (Docker replaces its list with ours when MaskedPaths is given, so they are
 * repeated; Podman's /sys/dev/block and /sys/fs/selinux too, so a Docker run hides what a Podman run does)
 * and the reference's: kernel symbols and memory, module and device lists, the sysrq trigger, debug,
 * tracing and security file systems, bpf pins, firmware and DMI data; and /proc/interrupts, whose per-CPU
 * counts are a timing side channel on the host's devices (keystrokes included). The list is meson.build's `dockerproxy_template` masked paths (config-build.h), the one source the
 * Docker API proxy's unit template and the generator read too: colon-separated absolute paths. */
static const char default_kernel[] = DOCKERPROXY_TEMPLATE_MASKED_PATHS;

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

#define PROTECTED_GIT_POINTER_MAX 4096U   /* a .git file or a commondir: one path */
#define PROTECTED_GIT_DIRS_MAX 256U       /* modules and worktrees walked in one repository */
#define PROTECTED_GIT_DEPTH_MAX 8U        /* nesting of module names (a/b/c) and modules of modules */
#define PROTECTED_LINK_HOPS_MAX 40U       /* links followed on one walk: the kernel's MAXSYMLINKS */

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
                defaults = NULL, n = 0, configured = NULL;
                for (const char *p = default_kernel, *e; *p; p = *e ? e + 1 : e) {
                        _cleanup_free_ char *path = NULL;

                        e = strchrnul(p, ':');
                        if (!(path = strndup(p, (size_t) (e - p))))
                                return -ENOMEM;
                        if ((r = list_add(&l, path, c->unmask_paths)) < 0)
                                return r;
                }
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

/* The absolute destination of a writable mount spec, or NULL (read-only, ~, malformed). */
static char *mount_writable_destination(const char *spec) {
        const char *c1 = strchr(spec, ':'), *c2;

        if (!c1 || c1[1] != '/')
                return NULL;
        c2 = strchr(c1 + 1, ':');
        if (c2 && comma_list_contains(c2 + 1, SIZE_MAX, "ro"))
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

/* The directory the work dir's bind mount brings into the container: parent_dir when the work dir lies
 * inside it (a worktree's objects live in the main checkout), else the work dir. Clean and absolute. */
int protected_paths_mount_root(const LoopConfig *c, char **ret) {
        _cleanup_free_ char *wd = NULL, *parent = NULL;

        if (isempty(c->work_dir) || c->work_dir[0] != '/')
                return -EINVAL;
        wd = path_clean(c->work_dir);
        if (!wd)
                return -ENOMEM;
        if (c->parent_dir && c->parent_dir[0] == '/') {
                parent = path_clean(c->parent_dir);
                if (!parent)
                        return -ENOMEM;
                if (path_is_inside(wd, parent)) {
                        *ret = TAKE_PTR(parent);
                        return 0;
                }
        }
        *ret = TAKE_PTR(wd);
        return 0;
}

/* The one path a .git file or a commondir file holds, made absolute against base and resolved
 * (realpath: the host's view, symlinks followed). NULL in *ret when there is none or it does not exist. */
static int git_pointer_read(const char *file, const char *prefix, const char *base, char **ret) {
        _cleanup_free_ char *text = NULL, *joined = NULL;
        size_t n;
        char *v;
        int r;

        *ret = NULL;
        r = read_full_file_at(AT_FDCWD, file, PROTECTED_GIT_POINTER_MAX, true, &text, &n);
        if (r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EBADFD || r == -EFBIG)
                return 0;
        if (r < 0)
                return r;
        v = text;
        if (prefix) {
                if (!startswith(v, prefix))
                        return 0;
                v += strlen(prefix);
        }
        v[strcspn(v, "\r\n")] = 0;
        if (isempty(v))
                return 0;
        if (v[0] != '/' && asprintf(&joined, "%s/%s", base, v) < 0)
                return -ENOMEM;
        *ret = realpath(joined ?: v, NULL);
        if (!*ret && errno == ENOMEM)
                return -ENOMEM;
        return 0;
}

/* Where the symbolic link path leads, walked as the kernel walks a name: each link on the way followed
 * (PROTECTED_LINK_HOPS_MAX of them at most, a loop included: -ELOOP), ".." of an existing directory its
 * real parent. From the first missing component on the rest is joined lexically, a ".." there taken back
 * as the kernel would once those directories exist: the name a dangling link (.git/hooks -> ../.githooks
 * with no .githooks yet) will lead to when the agent creates it. The existing part is physical, as
 * realpath() spells it, so a target that exists comes out as realpath()'s. -ENOTDIR when something other
 * than a directory stands on the way, -ENAMETOOLONG beyond PATH_MAX. path is absolute and clean. The
 * links followed after path itself go to *ret_links (physical paths; may be NULL): the host's tools walk
 * them again, so one pointed elsewhere would lead them elsewhere. */
static int link_walk(const char *path, char **ret, char ***ret_links) {
        _cleanup_free_ char *parent = NULL, *real = NULL, *rest = NULL;
        char cur[PATH_MAX + 1];
        size_t n, exist;                /* cur[0..n) is the walk so far ("" for /), cur[0..exist) exists */
        unsigned hops = 1;
        const char *s;
        int r;

        if (!(parent = strndup(path, (size_t) (strrchr(path, '/') - path))))
                return -ENOMEM;
        if (!(real = realpath(isempty(parent) ? "/" : parent, NULL)))
                return -errno;
        if ((r = readlinkat_malloc(AT_FDCWD, path, &rest)) < 0)
                return r;
        n = exist = streq(real, "/") ? 0 : strlen(real);
        if (n > PATH_MAX)
                return -ENAMETOOLONG;
        memcpy(cur, real, n);
        if (rest[0] == '/')
                n = exist = 0;

        for (s = rest; *s;) {
                _cleanup_free_ char *link = NULL, *next = NULL;
                size_t l;
                struct stat st;

                if (*s == '/') {
                        s++;
                        continue;
                }
                l = strcspn(s, "/");
                if (l == 1 && s[0] == '.') {
                        s += l;
                        continue;
                }
                if (l == 2 && s[0] == '.' && s[1] == '.') {
                        /* Above an existing directory its real parent (cur is physical there); in the
                         * missing part the directory that will hold it. */
                        while (n > 0 && cur[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--;
                        exist = MIN(exist, n);
                        s += l;
                        continue;
                }
                if (n + 1 + l > PATH_MAX)
                        return -ENAMETOOLONG;
                cur[n] = '/';
                memcpy(cur + n + 1, s, l);
                cur[n + 1 + l] = 0;
                s += l;
                if (exist < n) {                /* below a missing directory: nothing there yet */
                        n += 1 + l;
                        continue;
                }
                if (lstat(cur, &st) < 0) {
                        if (errno != ENOENT)
                                return -errno;
                        n += 1 + l;             /* the first missing component */
                        continue;
                }
                if (!S_ISLNK(st.st_mode)) {
                        n = exist = n + 1 + l;
                        continue;
                }
                if (++hops > PROTECTED_LINK_HOPS_MAX)
                        return -ELOOP;
                if (ret_links && !strv_contains(*ret_links, cur) && strv_extend(ret_links, cur) < 0)
                        return -ENOMEM;
                if ((r = readlinkat_malloc(AT_FDCWD, cur, &link)) < 0)
                        return r;
                if (link[0] == '/')
                        n = exist = 0;
                if (asprintf(&next, "%s/%s", link, s) < 0)
                        return -ENOMEM;
                free(rest);
                s = rest = TAKE_PTR(next);
        }
        if (n == 0)
                cur[n++] = '/';
        cur[n] = 0;
        *ret = strdup(cur);
        return *ret ? 0 : -ENOMEM;
}

/* p (physical) spelt below root as root is spelt (root may itself lie below a symlink, /var/tmp on some
 * hosts): what the container's mounts and the lists name. Outside root it stays as it is. */
static int spell_below_root(const char *root, const char *real_root, char **p) {
        char *v;

        if (!path_is_inside(*p, real_root))
                return 0;
        if (!(v = path_join_clean(root, *p + strlen(real_root))))
                return -ENOMEM;
        free(*p);
        *p = v;
        return 0;
}

/* Where the symbolic link path leads (link_walk(): every link followed, a missing rest joined lexically),
 * and the links on the way (may be NULL), spelt below root as root is spelt. */
static int link_resolve(const char *root, const char *path, char **ret, char ***ret_links) {
        _cleanup_free_ char *target = NULL, *real_root = NULL;
        _cleanup_strv_free_ char **links = NULL;
        int r;

        *ret = NULL;
        if ((r = link_walk(path, &target, ret_links ? &links : NULL)) < 0)
                return r;
        if (!(real_root = realpath(root, NULL)))
                return -errno;
        if ((r = spell_below_root(root, real_root, &target)) < 0)
                return r;
        for (size_t i = 0; links && links[i]; i++)
                if ((r = spell_below_root(root, real_root, &links[i])) < 0)
                        return r;
        *ret = TAKE_PTR(target);
        if (ret_links)
                *ret_links = TAKE_PTR(links);
        return 0;
}

static int list_add_inside(char ***l, const char *root, const char *dir, const char *name) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        if (!path_is_inside(p, root) || strv_contains(*l, p))
                return 0;
        return strv_extend(l, p);
}

static int git_dir_add(char ***l, const char *root, const char *git_dir, const char * const *files, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = list_add_inside(l, root, git_dir, files[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every git dir below dir (a modules directory: names may hold slashes, and modules have modules), each
 * recognised by its HEAD; *budget caps the walk. */
static int git_modules_add(char ***l, const char *root, const char *dir, unsigned depth, unsigned *budget) {
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (depth >= PROTECTED_GIT_DEPTH_MAX)
                return 0;
        r = opendir_at(AT_FDCWD, dir, O_NOFOLLOW, &d);
        if (r < 0)
                return r == -ENOENT || r == -ENOTDIR || r == -ELOOP ? 0 : r;
        while (r >= 0 && (de = readdir(d))) {
                _cleanup_free_ char *child = NULL, *head = NULL, *sub = NULL;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (*budget == 0)
                        break;
                (*budget)--;
                if (asprintf(&child, "%s/%s", dir, de->d_name) < 0 || asprintf(&head, "%s/HEAD", child) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (lstat(child, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (lstat(head, &st) < 0) {
                        r = git_modules_add(l, root, child, depth + 1, budget);
                        continue;
                }
                r = git_dir_add(l, root, child, git_control_files, ELEMENTSOF(git_control_files));
                if (r >= 0 && asprintf(&sub, "%s/modules", child) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        r = git_modules_add(l, root, sub, depth + 1, budget);
        }
        closedir(d);
        return r;
}

static int git_worktrees_add(char ***l, const char *root, const char *common_dir, unsigned *budget) {
        _cleanup_free_ char *dir = NULL;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (asprintf(&dir, "%s/worktrees", common_dir) < 0)
                return -ENOMEM;
        r = opendir_at(AT_FDCWD, dir, O_NOFOLLOW, &d);
        if (r < 0)
                return r == -ENOENT || r == -ENOTDIR || r == -ELOOP ? 0 : r;
        while (r >= 0 && (de = readdir(d))) {
                _cleanup_free_ char *child = NULL;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (*budget == 0)
                        break;
                (*budget)--;
                if (asprintf(&child, "%s/%s", dir, de->d_name) < 0)
                        r = -ENOMEM;
                else
                        r = git_dir_add(l, root, child, git_worktree_control_files,
                                        ELEMENTSOF(git_worktree_control_files));
        }
        closedir(d);
        return r;
}

int protected_paths_git(const char *work_dir, const char *root, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *dot_git = NULL, *git_dir = NULL, *commondir_file = NULL, *common = NULL;
        unsigned budget = PROTECTED_GIT_DIRS_MAX;
        struct stat st;
        int r;

        if (asprintf(&dot_git, "%s/.git", work_dir) < 0)
                return -ENOMEM;
        if (lstat(dot_git, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                /* No repository yet: what git init would make must not appear. */
                if (!(git_dir = strdup(dot_git)))
                        return -ENOMEM;
        } else if (S_ISDIR(st.st_mode)) {
                if (!(git_dir = strdup(dot_git)))
                        return -ENOMEM;
        } else if (S_ISREG(st.st_mode)) {
                /* A worktree or a submodule: the file is the pointer, the repository is elsewhere. */
                if ((r = list_add_inside(&l, root, work_dir, ".git")) < 0)
                        return r;
                r = git_pointer_read(dot_git, "gitdir: ", work_dir, &git_dir);
                if (r < 0)
                        return r;
        } else if (S_ISLNK(st.st_mode)) {
                /* A symbolic link (repo's checkouts: .git -> .repo/projects/NAME.git): git follows it, so
                 * the repository it names is protected where it is; the link is the tripwire's to keep. */
                struct stat target;

                if ((r = list_add_inside(&l, root, work_dir, ".git")) < 0)
                        return r;
                if (stat(dot_git, &target) >= 0 && S_ISDIR(target.st_mode)) {
                        if ((r = link_resolve(root, dot_git, &git_dir, NULL)) < 0)
                                return r;
                } else if (stat(dot_git, &target) >= 0 && S_ISREG(target.st_mode) &&
                           (r = git_pointer_read(dot_git, "gitdir: ", work_dir, &git_dir)) < 0)
                        return r;
        }

        if (git_dir) {
                if ((r = git_dir_add(&l, root, git_dir, git_control_files, ELEMENTSOF(git_control_files))) < 0)
                        return r;
                if (asprintf(&commondir_file, "%s/commondir", git_dir) < 0)
                        return -ENOMEM;
                if ((r = git_pointer_read(commondir_file, NULL, git_dir, &common)) < 0)
                        return r;
                if (!common && !(common = strdup(git_dir)))
                        return -ENOMEM;
                if (!streq(common, git_dir) &&
                    (r = git_dir_add(&l, root, common, git_control_files, ELEMENTSOF(git_control_files))) < 0)
                        return r;
                if ((r = git_worktrees_add(&l, root, common, &budget)) < 0)
                        return r;
                {
                        _cleanup_free_ char *modules = NULL;
                        if (asprintf(&modules, "%s/modules", common) < 0)
                                return -ENOMEM;
                        if ((r = git_modules_add(&l, root, modules, 0, &budget)) < 0)
                                return r;
                }
        }
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

int protected_path_link_target(const char *root, const char *path, char **ret) {
        return link_resolve(root, path, ret, NULL);
}

/* A guarded path that is a symbolic link (.git/hooks -> ../.githooks, .envrc -> scripts/env.sh, as a
 * repository may carry them) is not mounted over (the engine would follow it on its own), but the host's
 * tools follow it: what it points at is guarded too, resolved once here, when it lies in the mount root.
 * A dangling link's target is guarded in the form link_walk() gives it, the name the agent would have to
 * create: missing, it is the tripwire's to keep missing and the gate's to refuse, like any missing
 * protected path. A link to the root itself or above it (.git/hooks -> ..) would make the whole tree the
 * hooks dir: -ELOOP; so is a loop of links (more than the kernel follows: fail closed rather than guess),
 * and a target that cannot be worked out (a file where a directory belongs: -ENOTDIR) stops the run too.
 * A target outside the root is not in the container (the link itself stays guarded by the tripwire). The
 * links followed on the way that lie in the root are guarded too, as links. */
static int guarded_add_link_targets(const char *root, char ***l) {
        size_t n = strv_length(*l);

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *target = NULL;
                _cleanup_strv_free_ char **links = NULL;
                struct stat st;
                int r;

                if (lstat((*l)[i], &st) < 0 || !S_ISLNK(st.st_mode))
                        continue;
                r = link_resolve(root, (*l)[i], &target, &links);
                if (r == -ENOMEM)
                        return r;
                if (r == -ELOOP)
                        return log_error_errno(r, "The protected path %s is a symbolic link that leads through more than "
                                               "%u links (a loop?): not running.", (*l)[i], PROTECTED_LINK_HOPS_MAX);
                if (r < 0)
                        return log_error_errno(r, "Cannot tell where the protected path %s, a symbolic link, leads: %m; "
                                               "not running.", (*l)[i]);
                if (path_is_inside(root, target))
                        return log_error_errno(ELOOP, "The protected path %s is a symbolic link to %s, which contains "
                                               "the whole mounted tree %s: not running.", (*l)[i], target, root);
                /* The links on the way in the tree (.claude -> chain -> settings/claude): kept as links,
                 * so that none can be pointed elsewhere for the host's tools to follow. */
                STRV_FOREACH(k, links)
                        if (path_is_inside(*k, root) && !streq(*k, root) && !strv_contains(*l, *k) &&
                            strv_extend(l, *k) < 0)
                                return -ENOMEM;
                if (!path_is_inside(target, root) || strv_contains(*l, target))
                        continue;
                if (strv_consume(l, TAKE_PTR(target)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int protected_paths_guarded(const LoopConfig *c, char **ret_root, char ***ret) {
        _cleanup_strv_free_ char **ro = NULL, **git = NULL, **l = NULL;
        _cleanup_free_ char *root = NULL, *wd = NULL;
        int r;

        if ((r = protected_paths_mount_root(c, &root)) < 0)
                return r;
        wd = path_clean(c->work_dir);
        if (!wd)
                return -ENOMEM;
        if ((r = protected_paths_list(c, PROTECTED_READ_ONLY, &ro)) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(default_masked_auto_run); i++)
                if ((r = list_add(&ro, default_masked_auto_run[i], c->unmask_paths)) < 0)
                        return r;
        STRV_FOREACH(p, ro)
                if ((r = list_add_inside(&l, root, streq(wd, "/") ? "" : wd, *p)) < 0)
                        return r;
        if ((r = protected_paths_git(wd, root, &git)) < 0)
                return r;
        STRV_FOREACH(p, git) {
                /* unmask_paths names work-dir paths; it gives back git's control files too. */
                const char *rel = path_is_inside(*p, wd) && !streq(*p, wd) ? *p + strlen(wd) + 1 : NULL;
                if (rel && strv_contains(c->unmask_paths, rel))
                        continue;
                if (!strv_contains(l, *p) && (r = strv_extend(&l, *p)) < 0)
                        return r;
        }
        if ((r = guarded_add_link_targets(root, &l)) < 0)
                return r;
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret_root = TAKE_PTR(root);
        *ret = TAKE_PTR(l);
        return 0;
}

/* Names masked wherever they are in the work dir (the root's are in default_masked already). */
static const char * const secret_files[] = { ".env", ".envrc", ".npmrc", ".netrc", ".pgpass", ".pypirc" };
static const char * const secret_dirs[] = { ".aws", ".kube" };

/* name: as stored; folded: the directory folds case, so .ENV is what .env opens (ASCII; the kernel's
 * Unicode folding is caught by the lookups of SecretsFolded). */
static bool secret_name(const char *name, bool is_dir, bool folded) {
        _cleanup_free_ char *lower = folded ? ascii_strlower(strdup(name)) : NULL;

        if (folded && !lower)
                return true;            /* out of memory: masked rather than missed */
        if (lower)
                name = lower;
        if (is_dir) {
                for (size_t i = 0; i < ELEMENTSOF(secret_dirs); i++)
                        if (streq(name, secret_dirs[i]))
                                return true;
                return false;
        }
        if (startswith(name, ".env."))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(secret_files); i++)
                if (streq(name, secret_files[i]))
                        return true;
        return false;
}

/* In a directory that folds case, what the kernel itself finds under each secret name (.kube opens a
 * directory stored as ".\u212aube", a KELVIN SIGN for the k, there): an entry that is one of these is a
 * secret by whatever name. */
typedef struct SecretsFolded {
        bool folds;
        size_t n;
        struct { dev_t dev; ino_t ino; } found[ELEMENTSOF(secret_files) + ELEMENTSOF(secret_dirs)];
} SecretsFolded;

static void secrets_folded_init(int dir_fd, SecretsFolded *ret) {
        *ret = (SecretsFolded) {};
        if (!casefold_possible())
                return;
        /* One whose flags cannot be read is taken to fold: matched ignoring case rather than missed. */
        ret->folds = dir_fd_casefolded(dir_fd) != 0;
        if (!ret->folds)
                return;
        for (size_t i = 0; i < ELEMENTSOF(secret_files) + ELEMENTSOF(secret_dirs); i++) {
                const char *name = i < ELEMENTSOF(secret_files) ? secret_files[i] : secret_dirs[i - ELEMENTSOF(secret_files)];
                struct stat st;

                if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        ret->found[ret->n].dev = st.st_dev;
                        ret->found[ret->n].ino = st.st_ino;
                        ret->n++;
                }
        }
}

static bool secrets_folded_has(const SecretsFolded *f, const struct stat *st) {
        for (size_t i = 0; i < f->n; i++)
                if (f->found[i].dev == st->st_dev && f->found[i].ino == st->st_ino)
                        return true;
        return false;
}

static int secrets_walk(int dir_fd, const char *path, unsigned depth, unsigned *budget, char ***l) {
        DIR *d;
        struct dirent *de;
        int r = 0;

        SecretsFolded folded;

        r = opendir_at(dir_fd, ".", 0, &d);
        if (r < 0)
                return r;
        secrets_folded_init(dirfd(d), &folded);
        while (r >= 0 && *budget > 0 && (de = readdir(d))) {
                _cleanup_free_ char *child = NULL;
                _cleanup_close_ int cfd = -EBADF;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    (folded.folds ? ascii_strcaseeq(de->d_name, ".git") : streq(de->d_name, ".git")))
                        continue;
                (*budget)--;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&child, "%s/%s", path, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (secret_name(de->d_name, S_ISDIR(st.st_mode), folded.folds) || secrets_folded_has(&folded, &st)) {
                        if (strv_length(*l) >= PROTECTED_SECRETS_MAX) {
                                r = -E2BIG;
                                break;
                        }
                        r = strv_consume(l, TAKE_PTR(child));
                        continue;
                }
                if (!S_ISDIR(st.st_mode) || depth + 1 >= PROTECTED_SECRETS_DEPTH_MAX)
                        continue;
                cfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd >= 0)
                        r = secrets_walk(cfd, child, depth + 1, budget, l);
        }
        closedir(d);
        return r;
}

int protected_paths_secrets_found(const char *work_dir, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_close_ int fd = -EBADF;
        unsigned budget = PROTECTED_SECRETS_WALK_MAX;
        int r;

        fd = open(work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = secrets_walk(fd, streq(work_dir, "/") ? "" : work_dir, 0, &budget, &l);
        if (r < 0)
                return r;
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return budget == 0 ? 1 : 0;
}
