/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <assert.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include "egress-ca.h"
#include "io-util.h"

EgressCa *egress_ca_free(EgressCa *ca) {
        if (!ca)
                return NULL;
        EVP_PKEY_free(ca->key);
        X509_free(ca->cert);
        free(ca->pem);
        return mfree(ca);
}

static EVP_PKEY *key_new(void) {
        return EVP_EC_gen("P-256");
}

static int set_random_serial(X509 *x) {
        unsigned char b[16];
        BIGNUM *bn;
        int ok;

        if (RAND_bytes(b, sizeof b) != 1)
                return -EIO;
        b[0] &= 0x7f;   /* positive */
        bn = BN_bin2bn(b, sizeof b, NULL);
        if (!bn)
                return -ENOMEM;
        ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
        BN_free(bn);
        return ok ? 0 : -ENOMEM;
}

static int add_ext(X509 *issuer, X509 *x, int nid, const char *value) {
        X509V3_CTX ctx;
        X509_EXTENSION *e;
        int ok;

        X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
        e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (!e)
                return -EINVAL;
        ok = X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
        return ok ? 0 : -ENOMEM;
}

static int cert_pem(X509 *x, char **ret) {
        BIO *b = BIO_new(BIO_s_mem());
        char *data, *s;
        long n;

        if (!b)
                return -ENOMEM;
        if (PEM_write_bio_X509(b, x) != 1) {
                BIO_free(b);
                return -EIO;
        }
        n = BIO_get_mem_data(b, &data);
        s = n > 0 ? strndup(data, (size_t) n) : NULL;
        BIO_free(b);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int ca_create(const char *common_name, EgressCa *ca) {
        X509_NAME *name;

        ca->key = key_new();
        ca->cert = X509_new();
        if (!ca->key || !ca->cert)
                return -ENOMEM;
        if (X509_set_version(ca->cert, 2) != 1 || set_random_serial(ca->cert) < 0 ||
            !X509_gmtime_adj(X509_getm_notBefore(ca->cert), -3600) ||
            !X509_gmtime_adj(X509_getm_notAfter(ca->cert), (long) EGRESS_CA_VALID_DAYS * 24 * 3600) ||
            X509_set_pubkey(ca->cert, ca->key) != 1)
                return -EIO;
        name = X509_get_subject_name(ca->cert);
        if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *) "loop", -1, -1, 0) != 1 ||
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *) common_name, -1, -1, 0) != 1 ||
            X509_set_issuer_name(ca->cert, name) != 1)
                return -EINVAL;
        if (add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
            add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
            add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") < 0)
                return -EIO;
        if (X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0)
                return -EIO;
        return 0;
}

static int write_new_file(int dir_fd, const char *name, mode_t mode, const char *data, size_t size) {
        _cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        int r;

        if (fd < 0)
                return -errno;
        r = loop_write(fd, data, size);
        if (r < 0)
                return r;
        if (fsync(fd) < 0)
                return -errno;
        return 0;
}

static int ca_save(int dir_fd, const EgressCa *ca) {
        BIO *b = BIO_new(BIO_s_mem());
        char *data;
        long n;
        int r;

        if (!b)
                return -ENOMEM;
        if (PEM_write_bio_PrivateKey(b, ca->key, NULL, NULL, 0, NULL, NULL) != 1) {
                BIO_free(b);
                return -EIO;
        }
        n = BIO_get_mem_data(b, &data);
        /* The key first: a certificate without its key is refused at the next start, never replaced. */
        r = write_new_file(dir_fd, EGRESS_CA_KEY_FILE, 0600, data, (size_t) n);
        OPENSSL_cleanse(data, (size_t) n);
        BIO_free(b);
        if (r < 0)
                return r;
        return write_new_file(dir_fd, EGRESS_CA_CERT_FILE, 0644, ca->pem, strlen(ca->pem));
}

