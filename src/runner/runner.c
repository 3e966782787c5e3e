/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "agent-argv.h"
#include "config-build.h"
#include "config-project.h"
#include "curl-buffer.h"
#include "audit.h"
#include "browser-call.h"
#include "egress-ca.h"
#include "egress-policy.h"
#include "egress-token.h"
#include "engine-discover.h"
#include "fs-util.h"
#include "gate-policy.h"
#include "gate-token.h"
#include "json-util.h"
#include "mcp-config.h"
#include "path-util.h"
#include "protected-paths.h"
#include "seccomp-profile.h"
#include "string-util.h"
#include "text-escape.h"
#include "time-util.h"
#include "tripwire.h"
#include "io-util.h"
#include "log.h"
#include "registry.h"
#include "runner.h"
#include "scope.h"
#include "state-dir.h"
#include "strv.h"
#include "tar.h"
#include "unit-name.h"

#define COPY_FILE_MAX (16U * 1024U * 1024U)     /* a copy_files entry larger than this is skipped */

static volatile sig_atomic_t run_interrupted;
static volatile sig_atomic_t run_timed_out;
static Engine *volatile run_engine;

void runner_interrupt(void) {
        Engine *e = run_engine;

        run_interrupted = 1;
        if (e)
                engine_interrupt(e);
}

static void on_alarm(int sig) {
        Engine *e = run_engine;

        (void) sig;
        run_timed_out = 1;
        if (e)
                engine_interrupt(e);
}

void run_outcome_done(RunOutcome *o) {
        agent_result_done(&o->result);
        o->error_message = mfree(o->error_message);
}

/* Everything one run of a channel needs, shared by the first attempt and its retries. */
typedef struct RunContext {
        const RunRequest *req;
        const char *channel;
        LoopConfig config;              /* channel config with the project config applied */
        HostUser user;
        char *state_dir;                /* where the channel's home lives on the host */
        char *home_dir;                 /* host dir bind-mounted at the user's HOME */
        char *empty_dir;                /* host dir, empty and root's, bound over masked directories */
        char *timezone;
        char *git_excludes;
        char *mcp_path;                 /* the MCP config, inside the work dir */
        dev_t mcp_dev;                  /* the file this run wrote there: removed only if still there */
        ino_t mcp_ino;
        char *slice;                    /* CgroupParent: the channel's slice, when the engine uses systemd's cgroups */
        EngineConnection *conn;
} RunContext;

static void run_context_done(RunContext *ctx) {
        loop_config_done(&ctx->config);
        host_user_done(&ctx->user);
        free(ctx->state_dir);
        free(ctx->home_dir);
        free(ctx->empty_dir);
        free(ctx->timezone);
        free(ctx->git_excludes);
        free(ctx->mcp_path);
        free(ctx->slice);
        run_engine = NULL;
        engine_connection_free(ctx->conn);
}

/* File operations on the agent's side (work dir, home, copy_files) run with the agent user's file system
 * identity, so a symlink or hard link planted by the agent cannot make root read or write elsewhere. */
typedef struct FsIdentity {
        uid_t uid;
        gid_t gid;
        bool ok;                        /* the switch to the agent's identity took effect */
} FsIdentity;

/* setfsuid() cannot report failure (it returns the old value either way, e.g. without CAP_SETUID), so
 * the result is read back; anything but the agent's identity makes the caller's file operation fail
 * (fs_ok) instead of running it as root in a directory the agent controls. */
static FsIdentity fs_become(const HostUser *u) {
        FsIdentity saved = { .uid = (uid_t) setfsuid((uid_t) -1), .gid = (gid_t) setfsgid((gid_t) -1) };
        if (geteuid() == 0) {
                (void) setfsgid(u->gid);
                (void) setfsuid(u->uid);
                saved.ok = (uid_t) setfsuid((uid_t) -1) == u->uid && (gid_t) setfsgid((gid_t) -1) == u->gid;
        } else
                saved.ok = true;        /* not root: we are the user already, or cannot be anyone else */
        return saved;
}

static void fs_restore(FsIdentity saved) {
        (void) setfsuid(saved.uid);
        (void) setfsgid(saved.gid);
}

/* The agent never runs as root: config "user", else the caller when not root, else the loop system user. */
static int runner_resolve_user(const LoopConfig *c, HostUser *ret) {
        int r;

        if (c->user)
                r = host_user_resolve(c->user, ret);
        else if (getuid() != 0)
                r = host_user_resolve(NULL, ret);
        else {
                r = host_user_resolve("loop", ret);
                if (r == -ESRCH)
                        return log_error_errno(r, "No user to run the agent as: set \"user\" in the channel config, "
                                               "or create the loop system user (systemd-sysusers loop.conf).");
        }
        if (r < 0)
                return log_error_errno(r, "Cannot resolve the agent's user \"%s\": %m", strna(c->user));
        if (ret->uid == 0) {
                host_user_done(ret);
                return log_error_errno(EPERM, "The agent must not run as root; set \"user\" in the channel config to "
                                       "an unprivileged user.");
        }
        return 0;
}

/* core.excludesFile of the user's global git config, when git is installed and the file exists. */
static char *git_excludes_file(const HostUser *u) {
        _cleanup_free_ char *out = NULL;
        int pipefd[2];
        size_t n = 0;
        pid_t pid;
        int status;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return NULL;
        pid = fork();
        if (pid < 0) {
                safe_close(pipefd[0]);
                safe_close(pipefd[1]);
                return NULL;
        }
        if (pid == 0) {
                /* Nothing of a work tree's may steer this git: it runs from /, reads no system config,
                 * and hooks and fsmonitor are off whatever a config says. */
                char *argv[] = { (char *) "git", (char *) "-c", (char *) "core.fsmonitor=false", (char *) "-c",
                                 (char *) "core.hooksPath=/dev/null", (char *) "config", (char *) "--global",
                                 (char *) "--get", (char *) "core.excludesFile", NULL };
                int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (dup2(pipefd[1], STDOUT_FILENO) < 0 || (devnull >= 0 && dup2(devnull, STDERR_FILENO) < 0))
                        _exit(127);
                if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(u->gid, u->gid, u->gid) < 0 ||
                                       setresuid(u->uid, u->uid, u->uid) < 0))
                        _exit(127);
                setenv("HOME", u->home, 1);
                if (chdir("/") < 0)
                        _exit(127);
                unsetenv("GIT_CONFIG_GLOBAL");
                unsetenv("GIT_DIR");
                unsetenv("GIT_WORK_TREE");
                unsetenv("GIT_COMMON_DIR");
                unsetenv("GIT_CONFIG_PARAMETERS");
                unsetenv("GIT_CONFIG_COUNT");
                setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
                setenv("GIT_CEILING_DIRECTORIES", "/", 1);
                execvp("git", argv);
                _exit(127);
        }
        safe_close(pipefd[1]);
        out = malloc(4097);
        if (out) {
                ssize_t k = loop_read(pipefd[0], out, 4096);
                n = k > 0 ? (size_t) k : 0;
                out[n] = 0;
        }
        safe_close(pipefd[0]);
        (void) waitpid(pid, &status, 0);
        if (!out || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || n == 0)
                return NULL;
        out[strcspn(out, "\n")] = 0;
        if (out[0] == '~' && (out[1] == '/' || out[1] == 0)) {
                char *e;
                if (asprintf(&e, "%s%s", u->home, out + 1) < 0)
                        return NULL;
                free(out);
                out = e;
        }
        if (out[0] != '/' || access(out, F_OK) < 0)
                return NULL;
        return TAKE_PTR(out);
}

/* Drops mounts whose host source the agent's user cannot open: the agent gets nothing its user could not
 * read anyway, whoever wrote the mount (the project config is writable by the agent). */
