/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/kcmp.h>
#include <linux/watch_queue.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "seccomp-profile.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The address families an agent gets: AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, no other. socket() is
 * refused every family from AF_PACKET up (the raw and exotic ones: packet, bluetooth, can, tipc, vsock,
 * alg, xdp, ..., where most of the socket bugs of the last decade were) and each of the old ones below it
 * (ax25, ipx, appletalk, netrom, bridge, atmpvc, x25, rose, decnet, netbeui, security, key: modules a
 * distribution kernel loads on the first socket() of their family, for anyone); socketpair() every family
 * but AF_UNIX (it creates its sockets as socket() does, module load included, and tipc's are real
 * pairs). EAFNOSUPPORT: what a kernel without the family says. */
#define SECCOMP_SOCKET_FAMILY_FIRST_DENIED 17U
#define SOCKET_FAMILY_WHY "address families other than unix, inet, inet6 and netlink"

/* ioctl's request is an unsigned int in the kernel: the filter compares the low 32 bits only, or a
 * request with high bits set would pass the filter and still be TIOCSTI to the kernel. */
#define IOCTL_REQUEST_MASK UINT64_C(0xffffffff)

#define NAMES(...) ((const char * const[]) { __VA_ARGS__, NULL })

#define DENY(err, why, ...) \
        { .names = NAMES(__VA_ARGS__), .errno_value = (err), .comment = (why) }
/* Denied when (argument idx & bits) == bits: any of those flags set. */
#define DENY_FLAG(err, why, idx, bits, ...)                                                     \
        { .names = NAMES(__VA_ARGS__), .errno_value = (err), .has_arg = true, .arg_index = (idx), \
          .op = SCMP_CMP_MASKED_EQ, .value = (bits), .value_two = (bits), .comment = (why) }
#define DENY_IOCTL(request, why)                                                                \
        { .names = NAMES("ioctl"), .errno_value = EPERM, .has_arg = true, .arg_index = 1,       \
          .op = SCMP_CMP_MASKED_EQ, .value = IOCTL_REQUEST_MASK, .value_two = (request), .comment = (why) }

#define NS_WHY "new namespaces: the container's own are all the agent gets"

/* socket() with a family below SECCOMP_SOCKET_FAMILY_FIRST_DENIED that the agent does not get. */
#define DENY_SOCKET_FAMILY(family)                                                                 \
        { .names = NAMES("socket"), .errno_value = EAFNOSUPPORT, .has_arg = true, .arg_index = 0, \
          .op = SCMP_CMP_EQ, .value = (family), .comment = SOCKET_FAMILY_WHY }

