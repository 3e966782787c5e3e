/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The work queue: order, ids, atomic writes, crash leftovers, the outbox-before-inbox rule, attempts,
 * failures, malformed files, caps, the session, and `loop send` / `loop outbox` / `loop queue` run from the
 * built binary ($LOOP_BIN). Everything happens under a temp dir. */

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "dirent-util.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "queue.h"
#include "strv.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-queue-XXXXXX";

/* tmpdir/<formatted>; four buffers in rotation, so a call can use a few at once. */
_printf_(1, 2) static char *path_of(const char *fmt, ...) {
        static char buf[4][4096];
        static unsigned k;
        char *p = buf[k++ % 4];
        int n = snprintf(p, sizeof buf[0], "%s/", tmpdir);
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(p + n, sizeof buf[0] - (size_t) n, fmt, ap);
        va_end(ap);
        return p;
}

_printf_(1, 2) static void sh(const char *fmt, ...) {
        char cmd[8192];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        if (system(cmd) != 0)
                abort();
}

static void write_text(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
        if (fd < 0 || loop_write(fd, text, strlen(text)) < 0)
                abort();
        close(fd);
}

static char *read_text(const char *path) {
        char *s = NULL;
        if (read_full_file_at(AT_FDCWD, path, 64U * 1024U * 1024U, false, &s, NULL) < 0)
                return NULL;
        return s;
}

static bool file_contains(const char *path, const char *needle) {
        _cleanup_free_ char *t = read_text(path);
        return t && strstr(t, needle);
}

static size_t count_entries(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        size_t n = 0;
        if (!d)
                return (size_t) -1;
        while ((de = readdir(d)))
                n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
        return n;
}

static bool exists(const char *path) {
        struct stat st;
        return lstat(path, &st) >= 0;
}

static mode_t mode_of(const char *path) {
        struct stat st;
        return lstat(path, &st) < 0 ? (mode_t) -1 : (st.st_mode & 07777);
}

static QueueMessage *message_drop(QueueMessage *m) {
        queue_message_free(m);
        return NULL;
}

static Queue *open_fresh(const char *name) {
        Queue *q = NULL;
        sh("rm -rf %s", path_of("%s", name));
        if (queue_open(path_of("%s", name), true, &q) < 0)
                abort();
        return q;
}

/* A result for queue_complete(), which does not take it: freed when the test ends. */
static json_object *results[16];
static size_t n_results;

static json_object *result(json_object *o) {
        if (n_results < ELEMENTSOF(results))
                results[n_results++] = o;
        return o;
}

static void test_open(void) {
        _cleanup_(queue_freep) Queue *q = NULL;
        struct stat st_parent, st_inbox;

        ok(queue_open(path_of("absent"), false, &q) == -ENOENT && !q,
           "opening a queue that does not exist without create is -ENOENT");
        ok(queue_open(path_of("absent"), true, &q) == 0 && q, "create makes the state dir and the queue");
        ok(mode_of(path_of("absent/inbox")) == 03770 && mode_of(path_of("absent/tmp")) == 03770,
           "inbox/ and tmp/ are 03770: group-writable, setgid, sticky");
        ok(mode_of(path_of("absent/outbox")) == 02750 && mode_of(path_of("absent/failed")) == 02750,
           "outbox/ and failed/ are 02750: the group reads results");
        ok(stat(tmpdir, &st_parent) == 0 && stat(path_of("absent/inbox"), &st_inbox) == 0 &&
           st_inbox.st_gid == st_parent.st_gid, "the queue's group is the group of the state dir's parent");
        q = queue_free(q);

        /* loop-agent@.path's MakeDirectory= creates inbox/ 0750 before anyone else. */
        sh("rm -rf %s", path_of("pathunit"));
        sh("mkdir -p -m 0750 %s", path_of("pathunit/inbox"));
        (void) chmod(path_of("pathunit/inbox"), 0750);
        ok(queue_open(path_of("pathunit"), true, &q) == 0 &&
           mode_of(path_of("pathunit/inbox")) == 03770,
           "an inbox/ made by the path unit gets the queue's mode");
        q = queue_free(q);

        if (geteuid() == 0) {
                struct stat st;
                sh("mkdir -p %s", path_of("grp"));
                if (chown(path_of("grp"), 0, 65534) < 0)
                        abort();
                ok(queue_open(path_of("grp/chan"), true, &q) == 0 &&
                   stat(path_of("grp/chan/inbox"), &st) == 0 && st.st_gid == 65534 &&
                   stat(path_of("grp/chan/outbox"), &st) == 0 && st.st_gid == 65534,
                   "as root, the queue dirs are given the state root's group (group loop)");
                q = queue_free(q);
        } else
                skip("as root, the queue dirs are given the state root's group (group loop)", "needs root");
        ok(queue_open("", true, &q) == -EINVAL, "an empty state dir is refused");
}

