/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io-util.h"
#include "tasks-store.h"
#include "json-util.h"
#include "dirent-util.h"
#include "fs-util.h"
#include "string-util.h"

Task *task_free(Task *t) {
        if (!t)
                return NULL;
        free(t->name);
        free(t->schedule);
        free(t->oncalendar);
        free(t->prompt);
        free(t->created_by);
        free(t);
        return NULL;
}

void task_list_free(Task **l, size_t n) {
        for (size_t i = 0; i < n; i++)
                task_free(l[i]);
        free(l);
}

bool task_id_valid(const char *id) {
        if (!id || strlen(id) != TASK_ID_LEN)
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

int task_id_generate(char ret[static TASK_ID_LEN + 1]) {
        uint8_t b[TASK_ID_LEN / 2];

        if (getrandom(b, sizeof b, 0) != (ssize_t) sizeof b)
                return -errno ?: -EIO;
        for (size_t i = 0; i < sizeof b; i++)
                snprintf(ret + 2 * i, 3, "%02x", b[i]);
        return 0;
}

int task_set_schedule(Task *t, TaskType type, const char *schedule, uint64_t min_interval_sec, uint64_t now_usec,
                      const char **ret_reason) {
        _cleanup_free_ char *cal = NULL, *copy = NULL;
        uint64_t sec = 0;
        int64_t at;
        int r;

        *ret_reason = NULL;
        switch (type) {
        case TASK_CRON:
                r = tasks_cron_to_oncalendar(schedule, &cal, &sec, ret_reason);
                if (r < 0)
                        return r;
                if (sec < min_interval_sec) {
                        *ret_reason = "the cron expression fires more often than this channel's minimum interval "
                                      "(tasks.min_interval_sec)";
                        return -EINVAL;
                }
                sec = 0;
                break;
        case TASK_INTERVAL:
                r = tasks_interval_parse(schedule, &sec, ret_reason);
                if (r < 0)
                        return -EINVAL;
                if (sec < min_interval_sec) {
                        *ret_reason = "the interval is shorter than this channel's minimum (tasks.min_interval_sec)";
                        return -EINVAL;
                }
                break;
        case TASK_ONCE:
                r = tasks_time_parse(schedule, &at, ret_reason);
                if (r < 0)
                        return r;
                if (at < 0 || (uint64_t) at * 1000000ULL <= now_usec) {
                        *ret_reason = "the time lies in the past";
                        return -EINVAL;
                }
                /* A once task is made again (edit, or cancel and schedule) after it fired: each firing at
                 * least the minimum interval after the request that set it, as any other task's. */
                if ((uint64_t) at * 1000000ULL < now_usec + min_interval_sec * 1000000ULL) {
                        *ret_reason = "the time is closer than this channel's minimum interval (tasks.min_interval_sec)";
                        return -EINVAL;
                }
                r = tasks_time_to_oncalendar(at, &cal);
                if (r < 0)
                        return r;
                break;
        case TASK_MANUAL:
                if (!isempty(schedule)) {
                        *ret_reason = "a manual task has no schedule";
                        return -EINVAL;
                }
                break;
        default:
                *ret_reason = "the type is one of cron, interval, once, manual";
                return -EINVAL;
        }
        if (type != TASK_MANUAL) {
                copy = strdup(schedule);
                if (!copy)
                        return -ENOMEM;
        }
        free(t->schedule);
        free(t->oncalendar);
        t->schedule = TAKE_PTR(copy);
        t->oncalendar = TAKE_PTR(cal);
        t->interval_sec = sec;
        t->type = type;
        t->done = false;
        return 0;
}

int task_schedule_check(const Task *t, uint64_t min_interval_sec, const char **ret_reason) {
        _cleanup_free_ char *cal = NULL;
        uint64_t sec = 0;
        int64_t at;
        int r;

        switch (t->type) {
        case TASK_MANUAL:
                *ret_reason = NULL;
                return 0;       /* no timer */
        case TASK_CRON:
                r = tasks_cron_to_oncalendar(t->schedule, &cal, &sec, ret_reason);
                if (r < 0)
                        return r == -ENOMEM ? r : -EINVAL;
                break;
        case TASK_INTERVAL:
                r = tasks_interval_parse(t->schedule, &sec, ret_reason);
                if (r < 0)
                        return -EINVAL;
                if (sec != t->interval_sec) {
                        *ret_reason = "its interval is not the one its schedule says";
                        return -EINVAL;
                }
                break;
        case TASK_ONCE:
                r = tasks_time_parse(t->schedule, &at, ret_reason);
                if (r < 0)
                        return -EINVAL;
                r = tasks_time_to_oncalendar(at, &cal);
                if (r < 0)
                        return r == -ENOMEM ? r : ((*ret_reason = "its time names no real instant"), -EINVAL);
                break;
        default:
                *ret_reason = "its type is not one of cron, interval, once, manual";
                return -EINVAL;
        }
        if (t->type != TASK_INTERVAL && !streq_ptr(cal, t->oncalendar)) {
                *ret_reason = "its calendar event is not the one its schedule says";
                return -EINVAL;
        }
        if (t->type != TASK_ONCE && sec < min_interval_sec) {
                *ret_reason = "it fires more often than the channel's minimum interval (tasks.min_interval_sec)";
                return -EINVAL;
        }
        *ret_reason = NULL;
        return 0;
}

/* ---- JSON ---- */

static int add_string(json_object *o, const char *key, const char *value) {
        json_object *v;

        if (!value)
                return 0;
        v = json_object_new_string(value);
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_uint(json_object *o, const char *key, uint64_t value) {
        json_object *v = json_object_new_uint64(value);
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_bool(json_object *o, const char *key, bool value) {
        json_object *v = json_object_new_boolean(value);
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int task_to_json(const Task *t, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o ||
            add_string(o, "id", t->id) < 0 ||
            add_string(o, "name", t->name) < 0 ||
            add_string(o, "type", task_type_to_string(t->type)) < 0 ||
            add_string(o, "schedule", t->schedule) < 0 ||
            add_string(o, "on_calendar", t->oncalendar) < 0 ||
            (t->type == TASK_INTERVAL && add_uint(o, "interval_sec", t->interval_sec) < 0) ||
            add_string(o, "prompt", t->prompt) < 0 ||
            add_bool(o, "enabled", t->enabled) < 0 ||
            add_bool(o, "done", t->done) < 0 ||
            add_string(o, "created_by", t->created_by) < 0 ||
            add_uint(o, "created_usec", t->created_usec) < 0 ||
            add_uint(o, "updated_usec", t->updated_usec) < 0 ||
            add_uint(o, "last_fired_usec", t->last_fired_usec) < 0 ||
            add_uint(o, "fired_count", t->fired_count) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int get_string(json_object *o, const char *key, size_t max, bool required, char **ret) {
        json_object *v;
        char *s;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
                *ret = NULL;
                return required ? -EBADMSG : 0;
        }
        if (!json_object_is_type(v, json_type_string) || (size_t) json_object_get_string_len(v) > max)
                return -EBADMSG;
        s = strdup(json_object_get_string(v));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static uint64_t get_uint(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int) ? json_object_get_uint64(v) : 0;
}

static bool get_bool(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* A file written by us, read back: checked anyway (it could have been edited by hand). */
int task_from_json(json_object *o, Task **ret) {
        _cleanup_(task_freep) Task *t = calloc(1, sizeof(Task));
        _cleanup_free_ char *id = NULL, *type = NULL;
        int r;

        if (!t)
                return -ENOMEM;
        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        if ((r = get_string(o, "id", TASK_ID_LEN, true, &id)) < 0 ||
            (r = get_string(o, "type", 16, true, &type)) < 0 ||
            (r = get_string(o, "name", TASKS_NAME_MAX, false, &t->name)) < 0 ||
            (r = get_string(o, "schedule", TASKS_SCHEDULE_MAX, false, &t->schedule)) < 0 ||
            (r = get_string(o, "on_calendar", TASKS_ONCALENDAR_MAX, false, &t->oncalendar)) < 0 ||
            (r = get_string(o, "prompt", TASKS_PROMPT_MAX, true, &t->prompt)) < 0 ||
            (r = get_string(o, "created_by", TASKS_ACTOR_MAX, false, &t->created_by)) < 0)
                return r;
        if (!task_id_valid(id))
                return -EBADMSG;
        memcpy(t->id, id, TASK_ID_LEN + 1);
        t->type = task_type_from_string(type);
        if (t->type < 0)
                return -EBADMSG;
        if ((t->type == TASK_CRON || t->type == TASK_ONCE) && !t->oncalendar)
                return -EBADMSG;
        t->interval_sec = get_uint(o, "interval_sec");
        if (t->type == TASK_INTERVAL && (t->interval_sec == 0 || t->interval_sec > TASKS_INTERVAL_MAX_SEC))
                return -EBADMSG;
        t->enabled = get_bool(o, "enabled");
        t->done = get_bool(o, "done");
        t->created_usec = get_uint(o, "created_usec");
        t->updated_usec = get_uint(o, "updated_usec");
        t->last_fired_usec = get_uint(o, "last_fired_usec");
        t->fired_count = get_uint(o, "fired_count");
        *ret = TAKE_PTR(t);
        return 0;
}

/* ---- files ---- */

int tasks_dir_open(const char *state_dir, bool create, int *ret_fd) {
        _cleanup_free_ char *dir = NULL;
        int r;

        if (asprintf(&dir, "%s/" TASKS_DIRNAME, state_dir) < 0)
                return -ENOMEM;
        if (create) {
                r = mkdir_owned(dir, 0700, 0, 0);
                if (r < 0)
                        return r;
        }
        return dir_open_unshared(dir, ret_fd);
}

int tasks_dir_lock(int dir_fd) {
        while (flock(dir_fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

int task_load_at(int dir_fd, const char *id, Task **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *text = NULL;
        char file[TASK_ID_LEN + 8];
        size_t size;
        int r;

        if (!task_id_valid(id))
                return -ENOENT;
        snprintf(file, sizeof file, "%s.json", id);
        r = read_full_file_at(dir_fd, file, TASKS_FILE_MAX, true, &text, &size);
        if (r < 0)
                return r;
        o = json_tokener_parse(text);
        if (!o)
                return -EBADMSG;
        r = task_from_json(o, ret);
        if (r >= 0 && !streq((*ret)->id, id)) {
                *ret = task_free(*ret);
                return -EBADMSG;
        }
        return r;
}

int task_save_at(int dir_fd, const Task *t) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_close_ int fd = -EBADF;
        char tmp[64], file[TASK_ID_LEN + 8];
        const char *text;
        struct stat st;
        int r;

        r = task_to_json(t, &o);
        if (r < 0)
                return r;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return -ENOMEM;
        /* a file that would not be read back would be a task nobody can list, count or cancel */
        if (strlen(text) > TASKS_FILE_MAX)
                return -EFBIG;
        snprintf(file, sizeof file, "%s.json", t->id);
        snprintf(tmp, sizeof tmp, ".#%s.%d", file, (int) getpid());
        (void) unlinkat(dir_fd, tmp, 0);
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* root (loop task, a firing) writes files the helper (the directory's owner) must read */
        r = 0;
        if (geteuid() == 0 && (fstat(dir_fd, &st) < 0 || fchown(fd, st.st_uid, st.st_gid) < 0))
                r = -errno;
        if (r >= 0)
                r = loop_write(fd, text, strlen(text));
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, file) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dir_fd, tmp, 0);
                return r;
        }
        if (fsync(dir_fd) < 0)
                return -errno;
        return 0;
}

int task_remove_at(int dir_fd, const char *id) {
        char file[TASK_ID_LEN + 8];

        if (!task_id_valid(id))
                return -ENOENT;
        snprintf(file, sizeof file, "%s.json", id);
        if (unlinkat(dir_fd, file, 0) < 0)
                return -errno;
        return fsync(dir_fd) < 0 ? -errno : 0;
}

static int task_compare(const void *a, const void *b) {
        const Task *x = *(Task * const *) a, *y = *(Task * const *) b;
        if (x->created_usec != y->created_usec)
                return x->created_usec < y->created_usec ? -1 : 1;
        return strcmp(x->id, y->id);
}

int tasks_list_at(int dir_fd, Task ***ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        Task **l = NULL;
        size_t n = 0, seen = 0;
        struct dirent *de;
        int fd;

        fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *id = NULL;
                const char *suffix = endswith(de->d_name, ".json");
                Task *t, **nl;

                if (!suffix || (size_t) (suffix - de->d_name) != TASK_ID_LEN)
                        continue;
                if (++seen > TASKS_PER_CHANNEL_MAX * 2)
                        break;
                id = strndup(de->d_name, TASK_ID_LEN);
                if (!id) {
                        task_list_free(l, n);
                        return -ENOMEM;
                }
                if (task_load_at(dir_fd, id, &t) < 0)
                        continue;       /* unreadable: not a task (logged by whoever cares) */
                nl = reallocarray(l, n + 1, sizeof(Task *));
                if (!nl) {
                        task_free(t);
                        task_list_free(l, n);
                        return -ENOMEM;
                }
                l = nl;
                l[n++] = t;
        }
        if (n > 1)
                qsort(l, n, sizeof(Task *), task_compare);
        *ret = l;
        *ret_n = n;
        return 0;
}
