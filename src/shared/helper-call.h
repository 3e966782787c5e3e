/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The client side of the token helpers' wire (loop-tasks@ for `loop mcp`, loop-browser@ for `loop
 * mcp-browser`): one connection per call, one JSON object as one line each way. The answer is text from
 * another process, so it is read with a cap and parsed as untrusted JSON (json_parse_untrusted()). */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define HELPER_CALL_JSON_DEPTH_MAX 32

/* Sends request (a JSON object, as one line) to the helper listening at socket_path and reads its answer
 * line, at most answer_max bytes, each read and write timing out after timeout_usec. Returns 0 with the
 * answer object in *ret_answer. On failure returns a negative errno with what went wrong, as a phrase that
 * follows "The <helper> ...", in *ret_failure (static text): "cannot be reached" (connect), "went away"
 * (write), "did not answer" (read; -EAGAIN when it timed out), "ended the call without an answer" (end of
 * stream before any byte), "sent an answer that is too large" (-E2BIG) or "sent an answer that cannot be
 * read" (-EBADMSG: not one JSON object). A request longer than request_max is -EMSGSIZE, nothing sent.
 * -ENOMEM leaves *ret_failure NULL. */
int helper_call(const char *socket_path, uint64_t timeout_usec, json_object *request, size_t request_max,
                size_t answer_max, json_object **ret_answer, const char **ret_failure);

/* One JSON object from a line of untrusted text (size bytes, need not be NUL-terminated); NULL when it is
 * not exactly one object (or out of memory). */
json_object *helper_line_parse_object(const char *text, size_t size, size_t size_max);
