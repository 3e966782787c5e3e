/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "io-util.h"
#include "string-util.h"
#include "unit-file.h"

/* A unit is a few hundred bytes: one buffer, grown by doubling, written with one write(). (It was an
 * open_memstream() before: a FILE, its buffer and its flushes for each of a generator run's many units.) */
#define UNIT_FILE_SIZE_INITIAL 512U
#define UNIT_FILE_SIZE_MAX (1024U * 1024U)      /* a unit larger than this is refused (-E2BIG) */

struct UnitFile {
        char *buf;                      /* NUL-terminated */
        size_t size, allocated;
        bool in_section;
        int error;                      /* the first failure; the unit cannot be written after one */
};

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. systemd ignores assignments
 * that are not valid UTF-8, so such a value would vanish silently. */
bool utf8_is_valid(const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                uint32_t c, min;
                size_t n;

                if (*p < 0x80) {
                        p++;
                        continue;
                }
                if ((*p & 0xe0) == 0xc0)
                        n = 1, c = *p & 0x1f, min = 0x80;
                else if ((*p & 0xf0) == 0xe0)
                        n = 2, c = *p & 0x0f, min = 0x800;
                else if ((*p & 0xf8) == 0xf0)
                        n = 3, c = *p & 0x07, min = 0x10000;
                else
                        return false;
                p++;
                for (size_t i = 0; i < n; i++, p++) {
                        if ((*p & 0xc0) != 0x80)
                                return false;
                        c = (c << 6) | (*p & 0x3f);
                }
                if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                        return false;
        }
        return true;
}

static bool char_is_control(char c) {
        return (unsigned char) c < 0x20 || c == 0x7f;
}

bool string_has_control(const char *s) {
        for (; *s; s++)
                if (char_is_control(*s))
                        return true;
        return false;
}

bool unit_value_is_valid(const char *s) {
        size_t n;

        if (!s || string_has_control(s) || !utf8_is_valid(s))
                return false;
        n = strlen(s);
        return n == 0 || (s[0] != ' ' && s[n - 1] != ' ' && s[n - 1] != '\\');
}

bool unit_value_is_path(const char *s) {
        return unit_value_is_valid(s) && s[0] == '/';
}

/* One word of Environment= as written unquoted: nothing that splits, quotes or escapes. */
bool unit_value_is_word(const char *s) {
        return unit_value_is_valid(s) && !strpbrk(s, " \t\"'\\");
}

