/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dirent-util.h"
#include "io-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"
#include "tar.h"

#define TAR_BLOCK 512U
/* Deeper trees are refused rather than walked with one open fd per level. */
#define TAR_TREE_DEPTH_MAX 128U
/* The ustar fields: a longer name or link target, or a larger id, goes into a PAX record instead. */
#define TAR_NAME_FIELD 100U
#define TAR_ID_FIELD_MAX 07777777UL

struct TarWriter {
        char *buf;
        size_t size, allocated;
        time_t mtime;           /* for entries added one by one; trees keep their files' times */
        bool finished;
};

typedef struct TarHeader {
        char name[100];
        char mode[8];
        char uid[8];
        char gid[8];
        char size[12];
        char mtime[12];
        char chksum[8];
        char typeflag;
        char linkname[100];
        char magic[6];
        char version[2];
        char uname[32];
        char gname[32];
        char devmajor[8];
        char devminor[8];
        char prefix[155];
        char pad[12];
} TarHeader;

_Static_assert(sizeof(TarHeader) == TAR_BLOCK, "a tar header is one block");

int tar_writer_new(TarWriter **ret) {
        TarWriter *t;

        assert(ret);

        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->mtime = time(NULL);
        *ret = t;
        return 0;
}

TarWriter *tar_writer_free(TarWriter *t) {
        if (!t)
                return NULL;
        free(t->buf);
        return mfree(t);
}