static const SeccompProfileRule workload_rules[] = {
        DENY(EPERM, "mounts and the new mount API: the container's file system view is fixed",
             "mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
             "fsconfig", "fsmount", "fspick", "mount_setattr"),
        DENY(EPERM, "joining other namespaces", "setns"),
        DENY(EPERM, "file handles bypass path-based checks (the shocker escape)",
             "open_by_handle_at", "name_to_handle_at"),
        /* One rule per flag: the conditions of one rule are ANDed. */
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWNS, "clone", "unshare"),
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWCGROUP, "clone", "unshare"),
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWUTS, "clone", "unshare"),
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWIPC, "clone", "unshare"),
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWUSER, "clone", "unshare"),
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWPID, "clone", "unshare"),
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWNET, "clone", "unshare"),
        /* For clone() the same bit is part of the exit signal, so only unshare() is checked for it. */
        DENY_FLAG(EPERM, NS_WHY, 0, CLONE_NEWTIME, "unshare"),
        /* Its flags are in memory a filter cannot read; ENOSYS makes glibc fall back to clone(). */
        DENY(ENOSYS, "clone3 hides its flags from seccomp; callers fall back to clone", "clone3"),
        DENY(EPERM, "kernel modules and kexec",
             "init_module", "finit_module", "delete_module", "create_module", "query_module",
             "get_kernel_syms", "kexec_load", "kexec_file_load"),
        DENY(EPERM, "bpf programs and maps", "bpf"),
        DENY(EPERM, "io_uring bypasses seccomp and the gate for the calls it performs",
             "io_uring_setup", "io_uring_enter", "io_uring_register"),
        DENY(EPERM, "userfaultfd: a tool to win kernel races", "userfaultfd"),
        DENY(EPERM, "perf events: kernel address and side-channel exposure", "perf_event_open"),
        /* ENOSYS: runtimes (Go, Rust, coreutils) fall back to read and write on it. */
        DENY(ENOSYS, "pipe buffer exploitation (dirty pipe class)", "splice", "tee", "vmsplice"),
        DENY(EPERM, "other processes' memory and state",
             "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise"),
        /* All but KCMP_VM (whether two tasks share an address space), which the gate's supervisor needs to
         * find who can change an exec's arguments (gate-mm.h); the gate refuses the agent kcmp entirely. */
        { .names = NAMES("kcmp"), .errno_value = EPERM, .has_arg = true, .arg_index = 2,
          .op = SCMP_CMP_NE, .value = KCMP_VM, .comment = "other processes' memory and state" },
        DENY(EPERM, "execveat runs memfds and fds the gate cannot name", "execveat"),
        DENY(EPERM, "kernel keyrings", "add_key", "request_key", "keyctl"),
        DENY(EPERM, "System V IPC",
             "ipc", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
             "shmget", "shmat", "shmdt", "shmctl"),
        DENY(EPERM, "POSIX message queues (mq_notify use-after-free class)",
             "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
        DENY_FLAG(EOPNOTSUPP, "MSG_OOB (AF_UNIX use-after-free class)", 3, MSG_OOB,
                  "send", "sendto", "recv", "recvfrom", "sendmmsg", "recvmmsg"),
        DENY_FLAG(EOPNOTSUPP, "MSG_OOB (AF_UNIX use-after-free class)", 2, MSG_OOB, "sendmsg", "recvmsg"),
        DENY_IOCTL(TIOCSTI, "TIOCSTI: typing into the terminal of whoever reads it"),
        DENY_IOCTL(TIOCLINUX, "TIOCLINUX: console selection and injection"),
        DENY_IOCTL(TIOCSETD, "TIOCSETD: line disciplines (a long series of kernel bugs)"),
        DENY_IOCTL(SIOCATMARK, "SIOCATMARK: out-of-band data (AF_UNIX use-after-free class)"),
        DENY_IOCTL(IOC_WATCH_QUEUE_SET_SIZE, "watch queues"),
        DENY_IOCTL(IOC_WATCH_QUEUE_SET_FILTER, "watch queues"),
        DENY_IOCTL(FS_IOC_FIEMAP, "FIEMAP discloses physical block offsets"),
        /* The flags are behind a pointer, out of a filter's sight, so SETFLAGS is refused whatever it
         * sets: +F (FS_CASEFOLD_FL) on an empty directory of the agent's makes the names in it match
         * ignoring case, and every name the gate and the tripwire compare byte for byte (.git/hooks,
         * .env) could be passed by another spelling. The xflags calls (FS_IOC_FSSETXATTR, file_setattr)
         * cannot set it: their flags map to the common ones only. */
        DENY_IOCTL(FS_IOC_SETFLAGS, "SETFLAGS: +F makes a directory fold case (chattr)"),
        DENY_IOCTL(FS_IOC32_SETFLAGS, "SETFLAGS: +F makes a directory fold case (chattr)"),
        /* A family with high bits set (the kernel reads an int) is >= 17 as 64 bits: refused. */
        { .names = NAMES("socket"), .errno_value = EAFNOSUPPORT, .has_arg = true, .arg_index = 0,
          .op = SCMP_CMP_GE, .value = SECCOMP_SOCKET_FAMILY_FIRST_DENIED,
          .comment = "address families from AF_PACKET up: raw and exotic sockets" },
        DENY_SOCKET_FAMILY(AF_UNSPEC), DENY_SOCKET_FAMILY(AF_AX25), DENY_SOCKET_FAMILY(AF_IPX),
        DENY_SOCKET_FAMILY(AF_APPLETALK), DENY_SOCKET_FAMILY(AF_NETROM), DENY_SOCKET_FAMILY(AF_BRIDGE),
        DENY_SOCKET_FAMILY(AF_ATMPVC), DENY_SOCKET_FAMILY(AF_X25), DENY_SOCKET_FAMILY(AF_ROSE),
        DENY_SOCKET_FAMILY(AF_DECnet), DENY_SOCKET_FAMILY(AF_NETBEUI), DENY_SOCKET_FAMILY(AF_SECURITY),
        DENY_SOCKET_FAMILY(AF_KEY),
        { .names = NAMES("socketpair"), .errno_value = EAFNOSUPPORT, .has_arg = true, .arg_index = 0,
          .op = SCMP_CMP_NE, .value = AF_UNIX, .comment = SOCKET_FAMILY_WHY },
        DENY_FLAG(EPERM, "MAP_GROWSDOWN (stack guard gap class)", 3, MAP_GROWSDOWN, "mmap"),
        DENY(EPERM, "setting the clock",
             "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime"),
        DENY(EPERM, "reboot, swap, accounting, quotas", "reboot", "swapon", "swapoff", "acct", "quotactl",
             "quotactl_fd"),
        DENY(EPERM, "port I/O and the LDT", "ioperm", "iopl", "modify_ldt"),
        DENY(EPERM, "the kernel log", "syslog"),
        DENY(EPERM, "file system wide notification", "fanotify_init"),
        DENY(EPERM, "obsolete calls nobody needs",
             "vhangup", "lookup_dcookie", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl",
             "remap_file_pages", "vm86", "vm86old"),
};

