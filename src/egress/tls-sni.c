/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "tls-sni.h"

#define TLS_CONTENT_HANDSHAKE 0x16
#define TLS_HANDSHAKE_CLIENT_HELLO 0x01
#define TLS_EXTENSION_SERVER_NAME 0x0000
#define TLS_SERVER_NAME_HOST 0x00
#define TLS_HOST_NAME_MAX 255U

typedef struct Reader {
        const uint8_t *p;
        size_t left;
} Reader;

static bool read_u8(Reader *r, unsigned *ret) {
        if (r->left < 1)
                return false;
        *ret = r->p[0];
        r->p++, r->left--;
        return true;
}

static bool read_u16(Reader *r, unsigned *ret) {
        if (r->left < 2)
                return false;
        *ret = ((unsigned) r->p[0] << 8) | r->p[1];
        r->p += 2, r->left -= 2;
        return true;
}

static bool read_u24(Reader *r, size_t *ret) {
        if (r->left < 3)
                return false;
        *ret = ((size_t) r->p[0] << 16) | ((size_t) r->p[1] << 8) | r->p[2];
        r->p += 3, r->left -= 3;
        return true;
}

static bool skip(Reader *r, size_t n) {
        if (r->left < n)
                return false;
        r->p += n, r->left -= n;
        return true;
}

/* A sub-reader over the next n bytes. */
static bool sub(Reader *r, size_t n, Reader *ret) {
        if (r->left < n)
                return false;
        *ret = (Reader) { r->p, n };
        r->p += n, r->left -= n;
        return true;
}

/* RFC 6066 3: at most one name of a type. A second host name is refused rather than ignored: the server
 * (or one of several between here and it) might read that one. */
static int parse_server_name(Reader ext, char **ret_sni) {
        Reader list, name, host = {};
        unsigned n, type, len;
        bool found = false;
        char *s;

        if (!read_u16(&ext, &n) || !sub(&ext, n, &list) || ext.left != 0)
                return -EBADMSG;
        while (list.left > 0) {
                if (!read_u8(&list, &type) || !read_u16(&list, &len) || !sub(&list, len, &name))
                        return -EBADMSG;
                if (type != TLS_SERVER_NAME_HOST)
                        continue;
                if (found)
                        return -EBADMSG;
                found = true;
                host = name;
        }
        if (!found)
                return 0;
        if (host.left == 0 || host.left > TLS_HOST_NAME_MAX)
                return -EBADMSG;
        s = strndup((const char *) host.p, host.left);
        if (!s)
                return -ENOMEM;
        if (strlen(s) != host.left) {           /* an embedded NUL */
                free(s);
                return -EBADMSG;
        }
        for (char *c = s; *c; c++) {
                if ((unsigned char) *c <= 0x20 || (unsigned char) *c >= 0x7f) {
                        free(s);
                        return -EBADMSG;
                }
                if (*c >= 'A' && *c <= 'Z')
                        *c = (char) (*c - 'A' + 'a');
        }
        if (host.left > 1 && s[host.left - 1] == '.')
                s[host.left - 1] = 0;
        *ret_sni = s;
        return 1;
}

int tls_client_hello_sni(const uint8_t *buf, size_t size, char **ret_sni) {
        Reader rec, hello, exts, ext;
        size_t record_len, hello_len;
        unsigned type, n, ext_type;

        if (size >= 1 && buf[0] != TLS_CONTENT_HANDSHAKE)
                return -EBADMSG;
        if (size >= 2 && buf[1] != 0x03)
                return -EBADMSG;
        if (size < TLS_RECORD_HEADER_SIZE)
                return -EAGAIN;
        record_len = ((size_t) buf[3] << 8) | buf[4];
        if (record_len == 0 || record_len > TLS_RECORD_SIZE_MAX)
                return -EBADMSG;
        if (size < TLS_RECORD_HEADER_SIZE + record_len)
                return -EAGAIN;

        rec = (Reader) { buf + TLS_RECORD_HEADER_SIZE, record_len };
        if (!read_u8(&rec, &type) || type != TLS_HANDSHAKE_CLIENT_HELLO || !read_u24(&rec, &hello_len))
                return -EBADMSG;
        /* A ClientHello longer than its record continues in the next one; real clients do not do that. */
        if (!sub(&rec, hello_len, &hello))
                return -EBADMSG;

        if (!skip(&hello, 2 + 32) ||                                    /* legacy_version, random */
            !read_u8(&hello, &n) || n > 32 || !skip(&hello, n) ||       /* legacy_session_id */
            !read_u16(&hello, &n) || n < 2 || (n & 1) || !skip(&hello, n) || /* cipher_suites */
            !read_u8(&hello, &n) || n < 1 || !skip(&hello, n))          /* legacy_compression_methods */
                return -EBADMSG;
        if (hello.left == 0)
                return 0;                                               /* no extensions at all */
        if (!read_u16(&hello, &n) || !sub(&hello, n, &exts) || hello.left != 0)
                return -EBADMSG;

        /* RFC 8446 4.2: no extension twice; a second server_name is refused, not left to the server to
         * pick (the whole block is read: a server_name after the first would be the server's to see) */
        Reader found = {};
        bool have = false;
        while (exts.left > 0) {
                if (!read_u16(&exts, &ext_type) || !read_u16(&exts, &n) || !sub(&exts, n, &ext))
                        return -EBADMSG;
                if (ext_type != TLS_EXTENSION_SERVER_NAME)
                        continue;
                if (have)
                        return -EBADMSG;
                have = true;
                found = ext;
        }
        return have ? parse_server_name(found, ret_sni) : 0;
}
