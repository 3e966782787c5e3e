/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Image references as the engines read them, before the Docker API proxy decides anything about one:
 * the distribution reference grammar (github.com/distribution/reference, ParseNormalizedNamed), with
 * its folds: no domain, "index.docker.io" and "registry-1.docker.io" are "docker.io"; a one-component
 * path on docker.io is under "library/"; no tag is "latest". So "index.docker.io/loop-agent" and
 * "loop-agent" are the same repository, as they are to the engine that would tag over it.
 *
 * The operator's images (the agent's and Chrome's, and every repository named loop-*) are protected:
 * no tag, commit, build, import or removal through the proxy may name their repository, on any
 * domain (Podman resolves a short name through its search registries and localhost/). */

#include <stdbool.h>

#define PROXY_IMAGE_REF_MAX 512U

typedef struct ProxyImageRef {
        char *domain;           /* "docker.io", "localhost", "quay.io:443" */
        char *path;             /* "library/busybox" */
        char *tag;              /* "latest" (also when a digest is given without a tag: NULL then) */
        char *digest;           /* "sha256:...", or NULL */
} ProxyImageRef;

void proxy_image_ref_done(ProxyImageRef *r);

/* Parses and normalises ref. -EINVAL for what the grammar refuses (upper case in the path, empty
 * components, a bad tag or digest, more than PROXY_IMAGE_REF_MAX bytes). */
int proxy_image_ref_parse(const char *ref, ProxyImageRef *ret);

/* "docker.io/library/busybox:latest" (with "@digest" when there is one). NULL on ENOMEM. */
char *proxy_image_ref_format(const ProxyImageRef *r);

/* Whether ref (a reference, or repo and tag given apart as the API does: tag may be NULL) names a
 * protected repository: its path, "library/" aside, is one of protected's (references too, their
 * tags ignored) or begins with "loop-". A reference that does not parse is protected (refused):
 * the engine may read it some other way. */
bool proxy_image_ref_is_protected(const char *ref, char * const *protected);

/* Whether ref names a repository of the channel's own: the first component of its path ("library/"
 * aside, on any domain) is the channel's name then "-" or "_" and more, as volumes and networks are
 * named (proxy_name_is_channels): "CHANNEL-app", "localhost/CHANNEL_tools/x". The images a channel makes
 * (tag, commit, build, import) are named so; no other channel can make or overwrite them. */
bool proxy_image_ref_is_channels(const char *ref, const char *channel);
/* Whether channel's name can begin an image name at all: the reference grammar has no capital letters
 * (channel names may have them). A channel whose name has them makes no images through the proxy: its
 * name is not lower-cased, since two channels may differ by case only and would then share names. */
bool proxy_channel_names_images(const char *channel);
