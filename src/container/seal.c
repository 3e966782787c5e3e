/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "path-util.h"
#include "seal.h"
#include "string-util.h"
#include "strv.h"

/* The kernel's Landlock ABI past what Debian 12's headers describe (ABI 2). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#define SEAL_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#else
#define SEAL_RESTRICT_SELF_LOG_NEW_EXEC_ON LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define SEAL_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define SEAL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SEAL_SCOPE_SIGNAL (1ULL << 1)
#define SEAL_RULE_NET_PORT 2

struct seal_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;    /* ABI 4 */
        uint64_t scoped;                /* ABI 6 */
};

struct seal_net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
};

#define ACCESS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define ACCESS_WRITE_ABI1                                                                               \
        (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |      \
         LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |   \
         LANDLOCK_ACCESS_FS_MAKE_SYM)
/* The rights a rule on a file (not a directory) may carry. */
#define ACCESS_FILE                                                                                     \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |     \
         LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

static const char * const base_read_only[] = { "/" };
/* /opt: add-on software, as operators mount tools read-only into the container (the Docker CLI, say). */
static const char * const base_read_exec[] = { "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/opt" };
static const char * const base_write_noexec[] = { "/dev", "/proc" };
static const char * const base_write_exec[] = { "/tmp", "/var/tmp", "/home" };

/* Mounts below these never widen the policy: kernel interfaces, the runtime's files, the engine's
 * /etc/hosts and friends. */
static const char * const derive_never[] = { "/dev", "/proc", "/sys", "/run", "/etc" };

void seal_policy_done(SealPolicy *p) {
        for (unsigned t = 0; t < _SEAL_TIER_MAX; t++)
                p->paths[t] = strv_free(p->paths[t]);
        p->n_tcp_ports = 0;
        p->restrict_tcp = false;
}

const char *seal_tier_to_string(SealTier t) {
        static const char * const names[_SEAL_TIER_MAX] = {
                [SEAL_READ_ONLY] = "read_only",
                [SEAL_READ_EXEC] = "read_exec",
                [SEAL_WRITE_NOEXEC] = "write_noexec",
                [SEAL_WRITE_EXEC] = "write_exec",
        };
        return t < _SEAL_TIER_MAX ? names[t] : NULL;
}

int seal_landlock_abi(void) {
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        return abi < 0 ? 0 : (int) abi;
}

const char *seal_abi_refusal(int abi) {
        if (abi <= 0)
                return "Landlock is not available: a kernel of 6.2 or later with \"landlock\" in its lsm= list is needed";
        if (abi < SEAL_ABI_REQUIRED)
                return "the kernel's Landlock is older than ABI 3 (kernel 6.2): file truncation could not be confined";
        return NULL;
}

uint64_t seal_handled_access_fs(int abi) {
        uint64_t a = ACCESS_READ | LANDLOCK_ACCESS_FS_EXECUTE | ACCESS_WRITE_ABI1;

        if (abi >= 2)
                a |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                a |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                a |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return a;
}

uint64_t seal_tier_access(SealTier t, int abi) {
        uint64_t write = ACCESS_WRITE_ABI1, a;

        if (abi >= 2)
                write |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                write |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                write |= LANDLOCK_ACCESS_FS_IOCTL_DEV;

        switch (t) {
        case SEAL_READ_ONLY:    a = ACCESS_READ; break;
        case SEAL_READ_EXEC:    a = ACCESS_READ | LANDLOCK_ACCESS_FS_EXECUTE; break;
        case SEAL_WRITE_NOEXEC: a = ACCESS_READ | write; break;
        case SEAL_WRITE_EXEC:   a = ACCESS_READ | LANDLOCK_ACCESS_FS_EXECUTE | write; break;
        default:                return 0;
        }
        return a & seal_handled_access_fs(abi);
}

/* Absolute, no "." or ".." components, no "//", no trailing "/" (but "/" itself). */
static bool path_is_clean_absolute(const char *p) {
        if (!p || p[0] != '/')
                return false;
        if (streq(p, "/"))
                return true;
        if (strstr(p, "//") || p[strlen(p) - 1] == '/' || strstr(p, "/./") || strstr(p, "/../"))
                return false;
        return !(endswith(p, "/.") || endswith(p, "/.."));
}

