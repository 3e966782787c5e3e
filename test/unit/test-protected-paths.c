/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What a container must not see or change: the lists and how a channel adjusts them, the rule that a
 * path cannot be both writable and protected (as the config check reports it), and which host paths
 * would expose a host service. */

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "casefold-test.h"
#include "config-schema.h"
#include "config.h"
#include "io-util.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "protected-paths.h"
#include "strv.h"
#include "tap.h"

static int load(const char *text, LoopConfig *c) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        ConfigProblems p = {};
        int r = config_parse_text(text, strlen(text), &o, &reason);
        if (r < 0)
                return r;
        r = schema_validate(&config_schema_root, o, SCOPE_CHANNEL, "t", &p);
        for (size_t i = 0; r != 0 && i < p.n; i++) {
                _cleanup_free_ char *s = config_problem_to_string(&p.items[i]);
                printf("#   problem: %s\n", s);
        }
        config_problems_done(&p);
        if (r != 0)
                return -EINVAL;
        return loop_config_from_json(o, "chan", c);
}

static int errors(const char *text, unsigned scope) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *reason = NULL;
        ConfigProblems p = {};
        int r = config_parse_text(text, strlen(text), &o, &reason);
        if (r < 0)
                return -1;
        r = schema_validate(&config_schema_root, o, scope, "t", &p);
        config_problems_done(&p);
        return r;
}

static char *reason_of(const char *text) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        char *reason = NULL;

        if (load(text, &c) < 0 || protected_paths_check_config(&c, &reason) < 0)
                return strdup("(load failed)");
        return reason;
}