const SeccompProfileRule *seccomp_workload_rules(size_t *ret_n) {
        *ret_n = ELEMENTSOF(workload_rules);
        return workload_rules;
}

static const struct {
        const char *name;
        const char *alias;
        uint32_t arch;
        const char *engine;
} arches[] = {
        { "x86_64",  "amd64", SCMP_ARCH_X86_64,  "SCMP_ARCH_X86_64" },
        { "aarch64", "arm64", SCMP_ARCH_AARCH64, "SCMP_ARCH_AARCH64" },
};

int seccomp_profile_arch_from_string(const char *s, uint32_t *ret) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(arches); i++)
                if (streq(s, arches[i].name) || streq(s, arches[i].alias)) {
                        *ret = arches[i].arch;
                        return 0;
                }
        return -EINVAL;
}

const char *seccomp_profile_arch_to_string(uint32_t arch) {
        for (size_t i = 0; i < ELEMENTSOF(arches); i++)
                if (arches[i].arch == arch)
                        return arches[i].name;
        return NULL;
}

const char *seccomp_profile_arch_to_engine(uint32_t arch) {
        for (size_t i = 0; i < ELEMENTSOF(arches); i++)
                if (arches[i].arch == arch)
                        return arches[i].engine;
        return NULL;
}

int seccomp_profile_arch_native(uint32_t *ret) {
        uint32_t a = seccomp_arch_native();

        if (!seccomp_profile_arch_to_string(a))
                return -EOPNOTSUPP;
        *ret = a;
        return 0;
}

const char *seccomp_compare_to_string(enum scmp_compare op) {
        switch (op) {
        case SCMP_CMP_NE:        return "SCMP_CMP_NE";
        case SCMP_CMP_LT:        return "SCMP_CMP_LT";
        case SCMP_CMP_LE:        return "SCMP_CMP_LE";
        case SCMP_CMP_EQ:        return "SCMP_CMP_EQ";
        case SCMP_CMP_GE:        return "SCMP_CMP_GE";
        case SCMP_CMP_GT:        return "SCMP_CMP_GT";
        case SCMP_CMP_MASKED_EQ: return "SCMP_CMP_MASKED_EQ";
        default:                 return NULL;
        }
}

/* What Chrome's own sandbox needs that the workload profile refuses: a user namespace with new PID and
 * network namespaces (its namespace sandbox), and chroot() inside it (into an empty directory). The rest
 * of the table, mounts and the other namespaces included, holds for Chrome too. */
