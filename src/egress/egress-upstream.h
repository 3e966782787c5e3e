/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The gateway's upstreams from its configuration: the model API (egress.api_upstream) and the host's
 * HTTP proxy (egress.upstream_proxy or $https_proxy...), each an http(s) URL parsed by libcurl's URL
 * API (CURLU), the host normalised as every host the gateway decides on (egress_host_normalize()). */

#include <stdbool.h>
#include <stdint.h>

#define EGRESS_UPSTREAM_USERINFO_MAX 1024U      /* user:password of the host's proxy, percent-encoded */

typedef struct EgressUpstream {
        bool tls;
        char *host;                     /* NULL: not configured; IPv6 without brackets */
        uint16_t port;
        char *base_path;                /* "" or "/prefix" without a trailing slash */
        char *authorization;            /* "Basic ..." from user:password@ in the URL, or NULL */
} EgressUpstream;

void egress_upstream_done(EgressUpstream *u);

/* scheme://[user:password@]host[:port][/path], scheme http or https (as written, lower case), no query
 * or fragment, the path as written (a trailing slash dropped). The user and password are percent-decoded
 * (curl_easy_unescape(); a malformed escape or a NUL refused) into "Basic base64(user:password)"
 * (RFC 7617). -EINVAL for anything else, -ENOMEM. */
int egress_upstream_parse(const char *url, EgressUpstream *ret);

/* "host", "host:port" or "[v6]:port" as a Host header or CONNECT target names it: the port only when it
 * is not default_port, brackets around a host with a colon (an IPv6 address). */
int egress_authority_format(const char *host, uint16_t port, uint16_t default_port, char **ret);
