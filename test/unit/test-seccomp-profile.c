/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The seccomp workload profile: the JSON the engines get says exactly what the table says, on both
 * architectures, and the rules that are easy to get subtly wrong are what they must be. */

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io-util.h"
#include "json-util.h"
#include "macro.h"
#include "seccomp-profile.h"
#include "tap.h"

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;
        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v = get(o, key);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* Does one entry of the JSON match one row of the table, for arch? */
static bool entry_matches_rule(json_object *entry, const SeccompProfileRule *rule, uint32_t arch) {
        json_object *names = get(entry, "names"), *args = get(entry, "args"), *errno_ret = get(entry, "errnoRet");
        size_t i = 0;

        if (!names || !json_object_is_type(names, json_type_array) || !streq_ptr(get_str(entry, "action"), "SCMP_ACT_ERRNO"))
                return false;
        if (!errno_ret || json_object_get_int(errno_ret) != rule->errno_value)
                return false;
        for (const char * const *n = rule->names; *n; n++) {
                if (seccomp_syscall_resolve_name_arch(arch, *n) < 0)
                        continue;
                if (i >= json_object_array_length(names) ||
                    !streq_ptr(json_object_get_string(json_object_array_get_idx(names, i)), *n))
                        return false;
                i++;
        }
        if (i != json_object_array_length(names))
                return false;

        if (!rule->has_arg)
                return !args;
        if (!args || json_object_array_length(args) != 1)
                return false;
        json_object *a = json_object_array_get_idx(args, 0);
        return json_object_get_int(get(a, "index")) == (int) rule->arg_index &&
               json_object_get_uint64(get(a, "value")) == rule->value &&
               json_object_get_uint64(get(a, "valueTwo")) == rule->value_two &&
               streq_ptr(get_str(a, "op"), seccomp_compare_to_string(rule->op));
}

/* The entry that denies name with an argument condition on index (-1: none), or NULL. */
static json_object *find(json_object *profile, const char *name, int arg_index, uint64_t value) {
        json_object *syscalls = get(profile, "syscalls");

        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                json_object *e = json_object_array_get_idx(syscalls, i), *names = get(e, "names"), *args = get(e, "args");
                bool named = false;

                for (size_t j = 0; j < json_object_array_length(names); j++)
                        named = named || streq_ptr(json_object_get_string(json_object_array_get_idx(names, j)), name);
                if (!named)
                        continue;
                if (arg_index < 0 && !args)
                        return e;
                if (arg_index >= 0 && args) {
                        json_object *a = json_object_array_get_idx(args, 0);
                        if (json_object_get_int(get(a, "index")) == arg_index &&
                            json_object_get_uint64(get(a, "value")) == value)
                                return e;
                }
        }
        return NULL;
}

/* The ioctl entry refusing request (compared on the low 32 bits), or NULL. */
static json_object *find_ioctl(json_object *profile, uint64_t request) {
        json_object *syscalls = get(profile, "syscalls");

        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                json_object *e = json_object_array_get_idx(syscalls, i), *args = get(e, "args");
                json_object *a = args ? json_object_array_get_idx(args, 0) : NULL;

                if (a && streq_ptr(json_object_get_string(json_object_array_get_idx(get(e, "names"), 0)), "ioctl") &&
                    json_object_get_uint64(get(a, "value")) == UINT64_C(0xffffffff) &&
                    json_object_get_uint64(get(a, "valueTwo")) == request &&
                    streq_ptr(get_str(a, "op"), "SCMP_CMP_MASKED_EQ"))
                        return e;
        }
        return NULL;
}

static int errno_of(json_object *entry) {
        return entry ? json_object_get_int(get(entry, "errnoRet")) : -1;
}