static bool chrome_sandbox_needs(const SeccompProfileRule *rule) {
        return rule->has_arg && rule->op == SCMP_CMP_MASKED_EQ && streq(rule->comment, NS_WHY) &&
               (rule->value == CLONE_NEWUSER || rule->value == CLONE_NEWPID || rule->value == CLONE_NEWNET);
}

/* One "syscalls" entry, or NULL in *ret when none of the rule's calls exists on arch. */
static int rule_to_json(const SeccompProfileRule *rule, uint32_t arch, bool chrome, json_object **ret) {
        _cleanup_(json_object_putp) json_object *entry = NULL, *names = json_object_new_array();
        int r;

        if (!names)
                return -ENOMEM;
        for (const char * const *n = rule->names; *n; n++)
                /* libseccomp knows every call of every architecture; those arch lacks resolve to a
                 * negative pseudo number. */
                if (seccomp_syscall_resolve_name_arch(arch, *n) >= 0 && !(chrome && streq(*n, "chroot")) &&
                    (r = json_push(names, json_object_new_string(*n))) < 0)
                        return r;
        if (json_object_array_length(names) == 0) {
                *ret = NULL;
                return 0;
        }

        entry = json_object_new_object();
        if (!entry)
                return -ENOMEM;
        if ((r = json_add(entry, "names", TAKE_PTR(names))) < 0 ||
            (r = json_add(entry, "action", json_object_new_string("SCMP_ACT_ERRNO"))) < 0 ||
            (r = json_add(entry, "errnoRet", json_object_new_int(rule->errno_value))) < 0)
                return r;
        if (rule->has_arg) {
                _cleanup_(json_object_putp) json_object *args = json_object_new_array(), *a = json_object_new_object();
                const char *op = seccomp_compare_to_string(rule->op);

                if (!args || !a)
                        return -ENOMEM;
                if (!op)
                        return -EINVAL;
                if ((r = json_add(a, "index", json_object_new_int((int) rule->arg_index))) < 0 ||
                    (r = json_add(a, "value", json_object_new_uint64(rule->value))) < 0 ||
                    (r = json_add(a, "valueTwo", json_object_new_uint64(rule->value_two))) < 0 ||
                    (r = json_add(a, "op", json_object_new_string(op))) < 0 ||
                    (r = json_push(args, TAKE_PTR(a))) < 0 ||
                    (r = json_add(entry, "args", TAKE_PTR(args))) < 0)
                        return r;
        }
        if (rule->comment && (r = json_add(entry, "comment", json_object_new_string(rule->comment))) < 0)
                return r;

        *ret = TAKE_PTR(entry);
        return 0;
}

static int profile_json(uint32_t arch, bool chrome, json_object **ret) {
        _cleanup_(json_object_putp) json_object *profile = json_object_new_object(), *archs = NULL, *syscalls = NULL;
        const char *engine_arch = seccomp_profile_arch_to_engine(arch);
        int r;

        if (!engine_arch)
                return -EOPNOTSUPP;
        if (!profile || !(archs = json_object_new_array()) || !(syscalls = json_object_new_array()))
                return -ENOMEM;

        for (size_t i = 0; i < ELEMENTSOF(workload_rules); i++) {
                json_object *entry;

                if (chrome && chrome_sandbox_needs(&workload_rules[i]))
                        continue;
                r = rule_to_json(&workload_rules[i], arch, chrome, &entry);
                if (r < 0)
                        return r;
                if (entry && (r = json_push(syscalls, entry)) < 0)
                        return r;
        }

        if ((r = json_push(archs, json_object_new_string(engine_arch))) < 0 ||
            (r = json_add(profile, "defaultAction", json_object_new_string("SCMP_ACT_ALLOW"))) < 0 ||
            (r = json_add(profile, "architectures", TAKE_PTR(archs))) < 0 ||
            (r = json_add(profile, "syscalls", TAKE_PTR(syscalls))) < 0)
                return r;

        *ret = TAKE_PTR(profile);
        return 0;
}

int seccomp_profile_json(uint32_t arch, json_object **ret) {
        return profile_json(arch, false, ret);
}

