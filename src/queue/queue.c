/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include "dirent-util.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "queue.h"
#include "random-util.h"
#include "strv.h"
#include "time-util.h"

#define QUEUE_JSON_DEPTH_MAX 64
#define QUEUE_SESSION_FILE "session"
#define QUEUE_WRITE_TRIES 16U

struct Queue {
        char *path;
        int state_fd;
        int inbox_fd;
        int outbox_fd;
        int failed_fd;
        int tmp_fd;
};

static const struct {
        const char *name;
        mode_t mode;
        size_t offset;
} queue_dirs[] = {
        /* Senders (group loop) create files in tmp/ and rename them into inbox/; the sticky bit keeps them
         * from removing each other's. setgid: files take the queue's group, not the sender's. */
        { "tmp",    03770, offsetof(Queue, tmp_fd) },
        { "inbox",  03770, offsetof(Queue, inbox_fd) },
        /* Only the runner writes results; members of the group read them (`loop outbox`). */
        { "outbox", 02750, offsetof(Queue, outbox_fd) },
        { "failed", 02750, offsetof(Queue, failed_fd) },
};

static uint64_t random_u64(void) {
        uint64_t v = 0;

        if (random_bytes(&v, sizeof v) < 0)     /* no entropy source at all: uniqueness still comes from
                                                 * O_EXCL and noreplace */
                v ^= clock_usec(CLOCK_REALTIME) ^ ((uint64_t) getpid() << 32);
        return v;
}