static void check_arch(uint32_t arch) {
        _cleanup_(json_object_putp) json_object *profile = NULL;
        _cleanup_free_ char *s = NULL;
        const char *an = seccomp_profile_arch_to_string(arch);
        const SeccompProfileRule *rules;
        json_object *syscalls, *archs;
        size_t n, k = 0;
        bool all_match = true;

        ok(seccomp_profile_to_string(arch, &s) == 0, "%s: the profile is built", an);
        profile = json_tokener_parse(s ?: "");
        ok(profile != NULL, "%s: the profile is valid JSON", an);
        is_str(get_str(profile, "defaultAction"), "SCMP_ACT_ALLOW", "%s: calls not in the table are allowed", an);
        archs = get(profile, "architectures");
        ok(archs && json_object_array_length(archs) == 1 &&
           streq_ptr(json_object_get_string(json_object_array_get_idx(archs, 0)), seccomp_profile_arch_to_engine(arch)),
           "%s: the native architecture is the only one listed (other ABIs are killed)", an);

        /* The JSON against the table: one entry per row that has a call on arch, in order. */
        rules = seccomp_workload_rules(&n);
        syscalls = get(profile, "syscalls");
        for (size_t i = 0; i < n; i++) {
                bool any = false;
                for (const char * const *name = rules[i].names; *name; name++)
                        any = any || seccomp_syscall_resolve_name_arch(arch, *name) >= 0;
                if (!any)
                        continue;
                if (k >= json_object_array_length(syscalls) ||
                    !entry_matches_rule(json_object_array_get_idx(syscalls, k), &rules[i], arch)) {
                        printf("# row %zu (%s) does not match entry %zu\n", i, rules[i].names[0], k);
                        all_match = false;
                }
                k++;
        }
        ok(all_match, "%s: every row of the table is one entry with its calls, errno and argument", an);
        is_int(json_object_array_length(syscalls), k, "%s: and there is no entry the table does not have", an);

        /* The rules that matter most, stated once more on their own. */
        is_int(errno_of(find(profile, "mount", -1, 0)), EPERM, "%s: mount is denied (EPERM)", an);
        is_int(errno_of(find(profile, "pivot_root", -1, 0)), EPERM, "%s: pivot_root is denied", an);
        is_int(errno_of(find(profile, "clone3", -1, 0)), ENOSYS, "%s: clone3 fails with ENOSYS (glibc falls back to clone)", an);
        is_int(errno_of(find(profile, "unshare", 0, CLONE_NEWUSER)), EPERM, "%s: unshare(CLONE_NEWUSER) is denied", an);
        is_int(errno_of(find(profile, "clone", 0, CLONE_NEWNS)), EPERM, "%s: clone(CLONE_NEWNS) is denied", an);
        ok(!find(profile, "clone", -1, 0), "%s: a plain clone (fork, threads) stays allowed", an);
        ok(!find(profile, "clone", 0, 0x80) && find(profile, "unshare", 0, 0x80),
           "%s: CLONE_NEWTIME is checked on unshare only (it is part of clone's exit signal)", an);
        is_int(errno_of(find(profile, "ioctl", 1, UINT64_C(0xffffffff))), EPERM,
               "%s: the ioctl rules compare the low 32 bits only (the kernel's request is an unsigned int)", an);
        is_int(errno_of(find_ioctl(profile, FS_IOC_SETFLAGS)), EPERM,
               "%s: FS_IOC_SETFLAGS is denied (chattr +F would make a directory fold case)", an);
        is_int(errno_of(find_ioctl(profile, FS_IOC32_SETFLAGS)), EPERM, "%s: ...and so is FS_IOC32_SETFLAGS", an);
        {
                json_object *e = find(profile, "socket", 0, 17);
                is_int(errno_of(e), EAFNOSUPPORT, "%s: socket families from 17 (AF_PACKET) fail with EAFNOSUPPORT", an);
                is_str(e ? get_str(json_object_array_get_idx(get(e, "args"), 0), "op") : NULL, "SCMP_CMP_GE",
                       "%s: ...compared with >=, so a family with high bits set is refused too", an);
        }
        is_int(errno_of(find(profile, "sendmsg", 2, MSG_OOB)), EOPNOTSUPP, "%s: sendmsg with MSG_OOB fails with EOPNOTSUPP", an);
        is_int(errno_of(find(profile, "recvfrom", 3, MSG_OOB)), EOPNOTSUPP, "%s: recvfrom with MSG_OOB fails with EOPNOTSUPP", an);
        is_int(errno_of(find(profile, "mmap", 3, MAP_GROWSDOWN)), EPERM, "%s: mmap with MAP_GROWSDOWN is denied", an);
        is_int(errno_of(find(profile, "io_uring_setup", -1, 0)), EPERM, "%s: io_uring_setup is denied", an);
        is_int(errno_of(find(profile, "ptrace", -1, 0)), EPERM, "%s: ptrace is denied", an);
        is_int(errno_of(find(profile, "keyctl", -1, 0)), EPERM, "%s: keyctl is denied", an);

        /* What the security gate and `loop seal` need inside the container is never denied outright. */
        ok(!find(profile, "seccomp", -1, 0) && !find(profile, "ioctl", -1, 0) && !find(profile, "openat2", -1, 0) &&
           !find(profile, "pidfd_open", -1, 0) && !find(profile, "prctl", -1, 0) &&
           !find(profile, "landlock_create_ruleset", -1, 0) && !find(profile, "landlock_restrict_self", -1, 0),
           "%s: seccomp, ioctl, openat2, pidfd_open, prctl and landlock stay allowed", an);
}