static size_t round_up_block(size_t n) {
        return (n + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
}

/* Makes room for n more bytes (zeroed) and returns where they start, or NULL with the error in *ret_r. */
static char *tar_grow(TarWriter *t, size_t n, int *ret_r) {
        if (t->finished) {
                *ret_r = -ESTALE;
                return NULL;
        }
        if (n > TAR_SIZE_MAX || t->size > TAR_SIZE_MAX - n) {
                *ret_r = -EFBIG;
                return NULL;
        }
        if (t->size + n > t->allocated) {
                size_t want = MAX(t->allocated * 2, t->size + n);
                want = MAX(want, (size_t) 64 * 1024);
                if (want > TAR_SIZE_MAX + 2 * TAR_BLOCK)
                        want = MAX(t->size + n, (size_t) TAR_SIZE_MAX + 2 * TAR_BLOCK);
                char *b = realloc(t->buf, want);
                if (!b) {
                        *ret_r = -ENOMEM;
                        return NULL;
                }
                t->buf = b;
                t->allocated = want;
        }
        char *p = t->buf + t->size;
        memset(p, 0, n);
        t->size += n;
        return p;
}

/* Does an entry of this many data bytes (plus its headers) still fit? Checked before anything is written,
 * so a refused entry leaves the archive as it was. */
static int tar_check_room(TarWriter *t, size_t data_size, size_t header_bytes) {
        if (t->finished)
                return -ESTALE;
        if (data_size > TAR_SIZE_MAX || header_bytes > TAR_SIZE_MAX)
                return -EFBIG;
        size_t need = round_up_block(data_size) + header_bytes + 2 * TAR_BLOCK;
        if (need > TAR_SIZE_MAX || t->size > TAR_SIZE_MAX - need)
                return -EFBIG;
        return 0;
}

static void put_octal(char *field, size_t width, unsigned long long v) {
        /* width - 1 zero-padded digits and a NUL, as GNU tar writes them; callers keep v in range. */
        field[width - 1] = 0;
        for (size_t i = width - 1; i > 0; i--, v >>= 3)
                field[i - 1] = (char) ('0' + (v & 7));
}

static void put_string(char *field, size_t width, const char *s) {
        /* NUL-terminated when it fits; a field filled to the last byte is legal too. */
        memcpy(field, s, MIN(strlen(s), width));
}

static void tar_checksum(TarHeader *h) {
        const unsigned char *p = (const unsigned char *) h;
        unsigned sum = 0;

        memset(h->chksum, ' ', sizeof h->chksum);
        for (size_t i = 0; i < sizeof *h; i++)
                sum += p[i];
        /* Six digits, NUL, space: the historic layout every reader accepts. */
        snprintf(h->chksum, sizeof h->chksum, "%06o", sum);
        h->chksum[7] = ' ';
}

/* A name is relative, has no ".." component and no empty one, and no NUL (it is a C string). */
static bool tar_name_valid(const char *name) {
        if (isempty(name) || name[0] == '/')
                return false;
        for (const char *p = name; *p;) {
                size_t l = strcspn(p, "/");
                if (l == 0)
                        return false;
                if (l == 2 && p[0] == '.' && p[1] == '.')
                        return false;
                p += l;
                if (*p == '/')
                        p++;
        }
        return true;
}

static int pax_append(char **records, size_t *size, const char *key, const char *value) {
        /* "LEN key=value\n" where LEN counts the whole record including its own digits. */
        size_t body = 1 + strlen(key) + 1 + strlen(value) + 1, len = body + 1;
        char digits[32];

        for (;;) {
                int n = snprintf(digits, sizeof digits, "%zu", len);
                if (body + (size_t) n == len)
                        break;
                len = body + (size_t) n;
        }
        char *r = realloc(*records, *size + len + 1);
        if (!r)
                return -ENOMEM;
        *records = r;
        snprintf(r + *size, len + 1, "%s %s=%s\n", digits, key, value);
        *size += len;
        return 0;
}

static void header_fill(TarHeader *h, const char *name, char type, mode_t mode, unsigned long long uid,
                        unsigned long long gid, unsigned long long size, time_t mtime, const char *linkname) {
        put_string(h->name, sizeof h->name, name);
        put_octal(h->mode, sizeof h->mode, mode & 07777);
        put_octal(h->uid, sizeof h->uid, MIN(uid, TAR_ID_FIELD_MAX));
        put_octal(h->gid, sizeof h->gid, MIN(gid, TAR_ID_FIELD_MAX));
        put_octal(h->size, sizeof h->size, size);
        put_octal(h->mtime, sizeof h->mtime, mtime > 0 ? (unsigned long long) mtime : 0);
        h->typeflag = type;
        if (linkname)
                put_string(h->linkname, sizeof h->linkname, linkname);
        memcpy(h->magic, "ustar", 6);
        memcpy(h->version, "00", 2);
        put_octal(h->devmajor, sizeof h->devmajor, 0);
        put_octal(h->devminor, sizeof h->devminor, 0);
        tar_checksum(h);
}

/* Writes the header(s) of one entry and returns where its data_size bytes of data go (already zeroed and
 * padded to a block). */
static int tar_put_entry(TarWriter *t, const char *name, char type, mode_t mode, uid_t uid, gid_t gid,
                         size_t data_size, time_t mtime, const char *linkname, char **ret_data) {
        _cleanup_free_ char *pax = NULL, *entry_name = NULL;
        size_t pax_size = 0;
        int r;

        if (!tar_name_valid(name))
                return -EINVAL;
        if (linkname && (isempty(linkname) || strlen(linkname) >= TAR_SIZE_MAX / 2))
                return -EINVAL;

        /* Directories end in a slash, as tar(1) writes them. */
        if (type == '5' && !endswith(name, "/")) {
                if (asprintf(&entry_name, "%s/", name) < 0)
                        return -ENOMEM;
        } else {
                entry_name = strdup(name);
                if (!entry_name)
                        return -ENOMEM;
        }

        if (strlen(entry_name) > TAR_NAME_FIELD) {
                r = pax_append(&pax, &pax_size, "path", entry_name);
                if (r < 0)
                        return r;
        }
        if (linkname && strlen(linkname) > TAR_NAME_FIELD) {
                r = pax_append(&pax, &pax_size, "linkpath", linkname);
                if (r < 0)
                        return r;
        }
        if (uid > TAR_ID_FIELD_MAX || gid > TAR_ID_FIELD_MAX) {
                char v[32];
                snprintf(v, sizeof v, "%u", (unsigned) uid);
                r = pax_append(&pax, &pax_size, "uid", v);
                if (r < 0)
                        return r;
                snprintf(v, sizeof v, "%u", (unsigned) gid);
                r = pax_append(&pax, &pax_size, "gid", v);
                if (r < 0)
                        return r;
        }

        size_t header_bytes = TAR_BLOCK + (pax ? TAR_BLOCK + round_up_block(pax_size) : 0);
        r = tar_check_room(t, data_size, header_bytes);
        if (r < 0)
                return r;

        if (pax) {
                /* The PAX header's own name only has to be unique enough for readers that ignore it. */
                char pax_name[TAR_NAME_FIELD + 1];
                const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
                snprintf(pax_name, sizeof pax_name, "PaxHeaders/%.80s", isempty(base) ? "entry" : base);

                TarHeader *ph = (TarHeader *) tar_grow(t, TAR_BLOCK, &r);
                if (!ph)
                        return r;
                header_fill(ph, pax_name, 'x', 0644, 0, 0, pax_size, mtime, NULL);
                char *pd = tar_grow(t, round_up_block(pax_size), &r);
                if (!pd)
                        return r;
                memcpy(pd, pax, pax_size);
        }

        TarHeader *h = (TarHeader *) tar_grow(t, TAR_BLOCK, &r);
        if (!h)
                return r;
        header_fill(h, entry_name, type, mode, uid, gid, data_size, mtime, linkname);

        char *data = tar_grow(t, round_up_block(data_size), &r);
        if (!data && data_size > 0)
                return r;
        if (ret_data)
                *ret_data = data;
        return 0;
}

int tar_add_file(TarWriter *t, const char *name, mode_t mode, uid_t uid, gid_t gid, const void *data, size_t size) {
        char *p = NULL;
        int r;

        assert(t);
        assert(data || size == 0);

        r = tar_put_entry(t, name, '0', mode, uid, gid, size, t->mtime, NULL, &p);
        if (r < 0)
                return r;
        if (size > 0)
                memcpy(p, data, size);
        return 0;
}

int tar_add_directory(TarWriter *t, const char *name, mode_t mode, uid_t uid, gid_t gid) {
        assert(t);
        return tar_put_entry(t, name, '5', mode, uid, gid, 0, t->mtime, NULL, NULL);
}

int tar_add_symlink(TarWriter *t, const char *name, const char *target) {
        assert(t);
        if (!target)
                return -EINVAL;
        return tar_put_entry(t, name, '2', 0777, 0, 0, 0, t->mtime, target, NULL);
}

static int join_name(const char *prefix, const char *name, char **ret) {
        char *s;
        if (isempty(prefix))
                s = strdup(name);
        else if (asprintf(&s, "%s/%s", prefix, name) < 0)
                s = NULL;
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int tar_add_regular_at(TarWriter *t, int dir_fd, const char *name, const char *entry) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        char *p = NULL;
        int r;

        /* O_NONBLOCK: a FIFO swapped in after the directory was listed must not block us. */
        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;

        r = tar_put_entry(t, entry, '0', st.st_mode, 0, 0, (size_t) st.st_size, st.st_mtim.tv_sec, NULL, &p);
        if (r < 0)
                return r;
        ssize_t n = loop_read(fd, p, (size_t) st.st_size);
        if (n < 0)
                return (int) n;
        if ((size_t) n != (size_t) st.st_size)
                return log_debug_errno(EIO, "%s shrank while it was archived.", entry);
        return 0;
}

static int tar_add_dir_contents(TarWriter *t, int dir_fd, const char *prefix, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **names = NULL;
        int r;

        if (depth > TAR_TREE_DEPTH_MAX)
                return -ELOOP;

        r = opendir_at(dir_fd, ".", 0, &d);
        if (r < 0)
                return r;

        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        break;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = strv_extend(&names, de->d_name);
                if (r < 0)
                        return r;
        }
        /* Sorted, so the same tree always gives the same archive (and the same build cache key). */
        r = strv_sort(names);
        if (r < 0)
                return r;

        STRV_FOREACH(n, names) {
                _cleanup_free_ char *entry = NULL;
                struct stat st;

                r = join_name(prefix, *n, &entry);
                if (r < 0)
                        return r;
                if (fstatat(dirfd(d), *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;

                if (S_ISREG(st.st_mode)) {
                        r = tar_add_regular_at(t, dirfd(d), *n, entry);
                        if (r < 0)
                                return r;
                } else if (S_ISLNK(st.st_mode)) {
                        _cleanup_free_ char *target = NULL;
                        size_t sz = MAX((size_t) st.st_size + 1, (size_t) 256);

                        for (;;) {
                                target = malloc(sz);
                                if (!target)
                                        return -ENOMEM;
                                ssize_t k = readlinkat(dirfd(d), *n, target, sz);
                                if (k < 0)
                                        return -errno;
                                if ((size_t) k < sz) {
                                        target[k] = 0;
                                        break;
                                }
                                target = mfree(target);
                                if (sz >= 65536)
                                        return -ENAMETOOLONG;
                                sz *= 2;
                        }
                        r = tar_put_entry(t, entry, '2', 0777, 0, 0, 0, st.st_mtim.tv_sec, target, NULL);
                        if (r < 0)
                                return r;
                } else if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = -EBADF;

                        r = tar_put_entry(t, entry, '5', st.st_mode, 0, 0, 0, st.st_mtim.tv_sec, NULL, NULL);
                        if (r < 0)
                                return r;
                        sub = openat(dirfd(d), *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return -errno;
                        r = tar_add_dir_contents(t, sub, entry, depth + 1);
                        if (r < 0)
                                return r;
                } else
                        log_debug("Not archiving %s: not a regular file, directory or symlink.", entry);
        }
        return 0;
}

int tar_add_tree(TarWriter *t, int dir_fd, const char *prefix) {
        struct stat st;
        int r;

        assert(t);

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;

        if (!isempty(prefix)) {
                if (!tar_name_valid(prefix))
                        return -EINVAL;
                r = tar_put_entry(t, prefix, '5', st.st_mode, 0, 0, 0, st.st_mtim.tv_sec, NULL, NULL);
                if (r < 0)
                        return r;
        }
        return tar_add_dir_contents(t, dir_fd, prefix, 0);
}

int tar_finish(TarWriter *t, const void **ret_data, size_t *ret_size) {
        int r;

        assert(t);

        if (!t->finished) {
                /* tar_check_room() always kept these two blocks free. */
                if (!tar_grow(t, 2 * TAR_BLOCK, &r))
                        return r;
                t->finished = true;
        }
        if (ret_data)
                *ret_data = t->buf;
        if (ret_size)
                *ret_size = t->size;
        return 0;
}

/* ---- reading ---- */

void tar_entry_done(TarEntry *e) {
        if (!e)
                return;
        e->name = mfree(e->name);
        e->linkname = mfree(e->linkname);
}

/* An octal field (NUL or space terminated, leading spaces allowed); base-256 is refused. */
static int tar_parse_octal(const char *field, size_t width, uint64_t *ret) {
        uint64_t v = 0;
        size_t i = 0;

        if ((unsigned char) field[0] & 0x80)
                return -EBADMSG;
        while (i < width && field[i] == ' ')
                i++;
        for (; i < width && field[i] >= '0' && field[i] <= '7'; i++) {
                if (v > (UINT64_MAX >> 3))
                        return -EBADMSG;
                v = v << 3 | (uint64_t) (field[i] - '0');
        }
        for (; i < width; i++)
                if (field[i] != 0 && field[i] != ' ')
                        return -EBADMSG;
        *ret = v;
        return 0;
}

static char *tar_field_dup(const char *field, size_t width) {
        return strndup(field, strnlen(field, width));
}

/* The PAX records of an 'x' header: path and linkpath kept, size refused, others ignored. */
static int tar_parse_pax(const char *p, size_t n, char **path, char **linkpath) {
        while (n > 0) {
                size_t len = 0, i = 0;
                while (i < n && p[i] >= '0' && p[i] <= '9') {
                        if (len > TAR_READ_NAME_MAX * 4)
                                return -EBADMSG;
                        len = len * 10 + (size_t) (p[i] - '0');
                        i++;
                }
                if (i == 0 || i >= n || p[i] != ' ' || len <= i + 1 || len > n || p[len - 1] != '\n')
                        return -EBADMSG;
                const char *kv = p + i + 1, *end = p + len - 1, *eq = memchr(kv, '=', (size_t) (end - kv));
                if (!eq)
                        return -EBADMSG;
                size_t klen = (size_t) (eq - kv), vlen = (size_t) (end - eq - 1);
                char **dst = NULL;
                if (klen == 4 && memcmp(kv, "path", 4) == 0)
                        dst = path;
                else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0)
                        dst = linkpath;
                else if ((klen == 4 && memcmp(kv, "size", 4) == 0) || (klen > 12 && memcmp(kv, "GNU.sparse.", 11) == 0))
                        return -EBADMSG;
                if (dst) {
                        if (vlen > TAR_READ_NAME_MAX || memchr(eq + 1, 0, vlen))
                                return -EBADMSG;
                        free(*dst);
                        *dst = strndup(eq + 1, vlen);
                        if (!*dst)
                                return -ENOMEM;
                }
                p += len;
                n -= len;
        }
        return 0;
}

int tar_read_next(const void *data, size_t size, size_t *offset, TarEntry *ret) {
        _cleanup_free_ char *long_name = NULL, *long_link = NULL, *pax_path = NULL, *pax_link = NULL;
        const char *base = data;
        size_t off = *offset;
        int r;

        assert(data || size == 0);
        assert(ret);
        *ret = (TarEntry) {};

        for (;;) {
                static const char zero[TAR_BLOCK];
                const TarHeader *h;
                uint64_t fsize;

                if (off >= size || size - off < TAR_BLOCK) {
                        if (off == size && !long_name && !long_link && !pax_path && !pax_link)
                                return 0;       /* no end blocks at all: Go reads an EOF here too */
                        return -EBADMSG;
                }
                if (memcmp(base + off, zero, TAR_BLOCK) == 0) {
                        if (long_name || long_link || pax_path || pax_link)
                                return -EBADMSG;
                        *offset = size;
                        return 0;
                }
                h = (const TarHeader *) (base + off);

                /* the checksum, as Go checks it (unsigned or signed sum) */
                uint64_t want;
                if (tar_parse_octal(h->chksum, sizeof h->chksum, &want) < 0)
                        return -EBADMSG;
                uint64_t us = 0;
                int64_t ss = 0;
                for (size_t i = 0; i < TAR_BLOCK; i++) {
                        bool in_sum = i >= offsetof(TarHeader, chksum) && i < offsetof(TarHeader, chksum) + sizeof h->chksum;
                        unsigned char c = in_sum ? ' ' : (unsigned char) base[off + i];
                        us += c;
                        ss += (signed char) c;
                }
                if (want != us && (int64_t) want != ss)
                        return -EBADMSG;

                if (tar_parse_octal(h->size, sizeof h->size, &fsize) < 0)
                        return -EBADMSG;
                off += TAR_BLOCK;
                if (fsize > size - off)
                        return -EBADMSG;
                /* header-only types: Go ignores their size field (what follows is the next header) */
                if (strchr("123456", h->typeflag) && h->typeflag != 0)
                        fsize = 0;
                size_t padded = round_up_block((size_t) fsize);
                if (padded > size - off)
                        padded = size - off;    /* a last entry without padding: Go reads it */
                const char *content = base + off;

                switch (h->typeflag) {
                case 'L':
                case 'K': {
                        char **dst = h->typeflag == 'L' ? &long_name : &long_link;
                        if (fsize > TAR_READ_NAME_MAX)
                                return -EBADMSG;
                        free(*dst);
                        *dst = strndup(content, strnlen(content, (size_t) fsize));
                        if (!*dst)
                                return -ENOMEM;
                        off += padded;
                        continue;
                }
                case 'x':
                        if (fsize > TAR_READ_NAME_MAX * 4)
                                return -EBADMSG;
                        r = tar_parse_pax(content, (size_t) fsize, &pax_path, &pax_link);
                        if (r < 0)
                                return r;
                        off += padded;
                        continue;
                case 'g':
                        off += padded;
                        continue;
                case 'S':
                        return -EBADMSG;        /* GNU sparse files: not read */
                default:
                        break;
                }

                _cleanup_free_ char *name = NULL, *link = NULL;
                if (pax_path)
                        name = TAKE_PTR(pax_path);
                else if (long_name)
                        name = TAKE_PTR(long_name);
                else if (memcmp(h->magic, "ustar\0", 6) == 0 && memcmp(h->version, "00", 2) == 0 && h->prefix[0]) {
                        _cleanup_free_ char *pre = tar_field_dup(h->prefix, sizeof h->prefix),
                                            *n = tar_field_dup(h->name, sizeof h->name);
                        if (!pre || !n || asprintf(&name, "%s/%s", pre, n) < 0)
                                return -ENOMEM;
                } else
                        name = tar_field_dup(h->name, sizeof h->name);
                if (!name)
                        return -ENOMEM;
                if (h->typeflag == '1' || h->typeflag == '2') {
                        link = pax_link ? TAKE_PTR(pax_link) : long_link ? TAKE_PTR(long_link)
                                                                         : tar_field_dup(h->linkname, sizeof h->linkname);
                        if (!link)
                                return -ENOMEM;
                }
                *ret = (TarEntry) {
                        .name = TAKE_PTR(name),
                        .linkname = TAKE_PTR(link),
                        .type = h->typeflag == 0 || h->typeflag == '7' ? '0' : h->typeflag,
                        .data = content,
                        .size = (size_t) fsize,
                };
                *offset = off + padded;
                return 1;
        }
}
