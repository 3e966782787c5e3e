/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The per-container tokens that authenticate calls to a channel's socket-activated helpers (first of all
 * loop-gate@NAME: approvals). The runner makes one token per container before creating it, hands it to
 * the container (LOOP_GATE_TOKEN) and writes it where the helpers find it; removing the container removes
 * the file, and a helper that sees the file gone treats the container as removed.
 *
 * Layout (RUNTIME = $LOOP_RUNTIME_DIR, else /run/loop):
 *
 *   RUNTIME/NAME/gate-tokens/                 0700, owned by user loop (root when there is no such user):
 *                                             only root and the helpers (User=loop) can look inside
 *   RUNTIME/NAME/gate-tokens/CONTAINER        0400, owned by user loop; 64 lowercase hex characters (32
 *                                             random bytes), no newline; CONTAINER is the container's
 *                                             name or id as the audit stream should show it
 *
 * Tokens are compared in constant time (CRYPTO_memcmp). A token file is never followed through a symlink
 * and never larger than GATE_TOKEN_HEX_LEN + 1 bytes. */

#include <stdbool.h>
#include <stddef.h>

#define GATE_TOKEN_BYTES 32U
#define GATE_TOKEN_HEX_LEN (GATE_TOKEN_BYTES * 2U)
#define GATE_TOKENS_DIRNAME "gate-tokens"
#define GATE_TOKENS_MAX 4096U           /* token files of one channel looked at, at most */
#define GATE_CONTAINER_ID_MAX 128U
#define GATE_TOKEN_USER "loop"

/* $LOOP_RUNTIME_DIR, else /run/loop. */
const char *loop_runtime_dir(void);
/* RUNTIME/NAME/gate-tokens */
int gate_token_dir(const char *channel, char **ret);

/* A container id is 1..GATE_CONTAINER_ID_MAX characters of [A-Za-z0-9_.-], not starting with "." or "-":
 * safe as a file name and in a journal field. */
bool gate_container_id_is_valid(const char *id);
/* 64 lowercase hex characters */
bool gate_token_is_well_formed(const char *token);

/* 32 random bytes from the kernel's CSPRNG as 64 hex characters and a NUL. */
int gate_token_generate(char ret[static GATE_TOKEN_HEX_LEN + 1]);

/* Creates the token directory if needed (see above) and writes token for container atomically (a
 * temporary file renamed over the final name). Root only in production; as another user the files are
 * simply that user's. */
int gate_token_write(const char *channel, const char *container, const char *token);
/* Removes the container's token; a missing file is not an error (returns 0). */
int gate_token_remove(const char *channel, const char *container);

/* Opens the channel's token directory (O_DIRECTORY, not through a symlink), refusing one that is writable
 * by group or others (-EPERM): whoever could write there could plant a token. */
int gate_token_dir_open(const char *channel, int *ret_fd);

/* Whether the token file of container exists below the open token directory. */
bool gate_token_exists_at(int dir_fd, const char *container);

/* Finds the container whose token is token, looking at every file of the open token directory (at most
 * GATE_TOKENS_MAX) and comparing each in constant time. Returns 0 and the container id, -EPERM when no
 * token matches (or token is malformed), other negative errnos when the directory cannot be read. */
int gate_token_find_at(int dir_fd, const char *token, char **ret_container);

/* The same for the tokens of another helper, kept in RUNTIME/NAME/DIRNAME (e.g. "tasks-tokens" for
 * loop-tasks@NAME), same modes and owner. */
int loop_token_write(const char *channel, const char *dirname, const char *container, const char *token);
int loop_token_remove(const char *channel, const char *dirname, const char *container);
int loop_token_dir_open(const char *channel, const char *dirname, int *ret_fd);

/* Constant-time comparison of two strings of the same length; different lengths compare unequal. */
bool gate_token_equal(const char *a, const char *b);