static void test_lists(void) {
        _cleanup_(loop_config_done) LoopConfig c = {}, tuned = {};
        _cleanup_strv_free_ char **ro = NULL, **masked = NULL, **kernel = NULL, **ro2 = NULL, **masked2 = NULL,
                **kernel2 = NULL;

        ok(load("{ \"work_dir\": \"/srv/p\" }", &c) == 0, "a plain channel loads");
        ok(protected_paths_list(&c, PROTECTED_READ_ONLY, &ro) == 0 && strv_contains(ro, ".git/hooks") &&
           strv_contains(ro, ".git/config") && strv_contains(ro, ".gitmodules") && strv_contains(ro, ".claude") &&
           strv_contains(ro, ".codex") && strv_contains(ro, ".devcontainer") && strv_contains(ro, ".idea") &&
           strv_contains(ro, ".mcp.json") && strv_contains(ro, ".vscode") && strv_contains(ro, ".loop/config.json") &&
           strv_length(ro) == 10,
           "read-only by default: .git/hooks, .git/config, .gitmodules, .claude, .codex, .devcontainer, .idea, .mcp.json, "
           ".vscode, .loop/config.json");
        ok(protected_paths_list(&c, PROTECTED_MASKED, &masked) == 0 && strv_contains(masked, ".env") &&
           strv_contains(masked, ".envrc") && strv_contains(masked, ".npmrc") && strv_contains(masked, ".aws") &&
           strv_contains(masked, ".kube") && strv_contains(masked, ".docker/config.json") &&
           strv_contains(masked, ".netrc") && strv_contains(masked, ".pgpass") && strv_contains(masked, ".pypirc") &&
           strv_contains(masked, ".cargo/credentials.toml") && strv_length(masked) == 10,
           "masked by default: .env, .envrc, .npmrc, .aws, .kube, .docker/config.json, .netrc, .pgpass, .pypirc, "
           ".cargo/credentials.toml");
        ok(protected_paths_list(&c, PROTECTED_KERNEL, &kernel) == 0 && strv_contains(kernel, "/proc/kallsyms") &&
           strv_contains(kernel, "/proc/kcore") && strv_contains(kernel, "/proc/modules") &&
           strv_contains(kernel, "/proc/version") && strv_contains(kernel, "/proc/sysrq-trigger") &&
           strv_contains(kernel, "/proc/devices") && strv_contains(kernel, "/proc/diskstats") &&
           strv_contains(kernel, "/proc/partitions") && strv_contains(kernel, "/sys/kernel/vmcoreinfo") &&
           strv_contains(kernel, "/sys/kernel/debug") && strv_contains(kernel, "/sys/kernel/tracing") &&
           strv_contains(kernel, "/sys/kernel/security") && strv_contains(kernel, "/sys/fs/bpf") &&
           strv_contains(kernel, "/sys/module") && strv_contains(kernel, "/sys/devices/virtual/dmi"),
           "the reference's /proc and /sys paths are masked");
        ok(strv_contains(kernel, "/proc/keys") && strv_contains(kernel, "/proc/timer_list") &&
           strv_contains(kernel, "/sys/firmware"), "...and the engines' own defaults (Docker's MaskedPaths replaces them)");
        ok(strv_contains(kernel, "/proc/interrupts") && strv_contains(kernel, "/sys/dev/block") &&
           strv_contains(kernel, "/sys/fs/selinux"),
           "...Podman's block devices and SELinux as well, and /proc/interrupts (a timing side channel)");

        ok(load("{ \"work_dir\": \"/srv/p\", \"protect_paths\": [ \"Makefile\", \".claude\" ], "
                "\"mask_paths\": [ \"secrets/prod.key\" ], \"unmask_paths\": [ \".env\", \".idea\", \"/proc/version\" ] }",
                &tuned) == 0, "a channel with protect_paths, mask_paths and unmask_paths loads");
        ok(protected_paths_list(&tuned, PROTECTED_READ_ONLY, &ro2) == 0 && strv_contains(ro2, "Makefile") &&
           !strv_contains(ro2, ".idea") && strv_length(ro2) == 10,
           "protect_paths adds to the defaults (a repeated one once), unmask_paths takes one off");
        ok(protected_paths_list(&tuned, PROTECTED_MASKED, &masked2) == 0 && strv_contains(masked2, "secrets/prod.key") &&
           !strv_contains(masked2, ".env"), "mask_paths adds, unmask_paths gives .env back");
        ok(protected_paths_list(&tuned, PROTECTED_KERNEL, &kernel2) == 0 && !strv_contains(kernel2, "/proc/version") &&
           strv_contains(kernel2, "/proc/kcore"), "unmask_paths can give back a /proc path");
}

static void test_schema(void) {
        is_int(errors("{ \"protect_paths\": [ \"../etc\" ] }", SCOPE_CHANNEL), 1, "a protect_paths entry with .. is refused");
        is_int(errors("{ \"protect_paths\": [ \"/etc/passwd\" ] }", SCOPE_CHANNEL), 1, "an absolute protect_paths entry is refused");
        is_int(errors("{ \"mask_paths\": [ \"\" ] }", SCOPE_CHANNEL), 1, "an empty mask_paths entry is refused");
        is_int(errors("{ \"mask_paths\": [ \"a//b\", \"c/\", \"./d\", \"e:f\" ] }", SCOPE_CHANNEL), 4,
               "unclean entries (//, trailing /, ., ':') are refused");
        is_int(errors("{ \"unmask_paths\": [ \"/etc/shadow\" ] }", SCOPE_CHANNEL), 1,
               "unmask_paths takes /proc and /sys paths only among absolute ones");
        is_int(errors("{ \"unmask_paths\": [ \"/proc/version\", \".env\" ], \"protect_paths\": [ \"docs/api\" ] }", SCOPE_GLOBAL), 0,
               "good entries are accepted in loop.json");
        {
                _cleanup_(loop_config_done) LoopConfig def = {}, off = {};
                ok(load("{}", &def) == 0 && def.tripwire, "the tripwire is on by default");
                ok(load("{ \"tripwire\": false }", &off) == 0 && !off.tripwire, "\"tripwire\": false turns it off");
                is_int(errors("{ \"tripwire\": \"no\" }", SCOPE_CHANNEL), 1, "tripwire must be a boolean");
        }
        {
                _cleanup_(json_object_putp) json_object *o = NULL;
                _cleanup_free_ char *reason = NULL;
                ConfigProblems p = {};
                const char *t = "{ \"unmask_paths\": [ \".env\" ], \"tripwire\": false }";
                ok(config_parse_text(t, strlen(t), &o, &reason) == 0 &&
                   schema_validate(&config_schema_root, o, SCOPE_PROJECT, "t", &p) == 0 && p.n == 2 && !p.items[0].error &&
                   !p.items[1].error,
                   "a project config (the agent's to write) can neither unmask nor turn the tripwire off: ignored with warnings");
                config_problems_done(&p);
        }
}