/* Adds path to tier t, unless a tier at least as wide already has it; a narrower tier gives it up. */
static int policy_add(SealPolicy *p, SealTier t, const char *path) {
        for (unsigned u = 0; u < _SEAL_TIER_MAX; u++) {
                if (!strv_contains(p->paths[u], path))
                        continue;
                if (u >= t)
                        return 0;
                for (char **s = p->paths[u]; *s; s++)
                        if (streq(*s, path)) {
                                free(*s);
                                memmove(s, s + 1, (strv_length(s + 1) + 1) * sizeof(char *));
                                break;
                        }
        }
        if (strv_length(p->paths[t]) >= SEAL_TIER_PATHS_MAX)
                return -E2BIG;
        return strv_extend(&p->paths[t], path);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *mountinfo_unescape(const char *s, size_t n) {
        char *r = malloc(n + 1), *o = r;

        if (!r)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
                    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *o++ = (char) (((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = 0;
        return r;
}

/* One line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...". The mount point (unescaped) of a read-write
 * mount, NULL in *ret for a read-only one; -EBADMSG for a line that does not parse. */
static int mountinfo_line_writable(const char *line, size_t len, char **ret) {
        const char *f[6];
        size_t fl[6], i = 0, k = 0;

        while (k < 6) {
                while (i < len && line[i] == ' ')
                        i++;
                if (i >= len)
                        return -EBADMSG;
                f[k] = line + i;
                while (i < len && line[i] != ' ')
                        i++;
                fl[k] = (size_t) (line + i - f[k]);
                k++;
        }
        if (comma_list_contains(f[5], fl[5], "ro")) {
                *ret = NULL;
                return 0;
        }
        *ret = mountinfo_unescape(f[4], fl[4]);
        return *ret ? 0 : -ENOMEM;
}

static int policy_add_list(SealPolicy *p, SealTier t, const char * const *l, size_t n) {
        int r;
        for (size_t i = 0; i < n; i++)
                if ((r = policy_add(p, t, l[i])) < 0)
                        return r;
        return 0;
}

int seal_policy_from_mountinfo(const char *mountinfo, const char *work_dir, const char *home, SealPolicy *ret) {
        _cleanup_(seal_policy_done) SealPolicy p = {};
        int r;

        if ((r = policy_add_list(&p, SEAL_READ_ONLY, base_read_only, ELEMENTSOF(base_read_only))) < 0 ||
            (r = policy_add_list(&p, SEAL_READ_EXEC, base_read_exec, ELEMENTSOF(base_read_exec))) < 0 ||
            (r = policy_add_list(&p, SEAL_WRITE_NOEXEC, base_write_noexec, ELEMENTSOF(base_write_noexec))) < 0 ||
            (r = policy_add_list(&p, SEAL_WRITE_EXEC, base_write_exec, ELEMENTSOF(base_write_exec))) < 0)
                return r;

        for (const char *line = mountinfo; line && *line;) {
                size_t len = strcspn(line, "\n");
                _cleanup_free_ char *mp = NULL;
                bool skip = false;

                r = mountinfo_line_writable(line, len, &mp);
                if (r < 0)
                        return r;
                line += len + (line[len] == '\n');
                if (!mp || !path_is_clean_absolute(mp) || streq(mp, "/"))
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(derive_never); i++)
                        skip = skip || path_is_inside(mp, derive_never[i]);
                if (!skip && (r = policy_add(&p, SEAL_WRITE_EXEC, mp)) < 0)
                        return r;
        }

        /* The work dir and HOME are the agent's, whatever covers them. */
        if (path_is_clean_absolute(work_dir) && !streq(work_dir, "/") && (r = policy_add(&p, SEAL_WRITE_EXEC, work_dir)) < 0)
                return r;
        if (path_is_clean_absolute(home) && !streq(home, "/") && (r = policy_add(&p, SEAL_WRITE_EXEC, home)) < 0)
                return r;

        *ret = p;
        p = (SealPolicy) {};
        return 0;
}

int seal_parse_tcp_ports(const char *s, SealPolicy *p) {
        if (isempty(s))
                return -EINVAL;
        if (streq(s, "none")) {
                p->restrict_tcp = true;
                return 0;
        }
        for (const char *c = s;;) {
                size_t n = strcspn(c, ",");

                if (p->n_tcp_ports >= SEAL_TCP_PORTS_MAX)
                        return -EINVAL;
                if (parse_port_full(c, n, false, &p->tcp_ports[p->n_tcp_ports]) < 0)
                        return -EINVAL;
                p->n_tcp_ports++;
                if (!c[n])
                        break;
                c += n + 1;
        }
        p->restrict_tcp = true;
        return 0;
}

int seal_apply(const SealPolicy *p, int abi) {
        struct seal_ruleset_attr attr = { .handled_access_fs = seal_handled_access_fs(abi) };
        _cleanup_close_ int ruleset = -EBADF;
        size_t size = sizeof(uint64_t);

        if (seal_abi_refusal(abi))
                return -EOPNOTSUPP;
        if (abi >= 4 && p->restrict_tcp) {
                attr.handled_access_net = SEAL_ACCESS_NET_CONNECT_TCP;
                size = 2 * sizeof(uint64_t);
        }
        if (abi >= 6) {
                attr.scoped = SEAL_SCOPE_ABSTRACT_UNIX_SOCKET | SEAL_SCOPE_SIGNAL;
                size = sizeof(attr);
        }
        if (p->restrict_tcp && abi < 4)
                log_warning("Landlock ABI %d cannot restrict TCP connections (4 is needed): not restricted.", abi);

        ruleset = (int) syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        if (ruleset < 0)
                return log_error_errno(errno, "Failed to create a Landlock ruleset: %m");

        for (unsigned t = 0; t < _SEAL_TIER_MAX; t++)
                STRV_FOREACH(path, p->paths[t]) {
                        struct landlock_path_beneath_attr pb = { .allowed_access = seal_tier_access(t, abi) };
                        _cleanup_close_ int fd = open(*path, O_PATH | O_CLOEXEC);
                        struct stat st;

                        if (fd < 0) {
                                if (errno == ENOENT || errno == ENOTDIR)
                                        continue;
                                return log_error_errno(errno, "Failed to open %s for the Landlock rule: %m", *path);
                        }
                        if (fstat(fd, &st) < 0)
                                return log_error_errno(errno, "Failed to stat %s: %m", *path);
                        if (!S_ISDIR(st.st_mode))
                                pb.allowed_access &= ACCESS_FILE;
                        pb.parent_fd = fd;
                        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                                return log_error_errno(errno, "Failed to add the Landlock rule for %s (%s): %m",
                                                       *path, seal_tier_to_string(t));
                }

        if (abi >= 4 && p->restrict_tcp)
                for (size_t i = 0; i < p->n_tcp_ports; i++) {
                        struct seal_net_port_attr np = { .allowed_access = SEAL_ACCESS_NET_CONNECT_TCP, .port = p->tcp_ports[i] };
                        if (syscall(SYS_landlock_add_rule, ruleset, SEAL_RULE_NET_PORT, &np, 0) < 0)
                                return log_error_errno(errno, "Failed to add the Landlock rule for TCP port %u: %m",
                                                       (unsigned) p->tcp_ports[i]);
                }

        /* Landlock needs no_new_privs without CAP_SYS_ADMIN; the engine sets it already. */
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(errno, "Failed to set no_new_privs: %m");
        /* ABI 7: without this flag the kernel's audit records of denials stop at the exec of the agent. */
        if (syscall(SYS_landlock_restrict_self, ruleset, abi >= 7 ? SEAL_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0) < 0)
                return log_error_errno(errno, "Failed to enforce the Landlock ruleset: %m");
        return 0;
}

int seal_close_stray_fds(void) {
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return -errno;
        return 0;
}
