/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* gate_resolve() on a real tree of files, directories and symlinks made for the test: what path the
 * policy is shown and what object the supervisor holds, for plain paths, symlinks at the end and on the
 * way (relative, absolute, chained, through ".."), loops, missing and non-directory components, the
 * openat2() scopes, and /proc/self, which must name the caller and not the supervisor. */

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate-resolve.h"
#include "tap.h"

static char base[PATH_MAX];
static int root_fd, base_fd;

static void make_tree(void) {
        char tmpl[] = "/tmp/test-gate-resolve.XXXXXX";
        static const struct { const char *name, *target; } links[] = {
                { "link-f", "d/f" },
                { "abs-f", NULL },              /* base/d/f, absolute */
                { "link-d", "d" },
                { "link-d2", "link-d" },
                { "chain", "link-f" },
                { "loop1", "loop2" },
                { "loop2", "loop1" },
                { "deep", "d/sub/deeper/g" },
                { "mix", "link-d/sub/../f" },
                { "d/sub/up", "../f" },
                { "proc-status", "/proc/self/status" },
                { "proc-dir", "/proc/self" },
                { "proc-out", NULL },           /* /proc/self/../..BASE/d/f: through procfs and out */
                { "dangling", "d/none" },
        };
        char p[PATH_MAX * 2];

        if (!mkdtemp(tmpl) || !realpath(tmpl, base))
                abort();
        snprintf(p, sizeof(p), "%s/d/sub/deeper", base);
        (void) mkdir(strndupa(p, strlen(base) + 2), 0755);
        (void) mkdir(strndupa(p, strlen(base) + 6), 0755);
        (void) mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/d/f", base);
        close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        snprintf(p, sizeof(p), "%s/d/sub/deeper/g", base);
        close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        for (size_t i = 0; i < ELEMENTSOF(links); i++) {
                char target[PATH_MAX * 2];

                snprintf(p, sizeof(p), "%s/%s", base, links[i].name);
                if (links[i].target)
                        snprintf(target, sizeof(target), "%s", links[i].target);
                else if (streq(links[i].name, "proc-out"))
                        snprintf(target, sizeof(target), "/proc/self/../..%s/d/f", base);
                else
                        snprintf(target, sizeof(target), "%s/d/f", base);
                if (symlink(target, p) < 0)
                        abort();
        }
        root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        base_fd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0 || base_fd < 0)
                abort();
}

/* The path gate_resolve() reports, "-ERRNO" on failure, "(none)" when the object has no path. */
static char *resolve(pid_t tid, const char *path, unsigned flags, GateResolved *keep) {
        GateResolveContext ctx = { .root_fd = root_fd, .tid = tid };
        GateResolved r = GATE_RESOLVED_NULL;
        char *s;
        int e;

        e = gate_resolve(&ctx, path[0] == '/' && !(flags & (GATE_RESOLVE_BENEATH | GATE_RESOLVE_IN_ROOT)) ?
                         root_fd : base_fd, path, flags, &r);
        if (e < 0) {
                if (asprintf(&s, "-%s", strerrorname_np(-e)) < 0)
                        abort();
                return s;
        }
        s = strdup(r.path ?: "(none)");
        if (keep)
                *keep = r;
        else
                gate_resolved_done(&r);
        return s;
}

static char *in_base(const char *rel) {
        char *s;

        if (asprintf(&s, "%s/%s", base, rel) < 0)
                abort();
        return s;
}

#define RESOLVES(path, flags, want, ...)                                                      \
        ({                                                                                   \
                _cleanup_free_ char *_got = resolve(getpid(), path, flags, NULL);           \
                _cleanup_free_ char *_want = (want)[0] == '-' || (want)[0] == '/' ? strdup(want) : in_base(want); \
                is_str(_got, _want, __VA_ARGS__);                                            \
        })