static void test_writable_and_protected(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL, *g = NULL;

        a = reason_of("{ \"work_dir\": \"/srv/p\", \"mounts\": [ \"/home/u/hooks:/srv/p/.git/hooks\" ] }");
        ok(a && strstr(a, "/srv/p/.git/hooks is writable but /srv/p/.git/hooks is protected"),
           "a writable mount at .git/hooks is a config error naming both");
        b = reason_of("{ \"work_dir\": \"/srv/p\", \"mounts\": [ \"/home/u/hooks:/srv/p/.git/hooks:ro\" ] }");
        ok(!b, "a read-only mount there is fine");
        c = reason_of("{ \"work_dir\": \"/srv/p/\", \"mounts\": [ \"/x:/srv/p/.claude/agents:rw,z\" ] }");
        ok(c && strstr(c, "protected"), "a writable mount inside .claude is an error too");
        d = reason_of("{ \"work_dir\": \"/srv/p\", \"extra_dirs\": [ \"/srv/p/.aws\" ] }");
        ok(d && strstr(d, "extra dir /srv/p/.aws is writable but /srv/p/.aws is masked"),
           "an extra dir (mounted writable) on a masked path is an error");
        e = reason_of("{ \"work_dir\": \"/srv/p\", \"mounts\": [ \"/x:/srv/p/.git/hooks\" ], \"unmask_paths\": [ \".git/hooks\" ] }");
        ok(!e, "...unless unmask_paths gives the path up");
        f = reason_of("{ \"work_dir\": \"/srv/p\", \"mounts\": [ \"/x:/srv/p\", \"/y:/srv/p/.gitx\", \"cache:/srv/p/node_modules\" ] }");
        ok(!f, "a mount over the work dir, a sibling name and an unrelated volume are fine");
        g = reason_of("{ \"work_dir\": \"/srv/p\", \"protect_paths\": [ \"build\" ], \"mounts\": [ \"out:/srv/p/build/out\" ] }");
        ok(g && strstr(g, "build"), "a configured protect_paths entry is checked the same way");
}

static void test_config_set(void) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        char dir[] = "/tmp/test-protected-paths.XXXXXX", p[PATH_MAX];
        const Channel *ch;
        bool reported = false;

        ok(mkdtemp(dir) != NULL, "setup: a config dir");
        snprintf(p, sizeof p, "%s/channels.d", dir);
        (void) mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/channels.d/bad.json", dir);
        const char *bad = "{ \"work_dir\": \"/srv/p\", \"mounts\": [ \"/srv/hooks:/srv/p/.git/hooks\" ] }";
        ok(write_file_atomic(p, bad, strlen(bad), 0644) == 0, "setup: a channel with a writable mount at .git/hooks");
        snprintf(p, sizeof p, "%s/channels.d/good.json", dir);
        ok(write_file_atomic(p, "{}", 2, 0644) == 0, "setup: a good channel");

        ok(config_load(dir, &s) == 0, "the config loads");
        ch = config_set_find_channel(s, "bad");
        ok(ch && !ch->valid && ch->reason && strstr(ch->reason, "protect_paths:") && strstr(ch->reason, "is protected"),
           "the channel is invalid, with the reason");
        for (size_t i = 0; s && i < s->problems.n; i++)
                reported = reported || (s->problems.items[i].error && streq_ptr(s->problems.items[i].key, "protect_paths"));
        ok(reported, "...and loop config check reports it as an error");
        ch = config_set_find_channel(s, "good");
        ok(ch && ch->valid, "the other channel is unaffected");

        snprintf(p, sizeof p, "rm -rf '%s'", dir);
        if (system(p) != 0)
                abort();
}

