/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What an agent under `loop syscallwrap` tries, one attempt per subcommand, for test-syscallwrap.sh.
 * Each prints one line (the result: "ok", a number, or the errno name) and exits 0 when it could run the
 * attempt at all; the shell test asserts the line. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int report(long r) {
        if (r < 0)
                printf("%s\n", strerrorname_np(errno) ?: "E?");
        else
                printf("ok\n");
        return 0;
}

/* FS_IOC_SETFLAGS on DIR: the flags it has ("same"), with +F ("casefold", chattr +F), the request with
 * high bits set ("high", which the kernel reads as 32 bits) or its 32-bit number ("32"). */
static int setflags(const char *dir, const char *how) {
        unsigned int flags = 0;
        unsigned long request = FS_IOC_SETFLAGS;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
                printf("cannot read the flags of %s: %s\n", dir, strerrorname_np(errno) ?: "E?");
                return 1;
        }
        if (!strcmp(how, "casefold"))
                flags |= FS_CASEFOLD_FL;
        else if (!strcmp(how, "high"))
                request |= 1UL << 32;
        else if (!strcmp(how, "32"))
                request = FS_IOC32_SETFLAGS;
        return report(syscall(SYS_ioctl, fd, request, &flags));
}

/* The sibling thread of the races: flips a path buffer, or a symlink, as fast as it can. */
static char race_path[4096];
static const char *race_a, *race_b, *race_link;
static atomic_bool race_stop;

static void *flip_buffer(void *arg) {
        while (!atomic_load(&race_stop)) {
                strcpy(race_path, race_b);
                strcpy(race_path, race_a);
        }
        return NULL;
}

static void *flip_symlink(void *arg) {
        char tmp[4096];

        snprintf(tmp, sizeof(tmp), "%s.tmp", race_link);
        while (!atomic_load(&race_stop)) {
                (void) unlink(tmp);
                if (symlink(race_b, tmp) == 0)
                        (void) rename(tmp, race_link);
                (void) unlink(tmp);
                if (symlink(race_a, tmp) == 0)
                        (void) rename(tmp, race_link);
        }
        return NULL;
}

/* Opens (race_path or race_link) n times while the sibling flips it; prints "opened-a=N opened-b=M
 * denied=D": the b side is a denied file, so M must be 0. */
static int race(bool symlinks, long n) {
        long opened_a = 0, opened_b = 0, denied = 0, other = 0;
        pthread_t t;

        if (!symlinks) {
                strcpy(race_path, race_a);
                pthread_create(&t, NULL, flip_buffer, NULL);
        } else
                pthread_create(&t, NULL, flip_symlink, NULL);
        for (long i = 0; i < n; i++) {
                char buf[64] = {};
                int fd = open(symlinks ? race_link : race_path, O_RDONLY | O_CLOEXEC);

                if (fd < 0) {
                        if (errno == EPERM)
                                denied++;
                        else
                                other++;
                        continue;
                }
                if (read(fd, buf, sizeof(buf) - 1) < 0)
                        buf[0] = 0;
                close(fd);
                if (strncmp(buf, "secret", 6) == 0)
                        opened_b++;
                else
                        opened_a++;
        }
        atomic_store(&race_stop, true);
        pthread_join(t, NULL);
        printf("opened-a=%ld opened-b=%ld denied=%ld other=%ld\n", opened_a, opened_b, denied, other);
        return 0;
}

