/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <elf.h>
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

static bool spacetab(char c) {
        return c == ' ' || c == '\t';
}

/* Parses the head as the kernel's binfmt_script (load_script()) does, step for step: it reads
 * GATE_SCRIPT_HEAD bytes (zero-padded) and, finding no newline before a NUL in them, cuts the line at
 * the last byte, and then only when the interpreter's name ends (a blank or a NUL) within it: a name
 * that runs off the buffer is not executed (ENOEXEC). Blanks are trimmed from where the line ends, not
 * from where a NUL ends the strings, and a NUL right after the name means no argument. Returns 1 with
 * the interpreter and argument (both pointing into buf), 0 for no script. buf holds n bytes and has room
 * for GATE_SCRIPT_HEAD + 1. */
static int parse_head(char *buf, ssize_t n, const char **ret_interp, const char **ret_arg) {
        char *end = buf + GATE_SCRIPT_HEAD - 1, *i_end, *i_name, *i_sep, *i_arg = NULL;

        if (n < 2 || buf[0] != '#' || buf[1] != '!')
                return 0;
        memset(buf + n, 0, GATE_SCRIPT_HEAD + 1 - (size_t) n);
        i_end = memchr(buf, '\n', strnlen(buf, GATE_SCRIPT_HEAD));
        if (!i_end) {
                char *t;

                for (i_end = buf + 2; i_end <= end && spacetab(*i_end); i_end++)
                        ;
                if (i_end > end)
                        return 0;
                for (t = i_end; t <= end && !spacetab(*t) && *t; t++)
                        ;
                if (t > end)
                        return 0;       /* the interpreter's name may be cut: the kernel says ENOEXEC */
                i_end = end;
        }
        while (spacetab(i_end[-1]))
                i_end--;
        for (i_name = buf + 2; i_name <= i_end && spacetab(*i_name); i_name++)
                ;
        if (i_name >= i_end)
                return 0;
        for (i_sep = i_name; i_sep <= i_end && !spacetab(*i_sep) && *i_sep; i_sep++)
                ;
        if (i_sep <= i_end && *i_sep) {
                for (i_arg = i_sep; i_arg <= i_end && spacetab(*i_arg); i_arg++)
                        ;
                if (i_arg > i_end)
                        i_arg = NULL;
        }
        *i_end = 0;
        if (i_arg)
                *i_sep = 0;
        *ret_interp = i_name;
        *ret_arg = i_arg;       /* may be "": a NUL right after the blanks is an empty argument */
        return 1;
}

/* The ELF machine this program is built for: the one binfmt_elf runs (the container's seccomp filter
 * admits this architecture's system calls only, so another's binary has nothing to run on anyway). */
#if defined(__x86_64__)
#  define GATE_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#  define GATE_ELF_MACHINE EM_AARCH64
#else
#  error "the gate knows the ELF machine of x86_64 and aarch64 only (as the seccomp profile does)"
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define GATE_ELF_DATA ELFDATA2LSB
#else
#  define GATE_ELF_DATA ELFDATA2MSB
#endif

/* What load_elf_binary() checks before it takes a file (the magic, an executable or a shared object,
 * elf_check_arch()); the same fields in both ELF classes. One it turns down goes to the next format. */
static bool elf_native(const char *buf, ssize_t n) {
        Elf64_Half type, machine;

        if (n < (ssize_t) (EI_NIDENT + 2 * sizeof(Elf64_Half)) || memcmp(buf, ELFMAG, SELFMAG) != 0 ||
            (unsigned char) buf[EI_DATA] != GATE_ELF_DATA)
                return false;
        memcpy(&type, buf + EI_NIDENT, sizeof(type));
        memcpy(&machine, buf + EI_NIDENT + sizeof(type), sizeof(machine));
        return (type == ET_EXEC || type == ET_DYN) && machine == GATE_ELF_MACHINE;
}

static int answer(GateExecFormat format, const char *interp, const char *arg, char **ret_interp, char **ret_arg) {
        _cleanup_free_ char *i = NULL, *a = NULL;

        if (format != GATE_EXEC_SCRIPT)
                return format;
        i = strdup(interp);
        if (!i || (arg && !(a = strdup(arg))))
                return -ENOMEM;
        *ret_interp = TAKE_PTR(i);
        *ret_arg = TAKE_PTR(a);
        return GATE_EXEC_SCRIPT;
}

int gate_script_interpreter(GateScriptCache *c, int fd, char **ret_interp, char **ret_arg) {
        _cleanup_close_ int rfd = -EBADF;
        char buf[GATE_SCRIPT_HEAD + 1], p[64];
        const char *interp = NULL, *arg = NULL;
        GateExecFormat format;
        struct timespec now;
        GateScriptEntry *e = NULL;
        struct stat st;
        ssize_t n;

        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return GATE_EXEC_BINARY;
        if (c) {
                for (size_t i = 0; i < GATE_SCRIPT_CACHE_MAX; i++) {
                        GateScriptEntry *x = &c->entries[i];

                        if (entry_is(x, &st)) {
                                x->used = ++c->clock;
                                c->hits++;
                                return answer(x->format, x->interp, x->arg, ret_interp, ret_arg);
                        }
                        if (!e || x->used < e->used)
                                e = x;          /* the least recently used, for a new one */
                }
        }
        /* Before the read: what it reads is at least as new as this. */
        (void) clock_gettime(CLOCK_REALTIME, &now);
        (void) snprintf(p, sizeof(p), "/proc/self/fd/%i", fd);
        /* A regular file the kernel may execute and this cannot read is not taken for an ELF binary: the
         * caller fails the exec closed. */
        rfd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (rfd < 0)
                return -errno;
        n = pread(rfd, buf, GATE_SCRIPT_HEAD, 0);
        if (n < 0)
                return -errno;
        format = elf_native(buf, n) ? GATE_EXEC_BINARY :
                 parse_head(buf, n, &interp, &arg) > 0 ? GATE_EXEC_SCRIPT : GATE_EXEC_OTHER;
        if (e && settled(&st, &now)) {
                entry_clear(e);
                e->format = format;
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
        return answer(format, interp, arg, ret_interp, ret_arg);
}
