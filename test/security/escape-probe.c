/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What an agent trying to leave its container would do, with raw system calls, for test-escape.sh.
 * `escape-probe all` makes every attempt and prints one line each: "NAME blocked ERRNO" when the call
 * failed (with the errno's name, or "empty" for a masked file that reads as nothing) or "NAME ESCAPED
 * DETAIL" when it worked. The shell test asserts each line. Other subcommands: `ids` (uid and euid, for
 * the setuid test), `pids` (how many threads could be started before the pids limit said no), `syslog`
 * (one call the workload profile refuses, for its audit record), `io-uring` (one the gate's filter refuses
 * too, with the gate on), `setflags` (the SETFLAGS attempts of `all` alone, in the cwd). Every
 * attempt is harmless if it succeeds: nothing is mounted over anything that matters, the reboot command
 * is "disable Ctrl-Alt-Del", the clock is set to what it already is. */

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The pids test stops here even when nothing else does. */
#define PROBE_THREADS_MAX 20000

static void result(const char *name, long r, const char *detail) {
        if (r < 0)
                printf("%s blocked %s\n", name, strerrorname_np(errno) ?: "E?");
        else
                printf("%s ESCAPED %s\n", name, detail ?: "the call succeeded");
        fflush(stdout);
}

/* A child that only waits to be killed: a target for ptrace and process_vm_writev. */
static pid_t sleeper(void) {
        pid_t pid = fork();
        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

static void reap(pid_t pid) {
        if (pid > 0) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
        }
}

/* A raw clone: a child that exists proves the namespace flag passed. */
static long try_clone(unsigned long flags) {
        long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
        if (r == 0)
                _exit(0);
        if (r > 0)
                (void) waitpid((pid_t) r, NULL, 0);
        return r;
}

static long try_clone3(void) {
        struct clone_args args = { .exit_signal = SIGCHLD };
        long r = syscall(SYS_clone3, &args, sizeof(args));
        if (r == 0)
                _exit(0);
        if (r > 0)
                (void) waitpid((pid_t) r, NULL, 0);
        return r;
}

/* A file reads as blocked when it cannot be opened or read, or is empty (masked with /dev/null). */
static void try_read(const char *name, const char *path) {
        char buf[256];
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0) {
                result(name, -1, NULL);
                return;
        }
        n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n < 0)
                result(name, -1, NULL);
        else if (n == 0)
                printf("%s blocked empty\n", name);
        else
                printf("%s ESCAPED read %zd bytes\n", name, n);
        fflush(stdout);
}

static void try_connect(const char *name, const char *path, int type) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        long r;

        if (fd < 0) {
                result(name, -1, NULL);
                return;
        }
        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        r = connect(fd, (struct sockaddr *) &sa, sizeof(sa));
        close(fd);
        result(name, r, path);
}

static void *thread_wait(void *arg) {
        pause();
        return NULL;
}

static int count_threads(void) {
        pthread_attr_t attr;
        pthread_t t;
        int n = 0, r = 0;

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        while (n < PROBE_THREADS_MAX && (r = pthread_create(&t, &attr, thread_wait, NULL)) == 0)
                n++;
        printf("pids threads=%d stopped-by=%s\n", n, n < PROBE_THREADS_MAX ? strerrorname_np(r) ?: "E?" : "none");
        fflush(stdout);
        _exit(0);       /* the threads go with the process */
}

static void try_exec_copy(const char *name, const char *dir) {
        char path[256];
        int in, out;
        char buf[65536];
        ssize_t n;
        pid_t pid;
        int status;

        snprintf(path, sizeof(path), "%s/escape-probe-copy", dir);
        (void) unlink(path);
        in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        if (in < 0 || out < 0) {
                printf("%s cannot-prepare %s\n", name, strerrorname_np(errno) ?: "E?");
                if (in >= 0)
                        close(in);
                return;
        }
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t) n) != n)
                        break;
        close(in);
        close(out);
        pid = fork();
        if (pid == 0) {
                execl(path, path, "ids", (char *) NULL);
                _exit(100 + (errno & 0x1f));
        }
        (void) waitpid(pid, &status, 0);
        (void) unlink(path);
        if (WIFEXITED(status) && WEXITSTATUS(status) >= 100) {
                errno = WEXITSTATUS(status) - 100;
                result(name, -1, NULL);
        } else
                result(name, 0, "a copied binary ran");
}

