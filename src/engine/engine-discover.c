/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "config-build.h"
#include "dirent-util.h"
#include "engine-discover.h"
#include "fs-util.h"
#include "io-util.h"
#include "log.h"
#include "strv.h"

#define ENGINE_PODMAN_SOCKET "/run/podman/podman.sock"
#define ENGINE_DOCKER_SOCKET "/var/run/docker.sock"
/* A socket-activated engine needs a moment for its first answer; a hung one must not hold us long. */
#define ENGINE_PING_TIMEOUT_SEC 5U
#define PRIVATE_START_TIMEOUT_MSEC 10000U
#define PRIVATE_STOP_TIMEOUT_MSEC 5000U
#define PRIVATE_POLL_MSEC 50U
#define CANDIDATES_MAX 16U

extern char **environ;

static void sleep_msec(unsigned msec) {
        (void) nanosleep(&(struct timespec) { .tv_sec = msec / 1000, .tv_nsec = (long) (msec % 1000) * 1000000L }, NULL);
}

static void private_service_stop(EngineConnection *c) {
        pid_t pid = c->private_service;
        int status;

        if (pid <= 0)
                return;
        /* Its own process group: whatever podman started dies with it. */
        (void) kill(-pid, SIGTERM);
        for (unsigned waited = 0;; waited += PRIVATE_POLL_MSEC) {
                pid_t k = waitpid(pid, &status, WNOHANG);
                if (k == pid || (k < 0 && errno == ECHILD))
                        break;
                if (waited >= PRIVATE_STOP_TIMEOUT_MSEC) {
                        log_debug("Private podman service %d did not stop, killing it.", (int) pid);
                        (void) kill(-pid, SIGKILL);
                        (void) waitpid(pid, &status, 0);
                        break;
                }
                sleep_msec(PRIVATE_POLL_MSEC);
        }
        /* Anything left in the group (a conmon, a helper) goes too. */
        (void) kill(-pid, SIGKILL);
        c->private_service = 0;
}

EngineConnection *engine_connection_free(EngineConnection *c) {
        if (!c)
                return NULL;
        engine_free(c->engine);
        private_service_stop(c);
        if (c->private_dir) {
                int r = rm_rf_at(AT_FDCWD, c->private_dir);
                if (r < 0)
                        log_debug_errno(r, "Failed to remove %s, ignoring: %m", c->private_dir);
                free(c->private_dir);
        }
        free(c);
        return NULL;
}

/* The first executable NAME on $PATH. */
static int find_executable(const char *name, char **ret) {
        const char *path = getenv("PATH");

        if (isempty(path))
                path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        for (const char *p = path; *p;) {
                size_t l = strcspn(p, ":");
                if (l > 0) {
                        _cleanup_free_ char *f = NULL;
                        if (asprintf(&f, "%.*s/%s", (int) l, p, name) < 0)
                                return -ENOMEM;
                        struct stat st;
                        if (stat(f, &st) >= 0 && S_ISREG(st.st_mode) && access(f, X_OK) >= 0) {
                                *ret = TAKE_PTR(f);
                                return 0;
                        }
                }
                p += l;
                if (*p == ':')
                        p++;
        }
        return -ENOENT;
}

static int private_dir_create(char **ret) {
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        const char *bases[] = { LOOP_RUNTIME_DIR, isempty(xdg) ? NULL : xdg, "/tmp" };

        for (size_t i = 0; i < ELEMENTSOF(bases); i++) {
                _cleanup_free_ char *d = NULL;
                if (!bases[i])
                        continue;
                if (asprintf(&d, "%s/loop-podman.XXXXXX", bases[i]) < 0)
                        return -ENOMEM;
                if (mkdtemp(d)) {
                        *ret = TAKE_PTR(d);
                        return 0;
                }
                log_debug("Cannot create a private directory under %s, trying the next place: %m", bases[i]);
        }
        return -EACCES;
}

/* Without systemd as PID 1, podman's defaults fail: no systemd cgroup manager, no journald events, rlimits
 * above what we may set, and crun refuses hybrid cgroup hierarchies. */
