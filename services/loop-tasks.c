/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-tasks: the scheduled tasks of one channel (loop-tasks@NAME.service), started by
 * loop-tasks@NAME.socket on /run/loop/NAME/tasks.sock, which the runner bind-mounts into the channel's
 * agent containers at /run/loop/tasks.sock. `loop mcp` inside (the agent's MCP server) sends one request
 * per connection, one JSON line:
 *
 *   {"token": "<the container's tasks token>", "op": "schedule|list|show|cancel|edit|toggle", "args": {...}}
 *
 * and reads one JSON line back (tasks-service.h). The token names the container (RUNTIME/NAME/
 * tasks-tokens/, compared in constant time); a request without a token of this channel is refused, so a
 * container sees and changes its own channel's tasks only. The rules (cap, minimum interval, prompt size)
 * and the records (LOOP_EVENT=task-*) are tasks_request()'s, the same the operator's `loop task` obeys.
 *
 * The helper only writes the task files (its StateDirectory=, /var/lib/loop/NAME/tasks): it holds no
 * privilege at all. loop-tasks-sync@NAME.path sees the change and starts loop-tasks-sync.service
 * (`loop task sync --all`, root, a few lines of work from the files), which makes the timers agree: the part that talks to untrusted callers cannot
 * talk to systemd, and the part that can reads nothing but files this one wrote and re-validates them.
 *
 * Settings come from the generator's drop-in: LOOP_TASKS_MAX, LOOP_TASKS_MIN_INTERVAL_SEC,
 * LOOP_TASKS_PROMPT_MAX, LOOP_TASKS_IDLE_SEC. Each connection runs on a worker of the helper skeleton
 * (socket-service.h): its request must arrive within the head deadline, at most TASKS_REQUEST_MAX bytes. */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "audit.h"
#include "audit-limiter.h"
#include "config-build.h"
#include "config.h"
#include "gate-token.h"
#include "io-util.h"
#include "log.h"
#include "socket-service.h"
#include "strv.h"
#include "tasks-service.h"
#include "tasks-store.h"
#include "channel-defaults.h"
#include "env-util.h"

#define TASKS_TOKENS_DIRNAME "tasks-tokens"
#define TASKS_IDLE_SEC_DEFAULT 30U
#define TASKS_IDLE_SEC_MAX 86400U
#define TASKS_CONNECTIONS_MAX 32U
/* Changes (schedule, edit, toggle, cancel) of the channel's tasks per minute: each one is a round of the
 * timers' writer (root) and timers made again by systemd, which an agent changing a task in a loop kept
 * busy without end. Far above what a person or an agent planning its work makes. */
#define TASKS_CHANGES_PER_MINUTE 60U
#define TASKS_CHANGES_WINDOW_USEC (60ULL * 1000000ULL)

static const char * const changing_ops[] = { "schedule", "edit", "toggle", "cancel", NULL };

typedef struct TasksServer {
        char *channel;
        char *state_dir;
        TasksConfig limits;
        pthread_mutex_t changes_lock;   /* the workers share the limiter */
        AuditLimiter *changes;
} TasksServer;

static void changes_summary(const char *key, uint64_t suppressed, void *userdata) {
        TasksServer *s = userdata;
        char *extra[] = { (char *) "LOOP_REASON=rate", NULL };
        AuditFields f = { .channel = s->channel, .extra = extra };

        (void) key;
        (void) audit_log(AUDIT_TASK_REFUSED, LOG_WARNING, &f,
                         "%" PRIu64 " changes of the tasks of channel %s refused: more than %u a minute.", suppressed,
                         s->channel, TASKS_CHANGES_PER_MINUTE);
}

/* 1: the change may be made; 0: over the channel's rate; -ENOMEM. */
static int changes_admit(TasksServer *s) {
        int r;

        pthread_mutex_lock(&s->changes_lock);
        r = audit_limiter_admit(s->changes, "changes", clock_usec(CLOCK_MONOTONIC), changes_summary, s);
        pthread_mutex_unlock(&s->changes_lock);
        return r;
}

static int answer(int fd, json_object *o) {
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        int r;

        if (!text)
                return -ENOMEM;
        r = loop_write(fd, text, strlen(text));
        return r < 0 ? r : loop_write(fd, "\n", 1);
}

static int answer_error(int fd, const char *error) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o || json_object_object_add(o, "ok", json_object_new_boolean(false)) < 0 ||
            json_object_object_add(o, "error", json_object_new_string(error)) < 0)
                return -ENOMEM;
        return answer(fd, o);
}

