/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a build may do, read from its context before the engine sees it (gates.docker_proxy.build):
 * the build context (a tar, or a gzip-compressed tar, as the engines detect it) is read whole, at most
 * PROXY_BUILD_CONTEXT_MAX; the Dockerfile the engine will read is found in it by the normalised name of
 * the dockerfile parameter (through no link) and parsed as BuildKit's and buildah's parser read it
 * (parser directives, line continuations with the escape character, comments). Allow-list:
 *
 *   - instructions: the Dockerfile reference's, nothing else; a heredoc (<<) is refused, not parsed;
 *   - parser directives: escape only (syntax picks a frontend that parses the rest its own way);
 *   - RUN flags: --mount of type tmpfs, secret, ssh and cache (never from= another stage or image, never
 *     a bind: binds of a context's or a stage's symlink reach the host on an unpatched buildah,
 *     CVE-2024-1753), --network=none|default; nothing else;
 *   - ADD: local sources only (no URL, no git, no variable that could become one); --chown, --chmod, --link;
 *   - COPY --from: a stage of the same Dockerfile (by name or an earlier index) or an image of the
 *     channel's own (proxy_image_ref_is_channels); --chown, --chmod, --link;
 *   - ONBUILD: its instruction checked as if it were one.
 *
 * Each function returns 0 when allowed, -EPERM with a sentence in *ret_reason when refused, -ENOMEM. */

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#define PROXY_BUILD_CONTEXT_MAX (64U * 1024U * 1024U)   /* bytes of a build context, compressed or not */
#define PROXY_DOCKERFILE_MAX (1024U * 1024U)            /* bytes of the Dockerfile */
#define PROXY_DOCKERFILE_STAGES_MAX 256U                /* FROM instructions of one Dockerfile */

/* The dockerfile parameter (NULL or empty: "Dockerfile") as a path inside the context: no leading "/",
 * no "." or empty components, no "..", no URL (Podman fetches one), no JSON list (Podman reads one),
 * no control character. -EINVAL for what is refused, -ENOMEM. */
int proxy_build_dockerfile_name(const char *param, char **ret);

int proxy_dockerfile_check(const char *text, size_t size, const char *channel, char **ret_reason);
/* The same, with the images its FROM lines name in *ret_bases (not "scratch", not an earlier stage;
 * as written, each once; NULL for none): the caller asks the engine about each. A FROM naming its
 * image with a variable ($) is refused: build args are not substituted by the proxy. */
int proxy_dockerfile_check_bases(const char *text, size_t size, const char *channel, char ***ret_bases, char **ret_reason);

/* A base image's ONBUILD triggers (its inspect's Config.OnBuild: an array of instructions, or null) run
 * in the build that names it in FROM: each must pass the allow-list above as an instruction of the
 * Dockerfile would. */
int proxy_build_onbuild_check(json_object *triggers, const char *channel, char **ret_reason);

/* dockerfile is a name from proxy_build_dockerfile_name(); default_name: it was not given (the engines
 * then also read "dockerfile", so every Dockerfile/dockerfile/Containerfile there is checked). */
int proxy_build_context_check(const void *context, size_t size, const char *dockerfile, bool default_name,
                              const char *channel, char **ret_reason);
int proxy_build_context_check_bases(const void *context, size_t size, const char *dockerfile, bool default_name,
                                    const char *channel, char ***ret_bases, char **ret_reason);