/* A notifying filter of our own: the kernel allows one listener per filter tree. */
static int own_listener(void) {
        struct sock_filter insns[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        struct sock_fprog prog = { .len = 1, .filter = insns };

        return report(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
}

static int own_filter(void) {
        struct sock_filter insns[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        struct sock_fprog prog = { .len = 1, .filter = insns };

        return report(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog));
}

static int memfd_exec(void) {
        static const char script[] = "#!/bin/sh\necho ran\n";
        char *const argv[] = { (char *) "memfd", NULL };
        int fd = memfd_create("payload", MFD_CLOEXEC);

        if (fd < 0 || write(fd, script, sizeof(script) - 1) < 0)
                return report(-1);
        return report(syscall(SYS_execveat, fd, "", argv, environ, AT_EMPTY_PATH));
}

/* memfd-interp SCRIPT BINARY: BINARY copied into a memfd left open as fd 9 across the exec, SCRIPT
 * written as "#!/proc/self/fd/9" and executed: the kernel opens the interpreter in the caller, so the
 * memfd would run as a script's interpreter (BINARY prints what it prints, e.g. echo its argv). */
static int memfd_interp(const char *script, const char *binary) {
        char *const argv[] = { (char *) script, NULL };
        char buf[65536];
        ssize_t n;
        int fd = memfd_create("interp", 0), in = open(binary, O_RDONLY | O_CLOEXEC), out;

        if (fd < 0 || in < 0 || dup2(fd, 9) < 0)
                return report(-1);
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(9, buf, (size_t) n) != n)
                        return report(-1);
        out = open(script, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        if (n < 0 || out < 0 || dprintf(out, "#!/proc/self/fd/9\n") < 0 || close(out) < 0)
                return report(-1);
        return report(execve(script, argv, environ));
}

static int connect_unix(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        if (path[0] == '@')
                sa.sun_path[0] = 0;
        return report(connect(fd, (struct sockaddr *) &sa, offsetof(struct sockaddr_un, sun_path) + strlen(path)));
}

/* race-connect ALLOWED DENIED N [family]: binds a datagram socket at each path (bind is not gated) and
 * connects N fresh sockets to an address a sibling thread flips between the two paths (same length), or
 * with "family" between AF_UNIX and AF_INET over the denied path. A connect that lands on DENIED is a
 * win (getpeername() tells). Prints "connect-wins=N allowed=M refused=K". */
static struct sockaddr_un race_sa;
static char race_sun_a[108], race_sun_b[108];
static bool race_family;
static atomic_long race_flips;

static void *flip_sockaddr(void *arg) {
        (void) arg;
        while (!atomic_load(&race_stop)) {
                atomic_fetch_add(&race_flips, 1);
                /* Some time in each state, so the supervisor's read and the kernel's copy can differ. */
                if (race_family)
                        race_sa.sun_family = AF_INET;
                else
                        memcpy(race_sa.sun_path, race_sun_b, sizeof(race_sun_b));
                for (volatile int i = 0; i < 2000; i++)
                        ;
                if (race_family)
                        race_sa.sun_family = AF_UNIX;
                else
                        memcpy(race_sa.sun_path, race_sun_a, sizeof(race_sun_a));
                for (volatile int i = 0; i < 2000; i++)
                        ;
        }
        return NULL;
}

static int race_connect(const char *allowed, const char *denied, long n, bool family) {
        struct sockaddr_un ba = { .sun_family = AF_UNIX }, bb = { .sun_family = AF_UNIX };
        int sa = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), sb = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        long wins = 0, allowed_n = 0, refused = 0;
        pthread_t t;

        if (strlen(allowed) != strlen(denied) || strlen(allowed) >= sizeof(ba.sun_path)) {
                fprintf(stderr, "race-connect: the two paths must have one length below 108\n");
                return 2;
        }
        strcpy(ba.sun_path, allowed);
        strcpy(bb.sun_path, denied);
        (void) unlink(allowed);
        (void) unlink(denied);
        if (bind(sa, (struct sockaddr *) &ba, sizeof(ba)) < 0 || bind(sb, (struct sockaddr *) &bb, sizeof(bb)) < 0)
                return report(-1);
        strcpy(race_sun_a, family ? denied : allowed);
        strcpy(race_sun_b, denied);
        race_family = family;
        race_sa.sun_family = AF_UNIX;
        memcpy(race_sa.sun_path, race_sun_a, sizeof(race_sun_a));
        pthread_create(&t, NULL, flip_sockaddr, NULL);
        /* On a loaded machine the sibling may not run for the first thousands of connects: wait for it,
         * and go on (ten times N at most) until a connect was refused and, flipping paths, one allowed,
         * so the race took place. */
        while (atomic_load(&race_flips) < 2)
                sched_yield();
        for (long i = 0; i < n || (i < 10 * n && (refused == 0 || (!family && allowed_n == 0))); i++) {
                int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un peer = {};
                socklen_t len = sizeof(peer);

                if (connect(fd, (struct sockaddr *) &race_sa, sizeof(race_sa)) < 0)
                        refused++;
                else if (getpeername(fd, (struct sockaddr *) &peer, &len) == 0 && !strcmp(peer.sun_path, denied))
                        wins++;
                else
                        allowed_n++;
                close(fd);
        }
        atomic_store(&race_stop, true);
        pthread_join(t, NULL);
        printf("connect-wins=%ld allowed=%ld refused=%ld\n", wins, allowed_n, refused);
        return 0;
}

/* race-exec ALLOWED DENIED N fork|vfork: N execs of a path a sibling thread flips between two programs
 * of one length (ALLOWED exits 0, DENIED 1, e.g. copies of true and false): with "fork" the flipping
 * thread runs in the forked child beside its exec; with "vfork" in the parent, whose memory the vfork
 * child shares. Prints "exec-wins=N allowed=M refused=K" (wins: DENIED ran). */
static char exec_race_path[4096];

static void *flip_exec_path(void *arg) {
        (void) arg;
        while (!atomic_load(&race_stop)) {
                strcpy(exec_race_path, race_b);
                for (volatile int i = 0; i < 2000; i++)
                        ;
                strcpy(exec_race_path, race_a);
                for (volatile int i = 0; i < 2000; i++)
                        ;
        }
        return NULL;
}

static int race_exec(const char *allowed, const char *denied, long n, bool use_vfork) {
        volatile long wins = 0, allowed_n = 0, refused = 0;
        pthread_t t;

        if (strlen(allowed) != strlen(denied)) {
                fprintf(stderr, "race-exec: the two paths must have one length\n");
                return 2;
        }
        race_a = allowed;
        race_b = denied;
        strcpy(exec_race_path, allowed);
        if (use_vfork)
                pthread_create(&t, NULL, flip_exec_path, NULL);
        for (volatile long i = 0; i < n; i++) {
                char *const args[] = { exec_race_path, NULL };
                int status;
                pid_t pid = use_vfork ? vfork() : fork();

                if (pid == 0) {
                        if (!use_vfork) {
                                pthread_t ct;
                                pthread_create(&ct, NULL, flip_exec_path, NULL);
                        }
                        execve(exec_race_path, args, environ);
                        _exit(99);
                }
                if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                        refused++;
                else if (WEXITSTATUS(status) == 1)
                        wins++;
                else if (WEXITSTATUS(status) == 0)
                        allowed_n++;
                else
                        refused++;
        }
        if (use_vfork) {
                atomic_store(&race_stop, true);
                pthread_join(t, NULL);
        }
        printf("exec-wins=%ld allowed=%ld refused=%ld\n", wins, allowed_n, refused);
        return 0;
}

/* race-argv N fork|vfork: N execs of "gate-probe exit-arg ok-arg" whose last argument a sibling thread
 * flips to "no-arg" (which a command rule denies) and back: with "fork" the thread runs in the forked
 * child beside its exec, with "vfork" in the parent, whose memory the vfork child shares. exit-arg exits 1
 * for no-arg, 0 for ok-arg. Prints "argv-wins=N allowed=M refused=K" (wins: no-arg ran). */
static char argv_race_arg[8] = "ok-arg";
static const char *argv_race_self;

static void *flip_arg(void *arg) {
        (void) arg;
        while (!atomic_load(&race_stop)) {
                memcpy(argv_race_arg, "no-arg", 7);
                for (volatile int i = 0; i < 2000; i++)
                        ;
                memcpy(argv_race_arg, "ok-arg", 7);
                for (volatile int i = 0; i < 2000; i++)
                        ;
        }
        return NULL;
}

static int exit_status_count(pid_t pid, volatile long *wins, volatile long *allowed_n, volatile long *refused) {
        int status;

        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                (*refused)++;
        else if (WEXITSTATUS(status) == 1)
                (*wins)++;
        else if (WEXITSTATUS(status) == 0)
                (*allowed_n)++;
        else
                (*refused)++;
        return 0;
}

static int race_argv(const char *self, long n, bool use_vfork) {
        volatile long wins = 0, allowed_n = 0, refused = 0;
        pthread_t t;

        argv_race_self = self;
        if (use_vfork)
                pthread_create(&t, NULL, flip_arg, NULL);
        for (volatile long i = 0; i < n; i++) {
                char *const args[] = { (char *) "gate-probe", (char *) "exit-arg", argv_race_arg, NULL };
                pid_t pid = use_vfork ? vfork() : fork();

                if (pid == 0) {
                        if (!use_vfork) {
                                pthread_t ct;
                                pthread_create(&ct, NULL, flip_arg, NULL);
                        }
                        execve(argv_race_self, args, environ);
                        _exit(99);
                }
                exit_status_count(pid, &wins, &allowed_n, &refused);
        }
        if (use_vfork) {
                atomic_store(&race_stop, true);
                pthread_join(t, NULL);
        }
        printf("argv-wins=%ld allowed=%ld refused=%ld\n", wins, allowed_n, refused);
        return 0;
}

/* race-argv-shared N anon|anon-array|memfd|sysv|file: N execs of "gate-probe exit-arg ok-arg" from a
 * single-threaded child (no task shares its address space) whose argument lies in memory another process
 * writes without sharing it: a flipper process, forked once, flips the argument to "no-arg" and back.
 * anon: the string in MAP_SHARED anonymous memory inherited over fork; anon-array: the argv pointer array
 * there, its last pointer flipped between two literals of .rodata; memfd: a memfd's MAP_SHARED mapping;
 * sysv: a SysV shared memory segment; file: a MAP_PRIVATE read-only mapping of a file in the cwd that
 * the flipper writes through a MAP_SHARED mapping of its own (the child's page is the page cache's: never
 * written, never copied). Prints "argv-wins=N allowed=M refused=K" as race-argv does. */
static int race_argv_shared(const char *self, long n, const char *how) {
        static const char ok[] = "ok-arg", no[] = "no-arg";
        volatile long wins = 0, allowed_n = 0, refused = 0;
        size_t size = (size_t) sysconf(_SC_PAGESIZE);
        char *flip = NULL, *arg = NULL;         /* what the flipper writes; what the child passes */
        const char **array = NULL;
        pid_t flipper;

        if (!strcmp(how, "anon") || !strcmp(how, "anon-array")) {
                flip = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                arg = flip;
        } else if (!strcmp(how, "memfd")) {
                int fd = memfd_create("race-argv", MFD_CLOEXEC);

                if (fd < 0 || ftruncate(fd, (off_t) size) < 0)
                        return report(-1), 2;
                flip = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                arg = flip;
        } else if (!strcmp(how, "sysv")) {
                int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);

                if (id < 0)
                        return report(-1), 2;
                flip = shmat(id, NULL, 0);
                (void) shmctl(id, IPC_RMID, NULL);      /* gone once both have detached */
                arg = flip;
        } else if (!strcmp(how, "file")) {
                int fd = open("race-argv-shared.arg", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

                if (fd < 0 || ftruncate(fd, (off_t) size) < 0 || pwrite(fd, ok, sizeof(ok), 0) != sizeof(ok))
                        return report(-1), 2;
                flip = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                arg = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
                close(fd);
        } else
                return 2;
        if (flip == MAP_FAILED || arg == MAP_FAILED) {    /* shmat fails with (void *) -1 too */
                printf("setup-failed %s\n", strerrorname_np(errno) ?: "E?");
                return 2;
        }
        memcpy(flip, ok, sizeof(ok));
        if (!strcmp(how, "anon-array")) {
                array = (const char **) (void *) (flip + 64);
                array[0] = "gate-probe";
                array[1] = "exit-arg";
                array[2] = ok;
                array[3] = NULL;
        }
        flipper = fork();
        if (flipper < 0)
                return 2;
        if (flipper == 0) {
                /* Through volatile: stores the compiler would otherwise see overwritten unread. */
                volatile char *v = flip;
                const char *volatile *slot = array ? &array[2] : NULL;

                for (;;) {
                        for (int side = 0; side < 2; side++) {
                                const char *to = side == 0 ? no : ok;

                                if (slot)
                                        *slot = to;
                                else
                                        for (size_t i = 0; i < sizeof(ok); i++)
                                                v[i] = to[i];
                                for (volatile int i = 0; i < 2000; i++)
                                        ;
                        }
                }
        }
        for (volatile long i = 0; i < n; i++) {
                char *const args[] = { (char *) "gate-probe", (char *) "exit-arg", arg, NULL };
                pid_t pid = fork();

                if (pid == 0) {
                        execve(self, array ? (char *const *) array : args, environ);
                        _exit(99);
                }
                exit_status_count(pid, &wins, &allowed_n, &refused);
        }
        (void) kill(flipper, SIGKILL);
        (void) waitpid(flipper, NULL, 0);
        if (!strcmp(how, "file"))
                (void) unlink("race-argv-shared.arg");
        printf("argv-wins=%ld allowed=%ld refused=%ld\n", wins, allowed_n, refused);
        return 0;
}

/* race-argv-aio N: N execs of "gate-probe exit-arg ok-arg" from a single-threaded child whose argument
 * lies in private anonymous memory (which the pagemap check passes) with a Linux AIO read pending on it:
 * io_submit of an O_DIRECT read of a file holding "no-arg" into the argument's page, then at once the
 * exec. The device writes the page when it completes the read, after io_submit returned: after the gate
 * read the argument, before the kernel copies it, it wins. Prints "aio=ok|ERRNO argv-wins=N allowed=M
 * refused=K" (aio: what io_setup gives this process). */
static int race_argv_aio(const char *self, long n) {
        volatile long wins = 0, allowed_n = 0, refused = 0;
        size_t size = (size_t) sysconf(_SC_PAGESIZE);
        aio_context_t probe_ctx = 0;
        const char *aio = "ok";
        char *page;
        int fd;

        if (syscall(SYS_io_setup, 1, &probe_ctx) < 0)
                aio = strerrorname_np(errno) ?: "E?";
        else
                (void) syscall(SYS_io_destroy, probe_ctx);
        page = aligned_alloc(size, size);
        fd = open("race-argv-aio.arg", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (!page || fd < 0)
                return report(-1), 2;
        memset(page, 0, size);
        memcpy(page, "no-arg", 7);
        if (pwrite(fd, page, size, 0) != (ssize_t) size || fsync(fd) < 0)
                return report(-1), 2;
        close(fd);
        for (volatile long i = 0; i < n; i++) {
                pid_t pid = fork();

                if (pid == 0) {
                        char *const args[] = { (char *) "gate-probe", (char *) "exit-arg", page, NULL };
                        aio_context_t ctx = 0;
                        struct iocb cb = { .aio_lio_opcode = IOCB_CMD_PREAD, .aio_buf = (uintptr_t) page,
                                           .aio_nbytes = size };
                        struct iocb *cbs[1] = { &cb };

                        memcpy(page, "ok-arg", 7);      /* written: private anonymous memory of the child's */
                        cb.aio_fildes = open("race-argv-aio.arg", O_RDONLY | O_DIRECT | O_CLOEXEC);
                        if (cb.aio_fildes == (uint32_t) -1)
                                cb.aio_fildes = open("race-argv-aio.arg", O_RDONLY | O_CLOEXEC);
                        if (syscall(SYS_io_setup, 1, &ctx) < 0 || syscall(SYS_io_submit, ctx, 1, cbs) != 1)
                                _exit(98);
                        execve(self, args, environ);
                        _exit(99);
                }
                exit_status_count(pid, &wins, &allowed_n, &refused);
        }
        (void) unlink("race-argv-aio.arg");
        printf("aio=%s argv-wins=%ld allowed=%ld refused=%ld\n", aio, wins, allowed_n, refused);
        return 0;
}

/* spawn N ARG: from this single-threaded process, N posix_spawn()s and N vfork()s of
 * "gate-probe exit-arg ARG", as glibc's posix_spawn and Python's subprocess make them (CLONE_VM with
 * CLONE_VFORK: the parent waits until the child's exec). Prints "spawn-ok=N vfork-ok=M" (exit 0). */
static int spawn_many(const char *self, long n, const char *arg) {
        volatile long ok_spawn = 0, ok_vfork = 0, bad = 0, other = 0;
        char *const args[] = { (char *) "gate-probe", (char *) "exit-arg", (char *) arg, NULL };

        for (volatile long i = 0; i < n; i++) {
                volatile long dummy = 0;
                pid_t pid;

                if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0)
                        pid = -1;
                exit_status_count(pid, &bad, &ok_spawn, &other);
                pid = vfork();
                if (pid == 0) {
                        execve(self, args, environ);
                        _exit(99);
                }
                exit_status_count(pid, &dummy, &ok_vfork, &other);
        }
        printf("spawn-ok=%ld vfork-ok=%ld\n", ok_spawn, ok_vfork);
        return 0;
}

/* hold-flood SOCK HOLD N: HOLD connections to SOCK kept open without a byte (a server counting its
 * connections counts them), then N more, each reading the server's answer and closing. Prints
 * "held=H busy=B other=O" (busy: answered 503). */
static int hold_flood(const char *sock, long hold, long n) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        long held = 0, busy = 0, other = 0;
        int *fds = calloc((size_t) hold + 1, sizeof(int));

        if (!fds)
                return 2;
        strncpy(sa.sun_path, sock, sizeof(sa.sun_path) - 1);
        for (long i = 0; i < hold; i++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

                if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0)
                        fds[held++] = fd;
                else if (fd >= 0)
                        close(fd);
        }
        usleep(500 * 1000);     /* the server accepts them all */
        for (long i = 0; i < n; i++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                char buf[256] = "";
                ssize_t k;

                if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                        other++;
                        if (fd >= 0)
                                close(fd);
                        continue;
                }
                k = read(fd, buf, sizeof(buf) - 1);
                if (k > 0 && strstr(buf, " 503 "))
                        busy++;
                else
                        other++;
                close(fd);
        }
        for (long i = 0; i < held; i++)
                close(fds[i]);
        free(fds);
        printf("held=%ld busy=%ld other=%ld\n", held, busy, other);
        return 0;
}