static void test_push_peek(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("order");
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *me = NULL;
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        size_t depth = 0;

        ok(queue_peek(q, &m) == -ENOENT && !m, "an empty queue peeks -ENOENT");
        ok(queue_push(q, "first", NULL, &a) == 0 && queue_push(q, "second", "alice", &b) == 0 &&
           queue_push(q, "third", NULL, &c) == 0, "three messages are queued");
        ok(queue_id_valid(a) && queue_id_valid(b) && queue_id_valid(c), "ids have the form <20 digits>-<8 hex>");
        ok(strcmp(a, b) < 0 && strcmp(b, c) < 0, "ids grow in arrival order");
        ok(queue_depth(q, &depth) == 0 && depth == 3, "the depth counts queued messages");
        ok(exists(path_of("order/inbox/%s.json", a)), "a message is inbox/<id>.json");
        is_int(count_entries(path_of("order/tmp")), 0, "nothing is left in tmp/ after a push");
        is_int(mode_of(path_of("order/inbox/%s.json", a)), 0640, "message files are 0640");

        ok(queue_peek(q, &m) == 0 && streq(m->id, a) && streq(m->prompt, "first"), "peek returns the oldest message");
        ok(queue_sender_name(getuid(), &me) == 0 && streq(m->sender, me), "the sender defaults to the caller's user");
        ok(m->attempts == 0 && !m->last_error && m->created_usec > 0, "a new message has no attempts and no error");
        m = message_drop(m);
        ok(queue_peek(q, &m) == 0 && streq(m->id, a), "peek does not consume");
        ok(queue_complete(q, m, result(json_object_new_object())) >= 0, "complete stores the result");
        m = message_drop(m);
        ok(queue_peek(q, &m) == 0 && streq(m->id, b) && streq(m->sender, "alice"),
           "after completion the next one comes, with its sender");
}

static void test_ids(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("ids");
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ char *future = NULL, *after = NULL;
        char name[4200];
        bool unique = true, ordered = true;
        int r;

        for (unsigned i = 0; i < 200; i++) {
                char *id = NULL;
                if (queue_push(q, "x", NULL, &id) < 0)
                        abort();
                if (strv_consume(&ids, id) < 0)
                        abort();
        }
        for (size_t i = 1; ids && ids[i]; i++) {
                if (strcmp(ids[i - 1], ids[i]) >= 0)
                        ordered = false;
                for (size_t j = 0; j < i; j++)
                        if (streq(ids[i], ids[j]))
                                unique = false;
        }
        ok(unique, "200 pushes in a row get 200 different ids");
        ok(ordered, "ids of back-to-back pushes (same microsecond included) grow strictly");
        ok(!queue_id_valid("99999999999999999999-00000000") && !queue_id_valid("00000000000000000001-0000000G") &&
           !queue_id_valid("0000000000000000001-000000000") && !queue_id_valid("00000000000000000001-00000000.json"),
           "ids out of range or of the wrong shape are invalid");

        /* A clock set back must not put a new message before the queued ones. */
        future = strdup("00999999999999999990-00000000");
        snprintf(name, sizeof name, "%s/ids/inbox/%s.json", tmpdir, future);
        write_text(name, "{\"id\":\"00999999999999999990-00000000\",\"prompt\":\"p\",\"sender\":\"root\","
                         "\"created_usec\":1,\"attempts\":0,\"last_error\":null}");
        r = queue_push(q, "later", NULL, &after);
        ok(r == 0 && strcmp(after, future) > 0,
           "a push sorts after the newest queued id even when the clock is behind it");
}