/* Chrome's profile: the workload profile less exactly what Chrome's namespace sandbox needs. */
static void check_chrome(uint32_t arch) {
        _cleanup_(json_object_putp) json_object *profile = NULL, *workload = NULL;
        const char *an = seccomp_profile_arch_to_string(arch);

        ok(seccomp_profile_json_chrome(arch, &profile) >= 0 && seccomp_profile_json(arch, &workload) >= 0,
           "%s: Chrome's profile is built", an);
        ok(!find(profile, "clone", 0, CLONE_NEWUSER) && !find(profile, "unshare", 0, CLONE_NEWUSER) &&
           !find(profile, "clone", 0, CLONE_NEWPID) && !find(profile, "clone", 0, CLONE_NEWNET),
           "%s: Chrome may make a user namespace with new PID and network namespaces (its sandbox)", an);
        {
                json_object *e = find(profile, "mount", -1, 0), *names = get(e, "names");
                bool chroot_denied = false;
                for (size_t j = 0; j < json_object_array_length(names); j++)
                        chroot_denied = chroot_denied || streq_ptr(json_object_get_string(json_object_array_get_idx(names, j)), "chroot");
                ok(e && !chroot_denied, "%s: Chrome may chroot (into its sandbox's empty dir), not mount", an);
        }
        is_int(errno_of(find(profile, "clone", 0, CLONE_NEWNS)), EPERM, "%s: Chrome may not make a mount namespace", an);
        is_int(errno_of(find(profile, "setns", -1, 0)), EPERM, "%s: nor join other namespaces", an);
        is_int(errno_of(find(profile, "ptrace", -1, 0)), EPERM, "%s: nor ptrace", an);
        is_int(json_object_array_length(get(profile, "syscalls")), json_object_array_length(get(workload, "syscalls")) - 3,
               "%s: three rules fewer than the workload profile, nothing else", an);
}