/* One line, within the head deadline: 0 and the text, or a negative errno (the reason was answered). */
static int read_request(SocketConnection *c, char **ret) {
        _cleanup_free_ char *buf = NULL;
        int fd = socket_connection_fd(c);
        size_t size = 0;

        buf = malloc(TASKS_REQUEST_MAX + 1);
        if (!buf)
                return -ENOMEM;
        if (socket_connection_head_begin(c) < 0)
                return -ESHUTDOWN;
        for (;;) {
                char *nl;
                ssize_t k;

                k = read(fd, buf + size, TASKS_REQUEST_MAX - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        if (socket_connection_head_expired(c))
                                (void) answer_error(fd, "the request did not arrive in time");
                        return k < 0 ? -errno : -ECONNRESET;
                }
                nl = memchr(buf + size, '\n', (size_t) k);
                size += (size_t) k;
                if (nl) {
                        *nl = 0;
                        break;
                }
                if (size >= TASKS_REQUEST_MAX) {
                        (void) answer_error(fd, "the request is too large");
                        return -E2BIG;
                }
        }
        if (socket_connection_head_end(c) == -ETIMEDOUT) {
                (void) answer_error(fd, "the request did not arrive in time");
                return -ETIMEDOUT;
        }
        *ret = TAKE_PTR(buf);
        return 0;
}

static void serve(SocketConnection *c, void *userdata) {
        TasksServer *s = userdata;
        _cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
        _cleanup_free_ char *text = NULL, *container = NULL, *actor = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        json_object *token = NULL, *op = NULL, *args = NULL;
        int fd = socket_connection_fd(c), r;
        json_tokener *tok;

        if (read_request(c, &text) < 0)
                return;
        tok = json_tokener_new_ex(32);
        if (!tok)
                return;
        req = json_tokener_parse_ex(tok, text, (int) strlen(text));
        r = json_tokener_get_error(tok) == json_tokener_success;
        json_tokener_free(tok);
        if (!r || !json_object_is_type(req, json_type_object) ||
            !json_object_object_get_ex(req, "op", &op) || !json_object_is_type(op, json_type_string)) {
                (void) answer_error(fd, "the request is not {\"token\": ..., \"op\": ..., \"args\": {...}}");
                return;
        }
        json_object_object_get_ex(req, "args", &args);
        json_object_object_get_ex(req, "token", &token);

        /* who: the container whose token this is; nobody else is served */
        r = loop_token_dir_open(s->channel, TASKS_TOKENS_DIRNAME, &dir_fd);
        if (r < 0)
                log_error_errno(r, "Cannot open the tasks token directory of channel %s: %m", s->channel);
        if (r < 0 || !token || !json_object_is_type(token, json_type_string) ||
            gate_token_find_at(dir_fd, json_object_get_string(token), &container) < 0) {
                char *extra[] = { (char *) "LOOP_REASON=token", NULL };
                AuditFields f = { .channel = s->channel, .extra = extra };
                (void) audit_log(AUDIT_TASK_REFUSED, LOG_WARNING, &f,
                                 "Task request for channel %s without a valid container token, refused.", s->channel);
                (void) answer_error(fd, "no valid token of this channel: only the channel's own containers may schedule its tasks");
                return;
        }
        if (asprintf(&actor, "container:%s", container) < 0)
                return;

        if (strv_contains((char **) changing_ops, json_object_get_string(op))) {
                r = changes_admit(s);
                if (r < 0)
                        return;
                if (r == 0) {
                        char why[128];
                        snprintf(why, sizeof why, "too many changes to this channel's tasks: at most %u a minute, try again later",
                                 TASKS_CHANGES_PER_MINUTE);
                        (void) answer_error(fd, why);
                        return;
                }
        }

        TasksContext ctx = {
                .channel = s->channel,
                .state_dir = s->state_dir,
                .limits = s->limits,
                .actor = actor,
        };
        /* run and fire are the operator's; tasks_request() refuses them here */
        r = tasks_request(&ctx, json_object_get_string(op), args, &reply);
        if (r < 0) {
                (void) answer_error(fd, "internal error");
                return;
        }
        (void) answer(fd, reply);
}

