/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A Chrome DevTools Protocol client over a stream: JSON texts each ended by a NUL byte, as Chrome's
 * --remote-debugging-pipe speaks (Chrome reads fd 3 and writes fd 4; over a unix socket both are the same
 * fd). Synchronous: one call at a time waits for its answer; events that arrive meanwhile (or during
 * cdp_pump()) go to the event handler. Sessions are flat (Target.attachToTarget with flatten: true): a
 * call or event names its session by sessionId, NULL for the browser target.
 *
 * What Chrome (or whatever is on the other end) sends is untrusted: a message is at most CDP_MESSAGE_MAX
 * bytes (a longer one is skipped to its NUL, and a call waiting meanwhile fails with -EMSGSIZE), JSON
 * nesting at most CDP_JSON_DEPTH_MAX, and a message that is not a JSON object with either a numeric "id"
 * or a string "method" is dropped (counted in cdp_messages_dropped()). Nothing it sends crashes us.
 *
 * Writing to a peer that went away raises SIGPIPE on a pipe: a program using this ignores SIGPIPE (then
 * the call fails with -EPIPE). */

#include <json-c/json.h>
#include <stdint.h>

#include "macro.h"

#define CDP_MESSAGE_MAX (64U * 1024U * 1024U)   /* a full-page screenshot in base64 fits */
#define CDP_JSON_DEPTH_MAX 64                   /* Chrome's own answers nest far less (a11y trees ~20) */
#define CDP_READ_CHUNK (64U * 1024U)
#define CDP_METHOD_MAX 128U                     /* "Domain.method"; longer names are not CDP */
#define CDP_SESSION_ID_MAX 128U                 /* Chrome's are 32 hex digits */

typedef struct Cdp Cdp;

typedef void (*CdpEventHandler)(const char *session_id, const char *method, json_object *params,
                                void *userdata);

/* read_fd and write_fd stay the caller's (not closed by cdp_free()); they may be blocking or not. */
int cdp_new(int read_fd, int write_fd, Cdp **ret);
Cdp *cdp_free(Cdp *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Cdp *, cdp_free);

/* session_id is NULL for the browser target; params is the handler's to read only (a borrowed reference,
 * always an object). The handler must not call cdp_call() or cdp_pump(). */
void cdp_set_event_handler(Cdp *c, CdpEventHandler handler, void *userdata);

/* Calls method with params (borrowed; NULL: {}) on session_id (NULL: the browser target) and waits up to
 * timeout_usec for its answer; events arriving meanwhile go to the handler. 0 and *ret_result (owned by
 * the caller; may be NULL if not wanted) on success; -EPROTO with *ret_error (CDP's message, owned; may be
 * NULL if not wanted) when Chrome answered an error; -ETIMEDOUT; -EMSGSIZE when a message above
 * CDP_MESSAGE_MAX arrived while waiting (its answer, most likely); -ECONNRESET/-EPIPE when Chrome went
 * away (every later call fails the same way); -EINVAL for a bad method or session id. */
int cdp_call(Cdp *c, const char *session_id, const char *method, json_object *params,
             uint64_t timeout_usec, json_object **ret_result, char **ret_error);

/* Sends a call without waiting for its answer (which is then dropped as stale): allowed from the event
 * handler, e.g. to dismiss a JavaScript dialog that blocks the call being waited for. 0, -EINVAL, or the
 * connection's error. */
int cdp_send(Cdp *c, const char *session_id, const char *method, json_object *params);

/* Reads and dispatches events for up to timeout_usec (0: only what is readable now). 0 when the time
 * ran out, -ECONNRESET when Chrome went away, or -errno. Between calls Chrome keeps sending events
 * (console, network): a long-lived user calls cdp_pump(c, 0) when read_fd is readable, or Chrome's side of
 * the pipe fills up. */
int cdp_pump(Cdp *c, uint64_t timeout_usec);

/* Whether what a caller waits for has happened (set by its event handler); called between reads. */
typedef bool (*CdpDonePredicate)(void *userdata);

/* Reads and dispatches events until done(userdata) is true, which is asked before the first read and after
 * each one: returns 1 as soon as it is (no later than the read that made it so), 0 when timeout_usec ran out
 * first (0: only asks), or -errno (-ECONNRESET when Chrome went away). Sleeps in poll(), no busy loop. */
int cdp_pump_until(Cdp *c, CdpDonePredicate done, void *userdata, uint64_t timeout_usec);

/* Whether Chrome's end is gone (EOF or a write error seen). */
bool cdp_is_closed(Cdp *c);
/* How many messages were dropped as malformed or too large, since cdp_new(). */
uint64_t cdp_messages_dropped(Cdp *c);

/* Feeds bytes as if read from Chrome, and dispatches every message they complete: for the fuzzer and unit
 * tests. Returns 0 or -ENOMEM. */
int cdp_feed(Cdp *c, const void *data, size_t size);
