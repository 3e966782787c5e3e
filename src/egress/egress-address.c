/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <ifaddrs.h>

#include "egress-address.h"

static const char * const egress_address_class_table[_EGRESS_ADDRESS_CLASS_MAX] = {
        [EGRESS_ADDRESS_PUBLIC] = "public",
        [EGRESS_ADDRESS_UNSPECIFIED] = "unspecified",
        [EGRESS_ADDRESS_LOOPBACK] = "loopback",
        [EGRESS_ADDRESS_PRIVATE] = "private",
        [EGRESS_ADDRESS_LINK_LOCAL] = "link-local",
        [EGRESS_ADDRESS_CGNAT] = "cgnat",
        [EGRESS_ADDRESS_MULTICAST] = "multicast",
        [EGRESS_ADDRESS_RESERVED] = "reserved",
        [EGRESS_ADDRESS_OWN] = "own-address",
        [EGRESS_ADDRESS_METADATA] = "metadata",
};

/* Cloud metadata and platform services a VM reaches without a route of its own, which hand out
 * credentials or configuration. Most sit in ranges refused anyway (and keep that class's name):
 *   169.254.169.254   AWS, GCP, Azure IMDS, OpenStack, Oracle, DigitalOcean, Hetzner  (link-local)
 *                     docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html,
 *                     cloud.google.com/compute/docs/metadata/overview,
 *                     learn.microsoft.com/azure/virtual-machines/instance-metadata-service
 *   169.254.170.2     AWS ECS task credentials (link-local)
 *                     docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html
 *   169.254.0.23      Tencent Cloud metadata (link-local)  cloud.tencent.com/document/product/213/4934
 *   100.100.100.200   Alibaba Cloud metadata (CGNAT)
 *                     alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata
 *   fd00:ec2::254     AWS IMDS over IPv6 (unique local)  (the AWS page above)
 * and one in a public range, refused here by its exact address:
 *   168.63.129.16     Azure WireServer: platform DNS, DHCP, health probes, the VM agent's goal state
 *                     learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16 */
static const uint32_t metadata_public4[] = {
        0xa83f8110U,    /* 168.63.129.16 */
};

const char *egress_address_class_to_string(EgressAddressClass c) {
        if (c < 0 || c >= _EGRESS_ADDRESS_CLASS_MAX)
                return NULL;
        return egress_address_class_table[c];
}

static bool in4_prefix(uint32_t a, uint32_t net, unsigned bits) {
        uint32_t mask = bits == 0 ? 0 : 0xffffffffU << (32 - bits);
        return (a & mask) == (net & mask);
}

/* a in host byte order */
static EgressAddressClass classify4(uint32_t a) {
        for (size_t i = 0; i < ELEMENTSOF(metadata_public4); i++)
                if (a == metadata_public4[i])
                        return EGRESS_ADDRESS_METADATA;
        if (in4_prefix(a, 0x00000000U, 8))
                return EGRESS_ADDRESS_UNSPECIFIED;
        if (in4_prefix(a, 0x7f000000U, 8))
                return EGRESS_ADDRESS_LOOPBACK;
        if (in4_prefix(a, 0x0a000000U, 8) || in4_prefix(a, 0xac100000U, 12) || in4_prefix(a, 0xc0a80000U, 16))
                return EGRESS_ADDRESS_PRIVATE;
        if (in4_prefix(a, 0xa9fe0000U, 16))
                return EGRESS_ADDRESS_LINK_LOCAL;
        if (in4_prefix(a, 0x64400000U, 10))
                return EGRESS_ADDRESS_CGNAT;
        if (in4_prefix(a, 0xe0000000U, 4))
                return EGRESS_ADDRESS_MULTICAST;
        /* 240/4 with 255.255.255.255; IETF protocol assignments (192.0.0/24); benchmarking (198.18/15) */
        if (in4_prefix(a, 0xf0000000U, 4) || in4_prefix(a, 0xc0000000U, 24) || in4_prefix(a, 0xc6120000U, 15))
                return EGRESS_ADDRESS_RESERVED;
        return EGRESS_ADDRESS_PUBLIC;
}

static uint32_t in6_word(const struct in6_addr *a, unsigned i) {
        return ((uint32_t) a->s6_addr[i * 4] << 24) | ((uint32_t) a->s6_addr[i * 4 + 1] << 16) |
                ((uint32_t) a->s6_addr[i * 4 + 2] << 8) | a->s6_addr[i * 4 + 3];
}

