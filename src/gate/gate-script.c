/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate-script.h"
#include "macro.h"

static bool same_time(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool entry_is(const GateScriptEntry *e, const struct stat *st) {
        return e->used > 0 && e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
               same_time(&e->mtime, &st->st_mtim) && same_time(&e->ctime, &st->st_ctim);
}

static void entry_clear(GateScriptEntry *e) {
        free(e->interp);
        free(e->arg);
        *e = (GateScriptEntry) {};
}

void gate_script_cache_done(GateScriptCache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < GATE_SCRIPT_CACHE_MAX; i++)
                entry_clear(&c->entries[i]);
}

static bool settled(const struct stat *st, const struct timespec *now) {
        int64_t age = ((int64_t) now->tv_sec - (int64_t) st->st_ctim.tv_sec) * 1000000000LL +
                      ((int64_t) now->tv_nsec - (int64_t) st->st_ctim.tv_nsec);

        return age >= (int64_t) GATE_SCRIPT_SETTLED_NS;
}

/* Parses the head the kernel's binfmt_script would: returns 1 with the interpreter and argument (both
 * pointing into buf), 0 for no script. buf holds n bytes and has room for a NUL after them. */
static int parse_head(char *buf, ssize_t n, const char **ret_interp, const char **ret_arg) {
        char *s, *e;

        if (n < 2 || buf[0] != '#' || buf[1] != '!')
                return 0;
        buf[n] = 0;
        s = buf + 2;
        s[strcspn(s, "\n")] = 0;
        s += strspn(s, " \t");
        e = s + strcspn(s, " \t");
        if (e == s)
                return 0;
        if (*e)
                *e++ = 0;
        e += strspn(e, " \t");
        /* the kernel keeps the rest as one argument, trailing blanks dropped */
        for (size_t l = strlen(e); l > 0 && (e[l - 1] == ' ' || e[l - 1] == '\t'); l--)
                e[l - 1] = 0;
        *ret_interp = s;
        *ret_arg = *e ? e : NULL;
        return 1;
}

static int answer(const char *interp, const char *arg, char **ret_interp, char **ret_arg) {
        _cleanup_free_ char *i = NULL, *a = NULL;

        if (!interp)
                return 0;
        i = strdup(interp);
        if (!i || (arg && !(a = strdup(arg))))
                return -ENOMEM;
        *ret_interp = TAKE_PTR(i);
        *ret_arg = TAKE_PTR(a);
        return 1;
}

int gate_script_interpreter(GateScriptCache *c, int fd, char **ret_interp, char **ret_arg) {
        _cleanup_close_ int rfd = -EBADF;
        char buf[GATE_SCRIPT_HEAD + 1], p[64];
        const char *interp = NULL, *arg = NULL;
        struct timespec now;
        GateScriptEntry *e = NULL;
        struct stat st;
        ssize_t n;

        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if (c) {
                for (size_t i = 0; i < GATE_SCRIPT_CACHE_MAX; i++) {
                        GateScriptEntry *x = &c->entries[i];

                        if (entry_is(x, &st)) {
                                x->used = ++c->clock;
                                c->hits++;
                                return answer(x->interp, x->arg, ret_interp, ret_arg);
                        }
                        if (!e || x->used < e->used)
                                e = x;          /* the least recently used, for a new one */
                }
        }
        /* Before the read: what it reads is at least as new as this. */
        (void) clock_gettime(CLOCK_REALTIME, &now);
        (void) snprintf(p, sizeof(p), "/proc/self/fd/%i", fd);
        rfd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (rfd < 0)
                return 0;
        n = pread(rfd, buf, GATE_SCRIPT_HEAD, 0);
        if (n < 0)
                return 0;
        (void) parse_head(buf, n, &interp, &arg);
        if (e && settled(&st, &now)) {
                entry_clear(e);
                if ((!interp || (e->interp = strdup(interp))) && (!arg || (e->arg = strdup(arg)))) {
                        e->dev = st.st_dev;
                        e->ino = st.st_ino;
                        e->size = st.st_size;
                        e->mtime = st.st_mtim;
                        e->ctime = st.st_ctim;
                        e->used = ++c->clock;
                } else
                        entry_clear(e);
        }
        return answer(interp, arg, ret_interp, ret_arg);
}
