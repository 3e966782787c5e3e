/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* gate_mm_private() on the test process's own memory: each kind of page an exec's filename or argument
 * may lie in, mapped here and decided by the real /proc/self/pagemap and maps. The "agent" is whichever
 * uid the case needs: the function only compares it with the files' owners. Each page that reaches the
 * mappings (not private anonymous memory by pagemap) is decided both with PROCMAP_QUERY and from the text
 * of maps, as a kernel before Linux 6.11 must, and both must agree. Last, gate_mm_sole() on children of
 * its own, one of them with a second thread. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate-mm.h"
#include "tap.h"

static int proc_fd = -1, root_fd = -1;
static char dir[] = "/var/tmp/test-gate-mm.XXXXXX";
static size_t page;

/* gate_mm_private() on one address; prints the reason when it is not 1. */
static int decide(const void *p, uid_t agent) {
        uint64_t a = (uint64_t) (uintptr_t) p;
        const char *why = NULL;
        int r = gate_mm_private(proc_fd, root_fd, agent, &a, 1, &why);

        if (r == 0) {
                char line[320];

                (void) snprintf(line, sizeof line, "not private: %s", why ?: "(no reason)");
                diag(line);
        }
        return r;
}

/* The maps text (the way of kernels before Linux 6.11, which lack PROCMAP_QUERY) decides p as
 * PROCMAP_QUERY does: one TAP point. Skipped on a kernel without PROCMAP_QUERY, where only the text is. */
static void agree(const void *p, uid_t agent, const char *name) {
        uint64_t a = (uint64_t) (uintptr_t) p;
        const char *why = NULL;
        char what[256];
        int q, t;

        (void) snprintf(what, sizeof what, "%s: the maps text decides as PROCMAP_QUERY does", name);
        q = gate_mm_private_way(GATE_MM_MAPS_QUERY, proc_fd, root_fd, agent, &a, 1, &why);
        if (q == -ENOTTY || q == -EINVAL)
                return skip(what, "no PROCMAP_QUERY (Linux before 6.11)");
        t = gate_mm_private_way(GATE_MM_MAPS_TEXT, proc_fd, root_fd, agent, &a, 1, &why);
        is_int(t, q, "%s", what);
}

static void *thread_pause(void *userdata) {
        for (;;)
                pause();
        return NULL;
}

/* A child process, with a second thread (which shares its memory) when asked, ready when it returns;
 * -1 when it cannot be made. */
static pid_t child_start(bool with_thread) {
        int p[2];
        char c;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                pthread_t t;

                if (with_thread && pthread_create(&t, NULL, thread_pause, NULL) != 0)
                        _exit(1);
                (void) write(p[1], "x", 1);
                for (;;)
                        pause();
        }
        close(p[1]);
        if (pid > 0 && read(p[0], &c, 1) != 1) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                pid = -1;
        }
        close(p[0]);
        return pid;
}

static void child_stop(pid_t pid) {
        if (pid > 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
        }
}

/* A file of one page in the test directory, with mode; its path in ret_path (static). */
static int make_file(const char *name, mode_t mode, const char *content, char **ret_path) {
        static char path[PATH_MAX];
        char buf[4096] = { 0 };
        int fd;

        (void) snprintf(path, sizeof path, "%s/%s", dir, name);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        strncpy(buf, content, sizeof buf - 1);
        if (write(fd, buf, sizeof buf) != (ssize_t) sizeof buf || fchmod(fd, mode) < 0) {
                close(fd);
                return -EIO;
        }
        *ret_path = path;
        return fd;
}

/* A private read-only mapping of fd, its first byte read (the page cache's page, never copied). */
static const char *map_private(int fd) {
        const char *p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);

        if (p == MAP_FAILED)
                return NULL;
        (void) *(volatile const char *) p;
        return p;
}