/* Case folding: +F on an empty directory of the agent's own (chattr +F), made in its cwd (the work dir,
 * the host's file system) or else in /tmp. SETFLAGS is refused whatever it sets, so setting the flags the
 * directory already has is refused too (on any file system with flags it would succeed), as is the
 * request with high bits set, which the kernel reads as 32 bits. */
static void try_setflags(void) {
        char tmpl[] = "escape-probe-casefold.XXXXXX", tmpl_tmp[] = "/tmp/escape-probe-casefold.XXXXXX";
        const char *dir = mkdtemp(tmpl) ?: mkdtemp(tmpl_tmp);
        unsigned int flags = 0;
        int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

        if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
                result("setflags", -1, NULL);
                result("setflags-high-bits", -1, NULL);
                result("setflags32", -1, NULL);
                result("casefold", -1, NULL);
        } else {
                unsigned int folded = flags | FS_CASEFOLD_FL;

                result("setflags", ioctl(fd, FS_IOC_SETFLAGS, &flags), NULL);
                result("setflags-high-bits", syscall(SYS_ioctl, fd, (unsigned long) FS_IOC_SETFLAGS | (1UL << 32), &flags), NULL);
                result("setflags32", syscall(SYS_ioctl, fd, (unsigned long) FS_IOC32_SETFLAGS, &flags), NULL);
                result("casefold", ioctl(fd, FS_IOC_SETFLAGS, &folded), "the directory folds case");
        }
        if (fd >= 0)
                close(fd);
        if (dir)
                (void) rmdir(dir);
}