static int private_containers_conf(const char *dir, char **ret_path) {
        _cleanup_free_ char *path = NULL, *runc = NULL, *text = NULL;
        struct rlimit nofile = {}, nproc = {};
        bool unified = access("/sys/fs/cgroup/cgroup.controllers", F_OK) >= 0;
        int r;

        (void) getrlimit(RLIMIT_NOFILE, &nofile);
        (void) getrlimit(RLIMIT_NPROC, &nproc);
        unsigned long long nf = MIN((unsigned long long) nofile.rlim_max, 1048576ULL);
        unsigned long long np = MIN((unsigned long long) nproc.rlim_max, 32768ULL);
        if (nf == 0)
                nf = 1024;
        if (np == 0)
                np = 4096;

        if (asprintf(&text,
                     "# Written by loop for its private podman service (systemd is not PID 1 here).\n"
                     "[containers]\n"
                     "default_ulimits = [\"nofile=%llu:%llu\", \"nproc=%llu:%llu\"]\n"
                     "[engine]\n"
                     "cgroup_manager = \"cgroupfs\"\n"
                     "events_logger = \"file\"\n"
                     "%s",
                     nf, nf, np, np,
                     !unified && find_executable("runc", &runc) >= 0 ? "runtime = \"runc\"\n" : "") < 0)
                return -ENOMEM;
        if (asprintf(&path, "%s/containers.conf", dir) < 0)
                return -ENOMEM;
        r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(path);
        return 0;
}

static int private_service_spawn(const char *podman, const char *dir, const char *conf, pid_t *ret_pid) {
        _cleanup_free_ char *listen = NULL, *log_path = NULL, *conf_env = NULL;
        _cleanup_free_ char **envp = NULL;
        _cleanup_close_ int log_fd = -EBADF, null_fd = -EBADF;
        size_t n = 0;
        pid_t parent = getpid(), pid;

        if (asprintf(&listen, "unix://%s/podman.sock", dir) < 0 || asprintf(&log_path, "%s/podman.log", dir) < 0)
                return -ENOMEM;
        log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (log_fd < 0)
                return -errno;
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0)
                return -errno;

        /* The child's environment is built here: between fork and exec only async-signal-safe calls. */
        for (char **e = environ; e && *e; e++)
                n++;
        envp = calloc(n + 2, sizeof(char *));
        if (!envp)
                return -ENOMEM;
        n = 0;
        for (char **e = environ; e && *e; e++)
                if (!conf || !startswith(*e, "CONTAINERS_CONF="))
                        envp[n++] = *e;
        if (conf) {
                if (asprintf(&conf_env, "CONTAINERS_CONF=%s", conf) < 0)
                        return -ENOMEM;
                envp[n++] = conf_env;
        }
        char *argv[] = { (char *) "podman", (char *) "system", (char *) "service", (char *) "--time=0", listen, NULL };

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sigset_t all;
                (void) setpgid(0, 0);
                /* If loop dies without cleaning up, the service goes with it. */
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                        _exit(EXIT_FAILURE);
                for (int s = 1; s < _NSIG; s++)
                        if (s != SIGKILL && s != SIGSTOP)
                                (void) signal(s, SIG_DFL);
                (void) sigfillset(&all);
                (void) sigprocmask(SIG_UNBLOCK, &all, NULL);
                if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
                    dup2(log_fd, STDERR_FILENO) < 0)
                        _exit(EXIT_FAILURE);
                execve(podman, argv, envp);
                _exit(127);
        }
        (void) setpgid(pid, pid);
        *ret_pid = pid;
        return 0;
}

/* The last line of the service's log, for the error message. */
static char *private_log_tail(const char *dir) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t size;

        if (asprintf(&path, "%s/podman.log", dir) < 0)
                return NULL;
        if (read_full_file_at(AT_FDCWD, path, 1024 * 1024, true, &text, &size) < 0 || size == 0)
                return NULL;
        while (size > 0 && text[size - 1] == '\n')
                text[--size] = 0;
        char *nl = strrchr(text, '\n');
        return strdup(nl ? nl + 1 : text);
}