static void test_plain_and_symlinks(void) {
        GateResolved r = GATE_RESOLVED_NULL;
        _cleanup_free_ char *p = NULL, *q = NULL;
        struct stat st;

        RESOLVES("d/f", 0, "d/f", "a plain relative path is reported absolute");
        RESOLVES("d/./sub/../f", 0, "d/f", "  ... cleaned of '.' and '..'");
        RESOLVES("link-f", GATE_RESOLVE_FOLLOW, "d/f", "a final symlink that is followed reports its target");
        p = resolve(getpid(), "link-f", 0, &r);
        q = in_base("link-f");
        is_str(p, q, "  ... and one that is not followed reports the link itself");
        ok(r.fd >= 0 && fstat(r.fd, &st) == 0 && S_ISLNK(st.st_mode), "  ... whose object is the symlink");
        gate_resolved_done(&r);
        RESOLVES("abs-f", GATE_RESOLVE_FOLLOW, "d/f", "an absolute symlink target starts from the root");
        RESOLVES("chain", GATE_RESOLVE_FOLLOW, "d/f", "a chain of symlinks is followed to its end");
        RESOLVES("link-d/f", 0, "d/f", "a symlinked directory on the way is followed, even without FOLLOW");
        RESOLVES("link-d2/sub/../f", 0, "d/f", "  ... through a chain of directory links and '..'");
        RESOLVES("deep", GATE_RESOLVE_FOLLOW, "d/sub/deeper/g", "a symlink to a deep path reaches it");
        RESOLVES("mix", GATE_RESOLVE_FOLLOW, "d/f", "a symlink whose target passes another symlink reaches the end");
        RESOLVES("d/sub/up", GATE_RESOLVE_FOLLOW, "d/f", "a relative target is relative to the link's directory");
        RESOLVES("link-d/", GATE_RESOLVE_FOLLOW, "d", "a trailing slash follows a symlinked directory");
}

static void test_errors(void) {
        GateResolved r = GATE_RESOLVED_NULL;
        _cleanup_free_ char *p = NULL, *q = NULL;

        RESOLVES("loop1", GATE_RESOLVE_FOLLOW, "-ELOOP", "a symlink loop fails with ELOOP");
        RESOLVES("missing/x", 0, "-ENOENT", "a missing directory on the way fails with ENOENT");
        RESOLVES("d/f/x", 0, "-ENOTDIR", "a file used as a directory fails with ENOTDIR");
        RESOLVES("link-d/f", GATE_RESOLVE_NO_SYMLINKS, "-ELOOP", "RESOLVE_NO_SYMLINKS refuses a symlink on the way");
        RESOLVES("../x", GATE_RESOLVE_BENEATH, "-EXDEV", "RESOLVE_BENEATH refuses '..' out of the start");
        RESOLVES("abs-f", GATE_RESOLVE_BENEATH | GATE_RESOLVE_FOLLOW, "-EXDEV", "  ... and an absolute symlink");

        p = resolve(getpid(), "link-d/new", 0, &r);
        q = in_base("d/new");
        is_str(p, q, "a missing last component reports where it would be created");
        ok(r.fd < 0 && r.dir_fd >= 0 && r.name && streq(r.name, "new"), "  ... with its directory and name, no object");
        gate_resolved_done(&r);
}

static void test_proc_self(void) {
        char want[64];
        pid_t child;

        child = fork();
        if (child == 0) {
                pause();
                _exit(0);
        }
        snprintf(want, sizeof(want), "/proc/%i/status", (int) child);
        {
                _cleanup_free_ char *p = resolve(child, "/proc/self/status", GATE_RESOLVE_FOLLOW, NULL);

                is_str(p, want, "/proc/self names the caller, not the supervisor");
        }
        {
                _cleanup_free_ char *p = resolve(child, "proc-status", GATE_RESOLVE_FOLLOW, NULL);

                is_str(p, want, "  ... also when a symlink leads there");
        }
        {
                _cleanup_free_ char *p = resolve(child, "proc-dir/status", GATE_RESOLVE_FOLLOW, NULL);

                is_str(p, want, "  ... and when a symlinked directory on the way leads there");
        }
        kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
}

/* An exec wants only the object and its path: the kernel follows the symlinks then, but the answers must
 * be the component walk's. */