/* flood-gate SOCK N: N approval requests with a token nobody issued, each on its own connection, as
 * fast as the gate answers them. Prints "sent=N answered=M". */
static int flood_gate(const char *sock, long n) {
        static const char req[] =
                "POST /api/gate/container-approval HTTP/1.1\r\nHost: gate\r\n"
                "Authorization: Bearer 0000000000000000000000000000000000000000000000000000000000000000\r\n"
                "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        long sent = 0, answered = 0;

        strncpy(sa.sun_path, sock, sizeof(sa.sun_path) - 1);
        for (long i = 0; i < n; i++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                char buf[512];

                if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                        if (i == 0)
                                printf("connect-error=%s\n", strerrorname_np(errno) ?: "E?");
                        if (fd >= 0)
                                close(fd);
                        continue;
                }
                if (write(fd, req, sizeof(req) - 1) == (ssize_t) sizeof(req) - 1)
                        sent++;
                if (read(fd, buf, sizeof(buf)) > 0)
                        answered++;
                close(fd);
        }
        printf("sent=%ld answered=%ld\n", sent, answered);
        return 0;
}

/* sigurg-create DIR N: N mkdirs and N O_CREAT|O_EXCL opens of new names in DIR while a sibling thread
 * sends the main thread SIGURG (a handler with SA_RESTART, as Go's runtime preempts goroutines) as fast
 * as it can. A restarted call that the supervisor had performed already would say EEXIST. Prints
 * "eexist=N other=M". */
static atomic_bool urg_stop;
static pid_t urg_target;

static void on_urg(int sig) {
        (void) sig;
}

static void *urg_thread(void *arg) {
        (void) arg;
        while (!atomic_load(&urg_stop))
                (void) syscall(SYS_tgkill, getpid(), urg_target, SIGURG);
        return NULL;
}

static int sigurg_create(const char *dir, long n) {
        struct sigaction sa = { .sa_handler = on_urg, .sa_flags = SA_RESTART };
        long eexist = 0, other = 0;
        pthread_t t;

        sigaction(SIGURG, &sa, NULL);
        urg_target = (pid_t) syscall(SYS_gettid);
        pthread_create(&t, NULL, urg_thread, NULL);
        for (long i = 0; i < n; i++) {
                char p[4096];
                int fd;

                snprintf(p, sizeof(p), "%s/d%ld", dir, i);
                if (mkdir(p, 0755) < 0) {
                        if (errno == EEXIST)
                                eexist++;
                        else
                                other++;
                }
                snprintf(p, sizeof(p), "%s/f%ld", dir, i);
                fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd >= 0)
                        close(fd);
                else if (errno == EEXIST)
                        eexist++;
                else
                        other++;
        }
        atomic_store(&urg_stop, true);
        pthread_join(t, NULL);
        printf("eexist=%ld other=%ld\n", eexist, other);
        return 0;
}

/* fifo-readers FIFO N: N children open FIFO for reading (blocking: no writer yet); then the parent makes
 * an ordinary trapped call (an open of /etc/hostname), which must not wait behind them, and opens the
 * FIFO for writing, which releases them all. Prints "other-call=ok|stalled released=M". */
static void on_alarm(int sig) {
        (void) sig;
}

static int fifo_readers(const char *fifo, long n) {
        struct sigaction sa = { .sa_handler = on_alarm };
        long released = 0;
        int fd, w, status;

        sigaction(SIGALRM, &sa, NULL);
        for (long i = 0; i < n; i++)
                if (fork() == 0) {
                        char c;
                        int r = open(fifo, O_RDONLY | O_CLOEXEC);
                        _exit(r >= 0 && read(r, &c, 1) >= 0 ? 0 : 1);
                }
        usleep(500 * 1000);
        alarm(10);
        fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        alarm(0);
        printf("other-call=%s ", fd >= 0 ? "ok" : "stalled");
        if (fd >= 0)
                close(fd);
        alarm(10);
        w = open(fifo, O_WRONLY | O_CLOEXEC);
        alarm(0);
        if (w >= 0)
                close(w);
        while (wait(&status) > 0)
                if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                        released++;
        printf("released=%ld\n", released);
        return 0;
}

static const char *errname(long r) {
        return r < 0 ? strerrorname_np(errno) ?: "E?" : "ok";
}

/* ---- datagrams by address (sendto, sendmsg, sendmmsg) ---- */

static void sun_set(struct sockaddr_un *sa, const char *path) {
        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        strncpy(sa->sun_path, path, sizeof(sa->sun_path) - 1);
}

/* A non-blocking datagram receiver bound at path (bind of a datagram socket is gated as a create only). */
static int dgram_receiver(const char *path, bool passcred) {
        struct sockaddr_un sa;
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

        sun_set(&sa, path);
        (void) unlink(path);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -1;
        if (passcred && setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                return -1;
        return fd;
}

/* The datagrams waiting at fd: how many, and whether each is the one expected (want[i], in order). */
static long dgram_drain(int fd, const char * const *want, long n_want, bool *ret_corrupt) {
        char buf[512];
        long got = 0;
        ssize_t k;

        while ((k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
                if (want && (got >= n_want || (size_t) k != strlen(want[got]) || memcmp(buf, want[got], (size_t) k)))
                        *ret_corrupt = true;
                got++;
        }
        return got;
}

/* dgram-send PATH sendto|sendmsg|sendmmsg: binds a datagram receiver at PATH and sends to it by address
 * from an unconnected socket (sendmsg: the datagram gathered from two iovecs; sendmmsg: three
 * datagrams). Prints "ok" when the call succeeded and every datagram arrived intact (sendmmsg: it said 3
 * and each msg_len is right), the errno name when it failed and nothing arrived, else what went wrong. */
static int dgram_send(const char *path, const char *how) {
        static const char * const msgs[3] = { "first datagram", "second, longer datagram", "3rd" };
        struct sockaddr_un sa;
        struct iovec iov[3] = {
                { .iov_base = (void *) msgs[0], .iov_len = strlen(msgs[0]) },
                { .iov_base = (void *) msgs[1], .iov_len = strlen(msgs[1]) },
                { .iov_base = (void *) msgs[2], .iov_len = strlen(msgs[2]) },
        };
        struct iovec split[2] = { { (void *) msgs[0], 6 }, { (void *) (msgs[0] + 6), strlen(msgs[0]) - 6 } };
        struct mmsghdr v[3] = {};
        int rx = dgram_receiver(path, false), tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;
        long r, n = 1, got;
        bool corrupt = false;

        if (rx < 0 || tx < 0)
                return report(-1);
        sun_set(&sa, path);
        if (!strcmp(how, "sendto"))
                r = sendto(tx, msgs[0], strlen(msgs[0]), 0, (struct sockaddr *) &sa, sizeof(sa));
        else if (!strcmp(how, "sendmsg")) {
                struct msghdr h = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = split, .msg_iovlen = 2 };

                r = sendmsg(tx, &h, 0);
        } else {
                for (int i = 0; i < 3; i++)
                        v[i] = (struct mmsghdr) {
                                .msg_hdr = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov[i], .msg_iovlen = 1 },
                                .msg_len = 0xdead,
                        };
                r = sendmmsg(tx, v, 3, 0);
                n = 3;
        }
        err = errno;
        got = dgram_drain(rx, msgs, n, &corrupt);
        if (r < 0) {
                errno = err;
                printf("%s\n", got > 0 ? "delivered-anyway" : errname(-1));
        } else if (n == 3 && (r != 3 || v[0].msg_len != strlen(msgs[0]) || v[1].msg_len != strlen(msgs[1]) ||
                              v[2].msg_len != strlen(msgs[2])))
                printf("count=%ld msg_len=%u,%u,%u\n", r, v[0].msg_len, v[1].msg_len, v[2].msg_len);
        else if (n == 1 && r != (long) strlen(msgs[0]))
                printf("count=%ld\n", r);
        else
                printf("%s\n", corrupt ? "corrupt" : got != n ? "lost" : "ok");
        return 0;
}