static int private_service_start(EngineConnection *c, char **ret_reason) {
        _cleanup_free_ char *podman = NULL, *dir = NULL, *conf = NULL, *sock = NULL;
        _cleanup_(engine_freep) Engine *e = NULL;
        pid_t pid = 0;
        int r, status;

        if (find_executable("podman", &podman) < 0)
                return asprintf(ret_reason, "podman is not installed (not on $PATH)") < 0 ? -ENOMEM : -ENOENT;

        r = private_dir_create(&dir);
        if (r < 0)
                return asprintf(ret_reason, "cannot create a private directory under %s, $XDG_RUNTIME_DIR or /tmp",
                                LOOP_RUNTIME_DIR) < 0 ? -ENOMEM : r;
        /* From here on the connection owns the directory (and the process): its free cleans up. */
        c->private_dir = strdup(dir);
        if (!c->private_dir) {
                (void) rm_rf_at(AT_FDCWD, dir);
                return -ENOMEM;
        }

        if (!getenv("CONTAINERS_CONF") && sd_booted() <= 0) {
                r = private_containers_conf(dir, &conf);
                if (r < 0)
                        return asprintf(ret_reason, "cannot write %s/containers.conf: %s", dir, strerror(-r)) < 0
                                ? -ENOMEM : r;
        }

        r = private_service_spawn(podman, dir, conf, &pid);
        if (r < 0)
                return asprintf(ret_reason, "cannot start %s: %s", podman, strerror(-r)) < 0 ? -ENOMEM : r;
        c->private_service = pid;

        if (asprintf(&sock, "%s/podman.sock", dir) < 0)
                return -ENOMEM;
        r = engine_new(sock, &e);
        if (r < 0)
                return r;
        engine_set_timeout(e, 2);

        for (unsigned waited = 0;; waited += 100) {
                if (waitpid(pid, &status, WNOHANG) == pid) {
                        _cleanup_free_ char *tail = private_log_tail(dir);
                        c->private_service = 0;
                        return asprintf(ret_reason, "podman system service exited with status %d%s%s",
                                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                                        tail ? ": " : "", strempty(tail)) < 0 ? -ENOMEM : -EIO;
                }
                if (access(sock, F_OK) >= 0 && engine_ping(e) >= 0)
                        break;
                if (waited >= PRIVATE_START_TIMEOUT_MSEC)
                        return asprintf(ret_reason, "podman system service did not answer on %s within %u s", sock,
                                        PRIVATE_START_TIMEOUT_MSEC / 1000) < 0 ? -ENOMEM : -ETIMEDOUT;
                sleep_msec(100);
        }

        engine_set_timeout(e, 0);
        c->engine = TAKE_PTR(e);
        fprintf(stderr, "loop: started a private podman service for this command (no engine socket answered)\n");
        return 0;
}

typedef struct Candidate {
        char *path;
        const char *origin;
        bool explicit;          /* chosen by the user, not a default */
} Candidate;

static int candidate_add(Candidate *list, size_t *n, const char *path, size_t len, const char *origin, bool explicit) {
        if (len == 0 || *n >= CANDIDATES_MAX)
                return 0;
        for (size_t i = 0; i < *n; i++)
                if (strlen(list[i].path) == len && strncmp(list[i].path, path, len) == 0)
                        return 0;
        char *p = strndup(path, len);
        if (!p)
                return -ENOMEM;
        list[(*n)++] = (Candidate) { .path = p, .origin = origin, .explicit = explicit };
        return 0;
}