static void test_object_only(void) {
        static const struct { const char *path; unsigned flags; } cases[] = {
                { "d/f", 0 }, { "d/./sub/../f", 0 }, { "link-f", 0 }, { "abs-f", 0 }, { "chain", 0 },
                { "link-d/f", 0 }, { "link-d2/sub/../f", 0 }, { "deep", 0 }, { "mix", 0 }, { "d/sub/up", 0 },
                { "proc-out", 0 }, { "loop1", 0 }, { "missing/x", 0 }, { "d/f/x", 0 }, { "dangling", 0 },
                { "link-d/f", GATE_RESOLVE_NO_SYMLINKS }, { "link-f", GATE_RESOLVE_NO_SYMLINKS },
        };
        char want[64];
        pid_t child;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                for (int absolute = 0; absolute <= 1; absolute++) {
                        _cleanup_free_ char *path = absolute ? in_base(cases[i].path) : strdup(cases[i].path);
                        unsigned f = GATE_RESOLVE_FOLLOW | cases[i].flags;
                        _cleanup_free_ char *walked = resolve(getpid(), path, f, NULL);
                        _cleanup_free_ char *object = resolve(getpid(), path, f | GATE_RESOLVE_OBJECT_ONLY, NULL);

                        is_str(object, walked, "object only: %s resolves as the walk does (%s)", path, walked);
                }
        RESOLVES("proc-out", GATE_RESOLVE_FOLLOW | GATE_RESOLVE_OBJECT_ONLY, "d/f",
                 "object only: a link through /proc/self and out by '..' reaches its target");

        child = fork();
        if (child == 0) {
                pause();
                _exit(0);
        }
        snprintf(want, sizeof(want), "/proc/%i/status", (int) child);
        {
                _cleanup_free_ char *p = resolve(child, "proc-status", GATE_RESOLVE_FOLLOW | GATE_RESOLVE_OBJECT_ONLY, NULL);

                is_str(p, want, "object only: a symlink into /proc/self still names the caller");
        }
        {
                _cleanup_free_ char *p = resolve(child, "/proc/self/status", GATE_RESOLVE_FOLLOW | GATE_RESOLVE_OBJECT_ONLY, NULL);

                is_str(p, want, "object only: so does /proc/self itself");
        }
        kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
}

/* The walk up a path's directories for case folding: none folds here (tmp), a directory the caller may
 * search but not read counts as folding, and the offset names the first component inside it. */
static void test_fold_walk(void) {
        GateResolved r = GATE_RESOLVED_NULL;
        _cleanup_free_ char *deeper = in_base("d/sub/deeper"), *g = in_base("d/sub/deeper/g"), *sub = in_base("d/sub");
        size_t at = 0;

        free(resolve(getpid(), g, 0, &r));
        ok(r.dir_fd >= 0 && gate_resolved_fold_walk(&r, root_fd, &at) == 0 && at == SIZE_MAX,
           "no directory of a path in /tmp folds: SIZE_MAX");
        gate_resolved_done(&r);
        free(resolve(getpid(), deeper, 0, &r));
        ok(r.path && gate_resolved_fold_walk(&r, root_fd, &at) == 0 && at == SIZE_MAX,
           "...nor of a directory's own path");
        gate_resolved_done(&r);
        r = (GateResolved) GATE_RESOLVED_NULL;
        r.path = (char *) "/";
        ok(gate_resolved_fold_walk(&r, root_fd, &at) == 0 && at == SIZE_MAX, "/ has no name to fold");
        r.path = g;
        ok(gate_resolved_fold_walk(&r, root_fd, &at) == 0 && at == SIZE_MAX,
           "an object without its directory (a magic link's) is walked from its path's directory");
        r.path = NULL;

        /* Search but no read permission for the caller (uid 65534 here): FS_IOC_GETFLAGS cannot be asked. */
        if (geteuid() == 0) {
                pid_t pid;
                int status = -1;

                (void) chmod(base, 0755);
                (void) chmod(sub, 0311);
                pid = fork();
                if (pid == 0) {
                        GateResolved c = GATE_RESOLVED_NULL;
                        size_t want = strlen(sub) + 1, got = 0;

                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                                _exit(2);
                        c.dir_fd = open(deeper, O_PATH | O_DIRECTORY | O_CLOEXEC);
                        c.path = g;
                        _exit(c.dir_fd >= 0 && gate_resolved_fold_walk(&c, root_fd, &got) == 0 && got == want ? 0 : 1);
                }
                (void) waitpid(pid, &status, 0);
                (void) chmod(sub, 0755);
                (void) chmod(base, 0700);
                ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                   "a directory the caller cannot read counts as folding: the offset is the component in it");
        } else
                skip("a directory the caller cannot read counts as folding", "needs root to change users");
}

int main(void) {
        char cmd[PATH_MAX + 16];

        make_tree();
        test_plain_and_symlinks();
        test_errors();
        test_proc_self();
        test_object_only();
        test_fold_walk();
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        if (system(cmd) != 0)
                diag("could not remove the test tree");
        return done_testing();
}