bool queue_id_valid(const char *id) {
        if (!id || strlen(id) != QUEUE_ID_LEN)
                return false;
        for (size_t i = 0; i < 20; i++)
                if (id[i] < '0' || id[i] > '9')
                        return false;
        /* The microseconds must fit created_usec and leave room to count up. */
        if (strncmp(id, "09223372036854775807", 20) > 0)
                return false;
        if (id[20] != '-')
                return false;
        for (size_t i = 21; i < QUEUE_ID_LEN; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

/* "<id>.json" -> id */
static bool name_to_id(const char *name, char ret[static QUEUE_ID_LEN + 1]) {
        if (strlen(name) != QUEUE_ID_LEN + 5 || !streq(name + QUEUE_ID_LEN, ".json"))
                return false;
        memcpy(ret, name, QUEUE_ID_LEN);
        ret[QUEUE_ID_LEN] = 0;
        return queue_id_valid(ret);
}

static uint64_t id_usec(const char *id) {
        return strtoull(id, NULL, 10);  /* 20 digits: the id is valid, so this cannot fail */
}

static void id_make(uint64_t usec, char ret[static QUEUE_ID_LEN + 1]) {
        snprintf(ret, QUEUE_ID_LEN + 1, "%020" PRIu64 "-%08" PRIx32, usec, (uint32_t) random_u64());
}

static bool text_has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

static bool sender_valid(const char *s) {
        return !isempty(s) && strlen(s) <= QUEUE_SENDER_MAX && !text_has_control(s);
}

bool queue_session_id_valid(const char *s) {
        return !isempty(s) && strlen(s) <= QUEUE_SESSION_ID_MAX && s[0] != '-' && !strchr(s, '/') &&
                !text_has_control(s);
}

int queue_sender_name(uid_t uid, char **ret) {
        const struct passwd *pw = getpwuid(uid);
        char *s;

        if (pw && sender_valid(pw->pw_name))
                s = strdup(pw->pw_name);
        else if (asprintf(&s, "%u", (unsigned) uid) < 0)
                s = NULL;
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* A copy of s cut to at most max bytes, on a UTF-8 character boundary. */
static char *truncate_utf8(const char *s, size_t max) {
        size_t n = strlen(s);

        if (n > max) {
                n = max;
                while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                        n--;
        }
        return strndup(s, n);
}

/* A file name from an untrusted directory, fit for the journal and for JSON. */
static void name_sanitize(const char *name, char *buf, size_t size) {
        size_t i;

        for (i = 0; name[i] && i + 1 < size; i++)
                buf[i] = (unsigned char) name[i] < 0x20 || (unsigned char) name[i] >= 0x7f ? '?' : name[i];
        buf[i] = 0;
}

void queue_message_free(QueueMessage *m) {
        if (!m)
                return;
        free(m->id);
        free(m->prompt);
        free(m->sender);
        free(m->last_error);
        free(m->task);
        free(m);
}

const char *queue_path(const Queue *q) {
        return q->path;
}

Queue *queue_free(Queue *q) {
        if (!q)
                return NULL;
        safe_close(q->state_fd);
        for (size_t i = 0; i < ELEMENTSOF(queue_dirs); i++)
                safe_close(*(int *) ((uint8_t *) q + queue_dirs[i].offset));
        free(q->path);
        return mfree(q);
}

/* A state dir a member of group loop may only traverse (0751) opens as O_PATH: enough to reach the queue's
 * directories, which are the member's to read. */
static int state_dir_open(int dir_fd, const char *path) {
        int fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 && errno == EACCES)
                fd = openat(dir_fd, path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The directory name of dir_fd/name, made when create is set; a directory we own gets gid and mode. */
static int queue_dir_open(int dir_fd, const char *name, bool create, mode_t mode, gid_t gid) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (create && mkdirat(dir_fd, name, mode & 01777) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (!create)
                return TAKE_FD(fd);

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != geteuid())
                return TAKE_FD(fd);     /* someone else's (root's): a sender leaves it alone */
        if (gid != (gid_t) -1 && st.st_gid != gid) {
                if (fchown(fd, (uid_t) -1, gid) < 0)
                        log_debug_errno(errno, "Cannot give %s group %u, ignoring: %m", name, (unsigned) gid);
                else if (fstat(fd, &st) < 0)
                        return -errno;
        }
        /* chmod() after chown(): a chown() may drop the setgid bit. umask does not apply to fchmod(). */
        if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static DIR *dir_reopen(int dir_fd) {
        DIR *d;

        return opendir_at(dir_fd, ".", 0, &d) < 0 ? NULL : d;
}

static bool dot_or_dotdot(const char *name) {
        return streq(name, ".") || streq(name, "..");
}

/* What a tmp/ file left behind by a crash looks like: old. A fresh one may be a sender's write in progress. */
static void queue_clean_tmp(Queue *q) {
        _cleanup_closedir_ DIR *d = dir_reopen(q->tmp_fd);
        uint64_t now = clock_usec(CLOCK_REALTIME);
        struct dirent *de;

        if (!d)
                return;
        while ((errno = 0, de = readdir(d))) {
                struct stat st;

                if (dot_or_dotdot(de->d_name))
                        continue;
                if (fstatat(q->tmp_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
                        continue;
                if ((uint64_t) st.st_mtim.tv_sec + QUEUE_TMP_STALE_SEC > now / UINT64_C(1000000))
                        continue;
                if (unlinkat(q->tmp_fd, de->d_name, 0) < 0)
                        log_debug_errno(errno, "Cannot remove tmp/%s of %s, ignoring: %m", de->d_name, q->path);
                else
                        log_debug("Removed the leftover tmp/%s of %s.", de->d_name, q->path);
        }
}

int queue_open(const char *state_dir, bool create, Queue **ret) {
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_close_ int parent_fd = -EBADF;
        _cleanup_free_ char *parent = NULL;
        const char *base;
        gid_t gid = (gid_t) -1;
        size_t n;

        if (isempty(state_dir))
                return -EINVAL;
        q = calloc(1, sizeof *q);
        if (!q)
                return -ENOMEM;
        q->state_fd = -EBADF;
        for (size_t i = 0; i < ELEMENTSOF(queue_dirs); i++)
                *(int *) ((uint8_t *) q + queue_dirs[i].offset) = -EBADF;
        q->path = strdup(state_dir);
        if (!q->path)
                return -ENOMEM;
        for (n = strlen(q->path); n > 1 && q->path[n - 1] == '/'; n--)
                q->path[n - 1] = 0;

        if (!create) {
                q->state_fd = state_dir_open(AT_FDCWD, q->path);
                if (q->state_fd < 0)
                        return q->state_fd;
        } else {
                struct stat st;
                char *slash = strrchr(q->path, '/');

                if (slash == q->path)
                        parent = strdup("/");
                else
                        parent = slash ? strndup(q->path, (size_t) (slash - q->path)) : strdup(".");
                base = slash ? slash + 1 : q->path;
                if (!parent)
                        return -ENOMEM;
                if (isempty(base) || dot_or_dotdot(base))
                        return -EINVAL;
                parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (parent_fd < 0)
                        return -errno;
                /* The queue's group is the state root's: root:loop for /var/lib/loop. */
                if (fstat(parent_fd, &st) < 0)
                        return -errno;
                gid = st.st_gid;
                if (mkdirat(parent_fd, base, 0750) < 0 && errno != EEXIST)
                        return -errno;
                q->state_fd = state_dir_open(parent_fd, base);
                if (q->state_fd < 0)
                        return q->state_fd;
        }

        for (size_t i = 0; i < ELEMENTSOF(queue_dirs); i++) {
                int fd = queue_dir_open(q->state_fd, queue_dirs[i].name, create, queue_dirs[i].mode, gid);
                if (fd < 0)
                        return log_debug_errno(fd, "Cannot open %s/%s: %m", q->path, queue_dirs[i].name);
                *(int *) ((uint8_t *) q + queue_dirs[i].offset) = fd;
        }

        if (create)
                queue_clean_tmp(q);

        *ret = TAKE_PTR(q);
        return 0;
}

/* renameat2(RENAME_NOREPLACE), with link()+unlink() where the file system does not know it. */
static int rename_noreplace(int old_dir, const char *old_name, int new_dir, const char *new_name) {
        if (renameat2(old_dir, old_name, new_dir, new_name, RENAME_NOREPLACE) >= 0)
                return 0;
        if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                return -errno;
        if (linkat(old_dir, old_name, new_dir, new_name, 0) < 0)
                return -errno;
        if (unlinkat(old_dir, old_name, 0) < 0)
                log_debug_errno(errno, "Cannot remove %s after linking it, ignoring: %m", old_name);
        return 0;
}

/* Writes data to dir_fd/name: a temp file in tmp/, fsync, rename (refusing to replace unless replace is
 * set: -EEXIST), fsync of the directory. */
static int queue_write_file(Queue *q, int dir_fd, const char *name, const char *data, size_t size, bool replace) {
        _cleanup_close_ int fd = -EBADF;
        char tmp[32];
        int r;

        for (unsigned i = 0;; i++) {
                snprintf(tmp, sizeof tmp, "%016" PRIx64 ".tmp", random_u64());
                fd = openat(q->tmp_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0640);
                if (fd >= 0)
                        break;
                if (errno != EEXIST || i >= QUEUE_WRITE_TRIES)
                        return -errno;
        }

        r = fchmod(fd, 0640) < 0 ? -errno : 0;  /* whatever the caller's umask */
        if (r >= 0)
                r = loop_write(fd, data, size);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        if (r >= 0) {
                if (replace)
                        r = renameat(q->tmp_fd, tmp, dir_fd, name) < 0 ? -errno : 0;
                else
                        r = rename_noreplace(q->tmp_fd, tmp, dir_fd, name);
        }
        if (r < 0) {
                (void) unlinkat(q->tmp_fd, tmp, 0);
                return r;
        }
        return fsync(dir_fd) < 0 ? -errno : 0;
}

static int queue_write_json(Queue *q, int dir_fd, const char *name, json_object *o, bool replace) {
        _cleanup_free_ char *text = NULL;
        const char *s;

        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s || asprintf(&text, "%s\n", s) < 0)
                return -ENOMEM;
        return queue_write_file(q, dir_fd, name, text, strlen(text), replace);
}

/* The inbox file of m, with attempts and last_error as given. */
static int message_to_json(const QueueMessage *m, unsigned attempts, const char *last_error, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        if (json_add_string_or_null(o, "id", m->id) < 0 ||
            json_add_string_or_null(o, "prompt", m->prompt) < 0 ||
            json_add_string_or_null(o, "sender", m->sender) < 0 ||
            json_add(o, "created_usec", json_object_new_int64((int64_t) m->created_usec)) < 0 ||
            json_add(o, "attempts", json_object_new_int64(attempts)) < 0 ||
            json_add_string_or_null(o, "last_error", last_error) < 0 ||
            (m->task && json_add_string_or_null(o, "task", m->task) < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* One JSON object from untrusted text; *ret_reason is static. */
static int parse_json_object(const char *text, size_t size, json_object **ret, const char **ret_reason) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        JsonParseError e = {};
        int r;

        r = json_parse_untrusted(text, size, SIZE_MAX, QUEUE_JSON_DEPTH_MAX, false, &o, &e);
        if (r == -EILSEQ)
                return *ret_reason = "contains a NUL byte", -EBADMSG;
        if (r == -EFBIG)
                return *ret_reason = "too large", -EBADMSG;
        if (r == -EBADMSG && e.trailing)
                return *ret_reason = "trailing data after the JSON object", -EBADMSG;
        if (r == -EBADMSG)
                return *ret_reason = "not valid JSON", -EBADMSG;
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return *ret_reason = "not a JSON object", -EBADMSG;
        *ret = TAKE_PTR(o);
        return 0;
}

/* A string member: absent or null only when allow_null; no NUL inside; at most max bytes. */
static int json_get_string(json_object *o, const char *key, size_t max, bool allow_null, const char **ret) {
        json_object *v;
        const char *s;

        if (!json_object_object_get_ex(o, key, &v) || !v) {
                if (!allow_null)
                        return -EBADMSG;
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return -EBADMSG;
        s = json_object_get_string(v);
        if ((size_t) json_object_get_string_len(v) != strlen(s) || strlen(s) > max)
                return -EBADMSG;
        *ret = s;
        return 0;
}

static int json_get_uint(json_object *o, const char *key, uint64_t max, uint64_t *ret) {
        json_object *v;
        int64_t i;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return -EBADMSG;
        errno = 0;
        i = json_object_get_int64(v);
        if (errno != 0 || i < 0 || (uint64_t) i > max)
                return -EBADMSG;
        *ret = (uint64_t) i;
        return 0;
}

static bool queue_task_valid(const char *task) {
        size_t n = strlen(task);
        if (n == 0 || n > QUEUE_TASK_MAX)
                return false;
        for (const char *p = task; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')))
                        return false;
        return true;
}

/* Every field of a message read back from inbox/<file_id>.json is checked; *ret_reason is static. */
static int message_from_json(json_object *o, const char *file_id, QueueMessage **ret, const char **ret_reason) {
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        const char *id, *prompt, *sender, *last_error, *task;
        uint64_t created, attempts;

        if (json_get_string(o, "id", QUEUE_ID_LEN, false, &id) < 0 || !queue_id_valid(id))
                return *ret_reason = "\"id\" is missing or not a valid message id", -EBADMSG;
        if (!streq(id, file_id))
                return *ret_reason = "\"id\" does not match the file name", -EBADMSG;
        if (json_get_string(o, "prompt", QUEUE_PROMPT_MAX, false, &prompt) < 0 || isempty(prompt))
                return *ret_reason = "\"prompt\" is missing, empty, too long or not a string", -EBADMSG;
        if (json_get_string(o, "sender", QUEUE_SENDER_MAX, false, &sender) < 0 || !sender_valid(sender))
                return *ret_reason = "\"sender\" is missing or not a valid user name", -EBADMSG;
        if (json_get_uint(o, "created_usec", INT64_MAX, &created) < 0)
                return *ret_reason = "\"created_usec\" is missing or not a non-negative integer", -EBADMSG;
        if (json_get_uint(o, "attempts", QUEUE_ATTEMPTS_MAX, &attempts) < 0)
                return *ret_reason = "\"attempts\" is missing or not an integer between 0 and 1000", -EBADMSG;
        if (json_get_string(o, "last_error", QUEUE_ERROR_MAX, true, &last_error) < 0)
                return *ret_reason = "\"last_error\" is not a string of at most 4096 bytes", -EBADMSG;
        if (json_get_string(o, "task", QUEUE_TASK_MAX, true, &task) < 0 || (task && !queue_task_valid(task)))
                return *ret_reason = "\"task\" is not a task id", -EBADMSG;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->id = strdup(id);
        m->prompt = strdup(prompt);
        m->sender = strdup(sender);
        m->last_error = last_error ? strdup(last_error) : NULL;
        m->task = task ? strdup(task) : NULL;
        if (!m->id || !m->prompt || !m->sender || (last_error && !m->last_error) || (task && !m->task))
                return -ENOMEM;
        m->created_usec = created;
        m->attempts = (unsigned) attempts;
        *ret = TAKE_PTR(m);
        return 0;
}

typedef struct DirScan {
        size_t n;                               /* entries, whatever their name */
        char first[NAME_MAX + 1];               /* the smallest name: the oldest message, or junk to move away */
        char last_id[QUEUE_ID_LEN + 1];         /* the newest "<id>.json", "" when none */
} DirScan;

/* One pass over a directory without allocating, however many entries a flood left in it. */
static int queue_scan(int dir_fd, DirScan *ret) {
        _cleanup_closedir_ DIR *d = dir_reopen(dir_fd);
        DirScan s = {};
        struct dirent *de;

        if (!d)
                return -errno;
        while ((errno = 0, de = readdir(d))) {
                char id[QUEUE_ID_LEN + 1];

                if (dot_or_dotdot(de->d_name))
                        continue;
                if (s.n == 0 || strcmp(de->d_name, s.first) < 0)
                        snprintf(s.first, sizeof s.first, "%s", de->d_name);
                if (name_to_id(de->d_name, id) && strcmp(id, s.last_id) > 0)
                        memcpy(s.last_id, id, sizeof id);
                s.n++;
        }
        if (errno != 0)
                return -errno;
        *ret = s;
        return 0;
}

static bool queue_has_result(Queue *q, const char *name) {
        struct stat st;

        return (fstatat(q->outbox_fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISREG(st.st_mode)) ||
                (fstatat(q->failed_fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISREG(st.st_mode));
}

static int queue_unlink_inbox(Queue *q, const char *id) {
        char name[QUEUE_ID_LEN + 6];

        snprintf(name, sizeof name, "%s.json", id);
        if (unlinkat(q->inbox_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return fsync(q->inbox_fd) < 0 ? -errno : 0;
}

/* Moves inbox/name to failed/<id>.raw, untouched, and describes it in failed/<id>.json. */
static int queue_quarantine(Queue *q, const char *name, const char *reason) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        char id[QUEUE_ID_LEN + 1], raw[QUEUE_ID_LEN + 5], desc[QUEUE_ID_LEN + 6], shown[NAME_MAX + 1];
        bool have_id = name_to_id(name, id);
        int r;

        for (unsigned i = 0;; i++) {
                if (!have_id)
                        id_make(clock_usec(CLOCK_REALTIME), id);
                snprintf(raw, sizeof raw, "%s.raw", id);
                snprintf(desc, sizeof desc, "%s.json", id);
                if (faccessat(q->failed_fd, desc, F_OK, AT_SYMLINK_NOFOLLOW) >= 0)
                        r = -EEXIST;    /* keep the record of an earlier failure of this id */
                else
                        r = rename_noreplace(q->inbox_fd, name, q->failed_fd, raw);
                if (r != -EEXIST || i >= QUEUE_WRITE_TRIES)
                        break;
                have_id = false;
        }
        if (r == -ENOENT)
                return 0;       /* gone meanwhile */
        if (r < 0)
                return r;
        if (fsync(q->failed_fd) < 0 || fsync(q->inbox_fd) < 0)
                return -errno;

        name_sanitize(name, shown, sizeof shown);
        log_warning("Moved the malformed message %s of %s to failed/%s: %s.", shown, q->path, raw, reason);

        o = json_object_new_object();
        if (!o ||
            json_add_string_or_null(o, "id", id) < 0 ||
            json_add_string_or_null(o, "file", shown) < 0 ||
            json_add_string_or_null(o, "raw", raw) < 0 ||
            json_add_string_or_null(o, "reason", reason) < 0 ||
            json_add(o, "attempts", json_object_new_int64(0)) < 0 ||
            json_add(o, "failed_usec", json_object_new_int64((int64_t) clock_usec(CLOCK_REALTIME))) < 0)
                return -ENOMEM;
        return queue_write_json(q, q->failed_fd, desc, o, true);
}

/* Reads and checks inbox/name. -EBADMSG with a static reason when the file is bad (not when it cannot be
 * read: an I/O error is not the file's fault and must not send it to failed/). */
static int queue_read_message(Queue *q, const char *name, QueueMessage **ret, const char **ret_reason) {
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *text = NULL;
        char id[QUEUE_ID_LEN + 1];
        struct stat st;
        size_t size;
        int r;

        if (!name_to_id(name, id))
                return *ret_reason = "the file name is not <id>.json", -EBADMSG;
        /* Look before opening: opening a FIFO or a device planted in inbox/ could block or have effects. */
        if (fstatat(q->inbox_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return *ret_reason = "not a regular file", -EBADMSG;

        r = read_full_file_at(q->inbox_fd, name, QUEUE_MESSAGE_FILE_MAX, true, &text, &size);
        if (r == -EFBIG)
                return *ret_reason = "larger than 8 MiB", -EBADMSG;
        if (r == -ELOOP || r == -EBADFD || r == -EISDIR)
                return *ret_reason = "not a regular file", -EBADMSG;
        if (r < 0)
                return r;
        r = parse_json_object(text, size, &o, ret_reason);
        if (r < 0)
                return r;
        r = message_from_json(o, id, &m, ret_reason);
        if (r < 0)
                return r;

        /* A sender is who owns the file, whatever it claims; the runner's rewrites are root's and keep it. */
        if (st.st_uid != 0 && st.st_uid != geteuid()) {
                _cleanup_free_ char *owner = NULL;

                r = queue_sender_name(st.st_uid, &owner);
                if (r < 0)
                        return r;
                if (!streq(owner, m->sender)) {
                        log_warning("Message %s of %s claims sender \"%s\" but was queued by %s; recording %s.",
                                    id, q->path, m->sender, owner, owner);
                        free(m->sender);
                        m->sender = TAKE_PTR(owner);
                }
                /* only a scheduled task's firing (root's) queues for a task: a sender's claim of one would
                 * put its run in the records of a task it is not */
                if (m->task) {
                        log_warning("Message %s of %s claims to be queued by task %s but was queued by %s; dropping the claim.",
                                    id, q->path, m->task, m->sender);
                        m->task = mfree(m->task);
                }
        }

        *ret = TAKE_PTR(m);
        return 0;
}

int queue_peek(Queue *q, QueueMessage **ret) {
        assert(q);
        assert(ret);

        for (;;) {
                _cleanup_(queue_message_freep) QueueMessage *m = NULL;
                const char *reason = NULL;
                char done[QUEUE_ID_LEN + 6];
                DirScan s;
                int r;

                r = queue_scan(q->inbox_fd, &s);
                if (r < 0)
                        return r;
                if (s.n == 0)
                        return -ENOENT;

                r = queue_read_message(q, s.first, &m, &reason);
                if (r == -ENOENT)
                        continue;       /* removed meanwhile */
                if (r == -EBADMSG) {
                        r = queue_quarantine(q, s.first, reason);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r < 0)
                        return r;

                /* A runner that died between storing the result and removing the message. */
                snprintf(done, sizeof done, "%s.json", m->id);
                if (queue_has_result(q, done)) {
                        log_info("Message %s of %s was finished already; removing it from the inbox.", m->id, q->path);
                        r = queue_unlink_inbox(q, m->id);
                        if (r < 0)
                                return r;
                        continue;
                }

                *ret = TAKE_PTR(m);
                return 0;
        }
}

int queue_push(Queue *q, const char *prompt, const char *sender, char **ret_id) {
        return queue_push_task(q, prompt, sender, NULL, ret_id);
}

int queue_push_task(Queue *q, const char *prompt, const char *sender, const char *task, char **ret_id) {
        _cleanup_free_ char *own_sender = NULL;
        QueueMessage m = {};
        uint64_t usec;
        DirScan s;
        int r;

        assert(q);

        if (isempty(prompt))
                return -EINVAL;
        if (strlen(prompt) > QUEUE_PROMPT_MAX)
                return -E2BIG;
        if (!sender) {
                r = queue_sender_name(getuid(), &own_sender);
                if (r < 0)
                        return r;
                sender = own_sender;
        }
        if (!sender_valid(sender) || (task && !queue_task_valid(task)))
                return -EINVAL;

        r = queue_scan(q->inbox_fd, &s);
        if (r < 0)
                return r;
        if (s.n >= QUEUE_DEPTH_MAX)
                return -EXFULL;

        m = (QueueMessage) {
                .prompt = (char *) prompt,
                .sender = (char *) sender,
                .task = (char *) task,
                .created_usec = clock_usec(CLOCK_REALTIME),
        };
        /* Byte order is arrival order: never below the newest queued id, even with the clock set back. */
        usec = m.created_usec;
        if (s.last_id[0] && id_usec(s.last_id) >= usec)
                usec = id_usec(s.last_id) + 1;

        for (unsigned i = 0;; i++, usec++) {
                _cleanup_(json_object_putp) json_object *o = NULL;
                char id[QUEUE_ID_LEN + 1], name[QUEUE_ID_LEN + 6];

                id_make(usec, id);
                snprintf(name, sizeof name, "%s.json", id);
                if (queue_has_result(q, name))
                        r = -EEXIST;
                else {
                        m.id = id;
                        r = message_to_json(&m, 0, NULL, &o);
                        if (r < 0)
                                return r;
                        r = queue_write_json(q, q->inbox_fd, name, o, false);
                }
                if (r >= 0) {
                        if (ret_id) {
                                char *c = strdup(id);
                                if (!c)
                                        return -ENOMEM;
                                *ret_id = c;
                        }
                        return 0;
                }
                if (r != -EEXIST || i >= QUEUE_WRITE_TRIES)
                        return r;
        }
}

/* Rewrites the inbox file of a message that must still be queued. */
static int queue_rewrite(Queue *q, const QueueMessage *m, unsigned attempts, const char *last_error) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        char name[QUEUE_ID_LEN + 6];
        struct stat st;
        int r;

        if (!queue_id_valid(m->id) || isempty(m->prompt) || !sender_valid(m->sender))
                return -EINVAL;
        snprintf(name, sizeof name, "%s.json", m->id);
        /* Never bring back a message that left the inbox. */
        if (fstatat(q->inbox_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        r = message_to_json(m, attempts, last_error, &o);
        if (r < 0)
                return r;
        return queue_write_json(q, q->inbox_fd, name, o, true);
}

int queue_begin_attempt(Queue *q, QueueMessage *m) {
        int r;

        assert(q);
        assert(m);

        if (m->attempts >= QUEUE_ATTEMPTS_MAX)
                return -ERANGE;
        r = queue_rewrite(q, m, m->attempts + 1, m->last_error);
        if (r < 0)
                return r;
        m->attempts++;
        return 0;
}

int queue_release_attempt(Queue *q, QueueMessage *m, const char *reason) {
        _cleanup_free_ char *e = NULL;
        int r;

        assert(q);
        assert(m);

        if (m->attempts == 0)
                return -ERANGE;
        e = truncate_utf8(strempty(reason), QUEUE_ERROR_MAX);
        if (!e)
                return -ENOMEM;
        r = queue_rewrite(q, m, m->attempts - 1, e);
        if (r < 0)
                return r;
        m->attempts--;
        free(m->last_error);
        m->last_error = TAKE_PTR(e);
        return 0;
}

int queue_record_failure(Queue *q, QueueMessage *m, const char *reason) {
        _cleanup_free_ char *e = NULL;
        int r;

        assert(q);
        assert(m);

        e = truncate_utf8(strempty(reason), QUEUE_ERROR_MAX);
        if (!e)
                return -ENOMEM;
        r = queue_rewrite(q, m, m->attempts, e);
        if (r < 0)
                return r;
        free(m->last_error);
        m->last_error = TAKE_PTR(e);
        return 0;
}

int queue_fail(Queue *q, const QueueMessage *m, const char *reason) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *e = NULL;
        char name[QUEUE_ID_LEN + 6];
        int r;

        assert(q);
        assert(m);

        if (!queue_id_valid(m->id))
                return -EINVAL;
        e = truncate_utf8(strempty(reason), QUEUE_ERROR_MAX);
        if (!e)
                return -ENOMEM;
        r = message_to_json(m, m->attempts, m->last_error, &o);
        if (r < 0)
                return r;
        if (json_add_string_or_null(o, "reason", e) < 0 || json_add(o, "failed_usec", json_object_new_int64((int64_t) clock_usec(CLOCK_REALTIME))) < 0)
                return -ENOMEM;
        snprintf(name, sizeof name, "%s.json", m->id);
        r = queue_write_json(q, q->failed_fd, name, o, true);
        if (r < 0)
                return r;
        return queue_unlink_inbox(q, m->id);
}

int queue_complete(Queue *q, const QueueMessage *m, json_object *result) {
        char name[QUEUE_ID_LEN + 6];
        int r;

        assert(q);
        assert(m);

        if (!queue_id_valid(m->id) || !json_object_is_type(result, json_type_object))
                return -EINVAL;
        snprintf(name, sizeof name, "%s.json", m->id);
        r = queue_write_json(q, q->outbox_fd, name, result, true);
        if (r < 0)
                return r;       /* the message stays queued */
        return queue_unlink_inbox(q, m->id);
}

int queue_depth(Queue *q, size_t *ret) {
        DirScan s;
        int r;

        assert(q);
        assert(ret);

        r = queue_scan(q->inbox_fd, &s);
        if (r < 0)
                return r;
        *ret = s.n;
        return 0;
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

int queue_list(Queue *q, const char *box, size_t limit, json_object **ret_array) {
        _cleanup_(json_object_putp) json_object *a = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n_names = 0, cap = 0, start;
        int dir_fd, r;

        assert(q);
        assert(ret_array);

        if (streq_ptr(box, "inbox"))
                dir_fd = q->inbox_fd;
        else if (streq_ptr(box, "outbox"))
                dir_fd = q->outbox_fd;
        else if (streq_ptr(box, "failed"))
                dir_fd = q->failed_fd;
        else
                return -EINVAL;

        d = dir_reopen(dir_fd);
        if (!d)
                return -errno;
        while ((errno = 0, de = readdir(d))) {
                char id[QUEUE_ID_LEN + 1];

                if (!name_to_id(de->d_name, id))
                        continue;
                if (n_names + 1 >= cap) {
                        size_t ncap = MAX(cap * 2, (size_t) 64);
                        char **nl = reallocarray(names, ncap, sizeof *nl);
                        if (!nl)
                                return -ENOMEM;
                        names = nl;
                        cap = ncap;
                }
                names[n_names] = strdup(de->d_name);
                if (!names[n_names])
                        return -ENOMEM;
                names[++n_names] = NULL;
        }
        if (errno != 0)
                return -errno;
        if (n_names > 0)
                qsort(names, n_names, sizeof *names, cmp_names);

        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        start = limit > 0 && n_names > limit ? n_names - limit : 0;
        for (size_t i = start; i < n_names; i++) {
                _cleanup_(json_object_putp) json_object *o = NULL;
                _cleanup_free_ char *text = NULL;
                const char *reason;
                size_t size;

                r = read_full_file_at(dir_fd, names[i], QUEUE_RESULT_FILE_MAX, true, &text, &size);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_debug_errno(r, "Cannot read %s/%s/%s, skipping: %m", q->path, box, names[i]);
                        continue;
                }
                r = parse_json_object(text, size, &o, &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_debug("Cannot parse %s/%s/%s, skipping: %s", q->path, box, names[i], reason);
                        continue;
                }
                if (json_object_array_add(a, o) < 0)
                        return -ENOMEM;
                TAKE_PTR(o);
        }
        *ret_array = TAKE_PTR(a);
        return 0;
}

int queue_session_get(Queue *q, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        assert(q);
        assert(ret);

        r = read_full_file_at(q->state_fd, QUEUE_SESSION_FILE, QUEUE_SESSION_ID_MAX + 1, true, &text, &size);
        if (r == -EFBIG || r == -EBADFD || r == -ELOOP || r == -EISDIR)
                return -EBADMSG;
        if (r < 0)
                return r;
        if (size > 0 && text[size - 1] == '\n')
                text[--size] = 0;
        if (strlen(text) != size || !queue_session_id_valid(text))
                return -EBADMSG;
        *ret = TAKE_PTR(text);
        return 0;
}

int queue_session_set(Queue *q, const char *session_id) {
        _cleanup_free_ char *text = NULL;

        assert(q);

        if (!session_id) {
                if (unlinkat(q->state_fd, QUEUE_SESSION_FILE, 0) < 0 && errno != ENOENT)
                        return -errno;
                return fsync(q->state_fd) < 0 ? -errno : 0;
        }
        if (!queue_session_id_valid(session_id))
                return -EINVAL;
        if (asprintf(&text, "%s\n", session_id) < 0)
                return -ENOMEM;
        return queue_write_file(q, q->state_fd, QUEUE_SESSION_FILE, text, strlen(text), true);
}