static void test_host_services(void) {
        ok(protected_host_service_exposed("/run/systemd/journal/socket", NULL) != NULL, "the journal's socket is a host service");
        ok(protected_host_service_exposed("/run/systemd", NULL) != NULL, "...and so is its directory");
        ok(protected_host_service_exposed("/run", NULL) != NULL, "/run holds them all");
        ok(protected_host_service_exposed("/", NULL) != NULL, "/ holds them all");
        ok(protected_host_service_exposed("/var", NULL) != NULL, "/var holds the engines' storage");
        ok(protected_host_service_exposed("/var/run/dbus/system_bus_socket", NULL) != NULL, "D-Bus through /var/run");
        is_str(protected_host_service_exposed("/var/run/docker.sock", NULL), "Docker's API socket", "Docker's socket, named");
        ok(protected_host_service_exposed("/run/podman/podman.sock", NULL) != NULL, "Podman's socket");
        ok(protected_host_service_exposed("/dev/log", NULL) != NULL, "/dev/log");
        ok(protected_host_service_exposed("/run/loop/other/gate.sock", NULL) != NULL, "another channel's helper socket");
        ok(protected_host_service_exposed("/run/user/1000/bus", NULL) != NULL, "a user's session bus");
        is_str(protected_host_service_exposed("/tmp/engines/podman.sock", "/tmp/engines/podman.sock"), "the engine's API socket",
               "the configured engine socket");
        ok(protected_host_service_exposed("/tmp/engines", "/tmp/engines/podman.sock") != NULL, "...and its directory");
        ok(!protected_host_service_exposed("/tmp/engines-other", "/tmp/engines/podman.sock"), "a sibling with a longer name is not");
        ok(!protected_host_service_exposed("/srv/project", NULL), "a project dir is not a host service");
        ok(!protected_host_service_exposed("/var/lib/loop/demo/work", NULL), "the default work dir is not");
        ok(!protected_host_service_exposed("/home/user/.gitconfig", NULL), "a file in a home is not");
        ok(!protected_host_service_exposed("/runx", NULL), "/runx is not /run");
}

#define assert_se(x) do { if (!(x)) { printf("Bail out! %s\n", #x); exit(1); } } while (0)

static void put(const char *dir, const char *rel, const char *content) {
        _cleanup_free_ char *p = NULL, *d = NULL;

        assert_se(asprintf(&p, "%s/%s", dir, rel) >= 0);
        d = strdup(p);
        *strrchr(d, '/') = 0;
        assert_se(mkdir_owned(d, 0755, geteuid(), getegid()) >= 0);
        if (content)
                assert_se(write_file_atomic(p, content, strlen(content), 0644) >= 0);
        else
                assert_se(mkdir(p, 0755) == 0 || errno == EEXIST);
}

static bool has(char **l, const char *dir, const char *rel) {
        _cleanup_free_ char *p = NULL;
        assert_se(asprintf(&p, "%s/%s", dir, rel) >= 0);
        return strv_contains(l, p);
}

/* git's control surface, from a real tree: a repository with modules and worktrees, and a worktree
 * whose .git file points into its parent's repository. */