/* race-send ALLOWED DENIED N sendto|sendmsg: binds a datagram receiver at each path (same length) and
 * sends N datagrams from one unconnected socket to an address a sibling thread flips between the two.
 * A datagram that arrives at DENIED is a win. Waits for the sibling to run, and goes on (ten times N at
 * most) until a send was refused and one delivered, so the race took place. Prints "send-wins=N
 * allowed=M refused=K". */
static int race_send(const char *allowed, const char *denied, long n, bool use_sendmsg) {
        int ra = dgram_receiver(allowed, false), rd = dgram_receiver(denied, false);
        int tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        long wins = 0, allowed_n = 0, refused = 0;
        struct iovec iov = { .iov_base = (void *) "x", .iov_len = 1 };
        struct msghdr h = { .msg_name = &race_sa, .msg_namelen = sizeof(race_sa), .msg_iov = &iov, .msg_iovlen = 1 };
        pthread_t t;

        if (strlen(allowed) != strlen(denied) || strlen(allowed) >= sizeof(race_sa.sun_path)) {
                fprintf(stderr, "race-send: the two paths must have one length below 108\n");
                return 2;
        }
        if (ra < 0 || rd < 0 || tx < 0)
                return report(-1);
        strcpy(race_sun_a, allowed);
        strcpy(race_sun_b, denied);
        race_sa.sun_family = AF_UNIX;
        memcpy(race_sa.sun_path, race_sun_a, sizeof(race_sun_a));
        pthread_create(&t, NULL, flip_sockaddr, NULL);
        while (atomic_load(&race_flips) < 2)
                sched_yield();
        for (long i = 0; i < n || (i < 10 * n && (refused == 0 || allowed_n == 0)); i++) {
                long r = use_sendmsg ? sendmsg(tx, &h, 0) :
                                       sendto(tx, "x", 1, 0, (struct sockaddr *) &race_sa, sizeof(race_sa));
                long at_denied = dgram_drain(rd, NULL, 0, NULL), at_allowed = dgram_drain(ra, NULL, 0, NULL);

                wins += at_denied;
                allowed_n += at_allowed;
                if (r < 0)
                        refused++;
        }
        atomic_store(&race_stop, true);
        pthread_join(t, NULL);
        printf("send-wins=%ld allowed=%ld refused=%ld\n", wins, allowed_n, refused);
        return 0;
}

/* dgram-rights PATH: passes the write end of a pipe over SCM_RIGHTS (sendmsg by address) and writes
 * through the fd received: "ok" when the bytes come out of the pipe. */
static int dgram_rights(const char *path) {
        int rx = dgram_receiver(path, false), tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), p[2], got = -1;
        union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } c = {};
        struct iovec iov = { .iov_base = (void *) "fd", .iov_len = 2 };
        struct sockaddr_un sa;
        struct msghdr h = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1,
                            .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
        char data[8], out[8] = {};

        if (rx < 0 || tx < 0 || pipe2(p, O_CLOEXEC) < 0)
                return report(-1);
        sun_set(&sa, path);
        c.h = (struct cmsghdr) { .cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS };
        memcpy(CMSG_DATA(&c.h), &p[1], sizeof(int));
        if (sendmsg(tx, &h, 0) < 0)
                return report(-1);
        close(p[1]);
        memset(&c, 0, sizeof(c));
        h = (struct msghdr) { .msg_iov = &(struct iovec) { data, sizeof(data) }, .msg_iovlen = 1,
                              .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
        if (recvmsg(rx, &h, MSG_CMSG_CLOEXEC) < 0)
                return report(-1);
        if (CMSG_FIRSTHDR(&h) && CMSG_FIRSTHDR(&h)->cmsg_type == SCM_RIGHTS)
                memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&h)), sizeof(int));
        if (got < 0 || write(got, "piped", 5) != 5) {
                printf("no-fd\n");
                return 0;
        }
        close(got);
        printf("%s\n", read(p[0], out, sizeof(out) - 1) == 5 && !strcmp(out, "piped") ? "ok" : "wrong-fd");
        return 0;
}

/* The SCM_CREDENTIALS a SO_PASSCRED receiver got with its next datagram: "uid=U gid=G pid=own|other". */
static void print_creds(int rx) {
        union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(struct ucred))]; } c = {};
        char data[64];
        struct msghdr h = { .msg_iov = &(struct iovec) { data, sizeof(data) }, .msg_iovlen = 1,
                            .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
        struct ucred u;

        if (recvmsg(rx, &h, 0) < 0 || !CMSG_FIRSTHDR(&h) || CMSG_FIRSTHDR(&h)->cmsg_type != SCM_CREDENTIALS) {
                printf("none");
                return;
        }
        memcpy(&u, CMSG_DATA(CMSG_FIRSTHDR(&h)), sizeof(u));
        printf("uid=%u gid=%u pid=%s", u.uid, u.gid, u.pid == getpid() ? "own" : "other");
}

/* dgram-creds PATH: to a SO_PASSCRED receiver at PATH, by address: a datagram without credentials (the
 * implicit ones), one with SCM_CREDENTIALS naming uid and gid 0 (forged), one naming the sender's own
 * ids. Prints "implicit=<creds> forged=<errno|ok> own=<errno|ok> <creds>". */