static EgressAddressClass classify6(const struct in6_addr *a) {
        const uint8_t *b = a->s6_addr;
        uint32_t w0 = in6_word(a, 0), w1 = in6_word(a, 1), w2 = in6_word(a, 2), w3 = in6_word(a, 3);

        if (IN6_IS_ADDR_UNSPECIFIED(a))
                return EGRESS_ADDRESS_UNSPECIFIED;
        if (IN6_IS_ADDR_LOOPBACK(a))
                return EGRESS_ADDRESS_LOOPBACK;
        if (IN6_IS_ADDR_V4MAPPED(a))                            /* ::ffff:0:0/96 */
                return classify4(w3);
        if (w0 == 0 && w1 == 0 && w2 == 0)                      /* ::a.b.c.d, deprecated IPv4-compatible */
                return classify4(w3);
        if (w0 == 0 && w1 == 0 && w2 == 0xffff0000U)            /* ::ffff:0:a.b.c.d, SIIT translated */
                return classify4(w3);
        if (w0 == 0x0064ff9bU && w1 == 0 && w2 == 0)            /* 64:ff9b::/96 NAT64 */
                return classify4(w3);
        if (w0 == 0x0064ff9bU && (w1 >> 16) == 0x0001)          /* 64:ff9b:1::/48 local-use NAT64 */
                return EGRESS_ADDRESS_RESERVED;
        if ((w0 >> 16) == 0x2002)                               /* 6to4: 2002:AABB:CCDD::/48 */
                return classify4(((w0 & 0xffffU) << 16) | (w1 >> 16)) == EGRESS_ADDRESS_PUBLIC
                        ? EGRESS_ADDRESS_PUBLIC : EGRESS_ADDRESS_RESERVED;
        if (w0 == 0x20010000U)                                  /* Teredo carries an obfuscated IPv4 */
                return EGRESS_ADDRESS_RESERVED;
        if (w0 == 0x01000000U && w1 == 0)                       /* 100::/64 discard-only */
                return EGRESS_ADDRESS_RESERVED;
        if ((b[0] & 0xfe) == 0xfc)                              /* fc00::/7 unique local */
                return EGRESS_ADDRESS_PRIVATE;
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)              /* fe80::/10 */
                return EGRESS_ADDRESS_LINK_LOCAL;
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)              /* fec0::/10, deprecated site-local */
                return EGRESS_ADDRESS_PRIVATE;
        if (b[0] == 0xff)
                return EGRESS_ADDRESS_MULTICAST;
        return EGRESS_ADDRESS_PUBLIC;
}

static bool sockaddr_same_address(const struct sockaddr *a, const struct sockaddr *b) {
        if (a->sa_family != b->sa_family)
                return false;
        if (a->sa_family == AF_INET)
                return ((const struct sockaddr_in *) a)->sin_addr.s_addr == ((const struct sockaddr_in *) b)->sin_addr.s_addr;
        if (a->sa_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *) a)->sin6_addr, &((const struct sockaddr_in6 *) b)->sin6_addr,
                              sizeof(struct in6_addr)) == 0;
        return false;
}

EgressAddressClass egress_address_classify(const struct sockaddr *sa, const EgressOwnAddresses *own) {
        EgressAddressClass c;

        if (!sa)
                return EGRESS_ADDRESS_RESERVED;
        if (sa->sa_family == AF_INET)
                c = classify4(ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr));
        else if (sa->sa_family == AF_INET6)
                c = classify6(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        else
                return EGRESS_ADDRESS_RESERVED;
        if (c != EGRESS_ADDRESS_PUBLIC || !own)
                return c;

        for (size_t i = 0; i < own->n; i++)
                if (sockaddr_same_address(sa, (const struct sockaddr *) &own->addrs[i]))
                        return EGRESS_ADDRESS_OWN;
        /* ::ffff:a.b.c.d of one of our IPv4 addresses */
        if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *) sa)->sin6_addr)) {
                struct sockaddr_in v4 = { .sin_family = AF_INET };
                memcpy(&v4.sin_addr, &((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr[12], 4);
                return egress_address_classify((const struct sockaddr *) &v4, own);
        }
        return EGRESS_ADDRESS_PUBLIC;
}

int egress_own_addresses_load(EgressOwnAddresses *ret) {
        struct ifaddrs *ifa = NULL;
        EgressOwnAddresses o = {};

        if (getifaddrs(&ifa) < 0)
                return negative_errno();
        for (struct ifaddrs *i = ifa; i && o.n < EGRESS_OWN_ADDRESSES_MAX; i = i->ifa_next) {
                if (!i->ifa_addr)
                        continue;
                if (i->ifa_addr->sa_family == AF_INET)
                        memcpy(&o.addrs[o.n++], i->ifa_addr, sizeof(struct sockaddr_in));
                else if (i->ifa_addr->sa_family == AF_INET6)
                        memcpy(&o.addrs[o.n++], i->ifa_addr, sizeof(struct sockaddr_in6));
        }
        freeifaddrs(ifa);
        *ret = o;
        return 0;
}

const char *egress_address_format(const struct sockaddr *sa, char *buf, size_t size) {
        const void *a;

        if (sa->sa_family == AF_INET)
                a = &((const struct sockaddr_in *) sa)->sin_addr;
        else if (sa->sa_family == AF_INET6)
                a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
        else
                return "?";
        return inet_ntop(sa->sa_family, a, buf, (socklen_t) size) ?: "?";
}
