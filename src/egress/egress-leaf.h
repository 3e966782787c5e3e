/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The server contexts the gateway ends an intercepted agent's TLS with: a leaf certificate of the sandbox
 * CA per host (egress-ca.h), made once and cached for every connection after.
 *
 * Making a leaf (a key pair and a signature) takes milliseconds: it happens outside the cache's lock. A
 * host being made is an entry "in flight": another connection for the same host waits for it (one mint
 * per host), a connection for any other host is served or makes its own meanwhile. A full cache
 * (EgressLeafCache.max) starts over; connections hold their own reference to a context. */

#include <openssl/ssl.h>

#include "egress-ca.h"
#include "macro.h"

typedef struct EgressLeafCache EgressLeafCache;

/* Makes the server context of host: 0 with *ret (a reference for the cache), or a negative errno. */
typedef int (*EgressLeafMint)(const char *host, SSL_CTX **ret, void *userdata);

int egress_leaf_cache_new(size_t max, EgressLeafMint mint, void *userdata, EgressLeafCache **ret);
EgressLeafCache *egress_leaf_cache_free(EgressLeafCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressLeafCache *, egress_leaf_cache_free);

/* The context of host, a reference the caller frees with SSL_CTX_free(): 0 with *ret, or the mint's
 * error. */
int egress_leaf_cache_get(EgressLeafCache *c, const char *host, SSL_CTX **ret);

/* The gateway's EgressLeafMint: a TLS 1.2+ server context with a leaf of the CA (userdata) for host. */
int egress_leaf_mint(const char *host, SSL_CTX **ret, void *userdata);