int seccomp_profile_json_chrome(uint32_t arch, json_object **ret) {
        return profile_json(arch, true, ret);
}

static int profile_to_string(uint32_t arch, bool chrome, char **ret) {
        _cleanup_(json_object_putp) json_object *profile = NULL;
        const char *s;
        char *copy;
        int r;

        r = profile_json(arch, chrome, &profile);
        if (r < 0)
                return r;
        s = json_object_to_json_string_ext(profile, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s || !(copy = strdup(s)))
                return -ENOMEM;
        *ret = copy;
        return 0;
}

int seccomp_profile_to_string(uint32_t arch, char **ret) {
        return profile_to_string(arch, false, ret);
}

static int security_opt(EngineKind engine, const char *dir, bool chrome, char **ret) {
        _cleanup_free_ char *json = NULL, *path = NULL;
        uint32_t arch;
        char *opt;
        int r;

        r = seccomp_profile_arch_native(&arch);
        if (r < 0)
                return log_debug_errno(r, "No seccomp workload profile for this architecture.");
        r = profile_to_string(arch, chrome, &json);
        if (r < 0)
                return r;

        if (engine == ENGINE_DOCKER) {
                if (asprintf(&opt, "seccomp=%s", json) < 0)
                        return -ENOMEM;
                *ret = opt;
                return 0;
        }

        if (!dir || dir[0] != '/')
                return -EINVAL;
        if (asprintf(&path, "%s/%s", dir, chrome ? SECCOMP_CHROME_PROFILE_FILENAME : SECCOMP_PROFILE_FILENAME) < 0)
                return -ENOMEM;
        r = write_file_atomic(path, json, strlen(json), 0644);
        if (r < 0)
                return log_debug_errno(r, "Failed to write %s: %m", path);
        if (asprintf(&opt, "seccomp=%s", path) < 0)
                return -ENOMEM;
        *ret = opt;
        return 0;
}

int seccomp_profile_security_opt(EngineKind engine, const char *dir, char **ret) {
        return security_opt(engine, dir, false, ret);
}

int seccomp_profile_security_opt_chrome(EngineKind engine, const char *dir, char **ret) {
        return security_opt(engine, dir, true, ret);
}

int seccomp_profile_load_logged(bool *ret_log) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        uint32_t arch;
        bool logged;
        int r;

        r = seccomp_profile_arch_native(&arch);
        if (r < 0)
                return r;
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        /* Other ABIs are not listed in the engine's copy either: a call through one kills the process. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return r;
        /* A kernel without it (before 4.14) still gets the filter, without the log. */
        logged = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1) >= 0;
        /* A binary tree over the call numbers instead of a list: the calls with argument rules (ioctl,
         * mmap, socket, send and recv, clone) are the ones the kernel's verdict cache cannot skip, and
         * they would otherwise walk past every rule before theirs. */
        (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

        for (size_t i = 0; i < ELEMENTSOF(workload_rules); i++) {
                const SeccompProfileRule *rule = &workload_rules[i];
                struct scmp_arg_cmp cmp = {
                        .arg = rule->arg_index,
                        .op = rule->op,
                        .datum_a = rule->value,
                        .datum_b = rule->value_two,
                };

                /* An ENOSYS rule hides a call that libc and runtimes try first and fall back from (clone3 on
                 * every new thread, splice): logged, it would write a record per thread or copy. The
                 * engine's copy still refuses it, unlogged. */
                if (rule->errno_value == ENOSYS)
                        continue;
                for (const char * const *n = rule->names; *n; n++) {
                        int nr = seccomp_syscall_resolve_name(*n);

                        if (nr < 0)
                                continue;       /* not a call of this architecture, as in the JSON */
                        r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((uint32_t) rule->errno_value), nr,
                                                   rule->has_arg ? 1 : 0, rule->has_arg ? &cmp : NULL);
                        if (r < 0)
                                return log_debug_errno(r, "Failed to add the rule for %s: %m", *n);
                }
        }
        r = seccomp_load(ctx);
        if (r < 0)
                return r;
        if (ret_log)
                *ret_log = logged;
        return 0;
}