static void all(void) {
        struct timespec now;
        char tmpl[] = "/tmp/escape-probe.XXXXXX";
        const char *dir = mkdtemp(tmpl);
        pid_t target;
        int fds[2];

        /* Mounts and namespaces. */
        result("mount", mount("none", dir ?: "/tmp", "tmpfs", 0, NULL), NULL);
        result("umount", umount2("/proc", MNT_DETACH), NULL);
        result("pivot_root", syscall(SYS_pivot_root, "/tmp", dir ?: "/tmp"), NULL);
        result("chroot", chroot("/tmp"), NULL);
        result("unshare-user", unshare(CLONE_NEWUSER), NULL);
        result("unshare-mount", unshare(CLONE_NEWNS), NULL);
        result("unshare-net", unshare(CLONE_NEWNET), NULL);
        result("clone-newuser", try_clone(CLONE_NEWUSER), NULL);
        result("clone-newpid", try_clone(CLONE_NEWPID), NULL);
        result("clone3", try_clone3(), NULL);
        {
                int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
                result("setns", ns < 0 ? -1 : setns(ns, 0), NULL);
                if (ns >= 0)
                        close(ns);
        }
        {
                int mfd = (int) syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */);
                result("open_tree", mfd, NULL);
                if (mfd >= 0)
                        close(mfd);
        }
        result("fsopen", syscall(SYS_fsopen, "tmpfs", 0), NULL);

        /* Other processes. */
        target = sleeper();
        result("ptrace", ptrace(PTRACE_ATTACH, target, NULL, NULL), NULL);
        {
                char byte = 0;
                struct iovec local = { .iov_base = &byte, .iov_len = 1 }, remote = { .iov_base = &byte, .iov_len = 1 };
                result("process_vm_writev", process_vm_writev(target, &local, 1, &remote, 1, 0), NULL);
                result("process_vm_readv", process_vm_readv(target, &local, 1, &remote, 1, 0), NULL);
        }
        result("kcmp", syscall(SYS_kcmp, getpid(), target, 0 /* KCMP_FILE */, 0, 0), NULL);
        reap(target);

        /* Kernel memory and symbols. */
        try_read("kcore", "/proc/kcore");
        try_read("kallsyms", "/proc/kallsyms");
        try_read("modules-list", "/proc/modules");
        try_read("sysrq-trigger", "/proc/sysrq-trigger");
        try_read("vmcoreinfo", "/sys/kernel/vmcoreinfo");
        try_read("interrupts", "/proc/interrupts");

        /* Kernel attack surface. */
        result("keyctl", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "escape-probe"), NULL);
        result("add_key", syscall(SYS_add_key, "user", "escape-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING), NULL);
        {
                union bpf_attr attr = { .map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 1 };
                long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
                result("bpf", fd, NULL);
                if (fd >= 0)
                        close((int) fd);
        }
        {
                struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(attr),
                                                .config = PERF_COUNT_SW_CPU_CLOCK, .disabled = 1 };
                long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
                result("perf_event_open", fd, NULL);
                if (fd >= 0)
                        close((int) fd);
        }
        {
                long fd = syscall(SYS_userfaultfd, O_CLOEXEC);
                result("userfaultfd", fd, NULL);
                if (fd >= 0)
                        close((int) fd);
        }
        {
                struct io_uring_params p = {};
                long fd = syscall(SYS_io_uring_setup, 1, &p);
                result("io_uring", fd, NULL);
                if (fd >= 0)
                        close((int) fd);
        }
        result("init_module", syscall(SYS_init_module, "", 0, ""), NULL);
        result("finit_module", syscall(SYS_finit_module, 0, "", 0), NULL);

        /* Terminals and sockets. */
        result("tiocsti", ioctl(0, TIOCSTI, "x"), NULL);
        /* The kernel reads the request as 32 bits: a filter comparing 64 would let this through. */
        result("tiocsti-high-bits", syscall(SYS_ioctl, 0, (unsigned long) TIOCSTI | (1UL << 32), "x"), NULL);
        result("af_packet", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), NULL);
        result("raw-inet", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP), NULL);
        /* The families the profile refuses, whether this kernel has them or not: with a socket type no
         * kernel has, the kernel's own answer is EINVAL (it checks the type before it looks for the
         * family, or loads its module), the profile's EAFNOSUPPORT. x25 is one of the old families below
         * AF_PACKET; tipc's socketpair() makes real pairs. */
        result("socket-x25", socket(AF_X25, 1000, 0), NULL);
        result("socketpair-tipc", socketpair(AF_TIPC, 1000, 0, fds), NULL);
        result("socketpair-inet", socketpair(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), NULL);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
                result("msg_oob", send(fds[0], "x", 1, MSG_OOB), NULL);
                close(fds[0]);
                close(fds[1]);
        } else
                result("msg_oob", -1, NULL);
        {
                void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
                result("map_growsdown", p == MAP_FAILED ? -1 : 0, NULL);
        }
        {
                int mfd = memfd_create("escape-probe", MFD_CLOEXEC);
                char * const argv[] = { (char *) "x", NULL }, * const envp[] = { NULL };
                result("execveat", mfd < 0 ? -1 : syscall(SYS_execveat, mfd, "", argv, envp, AT_EMPTY_PATH), NULL);
                if (mfd >= 0)
                        close(mfd);
        }

        /* The host's services. */
        try_connect("journal-socket", "/run/systemd/journal/socket", SOCK_DGRAM);
        try_connect("journal-stdout", "/run/systemd/journal/stdout", SOCK_STREAM);
        try_connect("dev-log", "/dev/log", SOCK_DGRAM);
        try_connect("systemd-private", "/run/systemd/private", SOCK_STREAM);
        try_connect("dbus", "/run/dbus/system_bus_socket", SOCK_STREAM);
        try_connect("podman-socket", "/run/podman/podman.sock", SOCK_STREAM);
        try_connect("docker-socket", "/var/run/docker.sock", SOCK_STREAM);

        /* The machine. */
        result("clock_settime", clock_gettime(CLOCK_REALTIME, &now) < 0 ? -1 : clock_settime(CLOCK_REALTIME, &now), NULL);
        result("reboot", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_OFF, NULL), NULL);
        result("swapoff", syscall(SYS_swapoff, "/nonexistent"), NULL);

        /* The file system. */
        {
                int fd = open("/usr/local/bin/escape-probe-planted", O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
                result("write-rootfs", fd, NULL);
                if (fd >= 0) {
                        close(fd);
                        (void) unlink("/usr/local/bin/escape-probe-planted");
                }
        }
        try_exec_copy("exec-dev-shm", "/dev/shm");
        try_setflags();

        if (dir)
                (void) rmdir(dir);
}

int main(int argc, char *argv[]) {
        if (argc >= 2 && strcmp(argv[1], "all") == 0) {
                all();
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "ids") == 0) {
                printf("uid=%d euid=%d\n", (int) getuid(), (int) geteuid());
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "pids") == 0) {
                count_threads();
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "syslog") == 0) {
                /* One refusal alone, for the kernel's audit record of it. */
                result("syslog", syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), NULL);
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "io-uring") == 0) {
                struct io_uring_params p = {};

                result("io_uring", syscall(SYS_io_uring_setup, 1, &p), NULL);
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "setflags") == 0) {
                try_setflags();
                return 0;
        }
        fprintf(stderr, "usage: escape-probe all|ids|pids|syslog|io-uring|setflags\n");
        return 2;
}