static int run(int argc, char *argv[]) {
        _cleanup_(socket_service_freep) SocketService *service = NULL;
        TasksServer s = {};
        const char *reason;
        char *channel = NULL;
        uint64_t idle_sec;
        int r;

        log_setup();
        r = socket_service_parse_argv(argc, argv, "CHANNEL",
                                      "The scheduled tasks of a channel, started by loop-tasks@CHANNEL.socket.",
                                      NULL, 0, 1, &channel);
        if (r <= 0)
                return r;
        if (channel_name_check(channel, &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", channel, reason);
        s.channel = channel;
        if ((r = env_uint("LOOP_TASKS_MAX", CHANNEL_TASKS_MAX_DEFAULT, TASKS_PER_CHANNEL_MAX, &s.limits.max)) < 0 ||
            (r = env_uint("LOOP_TASKS_MIN_INTERVAL_SEC", CHANNEL_TASKS_MIN_INTERVAL_SEC_DEFAULT, TASKS_INTERVAL_MAX_SEC, &s.limits.min_interval_sec)) < 0 ||
            (r = env_uint("LOOP_TASKS_PROMPT_MAX", CHANNEL_TASKS_PROMPT_MAX_DEFAULT, TASKS_PROMPT_MAX, &s.limits.prompt_max)) < 0 ||
            (r = env_uint("LOOP_TASKS_IDLE_SEC", TASKS_IDLE_SEC_DEFAULT, TASKS_IDLE_SEC_MAX, &idle_sec)) < 0)
                return log_error_errno(r, "Invalid setting in the environment: %m");
        /* $STATE_DIRECTORY is STATE/NAME/tasks (StateDirectory=); the channel's state dir is its parent */
        {
                const char *sd = getenv("STATE_DIRECTORY");
                const char *slash;

                if (!isempty(sd) && (slash = strrchr(sd, '/')) && streq(slash + 1, TASKS_DIRNAME))
                        s.state_dir = strndup(sd, (size_t) (slash - sd));
                else if (asprintf(&s.state_dir, "%s/%s", getenv("LOOP_STATE_DIR") ?: LOOP_STATE_DIR, channel) < 0)
                        s.state_dir = NULL;
                if (!s.state_dir)
                        return log_oom();
        }

        r = audit_limiter_new(TASKS_CHANGES_PER_MINUTE, TASKS_CHANGES_WINDOW_USEC, &s.changes);
        if (r < 0)
                return log_oom();
        pthread_mutex_init(&s.changes_lock, NULL);

        r = socket_service_new(&(SocketServiceConfig) {
                        .connections_max = TASKS_CONNECTIONS_MAX,
                        .idle_usec = idle_sec * 1000000ULL,
                        .run = serve,
                        .userdata = &s,
                }, &service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        r = socket_service_listen_systemd(service);
        if (r == -EBADF)
                r = log_error_errno(r, "No sockets passed; loop-tasks is started by loop-tasks@NAME.socket.");
        else if (r < 0)
                r = log_error_errno(r, "The sockets from systemd are not listening AF_UNIX stream sockets: %m");
        if (r >= 0) {
                (void) sd_notify(false, "READY=1\nSTATUS=Serving task requests.");
                r = socket_service_run(service);
                if (r < 0)
                        log_error_errno(r, "Event loop failed: %m");
        }
        if (s.changes) {
                audit_limiter_expire(s.changes, UINT64_MAX, changes_summary, &s);
                audit_limiter_free(s.changes);
        }
        pthread_mutex_destroy(&s.changes_lock);
        free(s.state_dir);
        return r;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