static void test_git(void) {
        char tmpl[] = "/tmp/test-protected-git.XXXXXX";
        const char *t = mkdtemp(tmpl);
        _cleanup_strv_free_ char **l = NULL, **w = NULL, **outside = NULL, **fresh = NULL, **g = NULL;
        _cleanup_free_ char *wt = NULL, *text = NULL, *root = NULL;
        _cleanup_(loop_config_done) LoopConfig c = {};

        assert_se(t);
        put(t, "main/.git/HEAD", "ref: refs/heads/main\n");
        put(t, "main/.git/config", "[core]\n");
        put(t, "main/.git/hooks", NULL);
        put(t, "main/.git/objects/info", NULL);
        put(t, "main/.git/modules/lib/one/HEAD", "x\n");
        put(t, "main/.git/modules/lib/one/config", "[core]\n");
        put(t, "main/.git/modules/lib/one/modules/inner/HEAD", "x\n");
        put(t, "main/.git/worktrees/wt/HEAD", "x\n");
        put(t, "main/.git/worktrees/wt/commondir", "../..\n");
        assert_se(asprintf(&text, "gitdir: %s/main/.git/worktrees/wt\n", t) >= 0);
        put(t, "main/wt/.git", text);
        assert_se(asprintf(&wt, "%s/main/wt", t) >= 0);

        {
                _cleanup_free_ char *main_dir = NULL;
                assert_se(asprintf(&main_dir, "%s/main", t) >= 0);
                ok(protected_paths_git(main_dir, t, &l) == 0, "the control surface of a repository is computed");
        }
        ok(has(l, t, "main/.git/config") && has(l, t, "main/.git/hooks") && has(l, t, "main/.git/commondir") &&
           has(l, t, "main/.git/config.worktree") && has(l, t, "main/.git/info") &&
           has(l, t, "main/.git/objects/info/alternates") && has(l, t, "main/.git/objects/info/http-alternates"),
           "...config, config.worktree, commondir, hooks, info and the alternates, missing ones too");
        ok(has(l, t, "main/.git/modules/lib/one/config") && has(l, t, "main/.git/modules/lib/one/hooks") &&
           has(l, t, "main/.git/modules/lib/one/commondir") && has(l, t, "main/.git/modules/lib/one/modules/inner/config"),
           "...of every module, a name with a slash and a module's module too");
        ok(has(l, t, "main/.git/worktrees/wt/commondir") && has(l, t, "main/.git/worktrees/wt/config.worktree"),
           "...and commondir and config.worktree of each linked worktree");

        ok(protected_paths_git(wt, t, &w) == 0, "the control surface of a worktree is computed");
        ok(has(w, t, "main/wt/.git") && has(w, t, "main/.git/worktrees/wt/commondir") &&
           has(w, t, "main/.git/config") && has(w, t, "main/.git/hooks") && has(w, t, "main/.git/info"),
           "...its .git file, its own git dir and the repository its commondir names");
        ok(protected_paths_git(wt, wt, &outside) == 0 && strv_length(outside) == 1 && has(outside, t, "main/wt/.git"),
           "...only what lies inside the mount root (the parent's repository is not in a work-dir-only container)");

        {
                _cleanup_free_ char *f = NULL;
                assert_se(asprintf(&f, "%s/fresh", t) >= 0);
                assert_se(mkdir(f, 0755) == 0);
                ok(protected_paths_git(f, f, &fresh) == 0 && has(fresh, f, ".git/config") && has(fresh, f, ".git/commondir"),
                   "a work dir without a repository: what git init makes is listed, to stay missing");
        }

        {
                _cleanup_free_ char *j = NULL;
                assert_se(asprintf(&j, "{ \"work_dir\": \"%s\", \"parent_dir\": \"%s/main\", \"unmask_paths\": [ \".idea\" ] }", wt, t) >= 0);
                ok(load(j, &c) == 0, "a worktree channel with parent_dir loads");
        }
        ok(protected_paths_guarded(&c, &root, &g) == 0 && has(g, t, "main/.git/hooks") && has(g, t, "main/wt/.claude") &&
           has(g, t, "main/wt/.envrc") && has(g, t, "main/wt/.vscode") && !has(g, t, "main/wt/.idea"),
           "guarded: the parent's repository, the work dir's read-only list and .envrc, minus unmask_paths");
        {
                _cleanup_free_ char *m = NULL;
                assert_se(asprintf(&m, "%s/main", t) >= 0);
                is_str(root, m, "...all inside the mount root, parent_dir");
        }
        {
                _cleanup_strv_free_ char **sec = NULL;
                _cleanup_free_ char *m = NULL;

                assert_se(asprintf(&m, "%s/main", t) >= 0);
                put(m, "api/.env", "K=1\n");
                put(m, ".env.local", "K=1\n");
                put(m, "a/b/.npmrc", "x\n");
                put(m, "a/.aws/credentials", "x\n");
                put(m, ".git/x/.env", "x\n");
                put(m, "src/environment.c", "x\n");
                ok(protected_paths_secrets_found(m, &sec) == 0 && has(sec, m, "api/.env") && has(sec, m, ".env.local") &&
                   has(sec, m, "a/b/.npmrc") && has(sec, m, "a/.aws"), "secret files are found at any depth of the work dir");
                ok(!has(sec, m, ".git/x/.env") && !has(sec, m, "src/environment.c") && !has(sec, m, "a/.aws/credentials") &&
                   strv_length(sec) == 4, "...not inside .git, not other names, and a masked directory is not walked into");
        }
        {
                _cleanup_free_ char *cmd = NULL;
                assert_se(asprintf(&cmd, "rm -rf '%s'", t) >= 0);
                if (system(cmd) != 0)
                        diag("cannot remove the test tree");
        }
}