int engine_connect_full(const char *configured, bool allow_private, EngineConnection **ret) {
        _cleanup_(engine_connection_freep) EngineConnection *c = NULL;
        _cleanup_strv_free_ char **tried = NULL;
        _cleanup_free_ char *private_reason = NULL;
        Candidate cand[CANDIDATES_MAX];
        const char *env, *list;
        size_t n = 0;
        int r;

        assert(ret);

        c = calloc(1, sizeof *c);
        if (!c)
                return log_oom();

        /* A socket the operator chose is the only one tried: silently using another engine would run the
         * agent somewhere the operator did not intend. engine.socket wins over $LOOP_ENGINE_SOCKET. */
        env = getenv("LOOP_ENGINE_SOCKET");
        if (!isempty(configured))
                r = candidate_add(cand, &n, configured, strlen(configured), "engine.socket", true);
        else if (!isempty(env))
                r = candidate_add(cand, &n, env, strlen(env), "$LOOP_ENGINE_SOCKET", true);
        else
                r = 0;
        if (r < 0)
                goto finish;
        /* Test and debug only: replaces the default sockets with a colon-separated list. */
        list = getenv("LOOP_ENGINE_CANDIDATES");
        if (n > 0)
                ;
        else if (list) {
                for (const char *p = list; *p;) {
                        size_t l = strcspn(p, ":");
                        if ((r = candidate_add(cand, &n, p, l, "$LOOP_ENGINE_CANDIDATES", false)) < 0)
                                goto finish;
                        p += l;
                        if (*p == ':')
                                p++;
                }
        } else if ((r = candidate_add(cand, &n, ENGINE_PODMAN_SOCKET, strlen(ENGINE_PODMAN_SOCKET), "Podman's default", false)) < 0 ||
                   (r = candidate_add(cand, &n, ENGINE_DOCKER_SOCKET, strlen(ENGINE_DOCKER_SOCKET), "Docker's default", false)) < 0)
                goto finish;

        for (size_t i = 0; i < n; i++) {
                _cleanup_(engine_freep) Engine *e = NULL;

                if (cand[i].path[0] != '/') {
                        char *line = NULL;
                        if (asprintf(&line, "  %s (%s): not an absolute path", cand[i].path, cand[i].origin) < 0 ||
                            strv_consume(&tried, line) < 0) {
                                r = log_oom();
                                goto finish;
                        }
                        continue;
                }
                r = engine_new(cand[i].path, &e);
                if (r < 0) {
                        log_oom();
                        goto finish;
                }
                engine_set_timeout(e, ENGINE_PING_TIMEOUT_SEC);
                r = engine_ping(e);
                if (r >= 0) {
                        engine_set_timeout(e, 0);
                        if (engine_kind(e) == ENGINE_UNKNOWN)
                                (void) engine_version(e, NULL);
                        log_debug("Using the %s engine at %s (%s).", engine_kind_to_string(engine_kind(e)),
                                  cand[i].path, cand[i].origin);
                        c->engine = TAKE_PTR(e);
                        *ret = TAKE_PTR(c);
                        r = 0;
                        goto finish;
                }
                char *line = NULL;
                if (asprintf(&line, "  %s (%s): %s", cand[i].path, cand[i].origin, engine_last_error(e)) < 0 ||
                    strv_consume(&tried, line) < 0) {
                        r = log_oom();
                        goto finish;
                }
        }

        if (n > 0 && cand[0].explicit) {
                _cleanup_free_ char *joined = strv_join(tried, "\n");
                log_error("The container engine chosen with %s does not answer:\n%s\n"
                          "Start it, or change %s.", cand[0].origin, strempty(joined), cand[0].origin);
                r = -EHOSTDOWN;
                goto finish;
        }

        if (!allow_private) {
                _cleanup_free_ char *joined = strv_join(tried, "\n");
                log_debug("No container engine answered. Tried:\n%s", strempty(joined));
                r = -EHOSTDOWN;
                goto finish;
        }

        r = private_service_start(c, &private_reason);
        if (r >= 0) {
                *ret = TAKE_PTR(c);
                r = 0;
                goto finish;
        }
        if (r == -ENOMEM && !private_reason) {
                r = log_oom();
                goto finish;
        }

        {
                _cleanup_free_ char *joined = strv_join(tried, "\n");
                log_error("No container engine answered. Tried:\n%s\n  a private podman service: %s\n"
                          "Start an engine (\"systemctl start podman.socket\" or \"systemctl start docker.service\"), "
                          "or point loop at a running one with \"engine.socket\" in the configuration or "
                          "$LOOP_ENGINE_SOCKET.",
                          strempty(joined), strna(private_reason));
        }
        r = -EHOSTDOWN;

finish:
        for (size_t i = 0; i < n; i++)
                free(cand[i].path);
        return r;
}

int engine_connect(const char *configured, EngineConnection **ret) {
        return engine_connect_full(configured, true, ret);
}
