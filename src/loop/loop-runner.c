/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop runner NAME`: the main program of loop-agent@NAME.service. Takes the channel's queued messages in
 * order, one container run each, resuming the channel's session; stores each result in the outbox and the
 * journal; exits when the inbox is empty. A message leaves the inbox only after its result is stored; a
 * runner killed mid-run leaves it queued with its attempt counted, and after max_attempts it moves to
 * failed/ with the reason. Type=notify: READY once the engine answered, STATUS= says what it does.
 *
 * Causes outside a message never use up its attempts: while the engine does not answer or the disk is
 * full, the runner keeps the message queued, says what it waits for (STATUS=, a runner-waiting record)
 * and tries again with a growing delay, inside the service, so that neither the service nor its path
 * unit burns systemd's start limit. A message whose own run failed waits retry_delay_sec before its
 * next attempt, doubled for each further one. */

#include <inttypes.h>
#include <signal.h>
#include <syslog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "audit.h"
#include "config.h"
#include "engine-discover.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "queue.h"
#include "registry.h"
#include "runner.h"
#include "state-dir.h"
#include "stream-json.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

/* The longest wait between two attempts of a message whose run failed. */
#define RUNNER_RETRY_DELAY_MAX_USEC (600 * USEC_PER_SEC)
/* While the engine is away it is asked again after 1 s, then 2, 4, ... up to this. */
#define RUNNER_ENGINE_WAIT_MAX_USEC (30 * USEC_PER_SEC)
/* While the disk is full, a new try after 5 s, doubling up to this. */
#define RUNNER_DISK_WAIT_MAX_USEC (300 * USEC_PER_SEC)

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig) {
        (void) sig;
        stop_requested = 1;
        runner_interrupt();
}

/* Sleeps USEC, or less when asked to stop: -EINTR then. */
static int runner_sleep(uint64_t usec) {
        struct timespec ts = {
                .tv_sec = (time_t) (usec / USEC_PER_SEC),
                .tv_nsec = (long) (usec % USEC_PER_SEC) * 1000L,
        };

        while (!stop_requested && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return stop_requested ? -EINTR : 0;
}

/* The wait before attempt N+1 of a message whose attempt N (>= 1) failed. */
static uint64_t retry_delay_usec(unsigned delay_sec, unsigned attempts) {
        uint64_t d = (uint64_t) delay_sec * USEC_PER_SEC;

        for (unsigned i = 1; i < attempts && d < RUNNER_RETRY_DELAY_MAX_USEC; i++)
                d *= 2;
        return MIN(d, RUNNER_RETRY_DELAY_MAX_USEC);
}

static bool error_is_engine_away(int r) {
        return r == -EHOSTDOWN || r == -ECONNREFUSED || r == -ECONNRESET;
}

static bool error_is_disk_full(int r) {
        return r == -ENOSPC || r == -EDQUOT;
}

static const char *engine_where(const char *socket) {
        return isempty(socket) ? "the default sockets" : socket;
}

/* Connects to the engine, waiting while it does not answer (see the top of the file). BEFORE_READY: the
 * service has not sent READY=1 yet, so systemd's start timeout is pushed out each round. Returns 0 with
 * *ret, -EINTR when asked to stop, -ENOMEM. */
static int runner_wait_for_engine(const char *channel, const char *socket, bool before_ready, EngineConnection **ret) {
        char *extra[] = { (char *) "LOOP_REASON=engine-away", NULL };
        AuditFields f = { .channel = channel, .extra = extra };
        uint64_t delay = USEC_PER_SEC;
        bool waited = false;
        int r;

        for (;;) {
                int level = log_get_max_level();

                /* Why it does not answer is journaled once, with the sockets tried; not again each round. */
                if (waited)
                        log_set_max_level(LOG_CRIT);
                log_forget_last_error();
                r = engine_connect(socket, ret);
                log_set_max_level(level);
                if (r >= 0)
                        break;
                if (r == -ENOMEM)
                        return r;
                if (!waited) {
                        (void) audit_log(AUDIT_RUNNER_WAITING, LOG_WARNING, &f,
                                         "Runner of channel %s waits for the container engine at %s: %s", channel,
                                         engine_where(socket), log_last_error() ?: "it does not answer");
                        waited = true;
                }
                if (before_ready)
                        (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64, delay + 30 * USEC_PER_SEC);
                (void) sd_notifyf(false, "STATUS=Waiting for the container engine at %s (next try in %" PRIu64 " s)",
                                  engine_where(socket), delay / USEC_PER_SEC);
                if (runner_sleep(delay) < 0)
                        return -EINTR;
                delay = MIN(delay * 2, RUNNER_ENGINE_WAIT_MAX_USEC);
        }

        if (waited) {
                extra[0] = (char *) "LOOP_REASON=engine-back";
                (void) audit_log(AUDIT_RUNNER_WAITING, LOG_NOTICE, &f, "The container engine at %s answers again; "
                                 "runner of channel %s goes on.", engine_where(socket), channel);
        }
        (void) sd_notify(false, "STATUS=Processing the queue");
        return 0;
}

typedef struct RunnerState {
        const char *channel;
        const char *queue_id;
        const char *session;
        char *scope;
        char *extra[2];                 /* LOOP_TASK= of a message a scheduled task queued */
} RunnerState;

static AuditFields fields_for(const RunnerState *s) {
        return (AuditFields) {
                .channel = s->channel,
                .message_id = s->queue_id,
                .session = s->session,
                .extra = s->extra[0] ? (char * const *) s->extra : NULL,
        };
}

/* The registry journals the container itself (registered, status, removed); the runner adds what it is
 * doing to the unit's status line and remembers the scope for the run's own events. */
static void hook_started(const char *id, const char *name, pid_t pid, const char *scope, void *userdata) {
        RunnerState *s = userdata;

        (void) id;
        (void) pid;
        (void) free_and_strdup(&s->scope, scope);
        (void) sd_notifyf(false, "STATUS=Running message %s in %s%s%s", strna(s->queue_id), name,
                          scope ? ", " : "", strempty(scope));
}

static void hook_finished(const char *id, const char *name, int exit_code, void *userdata) {
        RunnerState *s = userdata;

        (void) id;
        (void) name;
        (void) exit_code;
        s->scope = mfree(s->scope);
}

static void hook_event(const StreamEvent *ev, void *userdata) {
        RunnerState *s = userdata;
        AuditFields f = fields_for(s);

        if (ev->session_id)
                f.session = ev->session_id;
        f.scope = s->scope;
        if (ev->type == STREAM_EVENT_TEXT)
                (void) audit_log(AUDIT_RUN_TURN, LOG_INFO, &f, "%s", strempty(ev->text));
        else if (ev->type == STREAM_EVENT_TOOL_USE) {
                _cleanup_free_ char *tool = NULL;
                char *extra[] = { NULL, NULL };
                if (asprintf(&tool, "LOOP_TOOL=%s", strna(ev->tool_name)) >= 0)
                        extra[0] = tool;
                f.extra = extra;
                (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, &f, "Tool %s: %s", strna(ev->tool_name),
                                 strempty(ev->tool_summary));
        }
}

static void hook_retrying(const char *reason, const char *session, void *userdata) {
        RunnerState *s = userdata;
        AuditFields f = fields_for(s);

        f.session = session;
        (void) audit_log(AUDIT_RUN_RETRIED, LOG_NOTICE, &f, "Retrying on session %s: %s", strna(session), reason);
}

/* Whether the engine answers now (quietly: the run's own error was journaled already). */
static bool engine_answers(const char *socket) {
        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
        int level = log_get_max_level(), r;

        log_set_max_level(LOG_CRIT);
        r = engine_connect(socket, &conn);
        log_set_max_level(level);
        return r >= 0;
}

/* Quota, auth and billing errors are not retried by the session logic; a new attempt a moment later would
 * meet the same answer, so the message goes to failed/ at once for the operator to look at. */
static bool error_is_permanent(AgentErrorKind k) {
        return k == AGENT_ERROR_QUOTA || k == AGENT_ERROR_AUTH || k == AGENT_ERROR_BILLING;
}

static json_object *result_json(const QueueMessage *m, const RunOutcome *o) {
        _cleanup_(json_object_putp) json_object *j = json_object_new_object();

        /* all or nothing: a result file missing a field would tell its reader something else */
        if (!j ||
            json_add(j, "id", json_object_new_string(m->id)) < 0 ||
            json_add(j, "prompt", json_object_new_string(m->prompt)) < 0 ||
            json_add_string_or_null(j, "result", o->result.result) < 0 ||
            json_add_string_or_null(j, "session_id", o->result.session_id) < 0 ||
            json_add(j, "is_error", json_object_new_boolean(o->error != AGENT_ERROR_NONE)) < 0 ||
            json_add_string_or_null(j, "error", o->error_message) < 0 ||
            json_add(j, "duration_ms", json_object_new_int64((int64_t) o->result.duration_ms)) < 0 ||
            json_add(j, "num_turns", json_object_new_int64((int64_t) o->result.num_turns)) < 0 ||
            json_add(j, "retries", json_object_new_int((int) o->retries)) < 0 ||
            json_add(j, "attempts", json_object_new_int((int) m->attempts)) < 0 ||
            json_add(j, "finished_usec", json_object_new_int64((int64_t) clock_usec(CLOCK_REALTIME))) < 0)
                return NULL;
        if (m->task && json_add(j, "task", json_object_new_string(m->task)) < 0)
                return NULL;
        return TAKE_PTR(j);
}

/* One message: returns 0 when it is done with for now (stored, moved to failed/, or left queued for its
 * next attempt after *ret_retry_usec), -EINTR when stopped, -EHOSTDOWN when the engine went away and
 * -ENOSPC when the disk is full (the message stays queued, its attempt not counted), other < 0 when the
 * queue itself failed. */
static int runner_process(Queue *q, const char *channel, const LoopConfig *config, QueueMessage *m,
                          uint64_t *ret_retry_usec) {
        unsigned max_attempts = config->max_attempts;
        _cleanup_(run_outcome_done) RunOutcome outcome = {};
        _cleanup_free_ char *session = NULL;
        _cleanup_free_ char *task_field = NULL;
        RunnerState state = { .channel = channel, .queue_id = m->id };
        AuditFields f = { .channel = channel, .message_id = m->id };

        if (m->task && asprintf(&task_field, "LOOP_TASK=%s", m->task) < 0)
                return log_oom();
        state.extra[0] = task_field;
        f.extra = task_field ? (char * const *) state.extra : NULL;
        RunHooks hooks = {
                .userdata = &state,
                .started = hook_started,
                .finished = hook_finished,
                .event = hook_event,
                .retrying = hook_retrying,
        };
        RunRequest req = { .channel = channel, .prompt = m->prompt, .hooks = &hooks, .owner = "service" };
        int r;

        *ret_retry_usec = 0;
        if (m->attempts >= max_attempts) {
                _cleanup_free_ char *reason = NULL;
                if (asprintf(&reason, "gave up after %u attempts: %s", m->attempts, strna(m->last_error)) < 0)
                        return log_oom();
                r = queue_fail(q, m, reason);
                if (r < 0)
                        return log_error_errno(r, "Failed to move message %s to failed/: %m", m->id);
                (void) audit_log(AUDIT_QUEUE_FAILED, LOG_ERR, &f, "Message %s failed for good: %s", m->id, reason);
                return 0;
        }

        r = queue_begin_attempt(q, m);
        if (r < 0)
                return log_error_errno(r, "Failed to record the attempt of message %s: %m", m->id);

        r = queue_session_get(q, &session);
        if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Cannot read the channel's session, starting a new one: %m");
        req.resume = session;
        state.session = session;
        f.session = session;

        (void) sd_notifyf(false, "STATUS=Running message %s (attempt %u of %u)", m->id, m->attempts, max_attempts);
        (void) audit_log(AUDIT_QUEUE_TAKEN, LOG_INFO, &f, "Message %s taken (attempt %u of %u).", m->id, m->attempts,
                         max_attempts);
        (void) audit_log(AUDIT_RUN_STARTED, LOG_INFO, &f, "Run of message %s started%s%s.", m->id,
                         session ? " on session " : "", strempty(session));

        log_forget_last_error();
        r = runner_run(&req, &outcome);
        free(state.scope);
        if (r == -EINTR || stop_requested)
                return -EINTR;
        if (r < 0) {
                _cleanup_free_ char *why = strdup(log_last_error() ?: "the run could not start");
                if (!why)
                        return log_oom();

                /* Not the message's fault: the engine went away (and still does not answer), or the disk is full. */
                if (error_is_disk_full(r) ||
                    (error_is_engine_away(r) && !engine_answers(config->engine.socket))) {
                        (void) queue_release_attempt(q, m, why);
                        (void) audit_log(AUDIT_RUN_FAILED, LOG_WARNING, &f,
                                         "Run of message %s could not start, not counted as an attempt: %s", m->id, why);
                        return error_is_disk_full(r) ? -ENOSPC : -EHOSTDOWN;
                }

                (void) queue_record_failure(q, m, why);
                (void) audit_log(AUDIT_RUN_FAILED, LOG_ERR, &f, "Run of message %s could not start: %s", m->id, why);
                if (m->attempts >= max_attempts) {
                        r = queue_fail(q, m, why);
                        if (r < 0)
                                return log_error_errno(r, "Failed to move message %s to failed/: %m", m->id);
                        (void) audit_log(AUDIT_QUEUE_FAILED, LOG_ERR, &f, "Message %s failed for good after %u attempts: %s",
                                         m->id, m->attempts, why);
                        return 0;
                }
                *ret_retry_usec = retry_delay_usec(config->retry_delay_sec, m->attempts);
                (void) audit_log(AUDIT_QUEUE_RETRY, LOG_NOTICE, &f, "Message %s stays queued; attempt %u of %u in %" PRIu64 " s.",
                                 m->id, m->attempts + 1, max_attempts, *ret_retry_usec / USEC_PER_SEC);
                return 0;
        }

        if (outcome.result.session_id) {
                f.session = outcome.result.session_id;
                if (queue_session_set(q, outcome.result.session_id) < 0)
                        log_warning("Failed to store the channel's session id, ignoring.");
        }

        if (outcome.error == AGENT_ERROR_NONE) {
                _cleanup_(json_object_putp) json_object *j = result_json(m, &outcome);
                if (!j)
                        return log_oom();
                r = queue_complete(q, m, j);
                if (r < 0)
                        return log_error_errno(r, "Failed to store the result of message %s: %m", m->id);
                (void) audit_log(AUDIT_RUN_FINISHED, LOG_INFO, &f, "%s", strempty(outcome.result.result));
                (void) audit_log(AUDIT_QUEUE_DONE, LOG_INFO, &f, "Message %s done (%" PRIu64 " turns, %" PRIu64 " ms).",
                                 m->id, outcome.result.num_turns, outcome.result.duration_ms);
                return 0;
        }

        (void) audit_log(AUDIT_RUN_FAILED, LOG_WARNING, &f, "Run of message %s failed (%s): %s", m->id,
                         agent_error_kind_to_string(outcome.error), strna(outcome.error_message));
        /* Errors the next attempt cannot fix do not wait for it. */
        if (error_is_permanent(outcome.error) || m->attempts >= max_attempts) {
                r = queue_fail(q, m, strna(outcome.error_message));
                if (r < 0)
                        return log_error_errno(r, "Failed to move message %s to failed/: %m", m->id);
                (void) audit_log(AUDIT_QUEUE_FAILED, LOG_ERR, &f, "Message %s failed for good after %u attempts: %s",
                                 m->id, m->attempts, strna(outcome.error_message));
                return 0;
        }
        r = queue_record_failure(q, m, strna(outcome.error_message));
        if (r < 0)
                return log_error_errno(r, "Failed to record the failure of message %s: %m", m->id);
        *ret_retry_usec = retry_delay_usec(config->retry_delay_sec, m->attempts);
        (void) audit_log(AUDIT_QUEUE_RETRY, LOG_NOTICE, &f, "Message %s stays queued; attempt %u of %u in %" PRIu64 " s.",
                         m->id, m->attempts + 1, max_attempts, *ret_retry_usec / USEC_PER_SEC);
        return 0;
}

/* Only one runner of a channel runs at a time (systemd sees to that), so an agent container of this channel
 * made by a runner is left over from one that was killed (SIGKILL, a crash, a reboot): its message is still
 * queued and will run again, so the old container must not go on working beside it. A running one is
 * stopped; running or already exited (its agent may end on its own when its runner's attach goes), no run
 * waits for it, so the registry keeps it for container_keep_alive_sec from now, without the grace a live
 * run's container gets. Then the registry is synced with the engine (and restored from it when its file is
 * missing). */
static void registry_startup(Engine *e, const char *channel, uint64_t keep_alive_sec) {
        _cleanup_(registry_freep) Registry *reg = NULL;
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ EngineContainerState *states = NULL;
        _cleanup_free_ char *label = NULL;
        int r, n = 0;

        r = registry_open(channel, &reg);
        if (r < 0)
                log_warning_errno(r, "Cannot open the registry of channel %s, ignoring: %m", channel);
        if (asprintf(&label, "loop-channel=%s", channel) < 0)
                return (void) log_oom();
        if (engine_container_list(e, label, true, &list) < 0)
                log_warning("Cannot list the containers of channel %s, ignoring: %s", channel, engine_last_error(e));
        else if ((n = engine_containers_of_channel(list, channel, &states)) < 0)
                return (void) log_oom();
        for (int i = 0; i < n; i++) {
                const EngineContainerState *s = &states[i];
                AuditFields f = { .channel = channel, .container_type = "agent", .container = s->id };

                if (s->type != CONTAINER_AGENT || !streq_ptr(s->owner, "service"))
                        continue;
                if (s->running) {
                        if (engine_container_stop(e, s->id, 5) < 0 && engine_container_kill(e, s->id, "KILL") < 0) {
                                log_warning("Failed to stop container %s left by an earlier runner: %s", s->id,
                                            engine_last_error(e));
                                continue;
                        }
                        (void) audit_log(AUDIT_CONTAINER_STATUS, LOG_NOTICE, &f,
                                         "Stopped container %.12s, left running by an earlier runner of channel %s.",
                                         s->id, channel);
                }
                if (reg && registry_find(reg, s->id))
                        (void) registry_schedule_remove(reg, e, s->id, clock_usec(CLOCK_REALTIME), keep_alive_sec);
        }

        if (!reg)
                return;
        (void) registry_sync(reg, e, keep_alive_sec);
        (void) registry_close(TAKE_PTR(reg));
}

int verb_runner(int argc, char *argv[]) {
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_free_ char *state_dir = NULL;
        struct sigaction sa = { .sa_handler = on_stop };
        const char *channel;
        const Channel *ch;
        AuditFields f = {};
        uint64_t retry_usec = 0, disk_wait = 5 * USEC_PER_SEC;
        size_t done = 0;
        int r;

        if (argc != 2 || streq(argv[1], "--help")) {
                printf("loop runner NAME\n\nProcess the queued messages of channel NAME, then exit "
                       "(the program of loop-agent@NAME.service).\n");
                return argc == 2 ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        channel = argv[1];
        if (!loop_check_channel_name(channel))
                return EXIT_FAILURE;
        f.channel = channel;
        {
                /* Everything the runner logs carries the channel, the reason a run could not start too. */
                _cleanup_free_ char *field = NULL;
                if (asprintf(&field, "LOOP_CHANNEL=%s", channel) < 0 || log_set_context_field(field) < 0)
                        return log_oom(), EXIT_FAILURE;
        }

        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);

        r = config_load(config_dir(), &set);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration: %m"), EXIT_FAILURE;
        ch = config_set_find_channel(set, channel);
        if (!ch || !ch->valid) {
                if (ch)
                        log_error("Channel %s is invalid, not running: %s (see 'loop config check %s').", channel,
                                  strna(ch->reason), channel);
                else
                        log_error("Channel %s is not configured (no %s/channels.d/%s.json), not running.", channel,
                                  config_dir(), channel);
                return EXIT_FAILURE;
        }
        if (loop_config_register_secrets(&ch->config) < 0)
                log_warning("Not every secret of channel %s could be registered for redaction.", channel);

        r = channel_state_dir(channel, &state_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot find the state dir of %s: %m", channel), EXIT_FAILURE;
        r = queue_open(state_dir, true, &q);
        if (r < 0)
                return log_error_errno(r, "Cannot open the queue in %s: %m", state_dir), EXIT_FAILURE;

        /* READY once the engine answers: a unit that is "active" can run work. */
        {
                _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
                r = runner_wait_for_engine(channel, ch->config.engine.socket, true, &conn);
                if (r == -EINTR) {
                        (void) audit_log(AUDIT_RUNNER_STOPPED, LOG_INFO, &f,
                                         "Runner of channel %s stopped while waiting for the container engine.", channel);
                        return EXIT_SUCCESS;
                }
                if (r < 0)
                        return log_error_errno(r, "Failed to connect to the container engine: %m"), EXIT_FAILURE;
                registry_startup(conn->engine, channel, ch->config.container_keep_alive_sec);
        }
        (void) sd_notify(false, "READY=1\nSTATUS=Processing the queue");
        (void) audit_log(AUDIT_RUNNER_STARTED, LOG_INFO, &f, "Runner of channel %s started.", channel);

        while (!stop_requested) {
                _cleanup_(queue_message_freep) QueueMessage *m = NULL;

                r = queue_peek(q, &m);
                if (r == -ENOENT)
                        break;
                if (r < 0) {
                        log_error_errno(r, "Failed to read the queue: %m");
                        break;
                }
                r = runner_process(q, channel, &ch->config, m, &retry_usec);
                if (r == -EINTR)
                        break;
                if (r == -EHOSTDOWN) {
                        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
                        r = runner_wait_for_engine(channel, ch->config.engine.socket, false, &conn);
                        if (r < 0)
                                break;
                        continue;
                }
                if (r == -ENOSPC) {
                        char *extra[] = { (char *) "LOOP_REASON=disk-full", NULL };
                        f.extra = extra;
                        (void) audit_log(AUDIT_RUNNER_WAITING, LOG_WARNING, &f,
                                         "Runner of channel %s waits for free disk space (next try in %" PRIu64 " s).",
                                         channel, disk_wait / USEC_PER_SEC);
                        f.extra = NULL;
                        (void) sd_notifyf(false, "STATUS=Waiting for free disk space (next try in %" PRIu64 " s)",
                                          disk_wait / USEC_PER_SEC);
                        r = runner_sleep(disk_wait);
                        if (r < 0)
                                break;
                        disk_wait = MIN(disk_wait * 2, RUNNER_DISK_WAIT_MAX_USEC);
                        continue;
                }
                if (r < 0)
                        break;  /* the queue itself failed: systemd starts a runner again for what is queued */
                disk_wait = 5 * USEC_PER_SEC;
                done++;
                if (retry_usec > 0) {
                        (void) sd_notifyf(false, "STATUS=Next attempt of message %s in %" PRIu64 " s", m->id,
                                          retry_usec / USEC_PER_SEC);
                        r = runner_sleep(retry_usec);
                        if (r < 0)
                                break;
                        (void) sd_notify(false, "STATUS=Processing the queue");
                }
        }

        (void) sd_notify(false, "STOPPING=1\nSTATUS=Done");
        (void) audit_log(AUDIT_RUNNER_STOPPED, LOG_INFO, &f, "Runner of channel %s stopped after %zu message%s%s.",
                         channel, done, done == 1 ? "" : "s", stop_requested ? " (stop requested)" : "");
        if (stop_requested)
                return EXIT_SUCCESS;
        return r < 0 && r != -ENOENT ? EXIT_FAILURE : EXIT_SUCCESS;
}