/* A guarded path that is a symlink (a repository's .git/hooks -> ../.githooks, .envrc -> scripts/env.sh):
 * the host's git and direnv follow it, so what it points at is guarded too; a link to the tree itself is
 * refused. */
static void test_link_targets(void) {
        char tmpl[] = "/tmp/test-protected-links.XXXXXX";
        const char *t = mkdtemp(tmpl);
        _cleanup_strv_free_ char **g = NULL, **g2 = NULL;
        _cleanup_free_ char *j = NULL, *root = NULL, *root2 = NULL, *link = NULL, *cmd = NULL;
        _cleanup_(loop_config_done) LoopConfig c = {};

        assert_se(t);
        put(t, ".git/HEAD", "ref: refs/heads/main\n");
        put(t, ".githooks/pre-commit", "#!/bin/sh\n");
        put(t, "scripts/env.sh", "export A=1\n");
        assert_se(asprintf(&link, "%s/.git/hooks", t) >= 0);
        assert_se(symlink("../.githooks", link) == 0);
        free(link);
        assert_se(asprintf(&link, "%s/.envrc", t) >= 0);
        assert_se(symlink("scripts/env.sh", link) == 0);
        assert_se(asprintf(&j, "{ \"work_dir\": \"%s\" }", t) >= 0);
        ok(load(j, &c) == 0, "setup: a work dir whose .git/hooks and .envrc are symlinks into it");
        ok(protected_paths_guarded(&c, &root, &g) == 0 && has(g, t, ".git/hooks") && has(g, t, ".githooks") &&
           has(g, t, ".envrc") && has(g, t, "scripts/env.sh"),
           "the symlinks stay guarded and what they point at is guarded too");

        {
                /* .git itself a symlink (repo's checkouts): the repository it names is protected */
                char tmpl2[] = "/tmp/test-protected-dotgit.XXXXXX";
                const char *u = mkdtemp(tmpl2);
                _cleanup_strv_free_ char **gl = NULL;
                _cleanup_free_ char *dot = NULL;

                assert_se(u);
                put(u, ".repo/projects/app.git/HEAD", "ref: refs/heads/main\n");
                put(u, ".repo/projects/app.git/config", "[core]\n");
                put(u, ".repo/projects/app.git/hooks", NULL);
                put(u, "app/main.c", "int main;\n");
                assert_se(asprintf(&dot, "%s/app/.git", u) >= 0);
                assert_se(symlink("../.repo/projects/app.git", dot) == 0);
                free(dot);
                assert_se(asprintf(&dot, "%s/app", u) >= 0);
                ok(protected_paths_git(dot, u, &gl) == 0 && has(gl, u, "app/.git") &&
                   has(gl, u, ".repo/projects/app.git/hooks") && has(gl, u, ".repo/projects/app.git/config"),
                   "a .git that is a symlink: the link and the control surface of the repository it names");
                free(cmd);
                assert_se(asprintf(&cmd, "rm -rf '%s'", u) >= 0);
                if (system(cmd) != 0)
                        diag("cannot remove the test tree");
                cmd = mfree(cmd);
        }

        free(link);
        assert_se(asprintf(&link, "%s/.git/hooks", t) >= 0);
        assert_se(unlink(link) == 0 && symlink("..", link) == 0);
        is_int(protected_paths_guarded(&c, &root2, &g2), -ELOOP, "a .git/hooks pointing at the work dir itself is refused");

        assert_se(asprintf(&cmd, "rm -rf '%s'", t) >= 0);
        if (system(cmd) != 0)
                diag("cannot remove the test tree");
}