int main(void) {
        uid_t me = getuid(), other = me == 65534 ? 65533 : 65534;
        struct stat st;
        char *path, *q;
        const char *p;
        int fd;

        page = (size_t) sysconf(_SC_PAGESIZE);
        proc_fd = open("/proc/thread-self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0 || root_fd < 0 || !mkdtemp(dir)) {
                printf("Bail out! cannot open /proc/thread-self, / or make %s\n", dir);
                return 1;
        }

        /* --- the calls' edges --- */
        {
                uint64_t none = 0;
                const char *why = NULL;

                is_int(gate_mm_private(proc_fd, root_fd, me, &none, 0, &why), 1, "no page at all is private");
                is_int(gate_mm_private(proc_fd, root_fd, me, &none, GATE_MM_PAGES_MAX + 1, &why), -E2BIG,
                       "more than GATE_MM_PAGES_MAX pages: -E2BIG (the caller fails closed)");
        }

        /* --- private anonymous memory --- */
        q = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
                return printf("Bail out! mmap\n"), 1;
        strcpy(q, "ok-arg");
        is_int(decide(q, me), 1, "a written page of private anonymous memory is private");
        is_int(decide(q + page, me), 0, "a never-touched page of private anonymous memory fails closed (not present: the zero page)");
        agree(q + page, me, "a never-touched page of private anonymous memory");
        {
                char stack_arg[16] = "on-the-stack";
                char *heap = strdup("on-the-heap");

                is_int(decide(stack_arg, me), 1, "an argument on the stack is private");
                is_int(decide(heap, me), 1, "an argument on the heap is private");
                free(heap);
        }
        is_int(munmap(q + page, page), 0, "a page unmapped (setup)");
        is_int(decide(q + page, me), 0, "an address no longer mapped is not private");
        agree(q + page, me, "an address no longer mapped");

        /* --- shared memory --- */
        q = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
                return printf("Bail out! mmap shared\n"), 1;
        strcpy(q, "ok-arg");
        is_int(decide(q, me), 0, "MAP_SHARED anonymous memory is not private (a forked process writes it)");
        agree(q, me, "MAP_SHARED anonymous memory");
        fd = memfd_create("test-gate-mm", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t) page) < 0)
                return printf("Bail out! memfd\n"), 1;
        q = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        strcpy(q, "ok-arg");
        is_int(decide(q, other), 0, "a memfd's MAP_SHARED mapping is not private");
        agree(q, other, "a memfd's MAP_SHARED mapping");
        p = map_private(fd);
        is_int(p ? decide(p, other) : -1, 0, "a memfd's MAP_PRIVATE page never written is not private (the memfd's page, which a writer changes)");
        if (p)
                agree(p, other, "a memfd's MAP_PRIVATE page never written");
        close(fd);

        /* --- private mappings of files --- */
        fd = make_file("own", 0644, "ok-arg", &path);
        if (fd < 0)
                return printf("Bail out! make_file\n"), 1;
        p = map_private(fd);
        is_int(decide(p, me), 0, "a page of a file the agent owns, never written, is not private (write() to the file changes it)");
        agree(p, me, "a page of a file the agent owns");
        is_int(decide(p, other), 1, "the same file, 0644 and owned by another uid than the agent's, is");
        agree(p, other, "a page of a 0644 file of another uid");
        is_int(fchmod(fd, 0664), 0, "g+w (setup)");
        is_int(decide(p, other), 0, "...but not when its group may write it");
        agree(p, other, "a page of a g+w file of another uid");
        is_int(fchmod(fd, 0646), 0, "o+w (setup)");
        is_int(decide(p, other), 0, "...nor when others may write it");
        is_int(fchmod(fd, 0644), 0, "0644 (setup)");
        q = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (q == MAP_FAILED)
                return printf("Bail out! mmap private rw\n"), 1;
        strcpy(q, "ok-arg");
        is_int(decide(q, me), 1, "a COWed page of a private mapping of a file the agent owns is private (the process's own copy)");

        /* The object decides, not the name: renamed, still that file; replaced, not. */
        {
                char moved[PATH_MAX], *other_path;
                int fd2;

                (void) snprintf(moved, sizeof moved, "%s/moved", dir);
                is_int(rename(path, moved), 0, "the mapped file renamed (setup)");
                fd2 = make_file("own", 0644, "no-arg", &other_path);
                is_int(decide(p, other), 1, "a mapped file renamed is still decided on as itself (maps names its new path)");
                is_int(rename(other_path, moved), 0, "another file renamed over the mapped one (setup)");
                is_int(decide(p, other), 0, "a mapped file replaced by a rename is not private (deleted: the path finds another inode)");
                /* maps names it "PATH (deleted)": a file of that very name is another inode still. */
                if (fd2 >= 0)
                        close(fd2);
                fd2 = make_file("moved (deleted)", 0644, "no-arg", &other_path);
                is_int(decide(p, other), 0, "...even with a file named as maps names the deleted one (\"PATH (deleted)\"): another inode");
                if (fd2 >= 0)
                        (void) unlink(other_path);
                if (fd2 >= 0)
                        close(fd2);
        }
        close(fd);

        fd = make_file("deleted", 0644, "ok-arg", &path);
        p = map_private(fd);
        is_int(unlink(path), 0, "a mapped file unlinked (setup)");
        is_int(decide(p, other), 0, "a page of a deleted file is not private");
        agree(p, other, "a page of a deleted file");
        close(fd);

        /* A root-owned system file, 0644: what libc's string literals are. */
        fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0644 && (p = map_private(fd))) {
                is_int(decide(p, 65534), 1, "a page of a root-owned 0644 file (/etc/passwd) is private for an agent of another uid");
                agree(p, 65534, "a page of a root-owned 0644 file");
                is_int(decide(p, 0), 0, "...but not for an agent of root's uid (which the gate never runs)");
        } else {
                skip("a page of a root-owned 0644 file (/etc/passwd) is private", "no root-owned 0644 /etc/passwd");
                skip("...but not for an agent of root's uid", "no root-owned 0644 /etc/passwd");
        }
        if (fd >= 0)
                close(fd);

        /* The running program: its owner may be the agent, but no one can write it while it runs. */
        if (stat("/proc/self/exe", &st) == 0) {
                static const char literal[] = "a string literal of the running program's .rodata";

                is_int(decide(literal, st.st_uid), 1, "a literal of the running program is private even for an agent that owns the program (ETXTBSY)");
                agree(literal, st.st_uid, "a literal of the running program, for an agent that owns it");
        } else
                skip("a literal of the running program is private", "no /proc/self/exe");

        /* Special mappings. */
        p = (const char *) getauxval(AT_SYSINFO_EHDR);
        if (p) {
                is_int(decide(p, other), 0, "a page of the vDSO (a special mapping) is not private");
                agree(p, other, "a page of the vDSO");
        } else
                skip("a page of the vDSO is not private", "no vDSO");

        /* Several addresses at once: unsorted, repeated, one of them bad. */
        {
                static const char literal[] = "another literal";
                char *heap = strdup("heap");
                uint64_t addrs[] = { (uintptr_t) heap, (uintptr_t) literal, (uintptr_t) heap,
                                     (uintptr_t) getauxval(AT_SYSINFO_EHDR) };
                const char *why = NULL;

                is_int(gate_mm_private(proc_fd, root_fd, st.st_uid, addrs, 3, &why), 1,
                       "several private pages, unsorted and repeated, are private together");
                is_int(gate_mm_private(proc_fd, root_fd, st.st_uid, addrs, addrs[3] ? 4 : 3, &why), addrs[3] ? 0 : 1,
                       "one page that is not private among them fails all");
                free(heap);
        }

        /* --- gate_mm_sole(): the tasks sharing a process's memory, found through one kept fd of /proc,
         * read again from where its tasks begin on every call --- */
        {
                int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                pid_t alone = child_start(false), threaded = child_start(true);
                const char *why = NULL;

                if (proc < 0 || alone < 0 || threaded < 0)
                        return printf("Bail out! /proc or a child\n"), 1;
                is_int(gate_mm_sole(proc, alone, &why), 0, "a process of one thread shares its memory with no task");
                why = NULL;
                is_int(gate_mm_sole(proc, threaded, &why), 1, "a process with a second thread shares it with that thread");
                is_int(why && strstr(why, "shares its memory") ? 1 : 0, 1, "...and the reason names the task");
                /* The same fd again: its position was the last walk's end. */
                is_int(gate_mm_sole(proc, threaded, &why), 1, "the kept fd of /proc finds the thread again on the next call");
                is_int(gate_mm_sole(proc, alone, &why), 0, "...and no sharer of the lone process");
                child_stop(alone);
                child_stop(threaded);
                close(proc);
        }

        (void) unlink(path);
        {
                char moved[PATH_MAX];

                (void) snprintf(moved, sizeof moved, "%s/moved", dir);
                (void) unlink(moved);
                (void) snprintf(moved, sizeof moved, "%s/own", dir);
                (void) unlink(moved);
        }
        (void) rmdir(dir);
        return done_testing();
}