static int dgram_creds(const char *path) {
        int rx = dgram_receiver(path, true), tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(struct ucred))]; } c = {};
        struct iovec iov = { .iov_base = (void *) "cred", .iov_len = 4 };
        struct sockaddr_un sa;
        struct msghdr h = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1,
                            .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
        struct ucred u = { .pid = getpid(), .uid = 0, .gid = 0 };

        if (rx < 0 || tx < 0)
                return report(-1);
        sun_set(&sa, path);
        printf("implicit=");
        if (sendto(tx, "cred", 4, 0, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                printf("%s", errname(-1));
        else
                print_creds(rx);
        c.h = (struct cmsghdr) { .cmsg_len = CMSG_LEN(sizeof(u)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_CREDENTIALS };
        memcpy(CMSG_DATA(&c.h), &u, sizeof(u));
        printf(" forged=%s", errname(sendmsg(tx, &h, 0)));
        (void) dgram_drain(rx, NULL, 0, NULL);
        u = (struct ucred) { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        memcpy(CMSG_DATA(&c.h), &u, sizeof(u));
        printf(" own=%s ", errname(sendmsg(tx, &h, 0)));
        print_creds(rx);
        printf("\n");
        return 0;
}

/* plain-send: on a connected datagram socketpair with SO_PASSCRED, who the receiver sees sending a
 * send() (untrapped: the sender itself) and a sendmsg() (trapped: the supervisor sends for it). Prints
 * "send=<creds> sendmsg=<creds>". */
static int plain_send(void) {
        int sv[2], one = 1;

        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0 ||
            setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                return report(-1);
        printf("send=");
        if (send(sv[0], "plain", 5, 0) != 5)
                printf("%s", errname(-1));
        else
                print_creds(sv[1]);
        printf(" sendmsg=");
        if (sendmsg(sv[0], &(struct msghdr) { .msg_iov = &(struct iovec) { (void *) "msg", 3 }, .msg_iovlen = 1 }, 0) != 3)
                printf("%s", errname(-1));
        else
                print_creds(sv[1]);
        printf("\n");
        return 0;
}

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig) {
        (void) sig;
        sigpipes++;
}

/* sigpipe: sendmsg on a stream whose other end is closed: EPIPE with SIGPIPE, EPIPE alone with
 * MSG_NOSIGNAL, and a process that leaves SIGPIPE at its default is killed by it. Prints "plain=E
 * sigpipe=N nosignal=E sigpipe=N default=<how the child ended>". */
static int sigpipe_probe(void) {
        struct msghdr h = { .msg_iov = &(struct iovec) { (void *) "x", 1 }, .msg_iovlen = 1 };
        int sv[2], status;
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return report(-1);
        close(sv[1]);
        signal(SIGPIPE, on_sigpipe);
        printf("plain=%s", errname(sendmsg(sv[0], &h, 0)));
        printf(" sigpipe=%i", (int) sigpipes);
        printf(" nosignal=%s", errname(sendmsg(sv[0], &h, MSG_NOSIGNAL)));
        printf(" sigpipe=%i", (int) sigpipes);
        pid = fork();
        if (pid == 0) {
                signal(SIGPIPE, SIG_DFL);
                (void) sendmsg(sv[0], &h, 0);
                _exit(0);
        }
        if (pid < 0 || waitpid(pid, &status, 0) < 0)
                return report(-1);
        printf(" default=%s\n", WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
        return 0;
}

/* dgram-full PATH: a receiver at PATH that never reads; sends by address until its queue is full. Prints
 * "nonblocking=E timeout=E": a non-blocking send then fails at once, a blocking one with SO_SNDTIMEO set
 * once its time is up (the supervisor waits no longer than the caller's socket says). */
static int dgram_full(const char *path) {
        int rx = dgram_receiver(path, false), tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct timeval tv = { .tv_usec = 200000 };
        struct sockaddr_un sa;
        long r = 0;

        if (rx < 0 || tx < 0)
                return report(-1);
        sun_set(&sa, path);
        for (int i = 0; i < 100000 && r >= 0; i++)
                r = sendto(tx, "fill", 4, 0, (struct sockaddr *) &sa, sizeof(sa));
        printf("nonblocking=%s", errname(r));
        if (fcntl(tx, F_SETFL, 0) < 0 || setsockopt(tx, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return report(-1);
        printf(" timeout=%s\n", errname(sendto(tx, "more", 4, 0, (struct sockaddr *) &sa, sizeof(sa))));
        return 0;
}

static void on_alarm_send(int sig) {
        (void) sig;
}

/* How a task waits: 0 not in the gate, 'S' in seccomp's wait, 'D' there and killable only. With
 * SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV a call a worker took waits killable once a signal woke it; one
 * still queued is interrupted by the signal instead (and sent again by the child). */
static char gate_wait(int wchan_fd, int stat_fd) {
        char w[128] = {}, st[512] = {};
        const char *e;

        if (pread(wchan_fd, w, sizeof(w) - 1, 0) <= 0 || !strstr(w, "seccomp"))
                return 0;
        if (pread(stat_fd, st, sizeof(st) - 1, 0) <= 0 || !(e = strrchr(st, ')')) || e[1] != ' ')
                return 0;
        return e[2];
}

/* The blocked senders of send-gone and send-pool: N children each block in a sendto to a receiver at PATH
 * whose queue is full (filled through the socket they share, made blocking when they start), until WANT of
 * them are seen in the gate's wait (gate_wait(): queued, or taken by a worker; a nudge with a signal would
 * end a taken send, as the kernel's). A child exits 0 once its datagram went. A trapped call the caller
 * needs before (a bind) is made before this: with the workers held it would wait too. */
typedef struct BlockedSenders {
        int rx, tx;
        struct sockaddr_un sa;
        pid_t *pids;
        long held;
} BlockedSenders;

static int blocked_senders(const char *path, long n, long want, BlockedSenders *ret) {
        int go[2], *wchan = calloc((size_t) n, sizeof(int)), *stat = calloc((size_t) n, sizeof(int));
        char p[128];

        *ret = (BlockedSenders) {
                .rx = dgram_receiver(path, false),
                .tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
                .pids = calloc((size_t) n, sizeof(pid_t)),
        };
        if (ret->rx < 0 || ret->tx < 0 || !wchan || !stat || !ret->pids || pipe2(go, O_CLOEXEC) < 0)
                return -1;
        sun_set(&ret->sa, path);
        while (sendto(ret->tx, "fill", 4, 0, (struct sockaddr *) &ret->sa, sizeof(ret->sa)) >= 0)
                ;
        for (long i = 0; i < n; i++) {
                char c;

                ret->pids[i] = fork();
                if (ret->pids[i] < 0)
                        return -1;
                if (ret->pids[i] == 0) {
                        long r;

                        sigaction(SIGUSR1, &(struct sigaction) { .sa_handler = on_alarm_send }, NULL);
                        close(go[1]);
                        (void) read(go[0], &c, 1);
                        (void) fcntl(ret->tx, F_SETFL, 0);      /* shared by all: blocking from now */
                        while ((r = sendto(ret->tx, "late", 4, 0, (struct sockaddr *) &ret->sa, sizeof(ret->sa))) < 0 &&
                               errno == EINTR)
                                ;
                        _exit(r == 4 ? 0 : 1);
                }
                /* Opened now: once the workers are held, an open (trapped) would wait too. */
                snprintf(p, sizeof(p), "/proc/%i/wchan", ret->pids[i]);
                wchan[i] = open(p, O_RDONLY | O_CLOEXEC);
                snprintf(p, sizeof(p), "/proc/%i/stat", ret->pids[i]);
                stat[i] = open(p, O_RDONLY | O_CLOEXEC);
                if (wchan[i] < 0 || stat[i] < 0)
                        return -1;
        }
        close(go[1]);
        /* No time limit here: the test's own timeout ends a gate that never takes that many. */
        while (ret->held < want) {
                ret->held = 0;
                for (long i = 0; i < n; i++)
                        if (gate_wait(wchan[i], stat[i]) != 0)
                                ret->held++;
                sched_yield();
        }
        return 0;
}

/* send-gone PATH N HELD: once HELD of N blocked senders (blocked_senders()) are in the gate's wait, all
 * are killed, and one more send by address (to another receiver) must be answered: a worker waiting for a
 * caller that is gone is free again. Prints "held=N released" or "held=N wedged" (no answer within a
 * minute). */
static int send_gone(const char *path, long n, long want) {
        BlockedSenders b;
        char p[128];

        snprintf(p, sizeof(p), "%s.2", path);
        if (dgram_receiver(p, false) < 0 || blocked_senders(path, n, want, &b) < 0)
                return report(-1);
        for (long i = 0; i < n; i++)
                kill(b.pids[i], SIGKILL);
        while (wait(NULL) > 0)
                ;
        /* The full receiver stays full (a read would let the waiting sends go): a trapped send to another
         * one, interrupted (EINTR) only if no worker ever takes it. */
        sun_set(&b.sa, p);
        sigaction(SIGALRM, &(struct sigaction) { .sa_handler = on_alarm_send }, NULL);
        alarm(60);
        printf("held=%ld %s\n", b.held,
               sendto(b.tx, "after", 5, 0, (struct sockaddr *) &b.sa, sizeof(b.sa)) == 5 ? "released" : "wedged");
        return 0;
}

/* send-pool PATH N WANT: once WANT of N blocked senders (blocked_senders(); more than the gate's 64
 * workers) are in the gate's wait, an ordinary trapped call (an open of /etc/hostname), queued behind them
 * all, must be answered; then the receiver is read until every child's send went. Prints "held=WANT
 * other-call=ok|stalled released=M": stalled when the open was not answered within a minute (SIGALRM),
 * as on a gate whose waiting sends hold all its workers. */
static int send_pool(const char *path, long n, long want) {
        BlockedSenders b;
        long released = 0, left = n;
        int fd, status;

        if (blocked_senders(path, n, want, &b) < 0)
                return report(-1);
        sigaction(SIGALRM, &(struct sigaction) { .sa_handler = on_alarm_send }, NULL);
        alarm(60);
        fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        alarm(0);
        printf("held=%ld other-call=%s ", want, fd >= 0 ? "ok" : "stalled");
        if (fd >= 0)
                close(fd);
        /* Room at the receiver: the waiting sends go, each child ends with its datagram sent. */
        while (left > 0) {
                pid_t pid;

                (void) dgram_drain(b.rx, NULL, 0, NULL);
                (void) poll(&(struct pollfd) { .fd = b.rx, .events = POLLIN }, 1, 100);
                while (left > 0 && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
                        left--;
                        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                                released++;
                }
        }
        printf("released=%ld\n", released);
        return 0;
}

/* send-signal PATH restart|norestart: a blocking sendto to a full receiver at PATH, interrupted by a
 * SIGUSR2 whose handler has SA_RESTART or not: a sibling thread signals the sender while it is seen in the
 * sendto (the gate's wait or the kernel's) until the handler ran, then reads the receiver so a restarted send can go. Should the
 * handler not run while the send blocks (the sibling signalled it a thousand times, 10 ms apart), the
 * receiver is read anyway so that the send ends. Prints what the send returned and whether the handler
 * ran during it: "norestart=EINTR during=yes" and "restart=ok during=yes" are the kernel's. */
static atomic_bool sig_handled, sig_send_done, sig_forced;
static atomic_int sig_tid;
static int sig_rx;

static void on_sigusr2(int sig) {
        (void) sig;
        atomic_store(&sig_handled, true);
}

/* Whether the task is asleep in sendto (the gate's wait or the kernel's own). */
static bool in_sendto(int syscall_fd, int stat_fd) {
        char sc[256] = {}, st[512] = {};
        const char *e;

        if (pread(syscall_fd, sc, sizeof(sc) - 1, 0) <= 0 || atoi(sc) != __NR_sendto || !strchr(sc, ' '))
                return false;
        if (pread(stat_fd, st, sizeof(st) - 1, 0) <= 0 || !(e = strrchr(st, ')')) || e[1] != ' ')
                return false;
        return e[2] == 'S' || e[2] == 'D';
}

static void *signal_sender(void *userdata) {
        bool restart = *(bool *) userdata;
        char p[128];
        int syscall_fd, stat_fd;
        long tries = 0;

        snprintf(p, sizeof(p), "/proc/%i/task/%i/syscall", (int) getpid(), atomic_load(&sig_tid));
        syscall_fd = open(p, O_RDONLY | O_CLOEXEC);
        snprintf(p, sizeof(p), "/proc/%i/task/%i/stat", (int) getpid(), atomic_load(&sig_tid));
        stat_fd = open(p, O_RDONLY | O_CLOEXEC);
        while (!atomic_load(&sig_handled) && !atomic_load(&sig_send_done) && tries < 1000) {
                if (syscall_fd >= 0 && stat_fd >= 0 && in_sendto(syscall_fd, stat_fd)) {
                        (void) syscall(SYS_tgkill, getpid(), atomic_load(&sig_tid), SIGUSR2);
                        tries++;
                        usleep(10 * 1000);
                } else
                        sched_yield();
        }
        (void) restart;
        if (!atomic_load(&sig_handled))
                atomic_store(&sig_forced, true);        /* the send ends only because the receiver is read */
        while (!atomic_load(&sig_send_done)) {
                (void) dgram_drain(sig_rx, NULL, 0, NULL);
                sched_yield();
        }
        return NULL;
}

static int send_signal(const char *path, bool restart) {
        struct sigaction sa = { .sa_handler = on_sigusr2, .sa_flags = restart ? SA_RESTART : 0 };
        int tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_un sun;
        pthread_t t;
        bool during;
        long r;

        sig_rx = dgram_receiver(path, false);
        if (sig_rx < 0 || tx < 0)
                return report(-1);
        sun_set(&sun, path);
        while (sendto(tx, "fill", 4, 0, (struct sockaddr *) &sun, sizeof(sun)) >= 0)
                ;
        if (fcntl(tx, F_SETFL, 0) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0)
                return report(-1);
        atomic_store(&sig_tid, (int) gettid());
        pthread_create(&t, NULL, signal_sender, &restart);
        r = sendto(tx, "late", 4, 0, (struct sockaddr *) &sun, sizeof(sun));
        during = atomic_load(&sig_handled) && !atomic_load(&sig_forced);
        printf("%s=%s during=%s\n", restart ? "restart" : "norestart", errname(r), during ? "yes" : "no");
        atomic_store(&sig_send_done, true);
        pthread_join(t, NULL);
        return 0;
}

/* A user namespace, where the agent would hold capabilities, by each door: unshare(), clone() and clone3(). */
static int userns(void) {
        struct { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } args = {
                .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD,
        };
        long u, c, c3;

        u = syscall(SYS_unshare, CLONE_NEWUSER);
        printf("unshare=%s ", errname(u));
        c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
        if (c == 0)
                _exit(0);
        printf("clone=%s ", errname(c));
        c3 = syscall(SYS_clone3, &args, sizeof(args));
        if (c3 == 0)
                _exit(0);
        printf("clone3=%s\n", errname(c3));
        while (wait(NULL) > 0)
                ;
        return 0;
}

/* Out of the root and mount namespace the supervisor resolves paths in, by each door: chroot, pivot_root,
 * setns and a new mount namespace by unshare() and clone(). The agent holds no capability, so the kernel
 * refuses them anyway; the gate's filter refuses them first, which leaves a SECCOMP audit record. Prints
 * the results, then "nr=" and the syscall numbers, for the test to find the records. */
static int leave_root(const char *comm) {
        long c, p, u, k, n;
        int ns;

        (void) prctl(PR_SET_NAME, comm);
        c = syscall(SYS_chroot, "/");
        printf("chroot=%s ", errname(c));
        p = syscall(SYS_pivot_root, "/", "/");
        printf("pivot_root=%s ", errname(p));
        ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        n = syscall(SYS_setns, ns, CLONE_NEWNS);
        printf("setns=%s ", errname(n));
        u = syscall(SYS_unshare, CLONE_NEWNS);
        printf("unshare=%s ", errname(u));
        k = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, NULL);
        if (k == 0)
                _exit(0);
        printf("clone=%s ", errname(k));
        printf("nr=%i,%i,%i,%i,%i\n", SYS_chroot, SYS_pivot_root, SYS_setns, SYS_unshare, SYS_clone);
        while (wait(NULL) > 0)
                ;
        return 0;
}

/* A thread that is not the leader execs (the kernel gives it the leader's pid) while the leader keeps
 * opening files: the new program's own opens must read its own memory, not the old one's. */
static const char *exec_self, *exec_path;

static void *exec_thread(void *unused) {
        (void) unused;
        usleep(1000);
        execl(exec_self, exec_self, "cat", exec_path, (char *) NULL);
        return NULL;
}

static int thread_exec(const char *self, const char *path) {
        pthread_t t;

        exec_self = self;
        exec_path = path;
        if (pthread_create(&t, NULL, exec_thread, NULL) != 0)
                return report(-1);
        for (;;) {
                int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);

                if (fd >= 0)
                        close(fd);
        }
}

/* umask-race DIR N: N rounds of one thread changing the process's umask while the main thread creates
 * files. A create that starts after the umask call has returned must get the new mask, whatever the
 * supervisor kept of the old one. Prints "ok", or how many creates got a stale mask. */
static atomic_bool umask_done;

static void *umask_thread(void *unused) {
        (void) unused;
        (void) umask(077);
        atomic_store(&umask_done, true);
        return NULL;
}

static int umask_race(const char *dir, long n) {
        long stale = 0;

        for (long round = 0; round < n; round++) {
                char path[4096];
                pthread_t t;
                int after = 0;

                (void) umask(022);
                atomic_store(&umask_done, false);
                for (int i = 0; i < 2; i++) {   /* the supervisor keeps 022 */
                        (void) snprintf(path, sizeof(path), "%s/keep%d", dir, i);
                        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
                        if (fd < 0)
                                return report(-1);
                        close(fd);
                }
                if (pthread_create(&t, NULL, umask_thread, NULL) != 0)
                        return report(-1);
                for (int i = 0; after < 3; i++) {
                        bool done = atomic_load(&umask_done);
                        struct stat st;

                        (void) snprintf(path, sizeof(path), "%s/f%d", dir, i % 64);
                        (void) unlink(path);
                        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
                        if (fd < 0 || fstat(fd, &st) < 0)
                                return report(-1);
                        close(fd);
                        if (done) {
                                after++;
                                if ((st.st_mode & 0777) != 0600)
                                        stale++;
                        }
                }
                pthread_join(t, NULL);
        }
        if (stale > 0)
                printf("stale=%ld\n", stale);
        else
                printf("ok\n");
        return 0;
}

/* fchdir-cat DIR FILE: FILE read relative to the cwd, then again after fchdir(DIR): both first lines. */
static int fchdir_cat(const char *dir, const char *file) {
        char a[256] = {}, b[256] = {};
        int fd, dfd;

        for (int round = 0; round < 2; round++) {
                char *buf = round == 0 ? a : b;

                if (round == 1) {
                        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (dfd < 0 || fchdir(dfd) < 0)
                                return report(-1);
                        close(dfd);
                }
                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || read(fd, buf, 255) < 0)
                        return report(-1);
                close(fd);
                buf[strcspn(buf, "\n")] = 0;
        }
        printf("%s %s\n", a, b);
        return 0;
}

/* The first line of a file. */
static int cat(const char *path) {
        char buf[256] = {};
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
                return report(-1);
        buf[strcspn(buf, "\n")] = 0;
        printf("%s\n", buf);
        return 0;
}

static int cmp_long(const void *a, const void *b) {
        long x = *(const long *) a, y = *(const long *) b;

        return x < y ? -1 : x > y;
}

/* The per mille percentile of n samples (nearest rank), sorting them. */
static long percentile(long *samples, long n, int permille) {
        long rank = (n * permille + 999) / 1000;

        qsort(samples, (size_t) n, sizeof(long), cmp_long);
        return samples[rank > 0 ? rank - 1 : 0];
}

static long elapsed_ns(const struct timespec *a) {
        struct timespec b;

        clock_gettime(CLOCK_MONOTONIC, &b);
        return (b.tv_sec - a->tv_sec) * 1000000000L + (b.tv_nsec - a->tv_nsec);
}

/* send-bench PATH N: N rounds of three sends of one byte to a datagram receiver at PATH, interleaved
 * call by call so load moves all three alike: a sendto by address (trapped, decided as a connect), a
 * sendmsg on a socket connected to it (trapped and performed, nothing to decide) and a send() on that
 * socket (not trapped: the kernel's own send, the floor). Each is drained before the next. Prints the
 * medians in ns: "sendto=A sendmsg=B send=C" (-1 when a send failed). */
static int send_bench(const char *path, long n) {
        int rx = dgram_receiver(path, false), tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int cx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        long *s_to = calloc((size_t) n, sizeof(long)), *s_msg = calloc((size_t) n, sizeof(long));
        long *s_send = calloc((size_t) n, sizeof(long));
        struct iovec iov = { .iov_base = (void *) "x", .iov_len = 1 };
        struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct sockaddr_un sa;
        bool failed = false;
        char c;

        if (n < 1 || rx < 0 || tx < 0 || cx < 0 || !s_to || !s_msg || !s_send)
                return report(-1);
        sun_set(&sa, path);
        if (connect(cx, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return report(-1);
        for (long i = 0; i < n; i++) {
                struct timespec t;

                clock_gettime(CLOCK_MONOTONIC, &t);
                failed |= sendto(tx, "x", 1, 0, (struct sockaddr *) &sa, sizeof(sa)) != 1;
                s_to[i] = elapsed_ns(&t);
                failed |= recv(rx, &c, 1, 0) != 1;
                clock_gettime(CLOCK_MONOTONIC, &t);
                failed |= sendmsg(cx, &h, 0) != 1;
                s_msg[i] = elapsed_ns(&t);
                failed |= recv(rx, &c, 1, 0) != 1;
                clock_gettime(CLOCK_MONOTONIC, &t);
                failed |= send(cx, "x", 1, 0) != 1;
                s_send[i] = elapsed_ns(&t);
                failed |= recv(rx, &c, 1, 0) != 1;
        }
        if (failed)
                printf("sendto=-1 sendmsg=-1 send=-1\n");
        else
                printf("sendto=%ld sendmsg=%ld send=%ld\n", percentile(s_to, n, 500), percentile(s_msg, n, 500),
                       percentile(s_send, n, 500));
        return 0;
}

/* n opens and closes of path, each timed: the median and the 90th percentile in nanoseconds (-1 when an
 * open does not end as expected: with an fd, or with EPERM when fails is set). Every sample is kept: no
 * histogram to saturate. */
static int time_opens(const char *path, long n, bool fails, long ret[static 2]) {
        long *ns = calloc((size_t) n, sizeof(long));

        if (!ns)
                return -1;
        for (long i = 0; i < n; i++) {
                struct timespec a, b;
                int fd;

                clock_gettime(CLOCK_MONOTONIC, &a);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0)
                        close(fd);
                clock_gettime(CLOCK_MONOTONIC, &b);
                if (fails ? fd >= 0 || errno != EPERM : fd < 0) {
                        printf("open %s: %s (call %ld)\n", path, fd < 0 ? strerror(errno) : "opened", i);
                        free(ns);
                        return -1;
                }
                ns[i] = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
        }
        ret[0] = percentile(ns, n, 500);
        ret[1] = percentile(ns, n, 900);
        free(ns);
        return 0;
}

typedef enum FloorAnswer { FLOOR_CONTINUE, FLOOR_ADDFD, FLOOR_ERRNO } FloorAnswer;

/* The kernel's share of a gated call, for test/bench/gate: n opens under a notifying filter of our own
 * whose supervisor does nothing but answer: "continue" (the kernel opens), the file opened by the
 * supervisor and injected (ADDFD), as the gate emulates an open, or an errno (EPERM), the bare round
 * trip of a call the gate decides without performing anything. Needs a process without the gate (which
 * refuses a second listener). ret: the median and the 90th percentile per open+close, nanoseconds. */
static int floor_run(const char *path, long n, FloorAnswer answer, long ret[static 2]) {
        struct sock_filter insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };
        long result[2] = { -1, -1 };
        int sv[2], nfd;
        pid_t child;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -1;
        child = fork();
        if (child == 0) {
                char cbuf[CMSG_SPACE(sizeof(int))] = {}, ack;
                struct iovec io = { .iov_base = &ack, .iov_len = 1 };
                struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
                struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                long ns[2];

                nfd = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
                if (nfd < 0)
                        _exit(1);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &nfd, sizeof(int));
                ack = 'f';
                if (sendmsg(sv[1], &m, 0) < 0 || read(sv[1], &ack, 1) != 1)
                        _exit(1);
                close(nfd);
                if (time_opens(path, n, answer == FLOOR_ERRNO, ns) < 0)
                        _exit(1);
                _exit(write(sv[1], ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
        }
        /* Only the child holds its end: its death ends every wait below. */
        close(sv[1]);
        sv[1] = -1;
        if (child < 0)
                goto out;
        {
                char cbuf[CMSG_SPACE(sizeof(int))] = {}, b;
                struct iovec io = { .iov_base = &b, .iov_len = 1 };
                struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };

                if (recvmsg(sv[0], &m, 0) != 1 || !CMSG_FIRSTHDR(&m))
                        goto out;
                memcpy(&nfd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
        }
        (void) ioctl(nfd, SECCOMP_IOW(4, __u64), 1UL);   /* SECCOMP_IOCTL_NOTIF_SET_FLAGS: sync wake-ups */
        if (write(sv[0], "g", 1) != 1)
                goto out;
        for (;;) {
                struct pollfd p[2] = { { .fd = nfd, .events = POLLIN }, { .fd = sv[0], .events = POLLIN } };
                struct seccomp_notif no = {};

                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[1].revents) {
                        if (read(sv[0], result, sizeof(result)) != sizeof(result))
                                result[0] = result[1] = -1;
                        break;
                }
                if ((p[0].revents & POLLHUP) && !(p[0].revents & POLLIN))
                        break;          /* the child went away without its result */
                if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, &no) < 0)
                        continue;
                if (answer == FLOOR_ADDFD) {
                        struct seccomp_notif_addfd a = { .id = no.id, .flags = SECCOMP_ADDFD_FLAG_SEND,
                                                         .newfd_flags = O_CLOEXEC };
                        int fd = open(path, O_RDONLY | O_CLOEXEC);

                        a.srcfd = (uint32_t) fd;
                        (void) ioctl(nfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
                        close(fd);
                } else {
                        struct seccomp_notif_resp r = { .id = no.id };

                        if (answer == FLOOR_CONTINUE)
                                r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                        else
                                r.error = -EPERM;
                        (void) ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &r);
                }
        }
        close(nfd);
out:
        close(sv[0]);
        if (child > 0)
                (void) waitpid(child, NULL, 0);
        if (result[0] < 0)
                return -1;
        ret[0] = result[0];
        ret[1] = result[1];
        return 0;
}

