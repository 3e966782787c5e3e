/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The "#!" line the gate checks a script's interpreter by, and the cache of it a supervisor worker keeps:
 * a file that changes is read again, a file that may still change within its ctime's tick is not kept. */

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate-script.h"
#include "macro.h"
#include "tap.h"

static char dir[] = "/tmp/test-gate-script.XXXXXX";

static void put_n(const char *name, const char *content, size_t n) {
        char p[256];
        FILE *f;

        (void) snprintf(p, sizeof(p), "%s/%s", dir, name);
        f = fopen(p, "we");
        if (!f || fwrite(content, 1, n, f) != n || fclose(f) != 0)
                abort();
}

static void put(const char *name, const char *content) {
        put_n(name, content, strlen(content));
}

/* The interpreter and argument as "INTERP|ARG", "-" for none; "binary" for an ELF executable of this
 * machine, "other" for what only a binfmt_misc handler would run. */
static char *interp_of(GateScriptCache *c, const char *name) {
        _cleanup_free_ char *interp = NULL, *arg = NULL;
        _cleanup_close_ int fd = -EBADF;
        char p[256], *r = NULL;
        int k;

        (void) snprintf(p, sizeof(p), "%s/%s", dir, name);
        fd = open(p, O_PATH | O_CLOEXEC);
        k = gate_script_interpreter(c, fd, &interp, &arg);
        if (k < 0)
                return strdup("error");
        if (k == GATE_EXEC_BINARY)
                return strdup("binary");
        if (k == GATE_EXEC_OTHER)
                return strdup("other");
        if (asprintf(&r, "%s|%s", interp, arg ?: "-") < 0)
                abort();
        return r;
}

#define is_interp(c, name, want, ...) do {                                      \
                _cleanup_free_ char *_got = interp_of(c, name);                 \
                is_str(_got, want, __VA_ARGS__);                                \
        } while (0)

int main(void) {
        GateScriptCache c = {};
        uint64_t hits;

        if (!mkdtemp(dir))
                abort();
        put("plain", "\177ELF...");
        put("sh", "#!/bin/sh\necho hi\n");
        put("arg", "#! /usr/bin/env   python3 -u  \nprint()\n");
        put("blank", "#!   \n");
        put("text", "echo hi\n");
        put("empty", "");

        /* This test program's own ELF header: an executable of this machine; then the same header naming
         * another machine (RISC-V: what qemu-user's binfmt_misc handler would take), and as a relocatable
         * object (binfmt_elf does not run it; a handler might). */
        {
                char own[64], head[64];
                Elf64_Half m = EM_RISCV, t = ET_REL;
                int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

                if (fd < 0 || read(fd, own, sizeof(own)) != (ssize_t) sizeof(own))
                        abort();
                (void) close(fd);
                put_n("elf", own, sizeof(own));
                memcpy(head, own, sizeof(head));
                memcpy(head + EI_NIDENT + sizeof(Elf64_Half), &m, sizeof(m));
                put_n("elf-foreign", head, sizeof(head));
                put_n("elf-short", own, EI_NIDENT + 3);
                memcpy(head, own, sizeof(head));
                memcpy(head + EI_NIDENT, &t, sizeof(t));
                put_n("elf-rel", head, sizeof(head));
        }

        is_interp(NULL, "elf", "binary", "an ELF executable of this machine is run by binfmt_elf");
        is_interp(NULL, "elf-foreign", "other", "an ELF executable of another machine is not (only a binfmt_misc handler such as qemu-user runs it)");
        is_interp(NULL, "elf-rel", "other", "nor is an ELF relocatable object");
        is_interp(NULL, "elf-short", "other", "nor an ELF header cut before its machine");
        is_interp(NULL, "plain", "other", "nor a file that only starts like ELF");
        is_interp(NULL, "text", "other", "a file neither ELF nor #! is no format the kernel runs without a handler");
        is_interp(NULL, "empty", "other", "nor is an empty file");
        is_interp(NULL, "sh", "/bin/sh|-", "#!/bin/sh names its interpreter");
        is_interp(NULL, "arg", "/usr/bin/env|python3 -u", "the rest of the line is one argument, as the kernel gives it, trailing blanks dropped");
        is_interp(NULL, "blank", "other", "#! without an interpreter is not a script");

        /* Where the kernel's BINPRM_BUF_SIZE (256) cuts the line. */
        {
                char line[400], want[300];

                (void) snprintf(line, sizeof(line), "#!/bin/sh -x%0300d", 0);
                put("long-arg", line);
                (void) snprintf(want, sizeof(want), "/bin/sh|-x%0243d", 0);
                is_interp(NULL, "long-arg", want, "a line without a newline in 256 bytes is cut at byte 255, as the kernel cuts it");
                (void) snprintf(line, sizeof(line), "#!/%0300d -x\n", 0);
                put("long-name", line);
                is_interp(NULL, "long-name", "other", "an interpreter's name that runs past byte 255 is not run (the kernel: ENOEXEC)");
        }
        put("pad", "#!/bin/x -a  ");
        is_interp(NULL, "pad", "/bin/x|-a  ", "without a newline the line ends at byte 255: blanks before the file's end stay in the argument");
        put_n("nul-arg", "#!/bin/x \0-a\n", 14);
        is_interp(NULL, "nul-arg", "/bin/x|", "a NUL after the blanks is an empty argument, as the kernel passes it");
        put_n("nul-name", "#!/bin/x\0 -a\n", 14);
        is_interp(NULL, "nul-name", "/bin/x|-", "a NUL right after the name: no argument");

        is_interp(&c, "sh", "/bin/sh|-", "with a cache: the interpreter of a file just written");
        is_interp(&c, "sh", "/bin/sh|-", "and again");
        is_int((int) c.hits, 0, "a file changed within the last two seconds is read each time, never kept");

        sleep(2);
        is_interp(&c, "sh", "/bin/sh|-", "a settled file is read once");
        hits = c.hits;
        is_interp(&c, "sh", "/bin/sh|-", "and answered from the cache after");
        is_int((int) (c.hits - hits), 1, "without reading the file again");

        put("sh", "#!/bin/rm\n");
        is_interp(&c, "sh", "/bin/rm|-", "a file rewritten after it was kept is read again: its ctime moved");
        is_interp(&c, "sh", "/bin/rm|-", "and, being new, is read each time");
        is_int((int) (c.hits - hits), 1, "no answer came from the cache for the rewritten file");

        gate_script_cache_done(&c);
        for (size_t i = 0; i < 15; i++) {
                char p[256];

                (void) snprintf(p, sizeof(p), "%s/%s", dir, (const char * const[]) { "plain", "sh", "arg", "blank",
                                "long-arg", "long-name", "pad", "nul-arg", "nul-name", "text", "empty", "elf",
                                "elf-foreign", "elf-short", "elf-rel" }[i]);
                (void) unlink(p);
        }
        (void) rmdir(dir);
        return done_testing();
}
