/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "dirent-util.h"
#include "gate-exec-floor.h"
#include "log.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* One file for many commands, chosen by argv[0]: denying the file would deny them all. */
static const char * const multi_call[] = { "busybox", "toybox", "coreutils", "box64" };

static bool is_multi_call(const char *path) {
        const char *base = strrchr(path, '/');

        base = base ? base + 1 : path;
        for (size_t i = 0; i < ELEMENTSOF(multi_call); i++)
                if (streq(base, multi_call[i]))
                        return true;
        return false;
}

static int add_files_of(const char *name, const char *path_env, char ***files, char ***skipped) {
        _cleanup_free_ char *dirs = strdup(path_env ?: DEFAULT_PATH);
        char *save = NULL;
        int r;

        if (!dirs)
                return -ENOMEM;
        for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *cand = NULL, *real = NULL;
                struct stat st;

                if (d[0] != '/')
                        continue;       /* a relative PATH entry means the cwd of the moment */
                if (asprintf(&cand, "%s/%s", d, name) < 0)
                        return -ENOMEM;
                real = realpath(cand, NULL);
                if (!real || stat(real, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (is_multi_call(real)) {
                        if (!strv_contains(*skipped, name) && (r = strv_extend(skipped, name)) < 0)
                                return r;
                        continue;
                }
                if (strv_contains(*files, real))
                        continue;
                if (strv_length(*files) >= GATE_EXEC_FLOOR_FILES_MAX)
                        return -E2BIG;
                if ((r = strv_consume(files, TAKE_PTR(real))) < 0)
                        return r;
        }
        return 0;
}

int gate_exec_floor_files(const GatePolicy *p, const char *path_env, char ***ret_files, char ***ret_skipped) {
        _cleanup_strv_free_ char **names = NULL, **files = NULL, **skipped = NULL;
        int r;

        if ((r = gate_policy_denied_commands(p, &names)) < 0)
                return r;
        STRV_FOREACH(n, names)
                if ((r = add_files_of(*n, path_env, &files, &skipped)) < 0)
                        return r;
        if ((!files && !(files = calloc(1, sizeof(char *)))) || (!skipped && !(skipped = calloc(1, sizeof(char *)))))
                return -ENOMEM;
        *ret_files = TAKE_PTR(files);
        *ret_skipped = TAKE_PTR(skipped);
        return 0;
}

static int grant(int ruleset, int fd, unsigned *n_rules) {
        struct landlock_path_beneath_attr pb = { .allowed_access = LANDLOCK_ACCESS_FS_EXECUTE, .parent_fd = fd };

        if (*n_rules >= GATE_EXEC_FLOOR_RULES_MAX)
                return -E2BIG;
        (*n_rules)++;
        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                return -errno;
        return 0;
}

/* Grants execute on every entry of dir except the denied files, descending into the directories that
 * lead to one; symbolic links get nothing (Landlock sees the file they lead to, which has its rule). */
static int grant_dir(int ruleset, const char *dir, char * const *files, unsigned depth, unsigned *n_rules) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (fd < 0)
                return log_debug_errno(errno, "Cannot list %s for the exec floor: %m", dir);
        if (depth > 64)
                return -ELOOP;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF;
        while (r >= 0 && (de = readdir(d))) {
                _cleanup_free_ char *child = NULL;
                _cleanup_close_ int cfd = -EBADF;
                bool on_way = false, denied = false;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (asprintf(&child, "%s/%s", streq(dir, "/") ? "" : dir, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                STRV_FOREACH(f, files) {
                        denied = denied || streq(*f, child);
                        on_way = on_way || (path_is_inside(*f, child) && !streq(*f, child));
                }
                if (denied)
                        continue;
                cfd = openat(dirfd(d), de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0 || fstat(cfd, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
                        continue;
                if (on_way && S_ISDIR(st.st_mode))
                        r = grant_dir(ruleset, child, files, depth + 1, n_rules);
                else
                        r = grant(ruleset, cfd, n_rules);
        }
        closedir(d);
        return r;
}

int gate_exec_floor_ruleset(char * const *files, int *ret_fd) {
        struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE };
        _cleanup_close_ int ruleset = -EBADF;
        unsigned n_rules = 0;
        int r;

        ruleset = (int) syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
        if (ruleset < 0)
                return errno == ENOSYS || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;
        r = grant_dir(ruleset, "/", files, 0, &n_rules);
        if (r < 0)
                return r;
        log_debug("Exec floor: %u Landlock rules keep %zu files from executing.", n_rules, strv_length((char **) files));
        *ret_fd = TAKE_FD(ruleset);
        return 0;
}

int gate_exec_floor_enforce(int ruleset_fd) {
        if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
                return -errno;
        return 0;
}
