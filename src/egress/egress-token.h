/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Who may use a channel's egress gateway: only that channel's own containers. The gateway socket is 0666
 * (the engine may map a container's root to any uid), so the socket grants nothing by itself: every
 * connection the relay hands over carries the container's name and its token, and the gateway checks
 * them before it reads a byte of the agent's request.
 *
 * Tokens and the agent's model-API dummy are per container and random-looking, derived by the gateway
 * from a key of its own (EGRESS_TOKEN_KEY_FILE in its state directory, 0600, made at its first start):
 * HMAC-SHA256(key, "token" NUL container) and HMAC-SHA256(key, "dummy" NUL container). So the gateway
 * keeps nothing per container that its idle exit could lose, and a container's token or dummy says
 * nothing about another's. The runner (root: the gateway checks SO_PEERCRED) asks the gateway for both
 * before it creates a container (POST EGRESS_REGISTER_PATH); the token goes into a root-only file bound
 * into the container for `loop relay`, the dummy into the agent's environment. */

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

#define EGRESS_TOKEN_KEY_FILE "token.key"
#define EGRESS_TOKEN_KEY_SIZE 32U
#define EGRESS_TOKEN_HEX_LEN 64U
#define EGRESS_DUMMY_PREFIX "sk-loop-"
#define EGRESS_DUMMY_LEN (sizeof(EGRESS_DUMMY_PREFIX) - 1 + 48U)
#define EGRESS_CONTAINER_NAME_MAX 128U
/* "NAME TOKEN\n" after the hand-over's marker byte */
#define EGRESS_HANDOVER_CREDENTIAL_MAX (EGRESS_CONTAINER_NAME_MAX + 1 + EGRESS_TOKEN_HEX_LEN + 1)
#define EGRESS_REGISTER_PATH "/.loop/register"

/* 1..EGRESS_CONTAINER_NAME_MAX of [A-Za-z0-9_.-], not starting with "." or "-". */
bool egress_container_name_is_valid(const char *name);

/* Loads the key from dir_fd, or makes it (0600) when it is not there. */
int egress_token_key_load_or_create(int dir_fd, uint8_t ret[static EGRESS_TOKEN_KEY_SIZE]);

int egress_token_make(const uint8_t key[static EGRESS_TOKEN_KEY_SIZE], const char *container,
                      char ret[static EGRESS_TOKEN_HEX_LEN + 1]);
int egress_dummy_make(const uint8_t key[static EGRESS_TOKEN_KEY_SIZE], const char *container,
                      char ret[static EGRESS_DUMMY_LEN + 1]);

/* Whether token is container's token (compared in constant time). */
bool egress_token_check(const uint8_t key[static EGRESS_TOKEN_KEY_SIZE], const char *container, const char *token);

/* Splits "NAME TOKEN" (a trailing newline allowed) into its parts in buf (modified). */
int egress_credential_parse(char *buf, const char **ret_container, const char **ret_token);