static void test_caps(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("caps");
        _cleanup_free_ char *big = malloc(QUEUE_PROMPT_MAX + 2), *id = NULL;
        size_t depth = 0;
        char name[4200];

        if (!big)
                abort();
        memset(big, 'a', QUEUE_PROMPT_MAX + 1);
        big[QUEUE_PROMPT_MAX + 1] = 0;
        ok(queue_push(q, big, NULL, NULL) == -E2BIG, "a prompt over QUEUE_PROMPT_MAX is refused with -E2BIG");
        big[QUEUE_PROMPT_MAX] = 0;
        ok(queue_push(q, big, NULL, &id) == 0, "a prompt of exactly QUEUE_PROMPT_MAX is queued");
        {
                _cleanup_(queue_message_freep) QueueMessage *m = NULL;
                ok(queue_peek(q, &m) == 0 && strlen(m->prompt) == QUEUE_PROMPT_MAX, "and reads back whole");
                ok(queue_complete(q, m, result(json_object_new_object())) >= 0, "and completes");
        }
        ok(queue_push(q, "", NULL, NULL) == -EINVAL, "an empty prompt is refused");
        ok(queue_push(q, "p", "bad\nname", NULL) == -EINVAL, "a sender with control characters is refused");

        for (unsigned i = 0; i < QUEUE_DEPTH_MAX; i++) {
                snprintf(name, sizeof name, "%s/caps/inbox/%020u-00000000.json", tmpdir, i + 1);
                int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
                if (fd < 0)
                        abort();
                close(fd);
        }
        ok(queue_depth(q, &depth) == 0 && depth == QUEUE_DEPTH_MAX, "the depth counts every inbox entry");
        ok(queue_push(q, "one too many", NULL, NULL) == -EXFULL, "a push beyond QUEUE_DEPTH_MAX is refused with -EXFULL (not -ENOSPC, which is a full disk)");
        sh("rm -rf %s", path_of("caps"));
}