static void link_at(const char *dir, const char *rel, const char *target) {
        _cleanup_free_ char *p = NULL;

        assert_se(asprintf(&p, "%s/%s", dir, rel) >= 0);
        (void) unlink(p);
        assert_se(symlink(target, p) == 0);
}

/* A guarded symlink whose target does not exist yet (.git/hooks -> ../.githooks before anyone made
 * .githooks): the name it will lead to, walked as the kernel walks it, is guarded like a missing protected
 * path, so that the agent cannot create it; what cannot be worked out, or contains the tree, stops the
 * run. */
static void test_dangling_links(void) {
        char tmpl[] = "/tmp/test-protected-dangling.XXXXXX";
        const char *t = mkdtemp(tmpl);
        _cleanup_strv_free_ char **g = NULL, **g2 = NULL, **g3 = NULL, **g4 = NULL;
        _cleanup_free_ char *j = NULL, *root = NULL, *root2 = NULL, *root3 = NULL, *root4 = NULL, *abs = NULL,
                *outside = NULL, *cmd = NULL;
        _cleanup_(loop_config_done) LoopConfig c = {};
        bool none_outside = true;

        assert_se(t);
        assert_se(asprintf(&outside, "%s-outside", t) >= 0);
        put(t, ".git/HEAD", "ref: refs/heads/main\n");
        put(t, "scripts/README", "x\n");
        link_at(t, ".git/hooks", "../.githooks");                       /* relative, dangling */
        assert_se(asprintf(&abs, "%s/scripts/env.sh", t) >= 0);
        link_at(t, ".envrc", abs);                                      /* absolute, into the tree */
        link_at(t, ".claude", "chain");                                 /* a chain of two links ... */
        link_at(t, "chain", "settings/claude");                         /* ... the last one dangling */
        link_at(t, ".vscode", "deep/er/vscode");                        /* missing parent directories */
        link_at(t, ".idea", "x/y/../../conf/./idea");                   /* ".." in the missing part */
        assert_se(asprintf(&cmd, "%s/gone", outside) >= 0);
        link_at(t, ".codex", cmd);                                      /* outside the tree */
        cmd = mfree(cmd);
        assert_se(asprintf(&j, "{ \"work_dir\": \"%s\" }", t) >= 0);
        ok(load(j, &c) == 0, "setup: a work dir whose protected symlinks lead to nothing yet");
        ok(protected_paths_guarded(&c, &root, &g) == 0, "protected_paths_guarded() accepts dangling links");
        ok(has(g, t, ".git/hooks") && has(g, t, ".githooks"), "a dangling relative link: its target is guarded");
        ok(has(g, t, ".envrc") && has(g, t, "scripts/env.sh"), "a dangling absolute link into the tree: its target is guarded");
        ok(has(g, t, "settings/claude") && has(g, t, "chain"),
           "a chain of links, the last dangling: the chain's end is guarded, and the link on the way (kept as a link)");
        ok(has(g, t, "deep/er/vscode"), "a target whose parent directories are missing is guarded");
        ok(has(g, t, "conf/idea") && !has(g, t, "x") && !has(g, t, "x/y/../../conf/./idea"),
           "\"..\" in the missing part is taken back lexically, as the kernel will once those directories exist");
        STRV_FOREACH(p, g)
                if (!path_is_inside(*p, t))
                        none_outside = false;
        ok(has(g, t, ".codex") && none_outside, "a dangling target outside the tree is not guarded (not in the container)");

        link_at(t, ".idea", "gone/../..");
        is_int(protected_paths_guarded(&c, &root2, &g2), -ELOOP, "a dangling target above the tree stops the run");
        link_at(t, ".idea", "gone/..");
        is_int(protected_paths_guarded(&c, &root3, &g3), -ELOOP, "a dangling target that is the tree itself stops the run");
        link_at(t, ".idea", "loop-a");
        link_at(t, "loop-a", "loop-b");
        link_at(t, "loop-b", "loop-a");
        is_int(protected_paths_guarded(&c, &root4, &g4), -ELOOP, "a loop of links stops the run (fail closed)");

        assert_se(asprintf(&cmd, "rm -rf '%s'", t) >= 0);
        if (system(cmd) != 0)
                diag("cannot remove the test tree");
}