/* Prints "plain=NS continue=NS addfd=NS errno=NS", each the median per open+close over n, then the 90th
 * percentiles the same way ("plain_p90=NS ..."). */
static int floor_bench(const char *path, long n) {
        long plain[2], cont[2], addfd[2], err[2];

        if (n < 1 || time_opens(path, n, false, plain) < 0 || floor_run(path, n, FLOOR_CONTINUE, cont) < 0 ||
            floor_run(path, n, FLOOR_ADDFD, addfd) < 0 || floor_run(path, n, FLOOR_ERRNO, err) < 0)
                return report(-1);
        printf("plain=%ld continue=%ld addfd=%ld errno=%ld plain_p90=%ld continue_p90=%ld addfd_p90=%ld errno_p90=%ld\n",
               plain[0], cont[0], addfd[0], err[0], plain[1], cont[1], addfd[1], err[1]);
        return 0;
}

/* What any supervisor pays, before deciding anything, to read an exec's arguments: the caller is a new
 * process (a fork's child), so its /proc/PID, its mem and a first read of its memory, all new. Prints the
 * median and the 90th percentile in nanoseconds over n fresh children, every sample kept. */
static int newproc_floor(long n) {
        static char buf[4096];
        long *ns = n > 0 ? calloc((size_t) n, sizeof(long)) : NULL;

        if (!ns)
                return report(-1);
        for (long i = 0; i < n; i++) {
                struct timespec a, b;
                char p[64];
                int dir, mem;
                pid_t child = fork();

                if (child < 0)
                        return report(-1);
                if (child == 0) {
                        pause();
                        _exit(0);
                }
                snprintf(p, sizeof(p), "/proc/%i", (int) child);
                clock_gettime(CLOCK_MONOTONIC, &a);
                dir = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                mem = dir < 0 ? -1 : openat(dir, "mem", O_RDONLY | O_CLOEXEC);
                if (mem < 0 || pread(mem, buf, sizeof(buf), (off_t) (uintptr_t) buf) != (ssize_t) sizeof(buf)) {
                        kill(child, SIGKILL);
                        return report(-1);
                }
                clock_gettime(CLOCK_MONOTONIC, &b);
                ns[i] = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
                close(mem);
                close(dir);
                kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
        }
        printf("newproc=%ld newproc_p90=%ld\n", percentile(ns, n, 500), percentile(ns, n, 900));
        free(ns);
        return 0;
}