int main(void) {
        const SeccompProfileRule *rules;
        uint32_t arch;
        size_t n;
        bool all_known = true;

        rules = seccomp_workload_rules(&n);
        for (size_t i = 0; i < n; i++)
                for (const char * const *name = rules[i].names; *name; name++) {
                        /* libseccomp resolves every call it knows, on any architecture, to a number
                         * (a negative pseudo one where it is absent); a typo resolves to nothing. */
                        if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, *name) == __NR_SCMP_ERROR &&
                            seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, *name) == __NR_SCMP_ERROR) {
                                printf("# unknown system call '%s'\n", *name);
                                all_known = false;
                        }
                }
        ok(all_known, "every name in the table is a system call libseccomp knows");

        ok(seccomp_profile_arch_from_string("x86_64", &arch) == 0 && arch == SCMP_ARCH_X86_64, "x86_64 is known");
        ok(seccomp_profile_arch_from_string("arm64", &arch) == 0 && arch == SCMP_ARCH_AARCH64, "arm64 means aarch64");
        ok(seccomp_profile_arch_from_string("s390x", &arch) == -EINVAL, "an architecture without a profile is refused");

        check_arch(SCMP_ARCH_X86_64);
        check_arch(SCMP_ARCH_AARCH64);
        check_chrome(SCMP_ARCH_X86_64);
        check_chrome(SCMP_ARCH_AARCH64);
        {
                _cleanup_(json_object_putp) json_object *x = NULL, *a = NULL;
                ok(seccomp_profile_json(SCMP_ARCH_X86_64, &x) == 0 && seccomp_profile_json(SCMP_ARCH_AARCH64, &a) == 0 &&
                   find(x, "ioperm", -1, 0) && !find(a, "ioperm", -1, 0),
                   "a call the architecture lacks (ioperm on aarch64) is left out there");
        }

        /* What `loop profile seccomp` prints is the same profile. */
        if (getenv("LOOP_BIN")) {
                _cleanup_(json_object_putp) json_object *want = NULL, *got = NULL;
                _cleanup_free_ char *cmd = NULL, *text = NULL;
                size_t size = 0;
                FILE *f;

                ok(asprintf(&cmd, "'%s' profile seccomp --arch aarch64", getenv("LOOP_BIN")) > 0 && (f = popen(cmd, "r")) &&
                   getdelim(&text, &size, 0, f) > 0 && pclose(f) == 0, "loop profile seccomp --arch aarch64 runs");
                got = json_tokener_parse(text ?: "");
                ok(seccomp_profile_json(SCMP_ARCH_AARCH64, &want) == 0 && got && json_object_equal(want, got),
                   "...and prints the table's aarch64 profile");
                free(text);
                text = NULL;
                free(cmd);
                ok(asprintf(&cmd, "'%s' profile seccomp --arch sparc 2>/dev/null", getenv("LOOP_BIN")) > 0 && (f = popen(cmd, "r")) &&
                   pclose(f) != 0, "an unknown --arch is an error");
        }

        /* What the engines get. */
        if (seccomp_profile_arch_native(&arch) == 0) {
                _cleanup_free_ char *docker = NULL, *podman = NULL, *json = NULL, *written = NULL, *path = NULL, *none = NULL;
                char dir[] = "/tmp/test-seccomp-profile.XXXXXX";
                struct stat st;

                ok(seccomp_profile_to_string(arch, &json) == 0, "the native profile is built");
                ok(seccomp_profile_security_opt(ENGINE_DOCKER, NULL, &docker) == 0 &&
                   strncmp(docker, "seccomp=", 8) == 0 && streq_ptr(docker + 8, json),
                   "Docker gets the profile inline: seccomp=<JSON>");
                ok(mkdtemp(dir) != NULL, "a scratch dir");
                ok(seccomp_profile_security_opt(ENGINE_PODMAN, dir, &podman) == 0 && asprintf(&path, "%s/%s", dir, SECCOMP_PROFILE_FILENAME) > 0 &&
                   strncmp(podman, "seccomp=", 8) == 0 && streq_ptr(podman + 8, path),
                   "Podman gets seccomp=<path> (its compat API opens the value as a file)");
                ok(read_full_file_at(AT_FDCWD, path, 1 << 20, true, &written, NULL) == 0 && streq_ptr(written, json),
                   "...and the file holds the same profile");
                ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644, "...readable by the engine, writable by its owner only");
                ok(seccomp_profile_security_opt(ENGINE_PODMAN, NULL, &none) == -EINVAL,
                   "Podman without a directory for the file is an error, not an unconfined container");
                (void) unlink(path);
                (void) rmdir(dir);
        }

        /* The logged copy `loop seal` loads: the same verdicts, in a child (a filter is for life). */
        if (seccomp_profile_arch_native(&arch) == 0) {
                int pipefd[2];
                pid_t pid;
                char res[6] = "?????";

                ok(pipe2(pipefd, O_CLOEXEC) == 0, "a pipe for the child's results");
                pid = fork();
                if (pid == 0) {
                        bool logged = false;
                        char out[6];

                        (void) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                        out[0] = seccomp_profile_load_logged(&logged) == 0 ? 'L' : 'x';
                        out[1] = logged ? 'G' : 'x';
                        out[2] = syscall(SYS_syslog, 10, NULL, 0) < 0 && errno == EPERM ? 'S' : 'x';
                        out[3] = unshare(CLONE_NEWUSER) < 0 && errno == EPERM ? 'U' : 'x';
                        out[4] = socket(AF_PACKET, SOCK_RAW, 0) < 0 && errno == EAFNOSUPPORT && getpid() > 0 ? 'P' : 'x';
                        out[5] = syscall(SYS_clone3, NULL, 0) < 0 && errno != ENOSYS ? 'C' : 'x';
                        (void) !write(pipefd[1], out, sizeof out);
                        _exit(0);
                }
                close(pipefd[1]);
                ok(pid > 0 && read(pipefd[0], res, 6) == 6 && waitpid(pid, NULL, 0) == pid, "the child reports");
                close(pipefd[0]);
                ok(res[0] == 'L', "seccomp_profile_load_logged() loads the profile as a filter");
                ok(res[1] == 'G', "...with SECCOMP_FILTER_FLAG_LOG, so the kernel logs its refusals");
                ok(res[2] == 'S', "...syslog is refused with EPERM");
                ok(res[3] == 'U', "...unshare(CLONE_NEWUSER) with EPERM (an argument rule)");
                ok(res[4] == 'P', "...AF_PACKET with EAFNOSUPPORT, and what is not listed still works");
                ok(res[5] == 'C', "...but clone3, which libc tries on every new thread, is left to the engine's unlogged copy");
        }

        /* The address families, decided by the loaded filter itself: with a socket type no kernel has, a
         * call the filter lets through fails with the kernel's EINVAL (it checks the type before it looks
         * for the family, so before any module is loaded), one the filter refuses with its EAFNOSUPPORT. */
        if (seccomp_profile_arch_native(&arch) == 0) {
                enum { FAMILIES = 46 };         /* AF_MAX of Linux 6.x; the kernel refuses any above itself */
                char got[2 * FAMILIES + 1] = { 0 }, want[2 * FAMILIES + 1] = { 0 };
                int pipefd[2];
                pid_t pid;

                for (int f = 0; f < FAMILIES; f++) {
                        bool allowed = f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;

                        want[f] = allowed ? 'i' : 'A';
                        want[FAMILIES + f] = f == AF_UNIX ? 'i' : 'A';
                }
                ok(pipe2(pipefd, O_CLOEXEC) == 0, "a pipe for the child's results (address families)");
                pid = fork();
                if (pid == 0) {
                        char out[2 * FAMILIES];

                        (void) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                        if (seccomp_profile_load_logged(NULL) < 0)
                                _exit(1);
                        for (int f = 0; f < FAMILIES; f++) {
                                int fds[2];

                                errno = 0;
                                out[f] = socket(f, 1000, 0) < 0 ? (errno == EINVAL ? 'i' : errno == EAFNOSUPPORT ? 'A' : '?') : '+';
                                errno = 0;
                                out[FAMILIES + f] = socketpair(f, 1000, 0, fds) < 0 ?
                                        (errno == EINVAL ? 'i' : errno == EAFNOSUPPORT ? 'A' : '?') : '+';
                        }
                        (void) !write(pipefd[1], out, sizeof out);
                        _exit(0);
                }
                close(pipefd[1]);
                ok(pid > 0 && read(pipefd[0], got, 2 * FAMILIES) == 2 * FAMILIES && waitpid(pid, NULL, 0) == pid,
                   "the child reports the families");
                close(pipefd[0]);
                got[2 * FAMILIES] = want[2 * FAMILIES] = 0;
                {
                        char g[FAMILIES + 1] = { 0 }, w[FAMILIES + 1] = { 0 };

                        memcpy(g, got, FAMILIES);
                        memcpy(w, want, FAMILIES);
                        is_str(g, w, "socket() gets AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only: every other family, "
                               "the old ones below AF_PACKET too, fails with EAFNOSUPPORT (family by family, i: let through)");
                        memcpy(g, got + FAMILIES, FAMILIES);
                        memcpy(w, want + FAMILIES, FAMILIES);
                        is_str(g, w, "socketpair() gets AF_UNIX only: it creates sockets of any other family as socket() "
                               "does (tipc's are real pairs), so every other fails with EAFNOSUPPORT");
                }
        }

        return done_testing();
}