static int ca_load(int dir_fd, EgressCa *ca) {
        _cleanup_free_ char *key = NULL, *cert = NULL;
        size_t key_size = 0, cert_size = 0;
        BIO *b;
        int r;

        r = read_full_file_at(dir_fd, EGRESS_CA_KEY_FILE, EGRESS_CA_FILE_MAX, true, &key, &key_size);
        if (r < 0)
                return r;
        r = read_full_file_at(dir_fd, EGRESS_CA_CERT_FILE, EGRESS_CA_FILE_MAX, true, &cert, &cert_size);
        if (r < 0) {
                OPENSSL_cleanse(key, key_size);
                return r == -ENOENT ? -EBADMSG : r;
        }
        b = BIO_new_mem_buf(key, (int) key_size);
        ca->key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
        OPENSSL_cleanse(key, key_size);
        b = BIO_new_mem_buf(cert, (int) cert_size);
        ca->cert = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
        if (!ca->key || !ca->cert || X509_check_private_key(ca->cert, ca->key) != 1)
                return -EBADMSG;
        return 0;
}

int egress_ca_load_or_create(int dir_fd, const char *common_name, EgressCa **ret) {
        _cleanup_(egress_ca_freep) EgressCa *ca = calloc(1, sizeof(EgressCa));
        struct stat st;
        int r;

        if (!ca)
                return -ENOMEM;
        if (fstatat(dir_fd, EGRESS_CA_KEY_FILE, &st, AT_SYMLINK_NOFOLLOW) >= 0 ||
            fstatat(dir_fd, EGRESS_CA_CERT_FILE, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                r = ca_load(dir_fd, ca);
        else {
                r = ca_create(common_name, ca);
                if (r >= 0)
                        r = cert_pem(ca->cert, &ca->pem);
                if (r >= 0)
                        r = ca_save(dir_fd, ca);
        }
        if (r < 0)
                return r;
        if (!ca->pem) {
                r = cert_pem(ca->cert, &ca->pem);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(ca);
        return 0;
}

int egress_ca_issue(const EgressCa *ca, const char *host, X509 **ret_cert, EVP_PKEY **ret_key) {
        EVP_PKEY *key = NULL;
        X509 *x = NULL;
        _cleanup_free_ char *san = NULL;
        struct in6_addr a6;
        struct in_addr a4;
        bool ip = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
        int r = -EIO;

        if (isempty(host) || strlen(host) > 253)
                return -EINVAL;
        if (asprintf(&san, "%s:%s", ip ? "IP" : "DNS", host) < 0)
                return -ENOMEM;
        key = key_new();
        x = X509_new();
        if (!key || !x) {
                r = -ENOMEM;
                goto fail;
        }
        if (X509_set_version(x, 2) != 1 || set_random_serial(x) < 0 ||
            !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
            !X509_gmtime_adj(X509_getm_notAfter(x), (long) EGRESS_LEAF_VALID_DAYS * 24 * 3600) ||
            X509_set_pubkey(x, key) != 1 ||
            X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8, (const unsigned char *) host, -1, -1, 0) != 1 ||
            X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1)
                goto fail;
        if (add_ext(ca->cert, x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
            add_ext(ca->cert, x, NID_key_usage, "critical,digitalSignature") < 0 ||
            add_ext(ca->cert, x, NID_ext_key_usage, "serverAuth") < 0 ||
            add_ext(ca->cert, x, NID_subject_alt_name, san) < 0 ||
            add_ext(ca->cert, x, NID_authority_key_identifier, "keyid:always") < 0)
                goto fail;
        if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
                goto fail;
        *ret_cert = x;
        *ret_key = key;
        return 0;
fail:
        X509_free(x);
        EVP_PKEY_free(key);
        return r;
}

int egress_ca_file_check(const char *path, char **ret_reason) {
        _cleanup_fclose_ FILE *f = NULL;
        STACK_OF(X509_INFO) *infos = NULL;
        char buf[256] = "";
        int n = 0, r = 0;

        assert(path);
        assert(ret_reason);

        *ret_reason = NULL;
        f = fopen(path, "re");
        if (!f) {
                r = -errno;
                *ret_reason = strdup(strerror(-r));
                return r;
        }
        ERR_clear_error();
        infos = PEM_X509_INFO_read(f, NULL, NULL, NULL);
        if (!infos) {
                ERR_error_string_n(ERR_peek_last_error(), buf, sizeof buf);
                ERR_clear_error();
                *ret_reason = strdup(buf[0] ? buf : "not a PEM file");
                return -EBADMSG;
        }
        for (int i = 0; i < sk_X509_INFO_num(infos); i++)
                n += sk_X509_INFO_value(infos, i)->x509 != NULL;
        sk_X509_INFO_pop_free(infos, X509_INFO_free);
        if (n == 0) {
                *ret_reason = strdup("no certificate in it");
                return -EBADMSG;
        }
        return 0;
}