static void test_crash_leftovers(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("crash");
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        struct timespec old[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
        size_t depth = 1;

        /* What a sender killed between write and rename leaves: a half-written file in tmp/. */
        write_text(path_of("crash/tmp/%s", "0123456789abcdef.tmp"), "{\"id\":\"0000");
        ok(queue_peek(q, &m) == -ENOENT && queue_depth(q, &depth) == 0 && depth == 0,
           "a half-written message in tmp/ is not queued");
        (void) utimensat(AT_FDCWD, path_of("crash/tmp/%s", "0123456789abcdef.tmp"), old, 0);
        write_text(path_of("crash/tmp/%s", "fresh.tmp"), "being written");
        q = queue_free(q);
        ok(queue_open(path_of("crash"), true, &q) == 0, "the queue opens again after the crash");
        ok(!exists(path_of("crash/tmp/%s", "0123456789abcdef.tmp")), "a stale tmp/ leftover is removed on open");
        ok(exists(path_of("crash/tmp/%s", "fresh.tmp")), "a fresh tmp/ file (a write in progress) is kept");
}

static void test_complete_fault(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("fault");
        _cleanup_(queue_message_freep) QueueMessage *m = NULL, *again = NULL;
        _cleanup_(json_object_putp) json_object *res = json_object_new_object();
        _cleanup_free_ char *id = NULL, *text = NULL;
        int r;

        json_object_object_add(res, "result", json_object_new_string("done"));
        if (queue_push(q, "work", NULL, &id) < 0 || queue_peek(q, &m) < 0)
                abort();

        /* The outbox cannot take the result: a directory sits where the file must go (works as root too). */
        sh("mkdir %s", path_of("fault/outbox/%s.json", id));
        r = queue_complete(q, m, res);
        ok(r < 0, "complete fails when the result cannot be stored");
        ok(exists(path_of("fault/inbox/%s.json", id)), "the message stays in the inbox when the outbox write fails");
        is_int(count_entries(path_of("fault/tmp")), 0, "the failed write leaves nothing in tmp/");
        ok(queue_peek(q, &again) == 0 && streq(again->id, id), "the message is still the next one to run");

        sh("rmdir %s", path_of("fault/outbox/%s.json", id));
        ok(queue_complete(q, m, res) == 0, "complete succeeds once the outbox is writable");
        text = read_text(path_of("fault/outbox/%s.json", id));
        ok(text && strstr(text, "\"result\":\"done\""), "the result is in outbox/<id>.json");
        ok(!exists(path_of("fault/inbox/%s.json", id)), "the message left the inbox");
        ok(queue_complete(q, m, result(json_object_new_string("x"))) == -EINVAL, "a result that is not an object is refused");

        /* A runner that died after storing the result but before removing the message. */
        {
                _cleanup_(queue_message_freep) QueueMessage *n = NULL;
                _cleanup_free_ char *id2 = NULL;
                char name[4200];
                if (queue_push(q, "done before", NULL, &id2) < 0)
                        abort();
                snprintf(name, sizeof name, "%s/fault/outbox/%s.json", tmpdir, id2);
                write_text(name, "{}");
                ok(queue_peek(q, &n) == -ENOENT && !exists(path_of("fault/inbox/%s.json", id2)),
                   "a message whose result is already stored is removed, not run again");
        }
}

static void test_attempts(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("attempts");
        _cleanup_(queue_message_freep) QueueMessage *m = NULL, *gone = NULL;
        _cleanup_free_ char *id = NULL, *text = NULL, *longr = NULL;

        if (queue_push(q, "flaky", NULL, &id) < 0 || queue_peek(q, &m) < 0)
                abort();
        ok(queue_begin_attempt(q, m) == 0 && m->attempts == 1, "begin_attempt counts the attempt");
        q = queue_free(q);
        m = message_drop(m);
        /* As if the runner had been killed: a new one opens the queue. */
        ok(queue_open(path_of("attempts"), true, &q) == 0 && queue_peek(q, &m) == 0 && m->attempts == 1,
           "the attempt count survives the runner");
        ok(queue_begin_attempt(q, m) == 0 && m->attempts == 2, "a second attempt counts 2");

        ok(queue_record_failure(q, m, "engine went away") == 0 && streq_ptr(m->last_error, "engine went away"),
           "record_failure sets last_error");
        m = message_drop(m);
        ok(queue_peek(q, &m) == 0 && streq_ptr(m->last_error, "engine went away") && m->attempts == 2,
           "last_error is persisted and the message stays queued");

        longr = malloc(QUEUE_ERROR_MAX * 2 + 1);
        if (!longr)
                abort();
        memset(longr, 'e', QUEUE_ERROR_MAX * 2);
        longr[QUEUE_ERROR_MAX * 2] = 0;
        ok(queue_record_failure(q, m, longr) == 0 && strlen(m->last_error) == QUEUE_ERROR_MAX,
           "a long failure reason is cut to QUEUE_ERROR_MAX");

        ok(queue_fail(q, m, "gave up after 2 attempts") == 0, "fail succeeds");
        ok(!exists(path_of("attempts/inbox/%s.json", id)), "a failed message leaves the inbox");
        text = read_text(path_of("attempts/failed/%s.json", id));
        ok(text && strstr(text, "\"reason\":\"gave up after 2 attempts\"") && strstr(text, "\"attempts\":2") &&
           strstr(text, "\"prompt\":\"flaky\""), "failed/<id>.json keeps the prompt, the reason and the attempts");
        ok(queue_begin_attempt(q, m) == -ENOENT && !exists(path_of("attempts/inbox/%s.json", id)),
           "begin_attempt on a message that left the inbox does not bring it back");
        ok(queue_peek(q, &gone) == -ENOENT, "the queue is empty afterwards");
}

static void test_malformed(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("bad");
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        _cleanup_(json_object_putp) json_object *failed = NULL;
        _cleanup_free_ char *good = NULL;
        size_t depth = 0;
        bool reasons = true;
        const struct {
                const char *name;
                const char *text;       /* NULL: made otherwise below */
        } bad[] = {
                { "00000000000000000001-00000000.json", "{not json" },
                { "00000000000000000002-00000000.json", "{\"id\":\"00000000000000000099-00000000\",\"prompt\":\"p\","
                  "\"sender\":\"root\",\"created_usec\":1,\"attempts\":0}" },
                { "00000000000000000003-00000000.json", "{\"id\":\"00000000000000000003-00000000\",\"prompt\":\"p\","
                  "\"sender\":\"root\",\"created_usec\":1,\"attempts\":99999}" },
                { "00000000000000000004-00000000.json", "{\"id\":\"00000000000000000004-00000000\",\"prompt\":\"a\\u0000b\","
                  "\"sender\":\"root\",\"created_usec\":1,\"attempts\":0}" },
                { "00000000000000000005-00000000.json", "{\"id\":\"00000000000000000005-00000000\",\"prompt\":42,"
                  "\"sender\":\"root\",\"created_usec\":1,\"attempts\":0}" },
                { "00000000000000000006-00000000.json", "[1,2]" },
                { "00000000000000000007-00000000.json", NULL },         /* a symlink */
                { "00000000000000000008-00000000.json", NULL },         /* a directory */
                { "00000000000000000009-00000000.json", NULL },         /* a FIFO */
                { "README", "not a message" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                const char *p = path_of("bad/inbox/%s", bad[i].name);
                if (bad[i].text)
                        write_text(p, bad[i].text);
                else if (i == 6 && symlink("/etc/passwd", p) < 0)
                        abort();
                else if (i == 7 && mkdir(p, 0755) < 0)
                        abort();
                else if (i == 8 && mkfifo(p, 0644) < 0)
                        abort();
        }
        if (queue_push(q, "good one", NULL, &good) < 0)
                abort();

        ok(queue_peek(q, &m) == 0 && streq(m->id, good), "malformed messages do not block the queue: the good one comes");
        ok(queue_complete(q, m, result(json_object_new_object())) == 0 && queue_peek(q, &m) == -ENOENT,
           "a malformed entry sorting after the good one is moved away when its turn comes");
        ok(queue_depth(q, &depth) == 0 && depth == 0, "every malformed entry left the inbox");
        ok(queue_list(q, "failed", 0, &failed) == 0 && json_object_array_length(failed) == ELEMENTSOF(bad),
           "each malformed entry is described in failed/");
        for (size_t i = 0; failed && i < json_object_array_length(failed); i++) {
                json_object *o = json_object_array_get_idx(failed, i), *reason, *raw;
                if (!json_object_object_get_ex(o, "reason", &reason) || isempty(json_object_get_string(reason)) ||
                    !json_object_object_get_ex(o, "raw", &raw) ||
                    !exists(path_of("bad/failed/%s", json_object_get_string(raw))))
                        reasons = false;
        }
        ok(reasons, "each failed/ record has a reason and the original file next to it (<id>.raw)");
        ok(file_contains(path_of("bad/failed/00000000000000000001-00000000.json"), "not valid JSON"),
           "the reason says what was wrong (invalid JSON)");
        ok(file_contains(path_of("bad/failed/00000000000000000002-00000000.json"), "does not match the file name"),
           "an id not matching the file name is malformed");
        ok(file_contains(path_of("bad/failed/00000000000000000003-00000000.json"), "attempts"),
           "an absurd attempt count is malformed");
        ok(file_contains(path_of("bad/failed/00000000000000000004-00000000.json"), "prompt"),
           "a prompt with a NUL byte is malformed");
        ok(file_contains(path_of("bad/failed/00000000000000000007-00000000.json"), "not a regular file"),
           "a symlink is not followed and is moved away");
        ok(file_contains(path_of("bad/failed/00000000000000000009-00000000.json"), "not a regular file"),
           "a FIFO is not opened and is moved away");
        ok(exists("/etc/passwd"), "the symlink's target is untouched");
}

static void test_sender_is_owner(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("owner");
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        _cleanup_free_ char *nobody = NULL;
        const char *p = path_of("owner/inbox/%s", "00000000000000000001-00000000.json");

        if (geteuid() != 0) {
                skip("a message claiming another sender than its file's owner is recorded as the owner's", "needs root");
                return;
        }
        write_text(p, "{\"id\":\"00000000000000000001-00000000\",\"prompt\":\"p\",\"sender\":\"root\","
                      "\"created_usec\":1,\"attempts\":0,\"last_error\":null}");
        if (chown(p, 65534, 65534) < 0 || queue_sender_name(65534, &nobody) < 0)
                abort();
        ok(queue_peek(q, &m) == 0 && streq(m->sender, nobody),
           "a message claiming another sender than its file's owner is recorded as the owner's");
}

/* LOOP_TASK= on a run's records and "task" in its result say a scheduled task queued it: only root's
 * `loop task fire` does; a sender's file claiming a task was taken at its word. */
static void test_task_claim_is_roots(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("taskclaim");
        _cleanup_(queue_message_freep) QueueMessage *m = NULL, *n = NULL;
        const char *p = path_of("taskclaim/inbox/%s", "00000000000000000001-00000000.json");
        const char *msg = "{\"id\":\"00000000000000000001-00000000\",\"prompt\":\"p\",\"sender\":\"root\","
                          "\"task\":\"0123abcd\",\"created_usec\":1,\"attempts\":0,\"last_error\":null}";

        if (geteuid() != 0) {
                skip("a sender's message claiming a scheduled task is not recorded as the task's", "needs root");
                skip("root's message naming its task keeps it", "needs root");
                return;
        }
        write_text(p, msg);
        ok(queue_peek(q, &m) == 0 && streq_ptr(m->task, "0123abcd"), "root's message naming its task keeps it");
        if (chown(p, 65534, 65534) < 0)
                abort();
        ok(queue_peek(q, &n) == 0 && !n->task, "a sender's message claiming a scheduled task is not recorded as the task's");
}

/* As systemd sets it up: /var/lib/loop root:loop 0750, the channel's state dir 0751 (StateDirectoryMode=),
 * the runner as root; a member of group loop sends. nogroup stands in for group loop, nobody for the member. */
static void test_member(void) {
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_(queue_message_freep) QueueMessage *m = NULL, *n = NULL;
        _cleanup_free_ char *root_id = NULL, *nobody = NULL;
        int status = -1;
        pid_t pid;

        if (geteuid() != 0) {
                skip("sending as a member of the queue's group", "needs root");
                return;
        }
        sh("mkdir -p %s", path_of("members"));
        if (chmod(tmpdir, 0711) < 0 || chown(path_of("members"), 0, 65534) < 0 || chmod(path_of("members"), 0750) < 0 ||
            queue_open(path_of("members/chan"), true, &q) < 0 || chmod(path_of("members/chan"), 0751) < 0 ||
            queue_push(q, "root's", NULL, &root_id) < 0 || queue_sender_name(65534, &nobody) < 0)
                abort();

        pid = fork();
        if (pid < 0)
                abort();
        if (pid == 0) {
                Queue *mq = NULL;
                gid_t g = 65534;

                if (setgroups(1, &g) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(10);
                if (queue_open(path_of("members/chan"), true, &mq) < 0)
                        _exit(11);
                if (queue_push(mq, "member's", "root", NULL) < 0)      /* and it claims to be root */
                        _exit(12);
                if (unlink(path_of("members/chan/inbox/%s.json", root_id)) >= 0 || errno != EPERM)
                        _exit(13);
                _exit(0);
        }
        if (waitpid(pid, &status, 0) < 0)
                abort();
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                printf("# member child: status %d\n", status);
        ok(WIFEXITED(status) && WEXITSTATUS(status) != 10 && WEXITSTATUS(status) != 11 && WEXITSTATUS(status) != 12,
           "an unprivileged member of the queue's group queues a message");
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a member cannot remove another sender's message (sticky inbox/)");
        ok(queue_peek(q, &m) == 0 && streq(m->id, root_id) && queue_complete(q, m, result(json_object_new_object())) == 0 &&
           queue_peek(q, &n) == 0 && streq(n->prompt, "member's"), "the runner takes both messages in order");
        ok(n && streq(n->sender, nobody), "the member's message records the member as sender, not the name it claimed");
        ok(n && queue_begin_attempt(q, n) == 0 && queue_fail(q, n, "test") == 0, "the runner moves a member's message");
        (void) chmod(tmpdir, 0700);
}

static void test_list(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("list");
        _cleanup_(json_object_putp) json_object *all = NULL, *last2 = NULL, *inbox = NULL;
        char *ids[4] = {};
        json_object *v;

        for (unsigned i = 0; i < 4; i++) {
                _cleanup_(queue_message_freep) QueueMessage *m = NULL;
                _cleanup_(json_object_putp) json_object *r = json_object_new_object();
                if (queue_push(q, "p", NULL, &ids[i]) < 0 || queue_peek(q, &m) < 0)
                        abort();
                json_object_object_add(r, "id", json_object_new_string(m->id));
                if (queue_complete(q, m, r) < 0)
                        abort();
        }
        ok(queue_list(q, "outbox", 0, &all) == 0 && json_object_array_length(all) == 4, "list with limit 0 returns all");
        ok(json_object_object_get_ex(json_object_array_get_idx(all, 0), "id", &v) && streq(json_object_get_string(v), ids[0]),
           "results are listed oldest first");
        ok(queue_list(q, "outbox", 2, &last2) == 0 && json_object_array_length(last2) == 2 &&
           json_object_object_get_ex(json_object_array_get_idx(last2, 1), "id", &v) && streq(json_object_get_string(v), ids[3]) &&
           json_object_object_get_ex(json_object_array_get_idx(last2, 0), "id", &v) && streq(json_object_get_string(v), ids[2]),
           "a limit keeps the newest entries, oldest first");
        ok(queue_list(q, "inbox", 0, &inbox) == 0 && json_object_array_length(inbox) == 0, "the inbox lists empty");
        ok(queue_list(q, "../etc", 0, &inbox) == -EINVAL, "an unknown box is refused");
        for (unsigned i = 0; i < 4; i++)
                free(ids[i]);
}

static void test_session(void) {
        _cleanup_(queue_freep) Queue *q = open_fresh("session");
        _cleanup_free_ char *s = NULL, *longid = malloc(QUEUE_SESSION_ID_MAX + 2);

        if (!longid)
                abort();
        ok(queue_session_get(q, &s) == -ENOENT && !s, "no session at first: -ENOENT");
        ok(queue_session_set(q, "0b8e1c6e-5d6a-4e52-9f7b-123456789abc") == 0, "a session id is stored");
        ok(queue_session_get(q, &s) == 0 && streq(s, "0b8e1c6e-5d6a-4e52-9f7b-123456789abc"), "and read back");
        s = mfree(s);
        ok(queue_session_set(q, "a/b") == -EINVAL, "a session id with '/' is refused");
        ok(queue_session_set(q, "-rf") == -EINVAL, "a session id starting with '-' is refused");
        ok(queue_session_set(q, "a\nb") == -EINVAL, "a session id with a control character is refused");
        ok(queue_session_set(q, "") == -EINVAL, "an empty session id is refused");
        memset(longid, 'x', QUEUE_SESSION_ID_MAX + 1);
        longid[QUEUE_SESSION_ID_MAX + 1] = 0;
        ok(queue_session_set(q, longid) == -EINVAL, "a session id over 256 bytes is refused");
        longid[QUEUE_SESSION_ID_MAX] = 0;
        ok(queue_session_set(q, longid) == 0, "a session id of 256 bytes is accepted");
        ok(queue_session_get(q, &s) == 0 && strlen(s) == QUEUE_SESSION_ID_MAX, "and read back");
        s = mfree(s);
        write_text(path_of("session/session"), "../../etc\n");
        ok(queue_session_get(q, &s) == -EBADMSG && !s, "an invalid session file is -EBADMSG, not returned");
        ok(queue_session_set(q, NULL) == 0 && queue_session_get(q, &s) == -ENOENT, "setting NULL forgets the session");
}

/* Runs $LOOP_BIN with args, stdin from input (NULL: /dev/null); stdout into out. Returns the exit status. */
static int run_loop(const char *input, char *out, size_t size, char **args) {
        const char *bin = getenv("LOOP_BIN");
        int in[2], outp[2], status;
        size_t n = 0;
        pid_t pid;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
                abort();
        pid = fork();
        if (pid < 0)
                abort();
        if (pid == 0) {
                char *argv[16] = { (char *) "loop" };
                for (size_t i = 0; args[i] && i < 14; i++)
                        argv[i + 1] = args[i];
                dup2(in[0], STDIN_FILENO);
                dup2(outp[1], STDOUT_FILENO);
                setenv("LOOP_CONFIG_DIR", path_of("cfg"), 1);
                setenv("LOOP_STATE_DIR", path_of("state"), 1);
                setenv("LOOP_LOG_LEVEL", "emerg", 1);
                execv(bin, argv);
                _exit(127);
        }
        close(in[0]);
        close(outp[1]);
        if (input)
                (void) loop_write(in[1], input, strlen(input));
        close(in[1]);
        for (;;) {
                ssize_t k = read(outp[0], out + n, size - 1 - n);
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        out[n] = 0;
        close(outp[0]);
        if (waitpid(pid, &status, 0) < 0)
                abort();
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_cli(void) {
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_(queue_message_freep) QueueMessage *m = NULL;
        _cleanup_free_ char *big = NULL;
        char out[65536], id[64];
        int r;

        if (isempty(getenv("LOOP_BIN"))) {
                skip("the loop CLI on the queue", "LOOP_BIN is not set");
                return;
        }
        sh("mkdir -p %s", path_of("cfg/channels.d"));
        write_text(path_of("cfg/channels.d/demo.json"), "{}\n");
        write_text(path_of("cfg/channels.d/off.json"), "{\"enabled\": false}\n");
        sh("mkdir -p %s", path_of("state"));

        r = run_loop("fix the\nbuild\n", out, sizeof out, (char *[]) { (char *) "send", (char *) "demo", (char *) "-", NULL });
        snprintf(id, sizeof id, "%.*s", (int) strcspn(out, "\n"), out);
        ok(r == 0 && queue_id_valid(id), "loop send NAME - queues standard input and prints the message id");
        ok(queue_open(path_of("state/demo"), false, &q) == 0 && queue_peek(q, &m) == 0 &&
           streq(m->id, id) && streq(m->prompt, "fix the\nbuild"),
           "the stdin prompt is stored verbatim, without the trailing newline");

        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "send", (char *) "demo", (char *) "--", (char *) "-n",
                                                          (char *) "words", NULL });
        ok(r == 0, "loop send NAME -- words... queues the words");
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "send", (char *) "nosuch", (char *) "hi", NULL });
        ok(r == 1, "loop send to an unknown channel exits 1");
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "send", (char *) "off", (char *) "hi", NULL });
        ok(r == 1, "loop send to a disabled channel exits 1");
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "send", (char *) "../etc", (char *) "hi", NULL });
        ok(r == 1, "loop send with an invalid channel name exits 1");
        r = run_loop("", out, sizeof out, (char *[]) { (char *) "send", (char *) "demo", (char *) "-", NULL });
        ok(r == 1, "an empty prompt on standard input is refused");
        big = malloc(QUEUE_PROMPT_MAX + 2);
        if (!big)
                abort();
        memset(big, 'b', QUEUE_PROMPT_MAX + 1);
        big[QUEUE_PROMPT_MAX + 1] = 0;
        r = run_loop(big, out, sizeof out, (char *[]) { (char *) "send", (char *) "demo", (char *) "-", NULL });
        ok(r == 1, "a prompt on standard input over QUEUE_PROMPT_MAX is refused");

        {
                _cleanup_(json_object_putp) json_object *res = json_object_new_object();
                json_object_object_add(res, "id", json_object_new_string(m->id));
                json_object_object_add(res, "result", json_object_new_string("Build fixed.\nDetails follow."));
                json_object_object_add(res, "session_id", json_object_new_string("sess-1"));
                json_object_object_add(res, "is_error", json_object_new_boolean(false));
                json_object_object_add(res, "finished_usec", json_object_new_int64(1700000000000000));
                if (queue_complete(q, m, res) < 0)
                        abort();
        }
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "outbox", (char *) "demo", NULL });
        ok(r == 0 && strstr(out, id) && strstr(out, "ok") && strstr(out, "sess-1") && strstr(out, "Build fixed....") &&
           !strstr(out, "Details"), "loop outbox shows id, status, session and the first line of the result");
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "results", (char *) "demo", (char *) "--json",
                                                          (char *) "-n", (char *) "1", NULL });
        {
                _cleanup_(json_object_putp) json_object *a = json_tokener_parse(out);
                ok(r == 0 && a && json_object_is_type(a, json_type_array) && json_object_array_length(a) == 1,
                   "loop results --json -n 1 prints a JSON array of the last result");
        }
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "queue", (char *) "demo", (char *) "--json", NULL });
        {
                _cleanup_(json_object_putp) json_object *o = json_tokener_parse(out);
                json_object *inbox = NULL;
                ok(r == 0 && o && json_object_object_get_ex(o, "inbox", &inbox) && json_object_array_length(inbox) == 1,
                   "loop queue --json lists what is still queued");
        }
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "queue", (char *) "demo", NULL });
        ok(r == 0 && strstr(out, "-n words"), "loop queue shows the queued messages");
        r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "outbox", (char *) "never", NULL });
        ok(r == 1, "loop outbox of a channel without a queue exits 1");
        {
                /* what the agent answered reaches the operator's terminal escaped: the C1 CSI (U+009B) and a
                 * bidi override (U+202E) passed before (C0 controls were blanked) */
                _cleanup_(json_object_putp) json_object *res = json_object_new_object();
                QueueMessage *m2 = NULL;

                json_object_object_add(res, "result", json_object_new_string("Done \xc2\x9b""2J \xe2\x80\xae""exe.txt \x1b]0;t\x07"));
                json_object_object_add(res, "is_error", json_object_new_boolean(false));
                json_object_object_add(res, "finished_usec", json_object_new_int64(1700000000000001));
                ok(queue_peek(q, &m2) == 0 && json_object_object_add(res, "id", json_object_new_string(m2->id)) == 0 &&
                   queue_complete(q, m2, res) == 0, "a result with a C1 control, a bidi override and an escape is stored");
                queue_message_free(m2);
                r = run_loop(NULL, out, sizeof out, (char *[]) { (char *) "outbox", (char *) "demo", NULL });
                ok(r == 0 && !strstr(out, "\xc2\x9b") && !strstr(out, "\xe2\x80\xae") && !strchr(out, 0x1b) &&
                   strstr(out, "Done \\u009b2J \\u202eexe.txt \\x1b]0;t\\x07"),
                   "loop outbox shows the result's controls and bidi override escaped");
                if (r != 0 || !strstr(out, "\\u202e"))
                        printf("# %s\n", out);
        }
}

int main(void) {
        log_setup();
        if (!mkdtemp(tmpdir))
                abort();

        test_open();
        test_push_peek();
        test_ids();
        test_caps();
        test_crash_leftovers();
        test_complete_fault();
        test_attempts();
        test_malformed();
        test_sender_is_owner();
        test_task_claim_is_roots();
        test_member();
        test_list();
        test_session();
        test_cli();

        sh("rm -rf %s", tmpdir);
        for (size_t i = 0; i < n_results; i++)
                json_object_put(results[i]);
        return done_testing();
}
