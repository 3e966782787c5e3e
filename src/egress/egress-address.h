/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which addresses the egress gateway never connects to, whatever name led there: the check runs on the
 * address a socket is actually connected to, after resolution, so DNS rebinding and names that resolve
 * to internal addresses gain nothing. */

#include <netinet/in.h>
#include <sys/socket.h>

#include "macro.h"

#define EGRESS_OWN_ADDRESSES_MAX 256U

/* Why an address is refused; EGRESS_ADDRESS_PUBLIC when it is not. */
typedef enum EgressAddressClass {
        EGRESS_ADDRESS_PUBLIC,
        EGRESS_ADDRESS_UNSPECIFIED,     /* 0.0.0.0/8, :: */
        EGRESS_ADDRESS_LOOPBACK,        /* 127/8, ::1 */
        EGRESS_ADDRESS_PRIVATE,         /* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 */
        EGRESS_ADDRESS_LINK_LOCAL,      /* 169.254/16 (cloud metadata), fe80::/10 */
        EGRESS_ADDRESS_CGNAT,           /* 100.64/10 (also Alibaba's metadata 100.100.100.200) */
        EGRESS_ADDRESS_MULTICAST,       /* 224/4, ff00::/8 */
        EGRESS_ADDRESS_RESERVED,        /* 240/4, broadcast, 192.0.0/24, 198.18/15, Teredo, 6to4 relays,
                                         * NAT64 local use, discard-only */
        EGRESS_ADDRESS_OWN,             /* one of the host's own addresses */
        EGRESS_ADDRESS_METADATA,        /* a cloud platform's service in a public range (Azure's
                                         * 168.63.129.16); the others are link-local, CGNAT or ULA */
        _EGRESS_ADDRESS_CLASS_MAX,
} EgressAddressClass;

const char *egress_address_class_to_string(EgressAddressClass c);

/* The host's own addresses (getifaddrs()), refreshed by the caller when it wants. */
typedef struct EgressOwnAddresses {
        struct sockaddr_storage addrs[EGRESS_OWN_ADDRESSES_MAX];
        size_t n;
} EgressOwnAddresses;

int egress_own_addresses_load(EgressOwnAddresses *ret);

/* Classifies sa (AF_INET or AF_INET6; anything else is EGRESS_ADDRESS_RESERVED). IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses
 * are judged by the IPv4 address they carry. own may be NULL. */
EgressAddressClass egress_address_classify(const struct sockaddr *sa, const EgressOwnAddresses *own);

/* "192.0.2.1" or "2001:db8::1"; buf of INET6_ADDRSTRLEN bytes at least. */
const char *egress_address_format(const struct sockaddr *sa, char *buf, size_t size);
