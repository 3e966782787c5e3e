/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A channel's work queue under its state dir (/var/lib/loop/NAME): inbox/ holds queued messages, one JSON
 * file each, named so that byte order is arrival order; outbox/ the results; failed/ the messages that
 * failed max_attempts times, with the reason; tmp/ the half-written files (never inside inbox/, which a
 * path unit watches). Every write is a temp file, fsync, rename, fsync of the directory: a crash at any
 * point loses nothing and leaves no half-written message.
 *
 * Who may do what: root runs the runner; senders are root or members of group loop. The queue's group is
 * the group of the state dir's parent (/var/lib/loop, root:loop from tmpfiles.d/loop.conf). inbox/ and tmp/
 * are 03770 (setgid: every file inherits the group; sticky: a sender cannot remove or rename another
 * sender's message), outbox/ and failed/ 02750 (members read results, only root writes), message and result
 * files 0640. queue_open(create) makes the directories and, for those it owns, puts group and mode right
 * (a path unit's MakeDirectory= creates inbox/ 0750 root:root). A member also needs to traverse the state
 * dir itself (mode 0751 or group loop). The sender named in a message is checked against the owner of its
 * file when the runner first reads it. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

#define QUEUE_PROMPT_MAX (1024U * 1024U)
#define QUEUE_DEPTH_MAX 10000U                  /* queue_push refuses more queued messages (-EXFULL) */
#define QUEUE_ATTEMPTS_DEFAULT 3U
#define QUEUE_ATTEMPTS_MAX 1000U                /* a message file claiming more attempts is malformed */
#define QUEUE_SENDER_MAX 256U
#define QUEUE_ERROR_MAX 4096U                   /* last_error and failure reasons are cut to this */
#define QUEUE_SESSION_ID_MAX 256U
#define QUEUE_MESSAGE_FILE_MAX (8U * 1024U * 1024U)   /* a prompt of QUEUE_PROMPT_MAX, JSON-escaped */
#define QUEUE_RESULT_FILE_MAX (16U * 1024U * 1024U)   /* outbox/failed entries larger than this are not listed */
#define QUEUE_TMP_STALE_SEC 3600U               /* tmp/ files older than this are leftovers of a crash */
#define QUEUE_TASK_MAX 64U
#define QUEUE_ID_LEN 29U                        /* 20 digits, '-', 8 hex digits */

typedef struct QueueMessage {
        char *id;                       /* "<20-digit usec since epoch>-<8 hex random>" */
        char *prompt;
        char *sender;                   /* user name (or uid) that queued it */
        uint64_t created_usec;
        unsigned attempts;              /* runs started so far */
        char *last_error;               /* NULL until an attempt failed */
        char *task;                     /* the scheduled task that queued it (tasks-store.h), else NULL */
} QueueMessage;

typedef struct Queue Queue;

/* create: make the state dir (its last component), inbox/ outbox/ failed/ tmp/, and remove stale tmp/
 * leftovers. Without it, every directory must exist (-ENOENT). */
int queue_open(const char *state_dir, bool create, Queue **ret);
Queue *queue_free(Queue *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(Queue *, queue_free);
const char *queue_path(const Queue *q);

void queue_message_free(QueueMessage *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(QueueMessage *, queue_message_free);

/* Queues prompt (non-empty, <= QUEUE_PROMPT_MAX, no NUL: -EINVAL/-E2BIG) from sender (NULL: the caller's
 * user name, else uid). Ids grow strictly within a queue, even for two pushes in the same microsecond or
 * with the clock set back. */
int queue_push(Queue *q, const char *prompt, const char *sender, char **ret_id);
/* The same, for a scheduled task's firing: the message names the task (QUEUE_TASK_MAX characters of
 * [0-9a-z], -EINVAL otherwise), which the runner carries into its records as LOOP_TASK=. */
int queue_push_task(Queue *q, const char *prompt, const char *sender, const char *task, char **ret_id);
/* The oldest message of inbox/; -ENOENT when empty. A file that cannot be parsed is moved to failed/ with
 * the reason (logged) and the next one is returned: a bad file never blocks the queue. A message whose
 * result is already in outbox/ (or failed/) was finished by a runner that died before removing it: it is
 * removed and skipped. */
int queue_peek(Queue *q, QueueMessage **ret);
/* attempts + 1, persisted before the run starts: a runner killed mid-run leaves the count behind.
 * -ENOENT when the message is no longer queued. */
int queue_begin_attempt(Queue *q, QueueMessage *m);
/* The result (any JSON object; the runner stores {id, prompt, result, session_id, is_error, error,
 * duration_ms, num_turns, finished_usec, attempts}) goes to outbox/<id>.json first; only then does the
 * message leave inbox/. */
int queue_complete(Queue *q, const QueueMessage *m, json_object *result);
/* Records last_error in the inbox file (it stays queued for the next attempt). */
int queue_record_failure(Queue *q, QueueMessage *m, const char *reason);
/* Takes back the attempt queue_begin_attempt() counted, recording REASON: for a run that did not happen
 * for a cause outside the message (the engine away, the disk full). -ERANGE when none was counted. */
int queue_release_attempt(Queue *q, QueueMessage *m, const char *reason);
/* Moves the message to failed/<id>.json with reason, attempts and failed_usec. */
int queue_fail(Queue *q, const QueueMessage *m, const char *reason);
/* Entries of inbox/, malformed ones included. */
int queue_depth(Queue *q, size_t *ret);
/* The entries of a box (parsed JSON objects), oldest first; limit > 0: only the newest limit of them,
 * still oldest first. Unreadable entries are skipped. */
int queue_list(Queue *q, const char *box /* "inbox" | "outbox" | "failed" */, size_t limit, json_object **ret_array);
/* The channel's session id (state_dir/session), so each message resumes the channel's conversation. */
int queue_session_get(Queue *q, char **ret);            /* -ENOENT when none, -EBADMSG when invalid */
int queue_session_set(Queue *q, const char *session_id);        /* NULL: forget it; -EINVAL when invalid */

bool queue_id_valid(const char *id);
/* Not empty, <= QUEUE_SESSION_ID_MAX, no '/', no control characters, no leading '-'. */
bool queue_session_id_valid(const char *s);
/* The user name of uid, else the number. */
int queue_sender_name(uid_t uid, char **ret);