static bool environment_name_is_valid(const char *s) {
        if (isempty(s) || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
                return false;
        for (; *s; s++)
                if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
                        return false;
        return true;
}

static bool unit_key_is_valid(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
                        return false;
        return true;
}

char *unit_specifier_escape(const char *s) {
        char *r = malloc(strlen(s) * 2 + 1), *t = r;

        if (!r)
                return NULL;
        for (; *s; s++) {
                if (*s == '%')
                        *t++ = '%';
                *t++ = *s;
        }
        *t = 0;
        return r;
}

int unit_value_from_text(const char *s, char **ret) {
        _cleanup_free_ char *plain = NULL;
        char *start, *end;

        if (!utf8_is_valid(s))
                return -EINVAL;

        plain = strdup(s);
        if (!plain)
                return -ENOMEM;
        for (char *p = plain; *p; p++)
                if (char_is_control(*p))
                        *p = ' ';

        start = plain + strspn(plain, " ");
        end = start + strlen(start);
        while (end > start && end[-1] == ' ')
                end--;
        *end = 0;
        if (end > start && end[-1] == '\\')
                return -EINVAL;

        *ret = strdup(start);
        return *ret ? 0 : -ENOMEM;
}

static int unit_file_fail(UnitFile *u, int r) {
        if (u->error == 0)
                u->error = r;
        return r;
}

/* Appends the strings up to NULL, or fails the unit. */
__attribute__((sentinel))
static int unit_file_append(UnitFile *u, ...) {
        size_t n = 0, need;
        const char *s;
        va_list ap;

        va_start(ap, u);
        while ((s = va_arg(ap, const char *)))
                n += strlen(s);
        va_end(ap);

        need = u->size + n + 1;
        if (need > UNIT_FILE_SIZE_MAX)
                return unit_file_fail(u, -E2BIG);
        if (need > u->allocated) {
                size_t a = MAX(u->allocated, (size_t) UNIT_FILE_SIZE_INITIAL);
                char *b;

                while (a < need)
                        a *= 2;
                b = realloc(u->buf, a);
                if (!b)
                        return unit_file_fail(u, -ENOMEM);
                u->buf = b;
                u->allocated = a;
        }
        va_start(ap, u);
        while ((s = va_arg(ap, const char *))) {
                size_t k = strlen(s);

                memcpy(u->buf + u->size, s, k);
                u->size += k;
        }
        va_end(ap);
        u->buf[u->size] = 0;
        return 0;
}

int unit_file_new(const char *generator, UnitFile **ret) {
        _cleanup_(unit_file_freep) UnitFile *u = NULL;
        int r;

        assert(generator);
        assert(ret);

        u = calloc(1, sizeof(UnitFile));
        if (!u)
                return -ENOMEM;
        r = unit_file_append(u, "# Automatically generated by ", generator, "\n\n", NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(u);
        return 0;
}

UnitFile *unit_file_free(UnitFile *u) {
        if (!u)
                return NULL;
        free(u->buf);
        return mfree(u);
}

int unit_file_section(UnitFile *u, const char *name) {
        int r;

        if (!unit_key_is_valid(name))
                return unit_file_fail(u, -EINVAL);
        r = unit_file_append(u, u->in_section ? "\n[" : "[", name, "]\n", NULL);
        if (r < 0)
                return r;
        u->in_section = true;
        return 0;
}

/* The one place a line is written: KEY=ABC, the key checked here. The value A, B and C make must be valid
 * (unit_value_is_valid()): the callers check what they make it from, and doubling "%" or quoting a
 * checked value keeps it valid. */
static int unit_file_put_valid(UnitFile *u, const char *key, const char *a, const char *b, const char *c) {
        if (!u->in_section || !unit_key_is_valid(key))
                return unit_file_fail(u, -EINVAL);
        return unit_file_append(u, key, "=", a, b, c, "\n", NULL);
}

static int unit_file_put(UnitFile *u, const char *key, const char *value) {
        if (!unit_value_is_valid(value))
                return unit_file_fail(u, -EINVAL);
        return unit_file_put_valid(u, key, value, "", "");
}

/* s with "%" doubled, into *buf unless there is none (then s itself). NULL on ENOMEM. */
static const char *specifier_escape_if_needed(const char *s, char **buf) {
        if (!strchr(s, '%'))
                return s;
        *buf = unit_specifier_escape(s);
        return *buf;
}

int unit_file_set(UnitFile *u, const char *key, const char *value) {
        _cleanup_free_ char *buf = NULL;
        const char *escaped;

        if (!unit_value_is_valid(value))
                return unit_file_fail(u, -EINVAL);
        escaped = specifier_escape_if_needed(value, &buf);
        if (!escaped)
                return unit_file_fail(u, -ENOMEM);
        return unit_file_put_valid(u, key, escaped, "", "");
}

int unit_file_set_path(UnitFile *u, const char *key, const char *path) {
        if (!unit_value_is_path(path))
                return unit_file_fail(u, -EINVAL);
        return unit_file_set(u, key, path);
}

int unit_file_setf(UnitFile *u, const char *key, const char *format, ...) {
        _cleanup_free_ char *value = NULL;
        va_list ap;
        int k;

        va_start(ap, format);
        k = strprintf_va(&value, format, ap);
        va_end(ap);
        if (k < 0)
                return unit_file_fail(u, k);
        return unit_file_put(u, key, value);
}

int unit_file_set_environment(UnitFile *u, const char *name, const char *value) {
        _cleanup_free_ char *quoted = NULL;
        char *t;

        if (!environment_name_is_valid(name) || !value || string_has_control(value) || !utf8_is_valid(value))
                return unit_file_fail(u, -EINVAL);
        quoted = malloc(strlen(name) + strlen(value) * 2 + 4);
        if (!quoted)
                return unit_file_fail(u, -ENOMEM);
        t = stpcpy(stpcpy(stpcpy(quoted, "\""), name), "=");
        for (; *value; value++) {
                if (*value == '\\' || *value == '"')
                        *t++ = '\\';
                else if (*value == '%')
                        *t++ = '%';
                *t++ = *value;
        }
        strcpy(t, "\"");
        /* no control character, valid UTF-8, quotes at both ends: valid */
        return unit_file_put_valid(u, "Environment", quoted, "", "");
}

int unit_file_set_environment_word(UnitFile *u, const char *name, const char *value) {
        _cleanup_free_ char *buf = NULL;
        const char *escaped;

        if (!environment_name_is_valid(name) || !unit_value_is_word(value))
                return unit_file_fail(u, -EINVAL);
        escaped = specifier_escape_if_needed(value, &buf);
        if (!escaped)
                return unit_file_fail(u, -ENOMEM);
        /* NAME= and a valid word: valid (an empty word too, "NAME=") */
        return unit_file_put_valid(u, "Environment", name, "=", escaped);
}

const char *unit_file_contents(UnitFile *u, size_t *ret_size) {
        if (!u->buf)
                return NULL;
        if (ret_size)
                *ret_size = u->size;
        return u->buf;
}

int unit_file_write(UnitFile *u, int dir_fd, const char *name, mode_t mode) {
        const char *data;
        size_t size;

        if (u->error < 0)
                return u->error;
        data = unit_file_contents(u, &size);
        if (!data)
                return -ENOMEM;
        return unit_data_file_write(dir_fd, name, mode, data, size);
}

int unit_data_file_write(int dir_fd, const char *name, mode_t mode, const void *data, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, data, size);
        if (r < 0)
                return r;
        if (close(TAKE_FD(fd)) < 0)
                return -errno;
        return 0;
}