/* The floor of the look for tasks that share an exec's memory (src/gate/gate-mm.c): one read of the tasks
 * in /proc's directory, the least any supervisor that looks at every task of the pid namespace reads: from
 * an fd of /proc kept open, from the position where the tasks begin (256, fs/proc/base.c's
 * FIRST_PROCESS_ENTRY), as the gate reads it. Timed as an exec sees it: with a fork's child whose /proc/PID
 * the supervisor has just opened to read its arguments. Prints the median and the 90th percentile in
 * nanoseconds over n, every sample kept, and beside them the median of the same read as the gate made it
 * before (walk_open: /proc opened afresh and read from its start, every entry), timed in turn with it. */
static int walk_floor(long n) {
        static char buf[32768];
        long *ns = n > 0 ? calloc((size_t) n, sizeof(long)) : NULL;
        long *ns_open = n > 0 ? calloc((size_t) n, sizeof(long)) : NULL;
        int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (!ns || !ns_open || proc < 0)
                return report(-1);
        for (long i = 0; i < n; i++) {
                struct timespec a, b;
                pid_t child = fork();
                char p[64];
                ssize_t k;
                int fd, dir, fresh;

                if (child < 0)
                        return report(-1);
                if (child == 0) {
                        pause();
                        _exit(0);
                }
                snprintf(p, sizeof(p), "/proc/%i", (int) child);
                dir = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                clock_gettime(CLOCK_MONOTONIC, &a);
                fd = lseek(proc, 256, SEEK_SET) < 0 ? -1 : proc;
                while (fd >= 0 && (k = getdents64(fd, buf, sizeof(buf))) > 0)
                        ;
                clock_gettime(CLOCK_MONOTONIC, &b);
                ns[i] = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
                clock_gettime(CLOCK_MONOTONIC, &a);
                fresh = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                while (fresh >= 0 && getdents64(fresh, buf, sizeof(buf)) > 0)
                        ;
                if (fresh >= 0)
                        close(fresh);
                clock_gettime(CLOCK_MONOTONIC, &b);
                ns_open[i] = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
                if (dir >= 0)
                        close(dir);
                kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                if (fd < 0)
                        return report(-1);
        }
        printf("walk=%ld walk_p90=%ld walk_open=%ld\n", percentile(ns, n, 500), percentile(ns, n, 900),
               percentile(ns_open, n, 500));
        close(proc);
        free(ns);
        free(ns_open);
        return 0;
}

