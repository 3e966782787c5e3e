/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The egress gateway's sandbox CA: made at the gateway's first start (an ECDSA P-256 key that only the
 * gateway can read, and a self-signed certificate the agent's trust store gets), it signs the leaf
 * certificates with which the gateway terminates TLS for hosts that get a credential injected. */

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "macro.h"

#define EGRESS_CA_KEY_FILE "ca.key"
#define EGRESS_CA_CERT_FILE "ca.pem"
#define EGRESS_CA_VALID_DAYS 3650
#define EGRESS_LEAF_VALID_DAYS 7
#define EGRESS_CA_FILE_MAX (64U * 1024U)

typedef struct EgressCa {
        EVP_PKEY *key;
        X509 *cert;
        char *pem;              /* the certificate, PEM */
} EgressCa;

EgressCa *egress_ca_free(EgressCa *ca);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressCa *, egress_ca_free);

/* Loads ca.key and ca.pem from dir_fd, or makes them when neither exists (the key 0600, the certificate
 * 0644). One without the other, or a key that does not match its certificate, is -EBADMSG: refused,
 * not replaced, so a CA the agents trust is never silently swapped. */
int egress_ca_load_or_create(int dir_fd, const char *common_name, EgressCa **ret);

/* A leaf for host (a name, or an IP literal): its own P-256 key, CN and subjectAltName the host,
 * serverAuth, valid from an hour ago for EGRESS_LEAF_VALID_DAYS, signed by ca. */
int egress_ca_issue(const EgressCa *ca, const char *host, X509 **ret_cert, EVP_PKEY **ret_key);

/* Whether egress.ca_file at PATH loads as the gateway loads it (a PEM file of one or more certificates
 * for its trust store): 0, or -errno with *ret_reason saying why in words ("No such file or directory",
 * "no certificate in it", OpenSSL's reason). For `loop config check` and the start of a run, so that a
 * CA file that is not there fails at once instead of every request being refused. */
int egress_ca_file_check(const char *path, char **ret_reason);
