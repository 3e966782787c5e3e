/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop syscallwrap -- CMD...`: the security gate inside the container. The entrypoint execs it as root
 * instead of `loop privdrop`. It compiles the policy, forks the agent's process, and stays root as the
 * seccomp supervisor: the child drops to the agent's uid/gid (as `loop privdrop` does), installs the
 * filter, hands the listener fd back over a socketpair with the channel id, waits for the ack and execs
 * CMD. The parent is non-dumpable and of another uid, so the agent can neither trace nor signal it; it
 * reaps orphans as a subreaper, forwards termination signals to the agent and exits with its status. */

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <curl/curl.h>

#include "agent-env.h"
#include "gate-client.h"
#include "gate-exec-floor.h"
#include "gate-inode-deny.h"
#include "gate-policy.h"
#include "gate-supervisor.h"
#include "io-util.h"
#include "log.h"
#include "loop.h"
#include "privdrop.h"
#include "strv.h"
#include "time-util.h"

#define EXIT_WRAP_FAILED   125
#define EXIT_CANNOT_INVOKE 126
#define EXIT_ENOENT        127

#define CHANNEL_ID_MAX 256U
#define HANDSHAKE_TIMEOUT_MS 10000

static const int forwarded_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };

static void help(void) {
        printf("%s syscallwrap [--uid UID] [--gid GID] [--groups G1,G2...] [--policy FILE] -- COMMAND [ARGS...]\n\n"
               "Run COMMAND as an unprivileged user under the security gate: a seccomp filter traps exec,\n"
               "connect and file syscalls, and this process (staying root) decides them by policy, asking\n"
               "the host gate for approvals.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --uid UID           Numeric user id for COMMAND (default: $AGENT_UID)\n"
               "     --gid GID           Numeric group id for COMMAND (default: $AGENT_GID)\n"
               "     --groups G1,G2      Numeric supplementary groups (default: none)\n"
               "     --policy FILE       The gate policy (default: $LOOP_GATE_POLICY_FILE)\n\n"
               "Environment: LOOP_GATE_POLICY_FILE, LOOP_GATE_TOKEN (removed before COMMAND runs),\n"
               "LOOP_GATE_SOCKET (default %s), LOOP_CHANNEL_ID, LOOP_GATE_VERBOSE=1, AGENT_UID, AGENT_GID.\n\n"
               "Exit status: COMMAND's (128+N when killed by signal N); 125 when the gate cannot be set up,\n"
               "126 when COMMAND cannot be executed, 127 when it is not found.\n",
               program_invocation_short_name, GATE_SOCKET_DEFAULT);
}

/* Takes the token out of the environment for good: the bytes in the initial environment block (what
 * /proc/PID/environ shows) are overwritten too, not just the pointer removed. */
static int take_token(char **ret) {
        char *v = getenv("LOOP_GATE_TOKEN");
        char *copy = NULL;

        if (v) {
                copy = strdup(v);
                if (!copy)
                        return -ENOMEM;
                explicit_bzero(v, strlen(v));
        }
        if (unsetenv("LOOP_GATE_TOKEN") < 0)
                return -errno;
        *ret = copy;
        return 0;
}

static int send_fd(int sock, int fd, const char *payload) {
        char control[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = (void *) payload, .iov_len = strlen(payload) + 1 };
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1,
                .msg_control = control, .msg_controllen = sizeof(control),
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int recv_fd(int sock, char *payload, size_t size, int *ret_fd) {
        char control[CMSG_SPACE(sizeof(int))] = {};
        struct iovec iov = { .iov_base = payload, .iov_len = size };
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1,
                .msg_control = control, .msg_controllen = sizeof(control),
        };
        struct cmsghdr *cm;
        ssize_t n;
        int fd = -EBADF;

        if (fd_wait_until(sock, POLLIN, clock_usec(CLOCK_MONOTONIC) + HANDSHAKE_TIMEOUT_MS * UINT64_C(1000)) < 0)
                return -ETIMEDOUT;
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        if (fd < 0)
                return -EBADMSG;
        if (n == 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || payload[n - 1] != 0) {
                safe_close(fd);
                return -EBADMSG;
        }
        *ret_fd = fd;
        return 0;
}

/* The listener is handed over by a helper process that shares the agent's process's fd table but not its
 * filter: once the filter is in place, a sendmsg() of the agent's process is trapped (the gate performs
 * every sendmsg), and only the supervisor, which does not hold the listener yet, could answer it. The
 * helper is cloned before the filter is installed and waits on a pipe for the listener's number. */
typedef struct Handover {
        pid_t pid;
        int pipe[2];
} Handover;

static int handover_start(int sock, const char *channel, Handover *ret) {
        pid_t parent = getpid(), pid;
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = (pid_t) syscall(SYS_clone, CLONE_FILES | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid < 0) {
                int r = -errno;

                safe_close(p[0]);
                safe_close(p[1]);
                return r;
        }
        if (pid == 0) {
                int fd;

                /* The fd table is shared, so it holds the pipe's write end too: the helper ends with the
                 * agent's process, not on EOF. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                        _exit(EXIT_FAILURE);
                if (read(p[0], &fd, sizeof(fd)) != (ssize_t) sizeof(fd))
                        _exit(EXIT_FAILURE);
                _exit(send_fd(sock, fd, channel) < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        *ret = (Handover) { .pid = pid, .pipe = { p[0], p[1] } };
        return 0;
}

static int handover_finish(Handover *h, int fd) {
        int status, r = 0;

        /* The pipe is closed once the helper is done: its fd table is ours, a close here is its too. */
        if (loop_write(h->pipe[1], &fd, sizeof(fd)) < 0) {
                r = -EPIPE;
                (void) kill(h->pid, SIGKILL);
        }
        if (waitpid(h->pid, &status, 0) < 0 && r == 0)
                r = -errno;
        h->pipe[1] = safe_close(h->pipe[1]);
        h->pipe[0] = safe_close(h->pipe[0]);
        if (r < 0)
                return r;
        return WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SUCCESS ? 0 : -EPROTO;
}

/* The agent's side: never returns. */
static _noreturn_ void child_main(int sock, pid_t parent, uid_t uid, gid_t gid, const gid_t *groups,
                                  size_t n_groups, const char *channel, int exec_floor, char * const *agent_env,
                                  char **argv) {
        sigset_t none;
        char ack;
        Handover helper = { .pid = -1, .pipe = { -EBADF, -EBADF } };
        int fd, r;

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);

        /* PDEATHSIG is reset by the kernel when the credentials change: set it again after the drop. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(EXIT_WRAP_FAILED);
        if (privdrop_apply(uid, gid, groups, n_groups) < 0)
                _exit(EXIT_WRAP_FAILED);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(EXIT_WRAP_FAILED);
        /* The configured envs, decoded by the supervisor before the fork: only the agent's side has them. */
        if (agent_env_apply(agent_env) < 0)
                _exit(EXIT_WRAP_FAILED);
        /* The commands denied outright cannot execute, whatever a racing thread writes (no_new_privs is
         * set by the drop). */
        if (exec_floor >= 0) {
                r = gate_exec_floor_enforce(exec_floor);
                if (r < 0) {
                        log_error_errno(r, "Cannot enforce the gate's exec floor: %m");
                        _exit(EXIT_WRAP_FAILED);
                }
                safe_close(exec_floor);
        }

        r = handover_start(sock, channel, &helper);
        if (r < 0) {
                log_error_errno(r, "Cannot start the listener's handover: %m");
                _exit(EXIT_WRAP_FAILED);
        }
        r = gate_filter_install(&fd);
        if (r < 0) {
                log_error_errno(r, "Cannot install the security gate's seccomp filter: %m");
                _exit(EXIT_WRAP_FAILED);
        }
        r = handover_finish(&helper, fd);
        /* The agent must never hold the listener: it could answer its own calls. */
        safe_close(fd);
        if (r < 0) {
                log_error_errno(r, "Cannot hand the seccomp listener to the supervisor: %m");
                _exit(EXIT_WRAP_FAILED);
        }
        /* The uid change made us non-dumpable; the supervisor reads our memory as the agent's uid. */
        if (prctl(PR_SET_DUMPABLE, 1) < 0 || loop_write(sock, "", 1) < 0)
                _exit(EXIT_WRAP_FAILED);
        if (loop_read(sock, &ack, 1) != 1)
                _exit(EXIT_WRAP_FAILED);        /* the supervisor gave up; it said why */
        safe_close(sock);

        execvp(argv[0], argv);
        r = errno;
        log_error_errno(r, "Failed to execute %s: %m", argv[0]);
        _exit(r == ENOENT ? EXIT_ENOENT : EXIT_CANNOT_INVOKE);
}

static int parse_env_id(const char *name, uint32_t *ret, bool *have) {
        const char *v = getenv(name);

        if (*have || !v)
                return 0;
        if (privdrop_parse_id(v, ret) < 0)
                return log_error_errno(EINVAL, "Invalid %s=\"%s\": expected a number.", name, v);
        *have = true;
        return 0;
}

static uint64_t tv_usec(const struct timeval *tv) {
        return (uint64_t) tv->tv_sec * USEC_PER_SEC + (uint64_t) tv->tv_usec;
}

/* One line in the container's log when the agent ends: what the gate decided and how fast; a second with
 * the supervisor's CPU time since the agent was released (ru_start). */
static void log_gate_summary(GateSupervisor *s, const struct rusage *ru_start) {
        _cleanup_free_ GateSupervisorStats *st = malloc(sizeof(*st));
        struct rusage ru;

        if (!st)
                return (void) log_oom();
        gate_supervisor_stats(s, st);
#define US(h, pm) gate_stats_permille_ns(st->h, pm) / 1000, gate_stats_permille_ns(st->h, pm) % 1000 / 100
        log_notice("Gate: %" PRIu64 " calls decided by policy, decision latency median %" PRIu64 ".%" PRIu64
                   " us, 90th percentile %" PRIu64 ".%" PRIu64 " us; answered with the call performed: median %"
                   PRIu64 ".%" PRIu64 " us, 90th percentile %" PRIu64 ".%" PRIu64 " us; %" PRIu64 " by approval.",
                   st->local, US(decision, 500), US(decision, 900), US(answer, 500), US(answer, 900),
                   st->approvals);
#undef US
        /* The supervisor's CPU time beside those latencies (all its threads: the decisions, the answers,
         * the records; not the agent's), which the load of a shared machine moves less than a latency. */
        if (getrusage(RUSAGE_SELF, &ru) == 0) {
                uint64_t u = tv_usec(&ru.ru_utime) - tv_usec(&ru_start->ru_utime),
                       k = tv_usec(&ru.ru_stime) - tv_usec(&ru_start->ru_stime);

                log_notice("Gate: supervisor CPU time %" PRIu64 ".%06" PRIu64 " s user, %" PRIu64 ".%06" PRIu64
                           " s system.", u / USEC_PER_SEC, u % USEC_PER_SEC, k / USEC_PER_SEC, k % USEC_PER_SEC);
        }
}

/* Waits for the agent, reaping orphans meanwhile and passing termination signals on. */
static int wait_agent(pid_t child, const sigset_t *mask) {
        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(mask, &si);

                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "sigwaitinfo() failed: %m");
                }
                if (sig != SIGCHLD) {
                        (void) kill(child, sig);
                        continue;
                }
                for (;;) {
                        int status;
                        pid_t p = waitpid(-1, &status, WNOHANG);

                        if (p <= 0)
                                break;
                        if (p != child)
                                continue;
                        if (WIFEXITED(status))
                                return WEXITSTATUS(status);
                        if (WIFSIGNALED(status))
                                return 128 + WTERMSIG(status);
                }
        }
}

int verb_syscallwrap(int argc, char *argv[]) {
        enum { ARG_UID = 0x100, ARG_GID, ARG_GROUPS, ARG_POLICY };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h' },
                { "uid",    required_argument, NULL, ARG_UID },
                { "gid",    required_argument, NULL, ARG_GID },
                { "groups", required_argument, NULL, ARG_GROUPS },
                { "policy", required_argument, NULL, ARG_POLICY },
                {}
        };
        _cleanup_(gate_policy_freep) GatePolicy *policy = NULL;
        _cleanup_(gate_client_freep) GateClient *client = NULL;
        _cleanup_(privdrop_identity_done) PrivdropIdentity id = {};
        _cleanup_free_ char *error = NULL, *token = NULL;
        _cleanup_strv_free_ char **agent_env = NULL;
        _cleanup_close_ int notify_fd = -EBADF;
        const char *policy_file = NULL, *channel, *socket_path;
        char payload[CHANNEL_ID_MAX + 1] = {};
        GateSupervisorConfig config = { .log_fd = STDERR_FILENO };
        bool exec_sole_mm = true;
        _cleanup_(gate_inode_deny_freep) GateInodeDeny *read_denied = NULL;
        GateSupervisor *supervisor = NULL;
        int sv[2], c, r, exec_floor = -EBADF;
        struct rusage ru_start = {};
        sigset_t mask;
        pid_t parent, child;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_UID:
                case ARG_GID:
                case ARG_GROUPS:
                        if (privdrop_identity_set(&id, c == ARG_UID ? "uid" : c == ARG_GID ? "gid" : "groups", optarg) < 0)
                                return EXIT_WRAP_FAILED;
                        break;
                case ARG_POLICY:
                        policy_file = optarg;
                        break;
                default:
                        return EXIT_WRAP_FAILED;
                }

        if (parse_env_id("AGENT_UID", &id.uid, &id.have_uid) < 0 || parse_env_id("AGENT_GID", &id.gid, &id.have_gid) < 0)
                return EXIT_WRAP_FAILED;
        if (!id.have_uid || !id.have_gid) {
                log_error("syscallwrap needs the agent's uid and gid (--uid/--gid or AGENT_UID/AGENT_GID).");
                return EXIT_WRAP_FAILED;
        }
        const char *root = privdrop_identity_root(&id);
        if (root) {
                log_error("Refusing to run the agent with %s 0 under the gate.", root);
                return EXIT_WRAP_FAILED;
        }
        if (optind >= argc) {
                log_error("syscallwrap needs a command to execute after the options.");
                return EXIT_WRAP_FAILED;
        }
        if (geteuid() != 0) {
                log_error("syscallwrap must run as root: it stays root to supervise the agent.");
                return EXIT_WRAP_FAILED;
        }

        /* The agent's own environment (agent-env.h): decoded now, so a bad one stops the run before anything
         * starts; set in the child after the drop, never in the supervisor. */
        r = agent_env_take(&agent_env);
        if (r < 0)
                return EXIT_WRAP_FAILED;

        /* Fail closed: no policy is no gate, and no gate is no agent. */
        policy_file = policy_file ?: getenv("LOOP_GATE_POLICY_FILE");
        if (isempty(policy_file)) {
                log_error("No gate policy: set LOOP_GATE_POLICY_FILE or --policy.");
                return EXIT_WRAP_FAILED;
        }
        r = gate_policy_load_file(policy_file, &policy, &error);
        if (r < 0) {
                log_error("The security gate's policy %s does not compile, refusing to start the agent: %s",
                          policy_file, error ?: strerror(-r));
                return EXIT_WRAP_FAILED;
        }

        /* Files of commands denied outright: a Landlock floor keeps them from executing (gate-exec-floor.h). */
        {
                _cleanup_strv_free_ char **files = NULL, **skipped = NULL;

                /* The agent resolves its commands in its own PATH. */
                r = gate_exec_floor_files(policy, agent_env_get(agent_env, "PATH") ?: getenv("PATH"), &files,
                                          &skipped);
                if (r < 0) {
                        log_error_errno(r, "Cannot find the files of the commands the gate denies: %m");
                        return EXIT_WRAP_FAILED;
                }
                exec_sole_mm = (gate_policy_exec_reads_memory(policy) || skipped[0]) &&
                               !gate_policy_exec_shared_memory_checked(policy);
                if (!exec_sole_mm && gate_policy_exec_shared_memory_checked(policy))
                        log_notice("exec_shared_memory is \"check\": an exec beside other threads is decided on "
                                   "arguments they could still change.");
                STRV_FOREACH(n, skipped)
                        log_notice("The denied command %s is a multi-call binary's applet: only the gate's check of its "
                                   "name refuses it.", *n);
                if (files[0]) {
                        r = gate_exec_floor_ruleset(files, &exec_floor);
                        if (r < 0) {
                                log_error_errno(r, "Cannot build the exec floor for the commands the gate denies, "
                                                "refusing to start the agent: %m");
                                return EXIT_WRAP_FAILED;
                        }
                }
        }

        /* Files whose reading is denied by name, recorded by inode (gate-inode-deny.h): from the work
         * dir, the agent's cwd at start. */
        {
                _cleanup_free_ char *cwd = getcwd(NULL, 0);

                if (cwd && !streq(cwd, "/")) {
                        r = gate_inode_deny_build(policy, cwd, &read_denied);
                        if (r < 0) {
                                log_error_errno(r, "Cannot record the files under %s whose reading the gate denies "
                                                "(at most %u entries looked at, %u files recorded), refusing to start "
                                                "the agent: %m", cwd, GATE_INODE_DENY_WALK_MAX, GATE_INODE_DENY_MAX);
                                return EXIT_WRAP_FAILED;
                        }
                        log_debug("%zu files under %s are denied for reading by inode too.",
                                  gate_inode_deny_size(read_denied), cwd);
                }
        }

        r = take_token(&token);
        if (r < 0) {
                log_error_errno(r, "Cannot take LOOP_GATE_TOKEN out of the environment: %m");
                return EXIT_WRAP_FAILED;
        }
        channel = getenv("LOOP_CHANNEL_ID") ?: "";
        if (strlen(channel) > CHANNEL_ID_MAX) {
                log_error("LOOP_CHANNEL_ID is longer than %u bytes.", CHANNEL_ID_MAX);
                return EXIT_WRAP_FAILED;
        }
        socket_path = getenv("LOOP_GATE_SOCKET") ?: GATE_SOCKET_DEFAULT;
        if (!token)
                log_warning("LOOP_GATE_TOKEN is not set: every approval will be denied.");

        /* Non-dumpable: the agent cannot read our memory (the token) or /proc/PID/environ, nor trace us. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
                log_error_errno(errno, "Cannot make the supervisor non-dumpable and a subreaper: %m");
                return EXIT_WRAP_FAILED;
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
                sigaddset(&mask, forwarded_signals[i]);
        sigaddset(&mask, SIGPIPE);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return EXIT_WRAP_FAILED;
        sigdelset(&mask, SIGPIPE);

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                log_error_errno(errno, "socketpair() failed: %m");
                return EXIT_WRAP_FAILED;
        }
        parent = getpid();
        child = fork();
        if (child < 0) {
                log_error_errno(errno, "fork() failed: %m");
                return EXIT_WRAP_FAILED;
        }
        if (child == 0) {
                safe_close(sv[0]);
                if (token)
                        explicit_bzero(token, strlen(token));
                child_main(sv[1], parent, id.uid, id.gid, id.groups, id.n_groups, channel, exec_floor, agent_env,
                           argv + optind);
        }
        safe_close(sv[1]);
        exec_floor = safe_close(exec_floor);

        r = recv_fd(sv[0], payload, CHANNEL_ID_MAX + 1, &notify_fd);
        if (r < 0) {
                log_error_errno(r, "The agent's process did not hand over its seccomp listener: %m");
                goto fail;
        }
        if (!streq(payload, channel)) {
                log_error("The agent's process announced channel \"%s\", expected \"%s\".", payload, channel);
                goto fail;
        }

        /* The child says when it is dumpable again, after it closed its copy of the listener. */
        if (loop_read(sv[0], payload, 1) != 1) {
                log_error("The agent's process stopped during the handshake.");
                goto fail;
        }

        config = (GateSupervisorConfig) {
                .policy = policy,
                .uid = id.uid, .gid = id.gid, .groups = id.groups, .n_groups = id.n_groups,
                .verbose = streq_ptr(getenv("LOOP_GATE_VERBOSE"), "1"),
                .log_fd = STDERR_FILENO,
                .exec_sole_mm = exec_sole_mm,
                .read_denied = read_denied,
        };
        r = gate_supervisor_probe(&config, child);
        if (r < 0) {
                log_error_errno(r, "The supervisor cannot read the agent's memory with the agent's credentials "
                                   "(a ptrace restriction such as Yama ptrace_scope=2?): %m");
                goto fail;
        }
        if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK) {
                log_error("curl_global_init() failed.");
                goto fail;
        }
        r = gate_client_new(socket_path, token, channel, &client);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the gate client: %m");
                goto fail;
        }
        if (token)
                explicit_bzero(token, strlen(token));
        config.client = client;

        r = gate_supervisor_start(&config, TAKE_FD(notify_fd), &supervisor);
        if (r < 0) {
                log_error_errno(r, "Cannot start the seccomp supervisor: %m");
                goto fail;
        }
        if (getrusage(RUSAGE_SELF, &ru_start) < 0)
                ru_start = (struct rusage) {};
        r = loop_write(sv[0], "", 1);
        if (r < 0) {
                log_error_errno(r, "Cannot release the agent: %m");
                goto fail;
        }
        safe_close(sv[0]);

        r = wait_agent(child, &mask);
        log_gate_summary(supervisor, &ru_start);
        /* The agent's last decisions are still on their way to the host's journal. */
        if (gate_client_audit_flush(client, GATE_AUDIT_FLUSH_MS) < 0)
                log_warning("Gate audit records still queued after %u ms, they are in this log only.", GATE_AUDIT_FLUSH_MS);
        /* Workers may be blocked in approvals: end without unwinding them. */
        fflush(stdout);
        _exit(r < 0 ? EXIT_WRAP_FAILED : r);

fail:
        (void) kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
        return EXIT_WRAP_FAILED;
}
