/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The agent's own environment (a channel's and a project's `envs`) travels to the container in one
 * variable of loop's, LOOP_AGENT_ENV, so the container's root side (the entrypoint's shell and tools,
 * `loop seal`, the gate's supervisor) starts with none of those names: the value is base64 of a list of
 * "NAME=value" entries, each ending in a NUL byte, which no shell or tool interprets. Only loop's own code
 * decodes it, after the privilege drop, right before the agent's execve (`loop privdrop`, the child of
 * `loop syscallwrap`, `loop seal --agent-env` for a `loop shell` session). A value that does not decode
 * into well-formed entries is refused as a whole: the agent never starts with half its environment. */

#include <stddef.h>

#define AGENT_ENV_VARIABLE "LOOP_AGENT_ENV"

/* The decoded list, at most this many bytes: its base64 (4/3 of it) plus the name stays well under the
 * kernel's limit for one environment string (MAX_ARG_STRLEN, 128 KiB). */
#define AGENT_ENV_DECODED_MAX (64U * 1024U)

/* env: "NAME=value" entries (NAME non-empty). Returns the encoded value (without the "NAME=" of the
 * variable), -E2BIG when the list is larger than AGENT_ENV_DECODED_MAX, -EINVAL for an entry without NAME=. */
int agent_env_encode(char * const *env, char **ret);

/* Returns the entries, -EBADMSG when s is not such an encoding (bad base64, a truncated entry, an entry
 * without NAME=), -E2BIG when it is larger than any encode produces. */
int agent_env_decode(const char *s, char ***ret);

/* Takes AGENT_ENV_VARIABLE out of this process's environment and decodes it: *ret is NULL when it was not
 * set. Errors as agent_env_decode(), logged. */
int agent_env_take(char ***ret);

/* setenv() of each entry, later ones and the agent's over what is there. */
int agent_env_apply(char * const *env);

/* The value of name among the entries, NULL when absent. */
const char *agent_env_get(char * const *env, const char *name);
