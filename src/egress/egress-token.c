/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>
#include <unistd.h>

#include "egress-token.h"
#include "io-util.h"

bool egress_container_name_is_valid(const char *name) {
        size_t n;

        if (isempty(name) || name[0] == '.' || name[0] == '-')
                return false;
        n = strlen(name);
        if (n > EGRESS_CONTAINER_NAME_MAX)
                return false;
        for (const char *c = name; *c; c++)
                if (!(isalnum((unsigned char) *c) || *c == '_' || *c == '.' || *c == '-'))
                        return false;
        return true;
}

int egress_token_key_load_or_create(int dir_fd, uint8_t ret[static EGRESS_TOKEN_KEY_SIZE]) {
        _cleanup_free_ char *data = NULL;
        uint8_t key[EGRESS_TOKEN_KEY_SIZE];
        size_t size = 0;
        int r;

        r = read_full_file_at(dir_fd, EGRESS_TOKEN_KEY_FILE, EGRESS_TOKEN_KEY_SIZE + 1, true, &data, &size);
        if (r >= 0) {
                if (size != EGRESS_TOKEN_KEY_SIZE) {
                        explicit_bzero(data, size);
                        return -EBADMSG;        /* refused, not replaced: every token would change */
                }
                memcpy(ret, data, EGRESS_TOKEN_KEY_SIZE);
                explicit_bzero(data, size);
                return 0;
        }
        if (r != -ENOENT)
                return r;

        if (RAND_bytes(key, sizeof key) != 1)
                return -EIO;
        {
                _cleanup_close_ int fd = openat(dir_fd, EGRESS_TOKEN_KEY_FILE,
                                                O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return -errno;
                r = loop_write(fd, key, sizeof key);
                if (r >= 0 && fsync(fd) < 0)
                        r = -errno;
        }
        if (r < 0) {
                (void) unlinkat(dir_fd, EGRESS_TOKEN_KEY_FILE, 0);
                explicit_bzero(key, sizeof key);
                return r;
        }
        memcpy(ret, key, sizeof key);
        explicit_bzero(key, sizeof key);
        return 0;
}

/* HMAC-SHA256(key, purpose NUL container), hex, the first 2*bytes digits. */
static int derive_hex(const uint8_t *key, const char *purpose, const char *container, size_t bytes, char *ret) {
        static const char hex[] = "0123456789abcdef";
        unsigned char msg[16 + EGRESS_CONTAINER_NAME_MAX + 1], mac[EVP_MAX_MD_SIZE];
        unsigned mac_len = 0;
        size_t pl = strlen(purpose), cl;

        if (!egress_container_name_is_valid(container) || pl >= 16 || bytes > 32)
                return -EINVAL;
        cl = strlen(container);
        memcpy(msg, purpose, pl + 1);
        memcpy(msg + pl + 1, container, cl);
        if (!HMAC(EVP_sha256(), key, EGRESS_TOKEN_KEY_SIZE, msg, pl + 1 + cl, mac, &mac_len) || mac_len < bytes)
                return -EIO;
        for (size_t i = 0; i < bytes; i++) {
                ret[2 * i] = hex[mac[i] >> 4];
                ret[2 * i + 1] = hex[mac[i] & 15];
        }
        ret[2 * bytes] = 0;
        explicit_bzero(mac, sizeof mac);
        return 0;
}

int egress_token_make(const uint8_t key[static EGRESS_TOKEN_KEY_SIZE], const char *container,
                      char ret[static EGRESS_TOKEN_HEX_LEN + 1]) {
        return derive_hex(key, "token", container, EGRESS_TOKEN_HEX_LEN / 2, ret);
}

int egress_dummy_make(const uint8_t key[static EGRESS_TOKEN_KEY_SIZE], const char *container,
                      char ret[static EGRESS_DUMMY_LEN + 1]) {
        size_t pl = sizeof(EGRESS_DUMMY_PREFIX) - 1;

        memcpy(ret, EGRESS_DUMMY_PREFIX, pl);
        return derive_hex(key, "dummy", container, (EGRESS_DUMMY_LEN - pl) / 2, ret + pl);
}

bool egress_token_check(const uint8_t key[static EGRESS_TOKEN_KEY_SIZE], const char *container, const char *token) {
        char want[EGRESS_TOKEN_HEX_LEN + 1];
        bool ok;

        if (!token || strlen(token) != EGRESS_TOKEN_HEX_LEN || egress_token_make(key, container, want) < 0)
                return false;
        ok = CRYPTO_memcmp(want, token, EGRESS_TOKEN_HEX_LEN) == 0;
        explicit_bzero(want, sizeof want);
        return ok;
}

int egress_credential_parse(char *buf, const char **ret_container, const char **ret_token) {
        char *space, *nl;

        nl = strchr(buf, '\n');
        if (nl) {
                if (nl[1])
                        return -EBADMSG;
                *nl = 0;
        }
        space = strchr(buf, ' ');
        if (!space)
                return -EBADMSG;
        *space = 0;
        if (!egress_container_name_is_valid(buf) || strlen(space + 1) != EGRESS_TOKEN_HEX_LEN)
                return -EBADMSG;
        *ret_container = buf;
        *ret_token = space + 1;
        return 0;
}
