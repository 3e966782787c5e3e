/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <openssl/crypto.h>

#include "config-build.h"
#include "dirent-util.h"
#include "fs-util.h"
#include "gate-token.h"
#include "io-util.h"
#include "macro.h"
#include "random-util.h"
#include "string-util.h"

const char *loop_runtime_dir(void) {
        const char *e = getenv("LOOP_RUNTIME_DIR");
        return isempty(e) ? LOOP_RUNTIME_DIR : e;
}

static int token_dir_path(const char *channel, const char *dirname, char **ret);

int gate_token_dir(const char *channel, char **ret) {
        return token_dir_path(channel, GATE_TOKENS_DIRNAME, ret);
}

static int token_dir_path(const char *channel, const char *dirname, char **ret) {
        char *p;

        if (asprintf(&p, "%s/%s/%s", loop_runtime_dir(), channel, dirname) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

bool gate_container_id_is_valid(const char *id) {
        return ref_name_is_valid(id, GATE_CONTAINER_ID_MAX);
}

bool gate_token_is_well_formed(const char *token) {
        if (!token || strlen(token) != GATE_TOKEN_HEX_LEN)
                return false;
        for (const char *p = token; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

bool gate_token_equal(const char *a, const char *b) {
        size_t n = strlen(a);

        if (n != strlen(b))
                return false;
        return CRYPTO_memcmp(a, b, n) == 0;
}

int gate_token_generate(char ret[static GATE_TOKEN_HEX_LEN + 1]) {
        unsigned char bytes[GATE_TOKEN_BYTES];
        int r;

        r = random_bytes(bytes, sizeof(bytes));
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(bytes); i++)
                sprintf(ret + 2 * i, "%02x", bytes[i]);
        ret[GATE_TOKEN_HEX_LEN] = 0;
        OPENSSL_cleanse(bytes, sizeof(bytes));
        return 0;
}

/* The owner of token files: the helpers run as user loop. */
static void token_owner(uid_t *ret_uid, gid_t *ret_gid) {
        struct passwd *pw = geteuid() == 0 ? getpwnam(GATE_TOKEN_USER) : NULL;

        *ret_uid = pw ? pw->pw_uid : geteuid();
        *ret_gid = pw ? pw->pw_gid : getegid();
}

/* mkdir -p of dir: parents 0755, the last component mode and owned by uid:gid when we create it (and
 * when it exists with another owner, as root: the runner may have made it before user loop existed). */
static int token_dir_make(const char *dir, mode_t mode, uid_t uid, gid_t gid) {
        _cleanup_free_ char *p = strdup(dir);
        struct stat st;

        if (!p)
                return -ENOMEM;
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        if (lstat(p, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (geteuid() == 0 && (st.st_uid != uid || st.st_gid != gid) && lchown(p, uid, gid) < 0)
                return -errno;
        if ((st.st_mode & 07777) != mode && chmod(p, mode) < 0)
                return -errno;
        return 0;
}

static int token_dir_open(const char *channel, const char *dirname, bool create, int *ret_fd) {
        _cleanup_free_ char *dir = NULL;
        uid_t uid;
        gid_t gid;
        int r;

        r = token_dir_path(channel, dirname, &dir);
        if (r < 0)
                return r;
        if (create) {
                token_owner(&uid, &gid);
                r = token_dir_make(dir, 0700, uid, gid);
                if (r < 0)
                        return r;
        }
        /* anyone else able to write here could plant a token of their own */
        return dir_open_unshared(dir, ret_fd);
}

int gate_token_dir_open(const char *channel, int *ret_fd) {
        return token_dir_open(channel, GATE_TOKENS_DIRNAME, false, ret_fd);
}

int loop_token_dir_open(const char *channel, const char *dirname, int *ret_fd) {
        return token_dir_open(channel, dirname, false, ret_fd);
}

int gate_token_write(const char *channel, const char *container, const char *token) {
        return loop_token_write(channel, GATE_TOKENS_DIRNAME, container, token);
}

int loop_token_write(const char *channel, const char *dirname, const char *container, const char *token) {
        _cleanup_close_ int dir_fd = -EBADF, fd = -EBADF;
        char tmp[GATE_CONTAINER_ID_MAX + 32];
        uid_t uid;
        gid_t gid;
        int r;

        if (!gate_container_id_is_valid(container) || !gate_token_is_well_formed(token))
                return -EINVAL;
        r = token_dir_open(channel, dirname, true, &dir_fd);
        if (r < 0)
                return r;

        static unsigned counter;
        snprintf(tmp, sizeof(tmp), ".#%s.%d.%u", container, (int) getpid(), counter++);
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        if (fd < 0)
                return -errno;
        token_owner(&uid, &gid);
        if ((geteuid() == 0 && fchown(fd, uid, gid) < 0) ||
            (r = loop_write(fd, token, GATE_TOKEN_HEX_LEN)) < 0 ||
            fsync(fd) < 0) {
                r = r < 0 ? r : -errno;
                (void) unlinkat(dir_fd, tmp, 0);
                return r;
        }
        if (renameat(dir_fd, tmp, dir_fd, container) < 0) {
                r = -errno;
                (void) unlinkat(dir_fd, tmp, 0);
                return r;
        }
        return 0;
}

int gate_token_remove(const char *channel, const char *container) {
        return loop_token_remove(channel, GATE_TOKENS_DIRNAME, container);
}

int loop_token_remove(const char *channel, const char *dirname, const char *container) {
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        if (!gate_container_id_is_valid(container))
                return -EINVAL;
        r = token_dir_open(channel, dirname, false, &dir_fd);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (unlinkat(dir_fd, container, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

bool gate_token_exists_at(int dir_fd, const char *container) {
        struct stat st;

        if (!gate_container_id_is_valid(container))
                return false;
        return fstatat(dir_fd, container, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISREG(st.st_mode);
}

int gate_token_find_at(int dir_fd, const char *token, char **ret_container) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *found = NULL;
        struct dirent *de;
        size_t n = 0;
        int r;

        if (!gate_token_is_well_formed(token))
                return -EPERM;

        r = opendir_at(dir_fd, ".", 0, &d);
        if (r < 0)
                return r;

        /* Every file is compared, also after a match, so the time taken does not say which one it was. */
        while ((de = readdir(d)) && n < GATE_TOKENS_MAX) {
                _cleanup_free_ char *content = NULL;
                size_t size;

                if (!gate_container_id_is_valid(de->d_name))
                        continue;       /* ".", "..", temporary files */
                n++;
                if (read_full_file_at(dirfd(d), de->d_name, GATE_TOKEN_HEX_LEN + 1, true, &content, &size) < 0)
                        continue;
                if (size > 0 && content[size - 1] == '\n')
                        content[--size] = 0;
                if (size != GATE_TOKEN_HEX_LEN)
                        continue;
                if (gate_token_equal(content, token) && !found) {
                        found = strdup(de->d_name);
                        if (!found)
                                return -ENOMEM;
                }
                OPENSSL_cleanse(content, size);
        }
        if (!found)
                return -EPERM;
        *ret_container = TAKE_PTR(found);
        return 0;
}