static int bench(const char *path, long n) {
        struct timespec a, b;

        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < n; i++) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);

                if (fd < 0) {
                        printf("open %s: %s (call %ld)\n", path, strerror(errno), i);
                        return 1;
                }
                close(fd);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%ld\n", ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec)) / n);
        return 0;
}

int main(int argc, char *argv[]) {
        const char *cmd = argc > 1 ? argv[1] : "";
        const char *a1 = argc > 2 ? argv[2] : "";

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (!strcmp(cmd, "open"))                 /* open PATH [r|w|c] */
                return report(open(a1, (argc > 3 && argv[3][0] == 'w') ? O_WRONLY :
                                       (argc > 3 && argv[3][0] == 'c') ? O_WRONLY | O_CREAT : O_RDONLY, 0644));
        if (!strcmp(cmd, "legacy-open"))          /* the old open(2), as a static binary may call it */
                return report(syscall(SYS_open, a1, O_RDONLY));
        if (!strcmp(cmd, "legacy-unlink"))
                return report(syscall(SYS_unlink, a1));
        if (!strcmp(cmd, "truncate"))
                return report(truncate(a1, 0));
        if (!strcmp(cmd, "setflags"))             /* setflags DIR same|casefold|high|32 */
                return setflags(a1, argc > 3 ? argv[3] : "same");
        if (!strcmp(cmd, "io-uring"))
                return report(syscall(SYS_io_uring_setup, 8, calloc(1, 4096)));
        if (!strcmp(cmd, "listener"))
                return own_listener();
        if (!strcmp(cmd, "filter"))
                return own_filter();
        if (!strcmp(cmd, "memfd-exec"))
                return memfd_exec();
        if (!strcmp(cmd, "memfd-interp") && argc > 3)   /* memfd-interp SCRIPT BINARY */
                return memfd_interp(a1, argv[3]);
        if (!strcmp(cmd, "connect"))
                return connect_unix(a1);
        if (!strcmp(cmd, "opath")) {                    /* opath PATH: an O_PATH open, then fstat through it */
                struct stat st;
                int fd = open(a1, O_PATH | O_CLOEXEC);

                if (fd < 0)
                        return report(fd);
                return report(fstat(fd, &st));
        }
        if (!strcmp(cmd, "bind")) {                     /* bind PATH: a unix socket bound at PATH */
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

                strncpy(sa.sun_path, a1, sizeof(sa.sun_path) - 1);
                return report(bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
        }
        if (!strcmp(cmd, "kill-parent"))
                return report(kill(getppid(), SIGKILL));
        if (!strcmp(cmd, "ptrace-parent"))
                return report(ptrace(PTRACE_ATTACH, getppid(), NULL, NULL));
        if (!strcmp(cmd, "environ-parent")) {
                char p[64];

                snprintf(p, sizeof(p), "/proc/%i/environ", getppid());
                return report(open(p, O_RDONLY));
        }
        if (!strcmp(cmd, "mem-parent")) {
                char p[64];

                snprintf(p, sizeof(p), "/proc/%i/mem", getppid());
                return report(open(p, O_RDONLY));
        }
        if (!strcmp(cmd, "i386")) {
                long r;

                /* getpid through the 32-bit entry: a foreign architecture to the filter */
                __asm__ volatile ("int $0x80" : "=a"(r) : "a"(20) : "memory");
                printf("survived %ld\n", r);
                return 0;
        }
        if (!strcmp(cmd, "x32")) {
                printf("survived %ld\n", syscall(__NR_getpid | 0x40000000));
                return 0;
        }
        if (!strcmp(cmd, "race-path") && argc > 4) {   /* race-path ALLOWED DENIED N */
                race_a = argv[2];
                race_b = argv[3];
                return race(false, atol(argv[4]));
        }
        if (!strcmp(cmd, "race-symlink") && argc > 5) { /* race-symlink LINK ALLOWED DENIED N */
                race_link = argv[2];
                race_a = argv[3];
                race_b = argv[4];
                return race(true, atol(argv[5]));
        }
        if (!strcmp(cmd, "race-connect") && argc > 4)    /* race-connect ALLOWED DENIED N [family] */
                return race_connect(argv[2], argv[3], atol(argv[4]), argc > 5 && !strcmp(argv[5], "family"));
        if (!strcmp(cmd, "dgram-send") && argc > 3)     /* dgram-send PATH sendto|sendmsg|sendmmsg */
                return dgram_send(a1, argv[3]);
        if (!strcmp(cmd, "race-send") && argc > 5)      /* race-send ALLOWED DENIED N sendto|sendmsg */
                return race_send(argv[2], argv[3], atol(argv[4]), !strcmp(argv[5], "sendmsg"));
        if (!strcmp(cmd, "dgram-rights"))               /* dgram-rights PATH */
                return dgram_rights(a1);
        if (!strcmp(cmd, "dgram-creds"))                /* dgram-creds PATH */
                return dgram_creds(a1);
        if (!strcmp(cmd, "dgram-full"))                 /* dgram-full PATH */
                return dgram_full(a1);
        if (!strcmp(cmd, "send-gone") && argc > 4)     /* send-gone PATH N HELD */
                return send_gone(a1, atol(argv[3]), atol(argv[4]));
        if (!strcmp(cmd, "send-pool") && argc > 4)     /* send-pool PATH N WANT */
                return send_pool(a1, atol(argv[3]), atol(argv[4]));
        if (!strcmp(cmd, "send-signal") && argc > 3)   /* send-signal PATH restart|norestart */
                return send_signal(a1, !strcmp(argv[3], "restart"));
        if (!strcmp(cmd, "plain-send"))
                return plain_send();
        if (!strcmp(cmd, "sigpipe"))
                return sigpipe_probe();
        if (!strcmp(cmd, "race-exec") && argc > 5)      /* race-exec ALLOWED DENIED N fork|vfork */
                return race_exec(argv[2], argv[3], atol(argv[4]), !strcmp(argv[5], "vfork"));
        if (!strcmp(cmd, "race-argv") && argc > 3)      /* race-argv N fork|vfork */
                return race_argv(realpath("/proc/self/exe", NULL), atol(a1), !strcmp(argv[3], "vfork"));
        if (!strcmp(cmd, "race-argv-aio") && argc > 2) /* race-argv-aio N */
                return race_argv_aio(realpath("/proc/self/exe", NULL), atol(a1));
        if (!strcmp(cmd, "race-argv-shared") && argc > 3) /* race-argv-shared N anon|anon-array|memfd|sysv|file */
                return race_argv_shared(realpath("/proc/self/exe", NULL), atol(a1), argv[3]);
        if (!strcmp(cmd, "spawn") && argc > 3)          /* spawn N ARG */
                return spawn_many(realpath("/proc/self/exe", NULL), atol(a1), argv[3]);
        if (!strcmp(cmd, "exit-arg") && argc > 2)       /* exit-arg ok-arg|no-arg */
                return !strcmp(a1, "no-arg") ? 1 : !strcmp(a1, "ok-arg") ? 0 : 3;
        if (!strcmp(cmd, "hold-flood") && argc > 4)     /* hold-flood SOCK HOLD N */
                return hold_flood(a1, atol(argv[3]), atol(argv[4]));
        if (!strcmp(cmd, "flood-gate") && argc > 3)     /* flood-gate SOCK N */
                return flood_gate(a1, atol(argv[3]));
        if (!strcmp(cmd, "sigurg-create") && argc > 3)  /* sigurg-create DIR N */
                return sigurg_create(a1, atol(argv[3]));
        if (!strcmp(cmd, "fifo-readers") && argc > 3)   /* fifo-readers FIFO N */
                return fifo_readers(a1, atol(argv[3]));
        if (!strcmp(cmd, "userns"))
                return userns();
        if (!strcmp(cmd, "leave-root") && argc > 2)       /* leave-root COMM */
                return leave_root(a1);
        if (!strcmp(cmd, "thread-exec"))          /* thread-exec PATH: a sibling thread execs "cat PATH" */
                return thread_exec(argv[0], a1);
        if (!strcmp(cmd, "cat"))
                return cat(a1);
        if (!strcmp(cmd, "fchdir-cat") && argc > 3)       /* fchdir-cat DIR FILE */
                return fchdir_cat(a1, argv[3]);
        if (!strcmp(cmd, "umask-race") && argc > 3)       /* umask-race DIR N */
                return umask_race(a1, atol(argv[3]));
        if (!strcmp(cmd, "send-bench") && argc > 3)     /* send-bench PATH N */
                return send_bench(a1, atol(argv[3]));
        if (!strcmp(cmd, "bench") && argc > 3)
                return bench(a1, atol(argv[3]));
        if (!strcmp(cmd, "floor") && argc > 3)      /* floor PATH N */
                return floor_bench(a1, atol(argv[3]));
        if (!strcmp(cmd, "newproc-floor") && argc > 2)    /* newproc-floor N */
                return newproc_floor(atol(a1));
        if (!strcmp(cmd, "walk-floor") && argc > 2)       /* walk-floor N */
                return walk_floor(atol(a1));
        fprintf(stderr, "gate-probe: unknown command\n");
        return 2;
}