static int filter_mounts_by_user(RunContext *ctx) {
        _cleanup_strv_free_ char **kept = NULL;
        int r;

        STRV_FOREACH(m, ctx->config.mounts) {
                MountSpec spec = {};
                bool keep = true;

                r = mount_spec_parse(*m, ctx->user.home, &spec);
                if (r < 0)
                        return r;
                if (!spec.named_volume) {
                        FsIdentity saved = fs_become(&ctx->user);
                        int fd = saved.ok ? open(spec.source, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1;
                        int err = saved.ok ? errno : EPERM;
                        fs_restore(saved);
                        if (fd >= 0)
                                safe_close(fd);
                        else if (err != ENOENT) {       /* missing sources are skipped by the plan */
                                log_warning("Mount %s skipped: %s cannot open %s: %s", *m, ctx->user.name,
                                            spec.source, strerror(err));
                                keep = false;
                        }
                }
                mount_spec_done(&spec);
                if (keep && (r = strv_extend(&kept, *m)) < 0)
                        return r;
        }
        strv_free(ctx->config.mounts);
        ctx->config.mounts = TAKE_PTR(kept);
        return 0;
}

static int write_mcp_config(RunContext *ctx) {
        _cleanup_(json_object_putp) json_object *mcp = NULL;
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int work_fd = -EBADF, loop_fd = -EBADF, fd = -EBADF;
        const char *text, *base;
        FsIdentity saved;
        int r;

        r = mcp_config_build(&ctx->config, ctx->channel, ctx->config.work_dir, RUNNER_LOOP_BIN, &mcp);
        if (r < 0)
                return log_error_errno(r, "Failed to build the MCP config: %m");
        ctx->mcp_path = mcp_config_path(ctx->config.work_dir, ctx->channel);
        if (!ctx->mcp_path)
                return log_oom();
        base = strrchr(ctx->mcp_path, '/') + 1;
        text = json_object_to_json_string_ext(mcp, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (asprintf(&tmp, ".%s.tmp", base) < 0)
                return log_oom();

        saved = fs_become(&ctx->user);
        if (!saved.ok)
                r = -EPERM;
        else if ((work_fd = open(ctx->config.work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                r = -errno;
        else if (mkdirat(work_fd, ".loop", 0755) < 0 && errno != EEXIST)
                r = -errno;
        else if ((loop_fd = openat(work_fd, ".loop", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = -errno;
        /* .loop is the agent's: whatever it left under the temporary name (a FIFO that would block the
         * open, a hard link the write would go through) is removed, and the file made new */
        else if (unlinkat(loop_fd, tmp, 0) < 0 && errno != ENOENT)
                r = -errno;
        else if ((fd = openat(loop_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
                r = -errno;
        else if ((r = loop_write(fd, text, strlen(text))) >= 0 && renameat(loop_fd, tmp, loop_fd, base) < 0)
                r = -errno;
        else if (r >= 0) {
                struct stat st;

                if (fstat(fd, &st) < 0)
                        r = -errno;
                else {
                        ctx->mcp_dev = st.st_dev;
                        ctx->mcp_ino = st.st_ino;
                }
        }
        fs_restore(saved);
        if (r < 0) {
                if (loop_fd >= 0)
                        (void) unlinkat(loop_fd, tmp, 0);
                return log_error_errno(r, "Failed to write %s: %m", ctx->mcp_path);
        }
        return 0;
}

static void remove_mcp_config(RunContext *ctx) {
        _cleanup_free_ char *dir = NULL;
        FsIdentity saved;

        if (!ctx->mcp_path || ctx->config.keep_mcp_configs)
                return;
        dir = strndup(ctx->mcp_path, (size_t) (strrchr(ctx->mcp_path, '/') - ctx->mcp_path));
        if (!dir)
                return;
        saved = fs_become(&ctx->user);
        if (saved.ok) {
                _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                const char *base = strrchr(ctx->mcp_path, '/') + 1;
                struct stat st;

                /* Another run of the channel may have written its own since (the same path): leave that. */
                if (fd >= 0 && fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == ctx->mcp_dev &&
                    st.st_ino == ctx->mcp_ino && unlinkat(fd, base, 0) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "Failed to remove %s, ignoring: %m", ctx->mcp_path);
        }
        fs_restore(saved);
}

/* Writes a copied file into the channel's home dir on the host (bound at the agent's HOME), as the agent's
 * user, never following a symlink the agent left there (write_file_beneath()). 0 when written, 1 when
 * dst is not in that home (the caller copies it through the engine), < 0 on error. */
static int copy_file_to_home(RunContext *ctx, const char *dst, mode_t mode, const char *data, size_t size) {
        _cleanup_close_ int home_fd = -EBADF;
        const char *rel;
        FsIdentity saved;
        int r;

        if (!ctx->home_dir || !path_is_inside(dst, ctx->user.home) || streq(dst, ctx->user.home))
                return 1;
        rel = dst + strlen(ctx->user.home);
        rel += strspn(rel, "/");
        saved = fs_become(&ctx->user);
        if (!saved.ok)
                r = -EPERM;
        else if ((home_fd = open(ctx->home_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = -errno;
        else
                r = write_file_beneath(home_fd, rel, mode, data, size);
        fs_restore(saved);
        return r;
}

/* Copies each file into the container: into the channel's home dir on the host when it lies in the
 * agent's home (no engine round trip), else as a one-entry tar archive into its parent directory; read
 * with the agent user's identity and owned by it inside. */
static int copy_files_in(RunContext *ctx, Engine *e, const char *id, const ContainerPlan *plan) {
        for (size_t i = 0; plan->copy_sources && plan->copy_sources[i]; i++) {
                const char *src = plan->copy_sources[i], *dst = plan->copy_targets[i];
                _cleanup_(tar_writer_freep) TarWriter *t = NULL;
                _cleanup_free_ char *data = NULL, *dir = NULL;
                const void *archive;
                size_t size, asize;
                struct stat st = {};
                FsIdentity saved;
                int r;

                saved = fs_become(&ctx->user);
                r = saved.ok ? read_full_file_at(AT_FDCWD, src, COPY_FILE_MAX, false, &data, &size) : -EPERM;
                if (r >= 0 && stat(src, &st) < 0)
                        r = -errno;
                fs_restore(saved);
                if (r < 0) {
                        log_warning_errno(r, "Not copying %s into the container: %m", src);
                        continue;
                }

                r = copy_file_to_home(ctx, dst, st.st_mode & 07777, data, size);
                if (r < 0)
                        return log_error_errno(r, "Failed to copy %s into the agent's home %s: %m", src, ctx->home_dir);
                if (r == 0)
                        continue;

                dir = strndup(dst, (size_t) (strrchr(dst, '/') - dst));
                if (!dir)
                        return log_oom();
                if (isempty(dir) && free_and_strdup(&dir, "/") < 0)
                        return log_oom();
                if ((r = tar_writer_new(&t)) < 0 ||
                    (r = tar_add_file(t, strrchr(dst, '/') + 1, st.st_mode & 07777, ctx->user.uid, ctx->user.gid,
                                      data, size)) < 0 ||
                    (r = tar_finish(t, &archive, &asize)) < 0)
                        return log_error_errno(r, "Failed to pack %s: %m", src);
                r = engine_container_archive_put(e, id, dir, archive, asize);
                if (r < 0)
                        return log_error_errno(r, "Failed to copy %s into the container: %s", src, engine_last_error(e));
        }
        return 0;
}

typedef struct StreamPrinter {
        const RunRequest *req;
        StreamParser *parser;
        char tail[RUNNER_STDERR_TAIL];  /* the last bytes of stderr */
        size_t tail_len;
        char *last_text;                /* the last turn printed */
} StreamPrinter;

static int on_event(const StreamEvent *ev, void *userdata) {
        StreamPrinter *p = userdata;
        const RunHooks *h = p->req->hooks;
        FILE *out = p->req->out;

        if (h && h->event)
                h->event(ev, h->userdata);
        if (!out)
                return 0;
        if (p->req->json) {
                /* The agent's JSON, its strings unable to act on the terminal either. */
                if (ev->raw && json_print(out, ev->raw, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) == -ENOMEM)
                        return log_oom();
                return 0;
        }
        /* The agent's text reaches the operator's terminal: shown, never acted on (an escape sequence in
         * it would clear the screen, set the title, write the clipboard through OSC 52). */
        switch (ev->type) {
        case STREAM_EVENT_TEXT: {
                _cleanup_free_ char *text = text_escape_prose(strempty(ev->text), 0);
                if (!text)
                        return log_oom();
                fprintf(out, "%s\n", text);
                (void) free_and_strdup(&p->last_text, ev->text);
                break;
        }
        case STREAM_EVENT_TOOL_USE: {
                _cleanup_free_ char *name = text_escape_display(strna(ev->tool_name), 0),
                                    *summary = text_escape_prose(strempty(ev->tool_summary), 0);
                if (!name || !summary)
                        return log_oom();
                fprintf(out, "  -> %s %s\n", name, summary);
                break;
        }
        case STREAM_EVENT_ACTIVITY: {
                _cleanup_free_ char *text = ev->text ? text_escape_prose(ev->text, 0) : NULL;
                if (ev->text && !text)
                        return log_oom();
                if (text)
                        fprintf(out, "  .. %s\n", text);
                break;
        }
        default:
                break;
        }
        fflush(out);
        return 0;
}

static int on_output(int stream, const char *data, size_t size, void *userdata) {
        StreamPrinter *p = userdata;

        if (stream == 2) {
                if (size >= sizeof p->tail) {
                        memcpy(p->tail, data + size - sizeof p->tail, sizeof p->tail);
                        p->tail_len = sizeof p->tail;
                } else {
                        size_t keep = MIN(p->tail_len, sizeof p->tail - size);
                        memmove(p->tail, p->tail + p->tail_len - keep, keep);
                        memcpy(p->tail + keep, data, size);
                        p->tail_len = keep + size;
                }
                return 0;
        }
        return stream_parser_feed(p->parser, data, size);
}

/* The last non-empty line of the agent's stderr, for error messages. */
static char *stderr_last_line(const StreamPrinter *p) {
        size_t end = p->tail_len, start;

        while (end > 0 && (p->tail[end - 1] == '\n' || p->tail[end - 1] == '\r' || p->tail[end - 1] == ' '))
                end--;
        start = end;
        while (start > 0 && p->tail[start - 1] != '\n')
                start--;
        if (start == end)
                return NULL;
        return strndup(p->tail + start, end - start);
}

typedef struct Attempt {
        AgentResult result;
        int exit_code;
        char *stderr_line;
        bool result_printed;
} Attempt;

static void attempt_done(Attempt *a) {
        agent_result_done(&a->result);
        a->stderr_line = mfree(a->stderr_line);
}

static int take_result(const AgentResult *from, AgentResult *to) {
        *to = (AgentResult) {
                .have_result = from->have_result,
                .is_error = from->is_error,
                .duration_ms = from->duration_ms,
                .num_turns = from->num_turns,
                .lines_skipped = from->lines_skipped,
        };
        if ((from->result && !(to->result = strdup(from->result))) ||
            (from->session_id && !(to->session_id = strdup(from->session_id)))) {
                agent_result_done(to);
                return -ENOMEM;
        }
        return 0;
}

static void container_discard(Engine *e, const char *id) {
        if (engine_container_remove(e, id, true) < 0 && engine_container_remove(e, id, true) < 0)
                log_warning("Failed to remove container %s, ignoring: %s", id, engine_last_error(e));
}

/* A started container is in the channel's registry from then on: the registry journals it and, once the
 * run is over, keeps it (stopped) for container_keep_alive_sec so its logs can be read, after which
 * `loop reconcile` removes it. When the registry cannot be opened the container is still handled: not
 * recorded, or removed at once, never leaked. */
static void container_registered(RunContext *ctx, const char *id, const char *name, const char *scope, pid_t pid) {
        _cleanup_(registry_freep) Registry *reg = NULL;
        int r;

        r = registry_open(ctx->channel, &reg);
        if (r >= 0)
                r = registry_register(reg, id, name, CONTAINER_AGENT, ctx->req->owner ?: "cli", scope, pid);
        if (r >= 0)
                r = registry_close(TAKE_PTR(reg));
        if (r < 0)
                log_warning_errno(r, "Failed to record container %s in the registry of channel %s, ignoring: %m",
                                  name, ctx->channel);
}

static void container_finished(RunContext *ctx, const char *id, bool started) {
        _cleanup_(registry_freep) Registry *reg = NULL;
        Engine *e = ctx->conn->engine;
        int r;

        r = registry_open(ctx->channel, &reg);
        if (r < 0) {
                log_warning_errno(r, "Cannot open the registry of channel %s; removing container %.12s now: %m",
                                  ctx->channel, id);
                return container_discard(e, id);
        }
        (void) registry_schedule_remove(reg, e, id, clock_usec(CLOCK_REALTIME),
                                        started ? ctx->config.container_keep_alive_sec : 0);
        (void) registry_close(TAKE_PTR(reg));
}

static pid_t container_main_pid(Engine *e, const char *id) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        json_object *state, *pid;

        if (engine_container_inspect(e, id, &j) < 0 ||
            !json_object_object_get_ex(j, "State", &state) ||
            !json_object_object_get_ex(state, "Pid", &pid) || !json_object_is_type(pid, json_type_int))
                return -1;
        return (pid_t) json_object_get_int64(pid);
}

/* The channel's helper socket RUNTIME/CHANNEL/file (gate.sock, docker.sock, tasks.sock, gateway.sock):
 * its path in *ret, also when it is not there; 1 when it is a socket, 0 when not (its socket unit is not
 * running, or no systemd), -ENOMEM. */
static int channel_socket(const RunContext *ctx, const char *file, char **ret) {
        struct stat st;
        char *p;

        if (asprintf(&p, "%s/%s/%s", loop_runtime_dir(), ctx->channel, file) < 0)
                return -ENOMEM;
        *ret = p;
        return stat(p, &st) >= 0 && S_ISSOCK(st.st_mode);
}

/* Adds "source:target[:ro]" to the container's binds. */
static int bind_add(char ***binds, const char *source, const char *target, bool ro) {
        char *b;

        if (asprintf(&b, "%s:%s%s", source, target, ro ? ":ro" : "") < 0)
                return -ENOMEM;
        return strv_consume(binds, b);
}

/* The security gate of one container (issue: the gate): a token for its approvals, written where
 * loop-gate@NAME finds it; the per-container policy document, compiled here first so a policy that does not
 * compile stops the run before a container exists; the gate's socket and the policy bind-mounted into
 * the container; the environment the entrypoint hands to `loop syscallwrap`. Undone when the run ends. */
#define GATE_CONTAINER_POLICY "/run/loop/gate-policy.json"
#define GATE_CONTAINER_SOCKET "/run/loop/gate.sock"

typedef struct GateFiles {
        const char *channel;
        const char *name;
        char *policy_path;
        bool token_written;
} GateFiles;

static void gate_files_done(GateFiles *g) {
        int r;

        if (g->token_written && (r = gate_token_remove(g->channel, g->name)) < 0)
                log_warning_errno(r, "Failed to remove the gate token of %s, ignoring: %m", g->name);
        if (g->policy_path && unlink(g->policy_path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove %s, ignoring: %m", g->policy_path);
        g->policy_path = mfree(g->policy_path);
}

static char *env_pair(const char *key, const char *value) {
        char *p;
        return asprintf(&p, "%s=%s", key, value) < 0 ? NULL : p;
}

static int gate_prepare(RunContext *ctx, const char *name, GateFiles *g, char ***env, char ***binds) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_(gate_policy_freep) GatePolicy *policy = NULL;
        _cleanup_free_ char *error = NULL, *dir = NULL, *sock = NULL;
        char token[GATE_TOKEN_HEX_LEN + 1];
        const char *text;
        int r;

        *g = (GateFiles) { .channel = ctx->channel, .name = name };

        r = gate_policy_document_home(&ctx->config.gates.agentgate, ctx->config.work_dir, ctx->user.home, &doc);
        if (r < 0)
                return log_error_errno(r, "Failed to make the gate policy of channel %s: %m", ctx->channel);
        {
                _cleanup_strv_free_ char **guarded = NULL;
                _cleanup_free_ char *root = NULL;

                r = ctx->config.work_dir ? protected_paths_guarded(&ctx->config, &root, &guarded) : 0;
                if (r >= 0 && guarded)
                        r = gate_policy_document_guard(doc, guarded);
                if (r < 0)
                        return log_error_errno(r, "Failed to guard the protected paths of channel %s: %m", ctx->channel);
        }
        r = gate_policy_compile(doc, &policy, &error);
        if (r < 0)
                return log_error_errno(r, "The gate policy of channel %s does not compile, not running: %s",
                                       ctx->channel, strna(error));

        if (asprintf(&dir, "%s/gate", ctx->state_dir) < 0 || asprintf(&g->policy_path, "%s/%s.json", dir, name) < 0)
                return log_oom();
        r = mkdir_owned(dir, 0755, 0, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to create %s: %m", dir);
        text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = write_file_atomic(g->policy_path, text, strlen(text), 0644);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", g->policy_path);

        r = gate_token_generate(token);
        if (r < 0)
                return log_error_errno(r, "Failed to make a gate token: %m");
        (void) audit_add_secret(token);
        r = gate_token_write(ctx->channel, name, token);
        if (r < 0)
                log_notice_errno(r, "Cannot record the gate token of %s (%m): its approval requests will be denied.", name);
        else
                g->token_written = true;

        if (bind_add(binds, g->policy_path, GATE_CONTAINER_POLICY, true) < 0)
                return log_oom();
        /* The channel's loop-gate@NAME.socket; without it (no systemd, or the socket unit is not running)
         * nobody can answer, and every "approve" ends as a deny inside the container. */
        r = channel_socket(ctx, "gate.sock", &sock);
        if (r < 0)
                return log_oom();
        if (r > 0) {
                if (bind_add(binds, sock, GATE_CONTAINER_SOCKET, true) < 0)
                        return log_oom();
        } else
                log_debug("No gate socket at %s: approvals of channel %s will be denied.", sock, ctx->channel);

        if (strv_extend(env, "LOOP_GATE_ENABLED=1") < 0 ||
            strv_extend(env, "LOOP_GATE_POLICY_FILE=" GATE_CONTAINER_POLICY) < 0 ||
            strv_extend(env, "LOOP_GATE_SOCKET=" GATE_CONTAINER_SOCKET) < 0 ||
            (ctx->config.gates.audit.verbose && strv_extend(env, "LOOP_GATE_VERBOSE=1") < 0) ||
            strv_consume(env, env_pair("LOOP_CHANNEL_ID", ctx->channel)) < 0 ||
            strv_consume(env, env_pair("LOOP_GATE_TOKEN", token)) < 0)
                return log_oom();
        explicit_bzero(token, sizeof token);
        return 0;
}

/* The channel's Docker API proxy (loop-dockerproxy@NAME.socket), when its gates.docker_proxy is on and
 * the socket exists: the agent's docker client finds it at the usual place. Without the socket the agent
 * simply has no Docker API. */
#define DOCKERPROXY_CONTAINER_SOCKET "/var/run/docker.sock"

static int dockerproxy_prepare(RunContext *ctx, char ***env, char ***binds) {
        _cleanup_free_ char *sock = NULL;
        int r;

        r = channel_socket(ctx, "docker.sock", &sock);
        if (r < 0)
                return log_oom();
        if (r == 0) {
                log_debug("No Docker API proxy socket at %s: the agent of channel %s gets no Docker API.", sock, ctx->channel);
                return 0;
        }
        if (bind_add(binds, sock, DOCKERPROXY_CONTAINER_SOCKET, false) < 0 ||
            strv_extend(env, "DOCKER_HOST=unix://" DOCKERPROXY_CONTAINER_SOCKET) < 0)
                return log_oom();
        return 0;
}

/* The channel's helpers that the agent calls with a token of its own (issue 22's scheduled tasks, issue 21's
 * browser): when the helper's socket exists, it is bind-mounted into the container, and the container gets
 * a token (kept for the helper in RUNTIME/NAME/<tokens_dir>/, as the gate's), which the agent's MCP server
 * sends with every call. The agent is the token's legitimate user, so it reads it, from a file bound
 * read-only into the container (0400, the agent's uid), not from its environment. Without the socket the
 * agent's tools answer that the helper is not available. */
typedef struct TokenHelper {
        const char *what;               /* for messages: "tasks", "browser" */
        const char *socket_name;        /* in RUNTIME/NAME/ */
        const char *container_socket;
        const char *container_token;
        const char *tokens_dirname;
        const char *env_socket;         /* "NAME=VALUE" for the agent's MCP server */
        const char *env_token;
} TokenHelper;

#define TASKS_TOKENS_DIRNAME "tasks-tokens"
static const TokenHelper tasks_helper = {
        .what = "tasks",
        .socket_name = "tasks.sock",
        .container_socket = "/run/loop/tasks.sock",
        .container_token = "/run/loop/tasks-token",
        .tokens_dirname = TASKS_TOKENS_DIRNAME,
        .env_socket = "LOOP_TASKS_SOCKET=/run/loop/tasks.sock",
        .env_token = "LOOP_TASKS_TOKEN_FILE=/run/loop/tasks-token",
};
static const TokenHelper browser_helper = {
        .what = "browser",
        .socket_name = "browser.sock",
        .container_socket = BROWSER_CONTAINER_SOCKET,
        .container_token = BROWSER_CONTAINER_TOKEN,
        .tokens_dirname = BROWSER_TOKENS_DIRNAME,
        .env_socket = "LOOP_BROWSER_SOCKET=" BROWSER_CONTAINER_SOCKET,
        .env_token = "LOOP_BROWSER_TOKEN_FILE=" BROWSER_CONTAINER_TOKEN,
};

typedef struct TokenFiles {
        const TokenHelper *helper;
        const char *channel;
        const char *name;
        char *token_path;
        bool token_written;
} TokenFiles;

static void token_files_done(TokenFiles *t) {
        int r;

        if (t->token_written && (r = loop_token_remove(t->channel, t->helper->tokens_dirname, t->name)) < 0)
                log_warning_errno(r, "Failed to remove the %s token of %s, ignoring: %m", t->helper->what, t->name);
        t->token_written = false;
        if (t->token_path)
                (void) unlink(t->token_path);
        t->token_path = mfree(t->token_path);
}

static int token_helper_prepare(RunContext *ctx, const TokenHelper *h, const char *name, TokenFiles *t,
                                char ***env, char ***binds) {
        _cleanup_free_ char *sock = NULL;
        _cleanup_close_ int fd = -EBADF;
        char token[GATE_TOKEN_HEX_LEN + 1];
        int r;

        *t = (TokenFiles) { .helper = h, .channel = ctx->channel, .name = name };
        r = channel_socket(ctx, h->socket_name, &sock);
        if (r < 0)
                return log_oom();
        if (r == 0) {
                log_debug("No %s socket at %s: the agent of channel %s cannot use it.", h->what, sock, ctx->channel);
                return 0;
        }
        r = gate_token_generate(token);
        if (r < 0)
                return log_error_errno(r, "Failed to make a %s token: %m", h->what);
        (void) audit_add_secret(token);

        if (asprintf(&t->token_path, "%s/%s-token-%s", ctx->state_dir, h->what, name) < 0)
                return log_oom();
        (void) unlink(t->token_path);
        fd = open(t->token_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        if (fd < 0 || fchown(fd, ctx->user.uid, ctx->user.gid) < 0 ||
            (r = loop_write(fd, token, GATE_TOKEN_HEX_LEN)) < 0) {
                r = fd < 0 || r >= 0 ? -errno : r;
                explicit_bzero(token, sizeof token);
                return log_error_errno(r, "Failed to write %s: %m", t->token_path);
        }
        r = loop_token_write(ctx->channel, h->tokens_dirname, name, token);
        explicit_bzero(token, sizeof token);
        if (r < 0) {
                log_notice_errno(r, "Cannot record the %s token of %s (%m): it cannot use the %s.", h->what, name, h->what);
                return 0;
        }
        t->token_written = true;
        if (bind_add(binds, sock, h->container_socket, false) < 0 ||
            bind_add(binds, t->token_path, h->container_token, true) < 0 ||
            strv_extend(env, h->env_socket) < 0 || strv_extend(env, h->env_token) < 0)
                return log_oom();
        return 0;
}

/* The browser's screenshots (loop-browser@NAME's StateDirectory=), read-only for the agent where the
 * browser's answers name them. loop-browser@ starts on the first call, after this container: the
 * directory is made here (root 0755; systemd gives it to user loop when the service starts), so the
 * bind exists from the first run on and the paths the answers name are there. */
static int browser_screenshots_bind(RunContext *ctx, char ***binds) {
        _cleanup_free_ char *dir = NULL;
        int r;

        if (asprintf(&dir, "%s/screenshots", ctx->state_dir) < 0)
                return log_oom();
        r = mkdir_owned(dir, 0755, 0, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to create %s: %m", dir);
        if (bind_add(binds, dir, BROWSER_CONTAINER_SCREENSHOTS, true) < 0)
                return log_oom();
        return 0;
}

/* The egress gateway of one agent or shell container: the container gets no network; the channel's
 * gateway socket is bind-mounted where `loop relay` (started by the entrypoint) forwards the agent's
 * connections to, with the container's token (asked of the gateway, in a root-only file bound in for the
 * relay alone) and the container's own model-API dummy in the agent's environment. Without the socket or
 * the token (no systemd, the channel's loop-gateway@.socket is not running, the gateway refuses) the
 * agent has no egress at all: fail closed, said once here. */
#define GATEWAY_CONTAINER_SOCKET "/run/loop/gateway.sock"
#define GATEWAY_CONTAINER_TOKEN "/run/loop/gateway-token"
#define GATEWAY_CONTAINER_CA "/run/loop/egress-ca.pem"
/* Made by the entrypoint: the image's own bundle plus the sandbox CA. */
#define GATEWAY_CONTAINER_CA_BUNDLE "/run/loop-egress/ca-bundle.pem"
#define GATEWAY_CA_MAX (64U * 1024U)
#define GATEWAY_REGISTER_MAX (4U * 1024U)
#define GATEWAY_CA_TIMEOUT_SEC 10L

/* GET or POST url_path on the gateway socket; the 200 answer's body in *ret. */
static int egress_ask(const char *sock, const char *url_path, bool post, size_t max, char **ret) {
        _cleanup_free_ char *url = NULL;
        CurlBuffer b = { .max = max };
        CURL *h = curl_easy_init();
        long status = 0;
        CURLcode cc;

        if (!h || asprintf(&url, "http://localhost%s", url_path) < 0) {
                curl_easy_cleanup(h);
                return -ENOMEM;
        }
        if (curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_TIMEOUT, GATEWAY_CA_TIMEOUT_SEC) != CURLE_OK ||
            (post && curl_easy_setopt(h, CURLOPT_POSTFIELDS, "") != CURLE_OK) ||
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_buffer_write) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_WRITEDATA, &b) != CURLE_OK) {
                curl_easy_cleanup(h);
                return -ENOMEM;
        }
        cc = curl_easy_perform(h);
        (void) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(h);
        if (cc != CURLE_OK || status != 200 || !b.data) {
                if (b.data)
                        explicit_bzero(b.data, b.size);
                free(b.data);
                return cc == CURLE_OK ? (status == 403 ? -EPERM : -EBADMSG) : -ECONNREFUSED;
        }
        *ret = b.data;
        return 0;
}

/* The sandbox CA's certificate, asked of the gateway itself (which makes the CA at its first start). */
static int egress_fetch_ca(const char *sock, char **ret) {
        _cleanup_free_ char *pem = NULL;
        int r;

        r = egress_ask(sock, "/.loop/ca.pem", false, GATEWAY_CA_MAX, &pem);
        if (r < 0)
                return r;
        if (!startswith(pem, "-----BEGIN CERTIFICATE-----"))
                return -EBADMSG;
        *ret = TAKE_PTR(pem);
        return 0;
}

/* The container's token and model-API dummy, from the gateway (which answers root only). */
static int egress_register(const char *sock, const char *name, char **ret_token, char **ret_dummy) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *path = NULL, *body = NULL;
        json_object *t, *d;
        int r;

        if (!egress_container_name_is_valid(name) || asprintf(&path, "%s?container=%s", EGRESS_REGISTER_PATH, name) < 0)
                return -EINVAL;
        r = egress_ask(sock, path, true, GATEWAY_REGISTER_MAX, &body);
        if (r < 0)
                return r;
        o = json_tokener_parse(body);
        explicit_bzero(body, strlen(body));
        if (!o || !json_object_object_get_ex(o, "token", &t) || !json_object_object_get_ex(o, "dummy", &d) ||
            !json_object_is_type(t, json_type_string) || !json_object_is_type(d, json_type_string) ||
            json_object_get_string_len(t) != EGRESS_TOKEN_HEX_LEN || !startswith(json_object_get_string(d), EGRESS_DUMMY_PREFIX))
                return -EBADMSG;
        *ret_token = strdup(json_object_get_string(t));
        *ret_dummy = strdup(json_object_get_string(d));
        if (!*ret_token || !*ret_dummy) {
                free(*ret_token);
                free(*ret_dummy);
                return -ENOMEM;
        }
        return 0;
}

/* The host file holding container name's credential for its relay. */
static char *egress_token_path(const RunContext *ctx, const char *name) {
        char *p = NULL;
        return asprintf(&p, "%s/gateway-token-%s", ctx->state_dir, name) < 0 ? NULL : p;
}

static void token_file_removep(char **p) {
        if (*p)
                (void) unlink(*p);
        *p = mfree(*p);
}

static int egress_prepare(RunContext *ctx, const char *name, char ***env, char ***binds, char **ret_dummy) {
        _cleanup_free_ char *sock = NULL, *ca = NULL, *ca_path = NULL, *token = NULL, *dummy = NULL,
                            *token_path = NULL, *line = NULL;
        int r;

        *ret_dummy = NULL;
        r = channel_socket(ctx, "gateway.sock", &sock);
        if (r < 0)
                return log_oom();
        if (r == 0) {
                log_warning("No egress gateway socket at %s: the agent of channel %s has no network "
                            "(start loop-gateway@%s.socket, or set egress.enabled to false).", sock, ctx->channel, ctx->channel);
                return strv_extend(env, "LOOP_GATEWAY_SOCKET=" GATEWAY_CONTAINER_SOCKET) < 0 ? log_oom() : 0;
        }

        /* The container's credential for the gateway, readable by root in the container only (the
         * relay), never by the agent; without it the gateway refuses every connection. */
        r = egress_register(sock, name, &token, &dummy);
        if (r < 0) {
                log_warning_errno(r, "The egress gateway of channel %s gives container %s no token (%m): it has no network.",
                                  ctx->channel, name);
                return strv_extend(env, "LOOP_GATEWAY_SOCKET=" GATEWAY_CONTAINER_SOCKET) < 0 ? log_oom() : 0;
        }
        (void) audit_add_secret(token);
        token_path = egress_token_path(ctx, name);
        if (!token_path || asprintf(&line, "%s %s\n", name, token) < 0)
                return log_oom();
        explicit_bzero(token, strlen(token));
        r = write_file_atomic(token_path, line, strlen(line), 0400);
        explicit_bzero(line, strlen(line));
        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", token_path);
        if (bind_add(binds, token_path, GATEWAY_CONTAINER_TOKEN, true) < 0 ||
            strv_extend(env, "LOOP_GATEWAY_TOKEN_FILE=" GATEWAY_CONTAINER_TOKEN) < 0)
                return log_oom();

        if (bind_add(binds, sock, GATEWAY_CONTAINER_SOCKET, false) < 0 ||
            strv_extend(env, "LOOP_GATEWAY_SOCKET=" GATEWAY_CONTAINER_SOCKET) < 0)
                return log_oom();
        *ret_dummy = TAKE_PTR(dummy);

        /* The sandbox CA goes into the agent's trust store, so the hosts the gateway injects credentials
         * for verify. Without it those hosts fail the agent's own TLS check: closed, not open. */
        r = egress_fetch_ca(sock, &ca);
        if (r < 0) {
                log_warning_errno(r, "Cannot get the sandbox CA from the egress gateway of channel %s, hosts with a "
                                  "credential will fail TLS in the agent: %m", ctx->channel);
                return 0;
        }
        if (asprintf(&ca_path, "%s/egress-ca.pem", ctx->state_dir) < 0)
                return log_oom();
        r = write_file_atomic(ca_path, ca, strlen(ca), 0644);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", ca_path);
        if (bind_add(binds, ca_path, GATEWAY_CONTAINER_CA, true) < 0 ||
            strv_extend(env, "LOOP_EGRESS_CA=" GATEWAY_CONTAINER_CA) < 0 ||
            strv_extend(env, "NODE_EXTRA_CA_CERTS=" GATEWAY_CONTAINER_CA) < 0 ||
            strv_extend(env, "SSL_CERT_FILE=" GATEWAY_CONTAINER_CA_BUNDLE) < 0 ||
            strv_extend(env, "REQUESTS_CA_BUNDLE=" GATEWAY_CONTAINER_CA_BUNDLE) < 0 ||
            strv_extend(env, "CURL_CA_BUNDLE=" GATEWAY_CONTAINER_CA_BUNDLE) < 0)
                return log_oom();
        return 0;
}

/* The seccomp workload profile for the channel's containers; without it nothing runs. */
static int runner_seccomp_option(RunContext *ctx, ContainerType type, char **ret) {
        int r = type == CONTAINER_CHROME ?
                seccomp_profile_security_opt_chrome(engine_kind(ctx->conn->engine), ctx->state_dir, ret) :
                seccomp_profile_security_opt(engine_kind(ctx->conn->engine), ctx->state_dir, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to prepare the seccomp workload profile in %s, not running: %m",
                                       ctx->state_dir);
        return 0;
}

/* Every container of a channel (the agent's, the shell's, Chrome's) is planned here, so none can miss a
 * guard: the egress gateway (no network, the relay, the container's own dummy, no real key), the seccomp
 * workload profile (Chrome's: the same less what its own sandbox needs), and what container_plan_build() adds for all of them (masks, protected paths, caps,
 * read-only root). extra_env and binds (the gate's, for the agent) come first; the egress gateway's are
 * added to them. */
static int runner_container_plan(RunContext *ctx, ContainerType type, const char *name, char * const *cmd,
                                 char ***extra_env, char ***binds, ContainerPlan **ret) {
        _cleanup_free_ char *seccomp = NULL, *dummy = NULL;
        bool egress;
        int r;

        egress = egress_config_enabled(ctx->config.json);
        if (egress) {
                r = egress_prepare(ctx, name, extra_env, binds, &dummy);
                if (r < 0)
                        return r;
        }
        r = runner_seccomp_option(ctx, type, &seccomp);
        if (r < 0)
                return r;

        ContainerInput in = {
                .egress_gateway = egress,
                .egress_dummy = dummy,
                .channel = ctx->channel,
                .type = type,
                .name = name,
                .config = &ctx->config,
                .user = &ctx->user,
                .engine = engine_kind(ctx->conn->engine),
                .host_env = environ,
                .timezone = ctx->timezone,
                .git_excludes_file = ctx->git_excludes,
                .cmd = cmd,
                .extra_env = *extra_env,
                .extra_binds = *binds,
                .home_dir = ctx->home_dir,
                .cgroup_parent = ctx->slice,
                .owner = type == CONTAINER_SHELL ? "shell" : type == CONTAINER_CHROME ? "chrome" : ctx->req->owner ?: "cli",
                .seccomp_option = seccomp,
                .empty_dir = ctx->empty_dir,
        };
        r = container_plan_build(&in, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to prepare the %s container: %m", container_type_to_string(type));
        STRV_FOREACH(l, (*ret)->skipped)
                log_notice("%s", *l);
        return 0;
}

/* The tripwire over the work dir's protected paths (tripwire.h): a snapshot before the container exists. */
static int runner_tripwire_new(RunContext *ctx, Tripwire **ret) {
        _cleanup_strv_free_ char **paths = NULL, **rel = NULL;
        _cleanup_free_ char *root = NULL;
        int r;

        *ret = NULL;
        if (!ctx->config.tripwire)
                return 0;
        /* Everything guarded lies in the mount root: the work dir, or parent_dir around a worktree. */
        r = protected_paths_guarded(&ctx->config, &root, &paths);
        if (r < 0)
                return log_error_errno(r, "Cannot list the protected paths of %s: %m", ctx->config.work_dir);
        STRV_FOREACH(p, paths) {
                size_t n = streq(root, "/") ? 0 : strlen(root);
                if ((*p)[n] == '/' && (r = strv_extend(&rel, *p + n + 1)) < 0)
                        return log_oom();
        }
        r = tripwire_new(root, rel ?: (char *[]) { NULL }, ret);
        if (r < 0)
                return log_error_errno(r, "Cannot take the tripwire's snapshot of the protected paths in %s (%m); "
                                       "not running (\"tripwire\": false runs without it).", root);
        return 0;
}

/* A protected path changed: the container is stopped (the watch thread killed it already when it knew
 * its pid), the change journaled and the snapshot restored. */
static int runner_tripwire_tripped(const char *channel, const char *work_dir, Engine *e, const char *id, const char *name,
                                   const char *container_type, Tripwire *tw, const char *path) {
        _cleanup_free_ char *f_path = NULL, *f_work = NULL, *f_restored = NULL;
        int restored;

        (void) engine_container_stop(e, id, 0);
        work_dir = tripwire_root(tw);   /* the mount root the paths are relative to */
        restored = tripwire_restore(tw);
        if (asprintf(&f_path, "LOOP_PATH=%s", path) < 0 || asprintf(&f_work, "LOOP_WORK_DIR=%s", work_dir) < 0 ||
            asprintf(&f_restored, "LOOP_RESTORED=%d", restored) < 0)
                return log_oom();
        char *extra[] = { f_path, f_work, f_restored, NULL };
        AuditFields f = {
                .channel = channel,
                .container = id,
                .container_name = name,
                .container_type = container_type,
                .extra = extra,
        };
        (void) audit_log(AUDIT_TAMPER, LOG_CRIT, &f, "Protected path %s/%s changed during the run of %s; container "
                         "killed, protected paths restored.", work_dir, path, name);
        if (restored < 0)
                log_error_errno(restored, "Failed to restore every protected path of %s: %m", work_dir);
        return log_error_errno(EPERM, "The protected path %s/%s changed during the run: container %s was killed and "
                               "the protected paths restored. Check the work dir before running again.",
                               work_dir, path, name);
}

/* One container: create, copy in, start, follow the output, wait, schedule its removal. */
static int run_container(RunContext *ctx, const char *prompt, const char *resume, Attempt *ret) {
        Engine *e = ctx->conn->engine;
        const RunHooks *hooks = ctx->req->hooks;
        _cleanup_(container_plan_freep) ContainerPlan *plan = NULL;
        _cleanup_(stream_parser_freep) StreamParser *parser = NULL;
        _cleanup_strv_free_ char **argv = NULL, **extra_env = NULL, **binds = NULL;
        _cleanup_free_ char *name = NULL, *id = NULL;
        _cleanup_(token_file_removep) char *token_path = NULL;
        _cleanup_(tripwire_freep) Tripwire *tripwire = NULL;
        _cleanup_(gate_files_done) GateFiles gate = {};
        _cleanup_(token_files_done) TokenFiles tasks = {}, browser = {};
        StreamPrinter printer = { .req = ctx->req };
        char **add_dirs = ctx->config.extra_dirs;
        int r, exit_code = -1;
        bool started = false;

        AgentRequest areq = {
                .bin = ctx->req->agent ?: ctx->config.claude_bin_path,
                .model = ctx->config.claude_model,
                .mcp_config = ctx->mcp_path,
                .resume = resume,
                .add_dirs = add_dirs,
                .prompt = prompt,
        };
        r = agent_argv_build(&areq, &argv);
        if (r < 0)
                return log_error_errno(r, "Failed to build the agent's command line: %m");

        r = container_name_new(ctx->channel, ctx->config.work_dir, &name);
        if (r < 0)
                return log_error_errno(r, "Failed to name the container: %m");

        if (ctx->config.gates.agentgate.enabled) {
                r = gate_prepare(ctx, name, &gate, &extra_env, &binds);
                if (r < 0)
                        return r;
                if (ctx->config.gates.docker_proxy.enabled) {
                        r = dockerproxy_prepare(ctx, &extra_env, &binds);
                        if (r < 0)
                                return r;
                }
        }
        r = token_helper_prepare(ctx, &tasks_helper, name, &tasks, &extra_env, &binds);
        if (r < 0)
                return r;
        if (ctx->config.browser.enabled) {
                r = token_helper_prepare(ctx, &browser_helper, name, &browser, &extra_env, &binds);
                if (r < 0)
                        return r;
                r = browser_screenshots_bind(ctx, &binds);
                if (r < 0)
                        return r;
        }

        /* the relay read its token when the container started: the file goes with the run */
        token_path = egress_token_path(ctx, name);
        if (!token_path)
                return log_oom();
        r = runner_container_plan(ctx, CONTAINER_AGENT, name, argv, &extra_env, &binds, &plan);
        if (r < 0)
                return r;

        r = stream_parser_new(on_event, &printer, &parser);
        if (r < 0)
                return log_oom();
        printer.parser = parser;
        r = runner_tripwire_new(ctx, &tripwire);
        if (r < 0)
                return r;

        r = engine_container_create(e, name, plan->body, &id);
        if (r < 0)
                return log_error_errno(r, "Failed to create the container: %s", engine_last_error(e));
        log_debug("Created container %s (%s).", name, id);
        if (hooks && hooks->created)
                hooks->created(id, name, hooks->userdata);

        r = copy_files_in(ctx, e, id, plan);
        if (r < 0)
                goto finish;

        r = engine_container_start(e, id);
        if (r < 0) {
                log_error_errno(r, "Failed to start the container: %s", engine_last_error(e));
                goto finish;
        }
        started = true;
        {
                _cleanup_free_ char *scope = NULL;
                pid_t pid = container_main_pid(e, id);
                if (pid > 0 && ctx->slice)
                        (void) scope_of_pid(pid, &scope);
                container_registered(ctx, id, name, scope, pid);
                if (tripwire && (r = tripwire_arm(tripwire, pid)) < 0) {
                        log_error_errno(r, "Failed to start the tripwire: %m");
                        (void) engine_container_stop(e, id, 0);
                        goto finish;
                }
                if (hooks && hooks->started)
                        hooks->started(id, name, pid, scope, hooks->userdata);
        }

        /* Seed 001's two modes: streaming follows the output as it comes (turns are printed or journaled
         * live); batch, when nobody watches, waits for the exit and reads the output once. */
        if (ctx->config.container_timeout_sec > 0)
                alarm((unsigned) MIN(ctx->config.container_timeout_sec, (uint64_t) UINT_MAX));
        if (ctx->req->out || (hooks && hooks->event)) {
                r = engine_container_logs(e, id, true, on_output, &printer);
                if (r >= 0 && !run_interrupted && !run_timed_out)
                        r = engine_container_wait(e, id, &exit_code);
        } else {
                r = engine_container_wait(e, id, &exit_code);
                if (r >= 0 && !run_interrupted && !run_timed_out)
                        r = engine_container_logs(e, id, false, on_output, &printer);
        }
        alarm(0);

        if (tripwire && tripwire_disarm(tripwire)) {
                r = runner_tripwire_tripped(ctx->channel, ctx->config.work_dir, e, id, name, "agent", tripwire,
                                            tripwire_disarm(tripwire));
                goto finish;
        }
        if (run_interrupted || run_timed_out) {
                /* The stream was cut on purpose: stop what runs, then report why. */
                (void) engine_container_stop(e, id, 5);
                r = run_interrupted ? log_error_errno(EINTR, "Interrupted; container %s stopped.", name)
                                    : log_error_errno(ETIMEDOUT, "The agent did not finish within %" PRIu64 " s "
                                                      "(container_timeout_sec); container %s stopped.",
                                                      ctx->config.container_timeout_sec, name);
                goto finish;
        }
        if (r < 0) {
                log_error_errno(r, "Lost the container's output: %s", engine_last_error(e));
                goto finish;
        }
        (void) stream_parser_finish(parser);

        *ret = (Attempt) { .exit_code = exit_code, .stderr_line = stderr_last_line(&printer) };
        r = take_result(stream_parser_result(parser), &ret->result);
        ret->result_printed = r >= 0 && printer.last_text && streq_ptr(printer.last_text, ret->result.result);
        if (r < 0)
                log_oom();
finish:
        free(printer.last_text);
        container_finished(ctx, id, started);
        if (hooks && hooks->finished)
                hooks->finished(id, name, exit_code, hooks->userdata);
        return r;
}

/* Success, or the kind of error an attempt ended with, and one line saying why. */
static AgentErrorKind attempt_error(const Attempt *a, char **ret_message) {
        AgentErrorKind k;

        *ret_message = NULL;
        if (a->result.have_result && !a->result.is_error)
                return AGENT_ERROR_NONE;
        if (a->result.have_result) {
                k = agent_error_classify(a->result.result);
                if (k == AGENT_ERROR_NONE)
                        k = AGENT_ERROR_OTHER;
                *ret_message = strdup(strempty(a->result.result));
                return k;
        }
        k = agent_error_classify(a->stderr_line);
        if (k == AGENT_ERROR_NONE || k == AGENT_ERROR_OTHER)
                k = AGENT_ERROR_NO_RESULT;
        if (asprintf(ret_message, "the agent ended without a result (exit status %d)%s%s", a->exit_code,
                     a->stderr_line ? ": " : "", strempty(a->stderr_line)) < 0)
                *ret_message = NULL;
        return k;
}

static int runner_prepare(const RunRequest *req, RunContext *ctx) {
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        ConfigProblems problems = {};
        const Channel *ch;
        int r;

        r = config_load(config_dir(), &set);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir());
        ch = config_set_find_channel(set, req->channel);
        if (!ch)
                return log_error_errno(ENOENT, "No channel \"%s\": there is no %s/channels.d/%s.json.",
                                       req->channel, set->dir, req->channel);
        if (!ch->valid)
                return log_error_errno(EINVAL, "Channel \"%s\" is invalid: %s (see 'loop config check %s').",
                                       req->channel, strna(ch->reason), req->channel);
        config_set_log_warnings(set, ch->path);

        /* before anything is logged: a server may echo any of them into the agent's output */
        if (loop_config_register_secrets(&ch->config) < 0)
                log_warning("Not every secret of channel %s could be registered for redaction.", req->channel);

        r = runner_resolve_user(&ch->config, &ctx->user);
        if (r < 0)
                return r;

        r = channel_state_dir(req->channel, &ctx->state_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot find a state directory for channel %s: %m", req->channel);
        /* As loop-agent@.service's StateDirectory= makes it: root:root 0751 (see the unit). */
        r = mkdir_owned(ctx->state_dir, 0751, 0, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to create %s: %m", ctx->state_dir);
        if (asprintf(&ctx->home_dir, "%s/home", ctx->state_dir) < 0)
                return log_oom();
        r = mkdir_owned(ctx->home_dir, 0700, ctx->user.uid, ctx->user.gid);
        if (r < 0)
                return log_error_errno(r, "Failed to create the agent's home %s: %m", ctx->home_dir);
        if (asprintf(&ctx->empty_dir, "%s/empty", ctx->state_dir) < 0)
                return log_oom();
        r = mkdir_owned(ctx->empty_dir, 0555, 0, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to create %s: %m", ctx->empty_dir);

        /* The default work dir is ours to create; a configured one must exist. */
        if (!json_object_object_get_ex(ch->config.json, "work_dir", NULL)) {
                r = mkdir_owned(ch->config.work_dir, 0750, ctx->user.uid, ctx->user.gid);
                if (r < 0)
                        return log_error_errno(r, "Failed to create the work dir %s: %m", ch->config.work_dir);
        } else if (access(ch->config.work_dir, F_OK) < 0)
                return log_error_errno(errno, "The work dir %s of channel %s does not exist: %m",
                                       ch->config.work_dir, req->channel);

        /* The project file is the agent's: read it as the agent, so a hard link it planted to a file it
         * cannot read (a channel file with credentials) is not read by root on its behalf. */
        {
                FsIdentity saved = fs_become(&ctx->user);
                if (!saved.ok)
                        r = config_problem_add(&problems, true, ch->config.work_dir, NULL,
                                               "cannot switch to the agent's file system identity to read "
                                               ".loop/config.json") < 0 ? -ENOMEM : -EPERM;
                else
                        r = config_apply_project(&ch->config, ch->config.work_dir, &ctx->config, &problems);
                fs_restore(saved);
        }
        for (size_t i = 0; i < problems.n; i++) {
                _cleanup_free_ char *s = config_problem_to_string(&problems.items[i]);
                if (problems.items[i].error)
                        log_error("%s", strna(s));
                else
                        log_warning("%s", strna(s));
        }
        config_problems_done(&problems);
        if (r < 0)
                return log_error_errno(r, "The project config of %s cannot be used; not running.", ch->config.work_dir);

        if (req->image && free_and_strdup(&ctx->config.container_image, req->image) < 0)
                return log_oom();

        r = filter_mounts_by_user(ctx);
        if (r < 0)
                return log_error_errno(r, "Failed to check the mounts: %m");

        /* The gateway trusts egress.ca_file: one that does not load refuses every request, so no run starts. */
        if (loop_config_egress_ca_file(&ctx->config)) {
                _cleanup_free_ char *why = NULL;
                r = egress_ca_file_check(loop_config_egress_ca_file(&ctx->config), &why);
                if (r < 0)
                        return log_error_errno(r == -ENOMEM ? r : EINVAL,
                                               "egress.ca_file %s of channel %s cannot be loaded: %s; not running "
                                               "(see 'loop config check %s').", loop_config_egress_ca_file(&ctx->config),
                                               ctx->channel, strna(why), ctx->channel);
        }

        ctx->timezone = timezone_detect(getenv("TZ"), NULL);
        ctx->git_excludes = git_excludes_file(&ctx->user);

        r = engine_connect(ctx->config.engine.socket, &ctx->conn);
        if (r < 0)
                return r;       /* engine_connect() told the user what it tried */
        run_engine = ctx->conn->engine;

        /* Where no loop-reconcile.timer runs (systemd is not PID 1, or a private engine that lives only as
         * long as this command), each run reconciles its channel: containers kept past their
         * container_keep_alive_sec are removed here. The runner service does this once at its start. */
        if (!streq_ptr(req->owner, "service") && !streq_ptr(req->owner, "shell")) {
                _cleanup_(registry_freep) Registry *reg = NULL;
                if (registry_open(req->channel, &reg) >= 0) {
                        (void) registry_sync(reg, ctx->conn->engine, ctx->config.container_keep_alive_sec);
                        (void) registry_close(TAKE_PTR(reg));
                }
        }

        /* Under systemd, an engine with the systemd cgroup driver makes each container a scope in the
         * channel's slice (loop-NAME.slice, from the generator). */
        {
                _cleanup_(json_object_putp) json_object *info = NULL;
                json_object *driver;
                if (sd_booted() > 0 && engine_info(ctx->conn->engine, &info) >= 0 &&
                    json_object_object_get_ex(info, "CgroupDriver", &driver) &&
                    streq(strempty(json_object_get_string(driver)), "systemd")) {
                        ctx->slice = channel_slice_name(req->channel);
                        if (!ctx->slice)
                                return log_oom();
                }
        }

        r = engine_image_inspect(ctx->conn->engine, ctx->config.container_image, NULL);
        if (r == -ENOENT)
                return log_error_errno(r, "The image %s is not on the engine at %s; build it with 'loop image build'.",
                                       ctx->config.container_image, engine_socket_path(ctx->conn->engine));
        if (r < 0)
                return log_error_errno(r, "Failed to look up the image %s: %s", ctx->config.container_image,
                                       engine_last_error(ctx->conn->engine));

        /* A shell has no prompt and no MCP config of its own. */
        return req->prompt ? write_mcp_config(ctx) : 0;
}

int runner_run(const RunRequest *req, RunOutcome *ret) {
        _cleanup_(run_context_done) RunContext ctx = { .req = req, .channel = req->channel };
        _cleanup_(attempt_done) Attempt first = {}, retry = {}, compact = {};
        struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
        char *message = NULL;
        AgentErrorKind kind;
        RetryAction action;
        int r;

        *ret = (RunOutcome) {};
        run_interrupted = run_timed_out = 0;
        (void) sigaction(SIGALRM, &sa, &old_sa);

        r = runner_prepare(req, &ctx);
        if (r < 0)
                goto finish;

        r = run_container(&ctx, req->prompt, req->resume, &first);
        if (r < 0)
                goto finish;

        kind = attempt_error(&first, &message);
        action = retry_decide(kind, first.result.session_id, 0);
        if (kind == AGENT_ERROR_NONE || action == RETRY_GIVE_UP)
                goto done_first;

        /* Seed 001's retry: compact a session whose prompt grew too long, else resume once with the last
         * message; if the retry fails too, the first error is what the user sees. */
        ret->retries = 1;
        if (action == RETRY_COMPACT) {
                log_notice("The session is too long; compacting session %s and retrying.", first.result.session_id);
                r = run_container(&ctx, "/compact", first.result.session_id, &compact);
                if (r < 0)
                        goto finish;
        } else
                log_notice("The agent failed (%s); retrying once on session %s.", strna(message),
                           first.result.session_id);
        if (req->hooks && req->hooks->retrying)
                req->hooks->retrying(strna(message), first.result.session_id, req->hooks->userdata);
        r = run_container(&ctx, req->prompt, compact.result.session_id ?: first.result.session_id, &retry);
        if (r < 0)
                goto finish;
        {
                _cleanup_free_ char *m2 = NULL;
                if (attempt_error(&retry, &m2) == AGENT_ERROR_NONE) {
                        free(message);
                        message = NULL;
                        r = take_result(&retry.result, &ret->result);
                        ret->result_printed = retry.result_printed;
                        ret->error = AGENT_ERROR_NONE;
                        goto finish;
                }
        }

done_first:
        r = take_result(&first.result, &ret->result);
        ret->result_printed = first.result_printed;
        ret->error = kind;
        ret->error_message = TAKE_PTR(message);
        if (ret->error != AGENT_ERROR_NONE && !ret->error_message)
                ret->error_message = strdup(agent_error_kind_to_string(kind));
finish:
        free(message);
        remove_mcp_config(&ctx);
        (void) sigaction(SIGALRM, &old_sa, NULL);
        if (r < 0)
                run_outcome_done(ret);
        return r < 0 ? r : 0;
}

/* --- the shell container ----------------------------------------------------------------------------- */

/* The shell container's main process: idles until stopped, in any image with a POSIX sh. */
static char * const shell_idle_cmd[] = {
        (char *) "/bin/sh", (char *) "-c",
        (char *) "trap 'exit 0' TERM INT HUP; while :; do sleep 3600 & wait $!; done",
        NULL,
};

void runner_shell_started(ShellTarget *t) {
        t->lock = registry_free(t->lock);
}

void shell_target_done(ShellTarget *t) {
        registry_free(t->lock);
        tripwire_free(t->tripwire);
        free(t->work_dir);
        engine_connection_free(t->conn);
        free(t->id);
        free(t->name);
        free(t->user);
        free(t->channel);
        *t = (ShellTarget) {};
}

/* The running or stopped shell container of the channel in the engine, if any. */
static int shell_find(Engine *e, const char *channel, char **ret_id, char **ret_name, bool *ret_running) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ EngineContainerState *states = NULL;
        _cleanup_free_ char *label = NULL;
        int n, k;

        if (asprintf(&label, "loop-channel=%s", channel) < 0)
                return -ENOMEM;
        k = engine_container_list(e, label, true, &list);
        if (k < 0)
                return log_error_errno(k, "Cannot list the containers of channel %s: %s", channel, engine_last_error(e));
        n = engine_containers_of_channel(list, channel, &states);
        if (n < 0)
                return log_oom();
        /* A running one first; with several (made behind loop's back), the first running wins. */
        for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < n; i++) {
                        if (states[i].type != CONTAINER_SHELL || (pass == 0 && !states[i].running))
                                continue;
                        if (!(*ret_id = strdup(states[i].id)) || !(*ret_name = strdup(states[i].name)))
                                return log_oom();
                        *ret_running = states[i].running;
                        return 1;
                }
        return 0;
}

static int shell_create(RunContext *ctx, char **ret_id, char **ret_name) {
        Engine *e = ctx->conn->engine;
        _cleanup_(container_plan_freep) ContainerPlan *plan = NULL;
        _cleanup_strv_free_ char **extra_env = NULL, **binds = NULL;
        _cleanup_free_ char *base = NULL, *name = NULL, *id = NULL;
        int r;

        base = container_name_sanitize(ctx->channel);
        if (!base || asprintf(&name, "loop-shell-%s", base) < 0)
                return log_oom();
        /* the agent's path exactly: the shell runs what the agent wrote */
        r = runner_container_plan(ctx, CONTAINER_SHELL, name, shell_idle_cmd, &extra_env, &binds, &plan);
        if (r < 0)
                return r;

        r = engine_container_create(e, name, plan->body, &id);
        if (r < 0)
                return log_error_errno(r, "Failed to create the shell container %s: %s", name, engine_last_error(e));
        r = copy_files_in(ctx, e, id, plan);
        if (r < 0) {
                container_discard(e, id);
                return r;
        }
        *ret_id = TAKE_PTR(id);
        *ret_name = TAKE_PTR(name);
        return 0;
}

/* What the agent image's entrypoint writes as its last step before it execs the container's command
 * (image/agent/entrypoint), and how long a shell waits for it. */
#define SHELL_READY_FILE "/run/loop-etc/ready"
#define SHELL_READY_TIMEOUT_USEC (60 * USEC_PER_SEC)
#define SHELL_READY_POLL_MSEC 20

/* A session of `loop shell` is an exec beside the container's entrypoint, not its child: started before
 * the entrypoint is done, it ran without the agent user in /etc/passwd, or with the egress relay not yet
 * listening (its first connection refused). It waits for SHELL_READY_FILE, looked at through the
 * container's root (/proc/PID/root of its main process, no engine round trip); the container ending
 * first ends the wait with an error. A caller that may not look into the container (not root) does not
 * wait. */
static int shell_wait_ready(pid_t pid, const char *name) {
        _cleanup_close_ int pidfd = -EBADF;
        _cleanup_free_ char *marker = NULL;
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + SHELL_READY_TIMEOUT_USEC;

        if (pid <= 0)
                return 0;
        if (asprintf(&marker, "/proc/%i/root%s", (int) pid, SHELL_READY_FILE) < 0)
                return log_oom();
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0 && errno == ESRCH)
                return log_error_errno(ESRCH, "The shell container %s stopped while it started (see its logs).", name);
        if (pidfd < 0)
                return log_error_errno(errno, "Cannot watch the shell container %s's main process: %m", name);
        for (;;) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                struct stat st;

                if (fstatat(AT_FDCWD, marker, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                        return 0;
                if (errno == EACCES || errno == EPERM)
                        return 0;
                if (clock_usec(CLOCK_MONOTONIC) >= deadline)
                        return log_error_errno(ETIMEDOUT, "The shell container %s did not finish starting within %u s "
                                               "(its image's entrypoint writes %s when done: an image built "
                                               "by an older loop lacks it, 'loop image build' renews it).",
                                               name, (unsigned) (SHELL_READY_TIMEOUT_USEC / USEC_PER_SEC),
                                               SHELL_READY_FILE);
                if (poll(&p, 1, SHELL_READY_POLL_MSEC) > 0)
                        return log_error_errno(ESRCH, "The shell container %s stopped while it started (see its logs).",
                                               name);
        }
}

int runner_shell_open(const char *channel, ShellTarget *ret) {
        _cleanup_(run_context_done) RunContext ctx = { .channel = channel };
        _cleanup_(registry_freep) Registry *reg = NULL;
        _cleanup_free_ char *id = NULL, *name = NULL, *scope = NULL;
        _cleanup_(tripwire_freep) Tripwire *tripwire = NULL;
        RunRequest req = { .channel = channel, .owner = "shell" };
        bool running = false;
        pid_t pid;
        int r;

        ctx.req = &req;
        r = runner_prepare(&req, &ctx);
        if (r < 0)
                return r;

        /* The registry's lock is the channel's: two terminals opening a shell at once get the same
         * container, the second one waits here while the first creates it. */
        r = registry_open(channel, &reg);
        if (r < 0)
                return log_error_errno(r, "Cannot open the registry of channel %s: %m", channel);
        (void) registry_sync(reg, ctx.conn->engine, ctx.config.container_keep_alive_sec);

        /* The session's tripwire, its snapshot taken before the session can change anything. */
        r = runner_tripwire_new(&ctx, &tripwire);
        if (r < 0)
                return r;
        r = shell_find(ctx.conn->engine, channel, &id, &name, &running);
        if (r < 0)
                return r;
        if (r == 0) {
                r = shell_create(&ctx, &id, &name);
                if (r < 0)
                        return r;
        }
        if (!running) {
                r = engine_container_start(ctx.conn->engine, id);
                if (r < 0)
                        return log_error_errno(r, "Failed to start the shell container %s: %s", name,
                                               engine_last_error(ctx.conn->engine));
        }
        pid = container_main_pid(ctx.conn->engine, id);
        if (pid > 0 && ctx.slice)
                (void) scope_of_pid(pid, &scope);
        r = registry_register(reg, id, name, CONTAINER_SHELL, "shell", scope, pid);
        if (r < 0)
                log_warning_errno(r, "Failed to record the shell container in the registry, ignoring: %m");
        (void) registry_save(reg);
        /* A change kills the container's main process, every session in it with it. */
        if (tripwire && (r = tripwire_arm(tripwire, pid)) < 0)
                return log_error_errno(r, "Failed to start the tripwire: %m");
        r = shell_wait_ready(pid, name);
        if (r < 0)
                return r;

        *ret = (ShellTarget) {
                .conn = TAKE_PTR(ctx.conn),
                .id = TAKE_PTR(id),
                .name = TAKE_PTR(name),
                .keep_alive_sec = ctx.config.container_keep_alive_sec,
                .tripwire = TAKE_PTR(tripwire),
                .lock = TAKE_PTR(reg),
        };
        if (asprintf(&ret->user, "%u:%u", (unsigned) ctx.user.uid, (unsigned) ctx.user.gid) < 0 ||
            !(ret->channel = strdup(channel)) || !(ret->work_dir = strdup(ctx.config.work_dir))) {
                shell_target_done(ret);
                return log_oom();
        }
        return 0;
}

int runner_shell_release(ShellTarget *t) {
        _cleanup_(registry_freep) Registry *reg = NULL;
        _cleanup_(json_object_putp) json_object *j = NULL;
        Engine *e = t->conn->engine;
        json_object *execs;
        const char *changed = t->tripwire ? tripwire_disarm(t->tripwire) : NULL;
        int r;

        runner_shell_started(t);        /* a session that never ran holds the lock still */
        if (changed) {
                t->tampered = true;
                (void) runner_tripwire_tripped(t->channel, t->work_dir, e, t->id, t->name, "shell", t->tripwire, changed);
        }
        r = registry_open(t->channel, &reg);
        if (r < 0)
                return log_warning_errno(r, "Cannot open the registry of channel %s: %m", t->channel);
        /* Under the lock: a session that is just starting in another terminal keeps it running. */
        if (engine_container_inspect(e, t->id, &j) < 0)
                return 0;       /* gone already; the next reconcile drops it */
        if (json_object_object_get_ex(j, "ExecIDs", &execs) && json_object_is_type(execs, json_type_array))
                for (size_t i = 0; i < json_object_array_length(execs); i++) {
                        _cleanup_(json_object_putp) json_object *x = NULL;
                        json_object *running;
                        const char *exec_id = json_object_get_string(json_object_array_get_idx(execs, i));
                        if (exec_id && engine_exec_inspect(e, exec_id, &x) >= 0 &&
                            json_object_object_get_ex(x, "Running", &running) && json_object_get_boolean(running)) {
                                log_debug("Another session runs in %s; leaving it running.", t->name);
                                return 0;
                        }
                }
        (void) engine_container_stop(e, t->id, 5);
        r = registry_schedule_remove(reg, e, t->id, clock_usec(CLOCK_REALTIME), t->keep_alive_sec);
        (void) registry_close(TAKE_PTR(reg));
        return r;
}

/* ---- the Chrome container (runner.h) ---- */

/* The channel's Chrome containers in the engine, whatever their state, removed: the new one takes the name. */
static int chrome_remove_old(Engine *e, Registry *reg, const char *channel) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ EngineContainerState *states = NULL;
        _cleanup_free_ char *label = NULL;
        int n, r;

        if (asprintf(&label, "loop-channel=%s", channel) < 0)
                return log_oom();
        r = engine_container_list(e, label, true, &list);
        if (r < 0)
                return log_error_errno(r, "Cannot list the containers of channel %s: %s", channel, engine_last_error(e));
        n = engine_containers_of_channel(list, channel, &states);
        if (n < 0)
                return log_oom();
        for (int i = 0; i < n; i++) {
                if (states[i].type != CONTAINER_CHROME)
                        continue;
                log_info("Removing the earlier Chrome container %s of channel %s.", states[i].name, channel);
                (void) engine_container_remove(e, states[i].id, true);
                (void) registry_remove(reg, e, states[i].id, "replaced");
        }
        return 0;
}

/* Whether the bridge's socket exists (it listens before it starts Chrome). */
static bool chrome_socket_ready(const char *path) {
        struct stat st;
        return stat(path, &st) >= 0 && S_ISSOCK(st.st_mode);
}

int runner_chrome_run(const ChromeRequest *creq, int *ret_exit_code) {
        _cleanup_(run_context_done) RunContext ctx = { .channel = creq->channel };
        _cleanup_(container_plan_freep) ContainerPlan *plan = NULL;
        _cleanup_(registry_freep) Registry *reg = NULL;
        _cleanup_strv_free_ char **extra_env = NULL, **binds = NULL;
        _cleanup_free_ char *name = NULL, *id = NULL, *bind = NULL, *sock = NULL, *scope = NULL;
        _cleanup_(token_file_removep) char *token_path = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        RunRequest req = { .channel = creq->channel, .owner = "chrome" };
        Engine *e;
        pid_t pid;
        int r, exit_code = -1;

        ctx.req = &req;
        r = runner_prepare(&req, &ctx);
        if (r < 0)
                return r;
        e = ctx.conn->engine;
        if (!ctx.config.browser.enabled)
                return log_error_errno(EPERM, "The browser of channel %s is disabled (browser.enabled is false).", creq->channel);
        if (json_object_object_get_ex(ctx.config.json, "browser", NULL) && ctx.config.browser.host_cdp_port != 9222)
                log_warning("browser.host_cdp_port of channel %s is obsolete and ignored: CDP has no TCP port, only "
                            "loop-browser@%s reaches Chrome.", creq->channel, creq->channel);
        r = engine_image_inspect(e, ctx.config.browser.chrome_image, NULL);
        if (r == -ENOENT)
                return log_error_errno(r, "The Chrome image %s is not on the engine at %s; build it with 'loop image build'.",
                                       ctx.config.browser.chrome_image, engine_socket_path(e));

        /* Chrome runs as the browser service's user, which alone may enter the socket's directory. */
        r = mkdir_owned(creq->cdp_dir, 0700, creq->uid, creq->gid);
        if (r < 0)
                return log_error_errno(r, "Failed to create %s: %m", creq->cdp_dir);
        dir_fd = open(creq->cdp_dir, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0 || (geteuid() == 0 && fchown(dir_fd, creq->uid, creq->gid) < 0) || fchmod(dir_fd, 0700) < 0)
                return log_error_errno(errno, "Failed to make %s private to uid %u: %m", creq->cdp_dir, (unsigned) creq->uid);
        if (asprintf(&sock, "%s/" CHROME_CDP_SOCKET_NAME, creq->cdp_dir) < 0)
                return log_oom();
        (void) unlink(sock);

        host_user_done(&ctx.user);
        ctx.user = (HostUser) { .uid = creq->uid, .gid = creq->gid };
        if (!(ctx.user.name = strdup("chrome")) || !(ctx.user.home = strdup("/")))
                return log_oom();
        ctx.home_dir = mfree(ctx.home_dir);     /* the agent's home is not Chrome's */

        name = container_name_chrome(creq->channel);
        if (!name)
                return log_oom();
        if (asprintf(&bind, "%s:" CHROME_CONTAINER_CDP_DIR, creq->cdp_dir) < 0 || strv_consume(&binds, TAKE_PTR(bind)) < 0 ||
            strv_extend(&extra_env, "HOME=/tmp") < 0 ||
            strv_extend(&extra_env, "LOOP_CDP_SOCKET=" CHROME_CONTAINER_CDP_DIR "/" CHROME_CDP_SOCKET_NAME) < 0)
                return log_oom();

        r = registry_open(creq->channel, &reg);
        if (r < 0)
                return log_error_errno(r, "Cannot open the registry of channel %s: %m", creq->channel);
        r = chrome_remove_old(e, reg, creq->channel);
        if (r < 0)
                return r;
        token_path = egress_token_path(&ctx, name);
        if (!token_path)
                return log_oom();
        r = runner_container_plan(&ctx, CONTAINER_CHROME, name, NULL, &extra_env, &binds, &plan);
        if (r < 0)
                return r;
        r = engine_container_create(e, name, plan->body, &id);
        if (r < 0)
                return log_error_errno(r, "Failed to create the Chrome container %s: %s", name, engine_last_error(e));
        r = engine_container_start(e, id);
        if (r < 0) {
                log_error_errno(r, "Failed to start the Chrome container %s: %s", name, engine_last_error(e));
                container_discard(e, id);
                return r;
        }
        pid = container_main_pid(e, id);
        if (pid > 0 && ctx.slice)
                (void) scope_of_pid(pid, &scope);
        r = registry_register(reg, id, name, CONTAINER_CHROME, "chrome", scope, pid);
        if (r < 0)
                log_warning_errno(r, "Failed to record the Chrome container in the registry, ignoring: %m");
        (void) registry_close(TAKE_PTR(reg));

        for (unsigned i = 0; !chrome_socket_ready(sock); i++) {
                json_object *state = NULL, *running = NULL;
                bool up;

                if (run_interrupted || i >= CHROME_READY_TIMEOUT_SEC * 10) {
                        log_error("The Chrome container %s did not open %s in %us.", name, sock, CHROME_READY_TIMEOUT_SEC);
                        (void) engine_container_stop(e, id, 5);
                        return -ETIMEDOUT;
                }
                if (i % 10 == 9) {
                        _cleanup_(json_object_putp) json_object *j = NULL;
                        up = engine_container_inspect(e, id, &j) >= 0 &&
                             json_object_object_get_ex(j, "State", &state) &&
                             json_object_object_get_ex(state, "Running", &running) && json_object_get_boolean(running);
                        if (!up)
                                break;  /* it ended: its exit code says why */
                }
                (void) usleep(100 * 1000);
        }
        if (chrome_socket_ready(sock) && creq->ready)
                creq->ready(name, creq->userdata);

        r = engine_container_wait(e, id, &exit_code);
        {
                _cleanup_(engine_connection_freep) EngineConnection *c2 = NULL;
                _cleanup_(registry_freep) Registry *r2 = NULL;

                /* interrupted: a fresh connection stops it (the first one was interrupted) */
                if ((r < 0 || run_interrupted) && engine_connect(ctx.config.engine.socket, &c2) >= 0) {
                        e = c2->engine;
                        (void) engine_container_stop(e, id, 5);
                }
                if (r < 0 || run_interrupted)
                        exit_code = run_interrupted ? 0 : 1;    /* an engine that failed us: the unit restarts */
                /* gone after container_keep_alive_sec, like every stopped container (a new start replaces it) */
                if (registry_open(creq->channel, &r2) >= 0) {
                        (void) registry_schedule_remove(r2, e, id, clock_usec(CLOCK_REALTIME), ctx.config.container_keep_alive_sec);
                        (void) registry_close(TAKE_PTR(r2));
                }
        }
        (void) unlink(sock);
        *ret_exit_code = exit_code;
        return 0;
}