/* In a work dir that folds case, .ENV is the .env the host's tools open, and .\u212aube (a KELVIN SIGN)
 * the .kube. Last: it unshares the mount namespace. */
static void test_secrets_casefold(void) {
        char cf[] = "/tmp/test-protected-paths-casefold.XXXXXX", w[sizeof(cf) + 16];
        int r = mkdtemp(cf) ? casefold_tmpfs_mount(cf) : -errno;
        _cleanup_strv_free_ char **sec = NULL;

        snprintf(w, sizeof w, "%s/work", cf);
        if (r >= 0 && (mkdir(w, 0755) < 0 || casefold_dir_set(w) < 0))
                r = -errno;
        if (r < 0) {
                skip("in a folding work dir secret names in another case are masked",
                     "no tmpfs -o casefold here (root and a kernel with CONFIG_UNICODE)");
                (void) rmdir(cf);
                return;
        }
        put(w, "api/.ENV", "K=1\n");
        put(w, ".Npmrc", "x\n");
        put(w, ".\xe2\x84\xaaube/config", "x\n");
        put(w, ".GIT/x/.env", "x\n");
        put(w, "src/Environment.c", "x\n");
        ok(protected_paths_secrets_found(w, &sec) == 0 && has(sec, w, "api/.ENV") && has(sec, w, ".Npmrc"),
           "in a folding work dir secret names in another case are found (.ENV, .Npmrc)");
        ok(has(sec, w, ".\xe2\x84\xaaube"), "...and a name the kernel folds by Unicode, found by looking .kube up");
        ok(!has(sec, w, ".GIT/x/.env") && strv_length(sec) == 3, "...not inside .GIT (it is .git), not other names");
        (void) umount2(cf, MNT_DETACH);
        (void) rmdir(cf);
}

int main(void) {
        test_lists();
        test_link_targets();
        test_dangling_links();
        test_git();
        test_schema();
        test_writable_and_protected();
        test_config_set();
        test_host_services();
        test_secrets_casefold();
        return done_testing();
}
