/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The container spec: names, the host user, time zone detection, proxy rewriting, mount parsing and the
 * create body with its env, binds, copied files and hardening, as seed 001 and our decisions describe. */

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <regex.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "agent-env.h"
#include "config-schema.h"
#include "config.h"
#include "container-spec.h"
#include "io-util.h"
#include "json-util.h"
#include "strv.h"
#include "seal.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-container-spec-XXXXXX";
static char home[PATH_MAX], work[PATH_MAX];
static HostUser user;
static char *default_cmd[] = { (char *) "claude", (char *) "--print", (char *) "hi", NULL };

#define OAUTH_SECRET "oauth-s3cret-value-0123"
#define API_SECRET "sk-ant-s3cret-value-4567"

/* ---- fixtures ---- */

_printf_(1, 2)
static char *tpath(const char *format, ...) {
        static char buf[8][PATH_MAX];
        static unsigned next;
        char rel[PATH_MAX / 2];
        char *p = buf[next++ % ELEMENTSOF(buf)];
        va_list ap;

        va_start(ap, format);
        vsnprintf(rel, sizeof rel, format, ap);
        va_end(ap);
        snprintf(p, PATH_MAX, "%s/%s", tmpdir, rel);
        return p;
}

static void mkdir_p(const char *path) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
        if (system(cmd) != 0)
                abort();
}

static void write_file(const char *path, const char *text) {
        char dir[PATH_MAX];
        int fd;

        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = 0;
        mkdir_p(dir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || loop_write(fd, text, strlen(text)) < 0)
                abort();
        close(fd);
}

static void remove_path(const char *path) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
        if (system(cmd) != 0)
                abort();
}

/* A channel config through the config module: fields (a JSON fragment) with work_dir added. */
_printf_(2, 3)
static int load_config(LoopConfig *c, const char *format, ...) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *fields = NULL, *text = NULL, *reason = NULL;
        ConfigProblems p = {};
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&fields, format, ap);
        va_end(ap);
        if (r < 0)
                abort();
        if (asprintf(&text, "{ \"work_dir\": \"%s\"%s%s }", work, *fields ? ", " : "", fields) < 0)
                abort();
        r = config_parse_text(text, strlen(text), &o, &reason);
        if (r < 0) {
                printf("# parse: %s\n", strna(reason));
                return r;
        }
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

static ContainerInput input(const LoopConfig *c) {
        return (ContainerInput) {
                .channel = "chan",
                .type = CONTAINER_AGENT,
                .name = "loop-chan-abcdef",
                .config = c,
                .user = &user,
                .engine = ENGINE_DOCKER,
                .timezone = "Europe/Bucharest",
                .cmd = default_cmd,
        };
}

static ContainerPlan *build(const ContainerInput *in) {
        ContainerPlan *p = NULL;
        int r = container_plan_build(in, &p);
        if (r < 0) {
                printf("# container_plan_build: %s\n", strerror(-r));
                return NULL;
        }
        return p;
}

/* ---- looking into a plan ---- */

static json_object *jget(json_object *o, const char *path) {
        char buf[256], *save = NULL;

        snprintf(buf, sizeof buf, "%s", path);
        for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
                if (!json_object_object_get_ex(o, k, &o))
                        return NULL;
        return o;
}

static json_object *body(const ContainerPlan *p, const char *path) {
        return p ? jget(p->body, path) : NULL;
}

static const char *jstr(const ContainerPlan *p, const char *path) {
        json_object *o = body(p, path);
        return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static long long jint(const ContainerPlan *p, const char *path) {
        json_object *o = body(p, path);
        return o ? json_object_get_int64(o) : -1;
}

static bool jbool_is(const ContainerPlan *p, const char *path, bool want) {
        json_object *o = body(p, path);
        return o && json_object_is_type(o, json_type_boolean) && json_object_get_boolean(o) == want;
}

/* A string array in the body as a strv (owned by the caller). */
static char **jstrv(const ContainerPlan *p, const char *path) {
        json_object *a = body(p, path);
        char **l = NULL;

        if (!a || !json_object_is_type(a, json_type_array))
                return NULL;
        for (size_t i = 0; i < json_object_array_length(a); i++)
                if (strv_extend(&l, json_object_get_string(json_object_array_get_idx(a, i))) < 0)
                        abort();
        if (!l)
                l = calloc(1, sizeof(char *));
        return l;
}

static size_t env_count(const ContainerPlan *p, const char *key) {
        _cleanup_strv_free_ char **env = jstrv(p, "Env");
        size_t n = 0, l = strlen(key);

        STRV_FOREACH(e, env)
                if (strncmp(*e, key, l) == 0 && (*e)[l] == '=')
                        n++;
        return n;
}

/* The value of key in the Env array, NULL when absent; a static copy. */
static const char *env_get(const ContainerPlan *p, const char *key) {
        static char buf[4][4096];
        static unsigned next;
        _cleanup_strv_free_ char **env = jstrv(p, "Env");
        size_t l = strlen(key);

        STRV_FOREACH(e, env)
                if (strncmp(*e, key, l) == 0 && (*e)[l] == '=') {
                        char *b = buf[next++ % ELEMENTSOF(buf)];
                        snprintf(b, sizeof buf[0], "%s", *e + l + 1);
                        return b;
                }
        return NULL;
}

/* The configured envs as the agent gets them: LOOP_AGENT_ENV of the Env array, decoded (NULL: none). */
static char **agent_envs(const ContainerPlan *p) {
        char **l = NULL;
        const char *v = env_get(p, AGENT_ENV_VARIABLE);

        if (v && agent_env_decode(v, &l) < 0)
                return NULL;
        return l;
}

/* The value the agent's process sees: a configured env over the container's Env. A static copy. */
static const char *agent_get(const ContainerPlan *p, const char *key) {
        static char buf[4][4096];
        static unsigned next;
        _cleanup_strv_free_ char **l = agent_envs(p);
        const char *v = agent_env_get(l, key);
        char *b;

        if (!v)
                return env_get(p, key);
        b = buf[next++ % ELEMENTSOF(buf)];
        snprintf(b, sizeof buf[0], "%s", v);
        return b;
}

static size_t agent_count(const ContainerPlan *p, const char *key) {
        _cleanup_strv_free_ char **l = agent_envs(p);
        size_t n = 0, k = strlen(key);

        STRV_FOREACH(e, l)
                if (strncmp(*e, key, k) == 0 && (*e)[k] == '=')
                        n++;
        return n;
}

static int env_index(const ContainerPlan *p, const char *key) {
        _cleanup_strv_free_ char **env = jstrv(p, "Env");
        size_t l = strlen(key);
        int i = 0;

        STRV_FOREACH(e, env) {
                if (strncmp(*e, key, l) == 0 && (*e)[l] == '=')
                        return i;
                i++;
        }
        return -1;
}

static void show_strv(const char *what, char * const *l) {
        STRV_FOREACH(s, l)
                printf("#   %s: %s\n", what, *s);
}

static int bind_index(const ContainerPlan *p, const char *spec) {
        _cleanup_strv_free_ char **binds = jstrv(p, "HostConfig.Binds");
        int i = 0;

        STRV_FOREACH(b, binds) {
                if (streq(*b, spec))
                        return i;
                i++;
        }
        return -1;
}

static bool has_bind(const ContainerPlan *p, const char *spec) {
        return bind_index(p, spec) >= 0;
}

/* has_bind() for a positive assertion: shows the binds when it fails. */
static bool bound(const ContainerPlan *p, const char *spec) {
        _cleanup_strv_free_ char **binds = NULL;

        if (has_bind(p, spec))
                return true;
        printf("#   missing bind: %s\n", spec);
        binds = jstrv(p, "HostConfig.Binds");
        show_strv("bind", binds);
        return false;
}

static bool no_bind_mentions(const ContainerPlan *p, const char *needle) {
        _cleanup_strv_free_ char **binds = jstrv(p, "HostConfig.Binds");
        STRV_FOREACH(b, binds)
                if (strstr(*b, needle))
                        return false;
        return true;
}

static bool skipped_has(const ContainerPlan *p, const char *a, const char *b) {
        if (!p)
                return false;
        STRV_FOREACH(s, p->skipped)
                if (strstr(*s, a) && (!b || strstr(*s, b)))
                        return true;
        show_strv("skipped", p->skipped);
        return false;
}

static bool strv_equal_list(char * const *l, const char * const *want, size_t n) {
        if (strv_length(l) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(l[i], want[i]))
                        return false;
        return true;
}

/* ---- tests ---- */

static void test_container_type(void) {
        is_str(container_type_to_string(CONTAINER_AGENT), "agent", "type agent is named agent");
        is_str(container_type_to_string(CONTAINER_SHELL), "shell", "type shell is named shell");
        is_str(container_type_to_string(CONTAINER_CHROME), "chrome", "type chrome is named chrome");
        ok(container_type_to_string(_CONTAINER_TYPE_MAX) == NULL, "an out-of-range type has no name");
        ok(container_type_from_string("chrome") == CONTAINER_CHROME, "\"chrome\" parses to the chrome type");
        ok(container_type_from_string("Agent") == _CONTAINER_TYPE_INVALID, "type names are case-sensitive");
        ok(container_type_from_string(NULL) == _CONTAINER_TYPE_INVALID, "a NULL type name is invalid");
}

static void test_host_user(void) {
        _cleanup_(host_user_done) HostUser me = {}, root = {}, root_uid = {};
        HostUser none = {};
        struct passwd *pw = getpwuid(getuid());

        ok(host_user_resolve(NULL, &me) == 0 && me.uid == getuid() && pw && streq(me.name, pw->pw_name) &&
           me.gid == pw->pw_gid && streq(me.home, pw->pw_dir),
           "NULL resolves to the user running the process");
        ok(host_user_resolve("root", &root) == 0 && root.uid == 0 && root.gid == 0 && streq(root.name, "root") &&
           root.home[0] == '/', "a user name resolves through getpwnam_r");
        ok(host_user_resolve("0", &root_uid) == 0 && root_uid.uid == 0 && streq(root_uid.name, "root"),
           "a numeric spec is a uid");
        is_int(host_user_resolve("no-such-user-loop-test", &none), -ESRCH, "an unknown user name is -ESRCH");
        is_int(host_user_resolve("3999999999", &none), -ESRCH, "an unknown uid is -ESRCH");
        is_int(host_user_resolve("99999999999999", &none), -ERANGE, "a uid beyond 32 bits is -ERANGE");
        is_int(host_user_resolve("4294967295", &none), -ERANGE, "uid -1 is refused");
        is_int(host_user_resolve("", &none), -EINVAL, "an empty user spec is -EINVAL");
        ok(!none.name && !none.home, "a failed resolve leaves the output untouched");
        host_user_done(&me);
        host_user_done(&me);
        ok(!me.name && !me.home, "host_user_done clears and is idempotent");
}

static void sanitized(const char *in, const char *want, const char *what) {
        _cleanup_free_ char *s = container_name_sanitize(in);
        is_str(s, want, "%s", what);
}

static bool name_matches(const char *name, const char *pattern) {
        regex_t re;
        bool m;

        if (!name || regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
                return false;
        m = regexec(&re, name, 0, NULL, 0) == 0;
        regfree(&re);
        if (!m)
                printf("#   name: %s\n", name);
        return m;
}

static void test_names(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *chrome = NULL, *chrome2 = NULL;
        char *none = NULL;
        char long_in[80], long_want[41];

        sanitized("abc123", "abc123", "a plain channel name stays as it is");
        sanitized("My_Project!!Name", "my-project-name", "upper case is lowered and non-alphanumerics become -");
        sanitized("a  --  b", "a-b", "runs of - are collapsed");
        sanitized("--abc--", "abc", "leading and trailing - are trimmed");
        sanitized("___", "agent", "an empty sanitized base falls back to agent");
        sanitized("", "agent", "an empty name falls back to agent");
        sanitized(NULL, "agent", "a NULL name falls back to agent");
        sanitized("caf\xc3\xa9-b\xc3\xa4r", "caf-b-r", "non-ASCII bytes become -");
        memset(long_in, 'x', 60);
        long_in[60] = 0;
        memset(long_want, 'x', 40);
        long_want[40] = 0;
        sanitized(long_in, long_want, "the base is truncated to 40 characters");
        memset(long_in, 'a', 39);
        strcpy(long_in + 39, "_bcdef");
        memset(long_want, 'a', 39);
        long_want[39] = 0;
        sanitized(long_in, long_want, "a - left at the end by truncation is trimmed");

        ok(container_name_new("abc123", NULL, &a) == 0 && name_matches(a, "^loop-abc123-[0-9a-f]{6}$"),
           "loop-{channel}-{6 hex} without a custom work dir");
        ok(container_name_new("abc123", "/home/user/my-project", &b) == 0 &&
           name_matches(b, "^loop-my-project-[0-9a-f]{6}$"), "the custom work dir's basename is the base");
        ok(container_name_new("abc123", "/home/user/My Project//", &c) == 0 &&
           name_matches(c, "^loop-my-project-[0-9a-f]{6}$"), "trailing slashes of the work dir are ignored");
        ok(container_name_new("abc123", "/", &d) == 0 && name_matches(d, "^loop-agent-[0-9a-f]{6}$"),
           "a work dir of / gives the agent base");
        ok(container_name_new("Weird Chan#1", "", &e) == 0 && name_matches(e, "^loop-weird-chan-1-[0-9a-f]{6}$"),
           "an empty custom work dir falls back to the channel");
        ok(a && e && !streq(a + strlen(a) - 6, e + strlen(e) - 6) , "the random suffix differs between names");
        is_int(container_name_new(NULL, NULL, &none), -EINVAL, "no channel and no work dir is -EINVAL");
        ok(!none, "a failed name leaves the output untouched");

        chrome = container_name_chrome("Team Chat");
        is_str(chrome, "loop-chrome-team-chat", "the chrome sidecar is loop-chrome-{sanitized channel}");
        chrome2 = container_name_chrome("///");
        is_str(chrome2, "loop-chrome-agent", "a chrome name from an empty base uses agent");
}

static void tz_tree(const char *timezone_file, const char *localtime_target) {
        remove_path(tpath("tz"));
        mkdir_p(tpath("tz/etc"));
        if (timezone_file)
                write_file(tpath("tz/etc/timezone"), timezone_file);
        if (localtime_target && symlink(localtime_target, tpath("tz/etc/localtime")) < 0)
                abort();
}

static void tz_is(const char *tz_env, const char *want, const char *what) {
        _cleanup_free_ char *s = timezone_detect(tz_env, tpath("tz"));
        is_str(s, want, "%s", what);
}

static void test_timezone(void) {
        _cleanup_free_ char *slash = NULL;
        char root_slash[PATH_MAX];

        tz_tree("America/New_York\n", "/usr/share/zoneinfo/Asia/Tokyo");
        tz_is("Europe/Bucharest", "Europe/Bucharest", "$TZ comes first");
        tz_is(":Europe/Paris", "Europe/Paris", "a leading ':' of $TZ is stripped");
        tz_is("", "America/New_York", "an empty $TZ falls through to /etc/timezone");
        tz_is(":", "America/New_York", "a $TZ of just ':' falls through");
        tz_is("/usr/share/zoneinfo/Europe/Rome", "America/New_York", "an absolute-path $TZ falls through");
        tz_is(":/etc/localtime", "America/New_York", "an absolute path after ':' falls through");
        tz_is("../../etc/passwd", "America/New_York", "a $TZ with .. falls through");
        tz_is("Europe/Bu charest", "America/New_York", "a $TZ with whitespace falls through");
        tz_is(NULL, "America/New_York", "/etc/timezone comes before /etc/localtime");

        tz_tree("  Europe/Berlin \t\nsecond line\n", NULL);
        tz_is(NULL, "Europe/Berlin", "only the first line of /etc/timezone counts, trimmed");
        snprintf(root_slash, sizeof root_slash, "%s/", tpath("tz"));
        slash = timezone_detect(NULL, root_slash);
        is_str(slash, "Europe/Berlin", "a root with a trailing / works");

        tz_tree("\n", "/usr/share/zoneinfo/Asia/Tokyo");
        tz_is(NULL, "Asia/Tokyo", "an empty /etc/timezone falls through to the /etc/localtime link");
        tz_tree("../../etc/shadow\n", "/usr/share/zoneinfo/Asia/Tokyo");
        tz_is(NULL, "Asia/Tokyo", "an /etc/timezone with .. falls through");
        tz_tree(NULL, "../usr/share/zoneinfo/posix/Europe/Berlin");
        tz_is(NULL, "Europe/Berlin", "a relative link and the posix/ prefix are handled");
        tz_tree(NULL, "/usr/share/zoneinfo/right/America/Chicago");
        tz_is(NULL, "America/Chicago", "the right/ prefix is stripped");
        tz_tree(NULL, "/var/db/timezone/zoneinfo/Etc/UTC");
        tz_is(NULL, "Etc/UTC", "any .../zoneinfo/ directory counts");
        tz_tree(NULL, "/etc/some-file");
        tz_is(NULL, "UTC", "a link outside zoneinfo gives UTC");
        tz_tree(NULL, "/usr/share/zoneinfo/../../../etc/passwd");
        tz_is(NULL, "UTC", "a link escaping zoneinfo with .. gives UTC");
        tz_tree(NULL, NULL);
        write_file(tpath("tz/etc/localtime"), "TZif2...");
        tz_is(NULL, "UTC", "a regular /etc/localtime file gives UTC");
        tz_tree(NULL, NULL);
        tz_is(NULL, "UTC", "nothing at all gives UTC");
        remove_path(tpath("tz"));
}

static void test_host_alias(void) {
        is_str(engine_host_alias(ENGINE_DOCKER), "host.docker.internal", "Docker's host alias is host.docker.internal");
        is_str(engine_host_alias(ENGINE_PODMAN), "host.containers.internal",
               "Podman's host alias is host.containers.internal");
        is_str(engine_host_alias(ENGINE_UNKNOWN), "host.docker.internal", "an unknown engine gets Docker's alias");
}

static void rewrites(const char *in, const char *alias, const char *want, const char *what) {
        _cleanup_free_ char *s = proxy_rewrite(in, alias);
        is_str(s, want, "%s", what);
}

static void test_proxy_rewrite(void) {
        const char *d = "host.docker.internal";

        rewrites("http://localhost:3128", d, "http://host.docker.internal:3128", "://localhost: is rewritten");
        rewrites("http://127.0.0.1:8080/", d, "http://host.docker.internal:8080/", "://127.0.0.1: is rewritten");
        rewrites("http://[::1]:3128", d, "http://host.docker.internal:3128", "://[::1]: is rewritten");
        rewrites(":3128", d, "http://host.docker.internal:3128", "a bare :PORT becomes http://ALIAS:PORT");
        rewrites("http://localhost:3128", "host.containers.internal", "http://host.containers.internal:3128",
                 "the engine's alias is used");
        rewrites("https://LocalHost:443", d, "https://host.docker.internal:443", "the host matches case-insensitively");
        rewrites("http://user:pa:ss@localhost:3128", d, "http://user:pa:ss@host.docker.internal:3128",
                 "userinfo is kept and the host after it rewritten");
        rewrites("socks5://127.0.0.1:1080", d, "socks5://host.docker.internal:1080", "any scheme is rewritten");
        rewrites("http://localhost", d, "http://host.docker.internal", "localhost without a port is rewritten");
        rewrites("http://proxy.corp:3128", d, "http://proxy.corp:3128", "a real proxy host is unchanged");
        rewrites("http://localhost.example.com:3128", d, "http://localhost.example.com:3128",
                 "a host that only starts with localhost is unchanged");
        rewrites("http://127.0.0.10:3128", d, "http://127.0.0.10:3128", "127.0.0.10 is not 127.0.0.1");
        rewrites("http://example.com/?u=http://localhost:1", d, "http://example.com/?u=http://localhost:1",
                 "localhost in the path or query is unchanged");
        rewrites("localhost:3128", d, "localhost:3128", "a value without a scheme is unchanged");
        rewrites(":abc", d, ":abc", "a ':' without a port number is unchanged");
        rewrites(":", d, ":", "a lone ':' is unchanged");
        rewrites(":123456", d, ":123456", "a port of more than 5 digits is unchanged");
        rewrites("http://[::1", d, "http://[::1", "an unterminated IPv6 host is unchanged");
        rewrites("", d, "", "an empty value stays empty");
        ok(proxy_rewrite(NULL, d) == NULL, "a NULL value gives NULL");
}

static void parses(const char *spec, const char *source, const char *target, const char *options, bool named,
                   const char *what) {
        _cleanup_(mount_spec_done) MountSpec m = {};
        int r = mount_spec_parse(spec, "/home/u", &m);
        ok(r == 0 && streq_ptr(m.source, source) && streq_ptr(m.target, target) && streq_ptr(m.options, options) &&
           m.named_volume == named, "%s", what);
        if (r != 0 || !streq_ptr(m.source, source) || !streq_ptr(m.target, target) || !streq_ptr(m.options, options))
                printf("#   r=%d source=%s target=%s options=%s named=%d\n", r, strna(m.source), strna(m.target),
                       strna(m.options), m.named_volume);
}

static void refused(const char *spec, const char *home_dir, const char *what) {
        MountSpec m = {};
        int r = mount_spec_parse(spec, home_dir, &m);
        ok(r == -EINVAL && !m.source && !m.target && !m.options, "%s", what);
        if (r != -EINVAL)
                printf("#   r=%d\n", r);
        mount_spec_done(&m);
}

static void test_mount_spec(void) {
        parses("loop-npmcache:~/.npm", "loop-npmcache", "/home/u/.npm", NULL, true,
               "a source without / is a named volume; its target still gets ~ expanded");
        parses("loop-gocache:/go", "loop-gocache", "/go", NULL, true, "a named volume with an absolute target");
        parses("~/.ssh:~/.ssh:ro", "/home/u/.ssh", "/home/u/.ssh", "ro", false, "~/ expands in source and target");
        parses("~:/host-home", "/home/u", "/host-home", NULL, false, "a lone ~ is the home dir");
        parses("/data:/data:ro,z", "/data", "/data", "ro,z", false, "options are kept as given");
        parses("./cache:/cache", "./cache", "/cache", NULL, false,
               "a ./ source is a host path, left relative for the caller");
        parses(".:/src", ".", "/src", NULL, false, "a . source is a host path");
        parses("a/b:/b", "a/b", "/b", NULL, false, "a relative source with a / is a host path");
        parses("/a//b/./c/:/x/../y/", "/a/b/c", "/y", NULL, false, "paths are cleaned lexically");
        parses("/x:/../../etc", "/x", "/etc", NULL, false, ".. never climbs above /");
        parses("my.vol_1-x:/v", "my.vol_1-x", "/v", NULL, true, "volume names may hold . _ -");

        refused("", "/home/u", "an empty spec is refused");
        refused(NULL, "/home/u", "a NULL spec is refused");
        refused("nocolon", "/home/u", "a spec without ':' is refused");
        refused(":/x", "/home/u", "an empty source is refused");
        refused("/x:", "/home/u", "an empty target is refused");
        refused("/x::ro", "/home/u", "an empty target before options is refused");
        refused("/x:/y:", "/home/u", "an empty option list is refused");
        refused("/x:/y:ro:extra", "/home/u", "a fourth field is refused");
        refused("/x:relative", "/home/u", "a relative target is refused");
        refused("~bob/x:/x", "/home/u", "a ~user source is refused");
        refused("/x:~bob/y", "/home/u", "a ~user target is refused");
        refused("~/x:/y", NULL, "~ without a home is refused");
        refused("a:/x", "/home/u", "a one-character volume name is refused, as the engines do");
        refused("-vol:/x", "/home/u", "a volume name must start with a letter or digit");
        refused("vol$:/x", "/home/u", "a volume name with other characters is refused");
        refused("/x:/y:ro,,z", "/home/u", "an empty option in the list is refused");
        refused("/x:/y:ro,", "/home/u", "a trailing ',' in the options is refused");
        refused("/x:/y:r o", "/home/u", "whitespace in the options is refused");
}

/* ---- the create body ---- */

static void test_plan_basics(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL, *nocmd = NULL, *shell = NULL;
        _cleanup_strv_free_ char **cmd = NULL;
        ContainerInput in;
        _cleanup_free_ char *path = NULL;

        remove_path(tpath("home/.claude.json"));
        ok(load_config(&c, "%s", "") == 0, "a minimal channel config loads");
        in = input(&c);
        p = build(&in);
        ok(p != NULL, "a plan is built");
        is_str(jstr(p, "Image"), "loop-agent:latest", "Image is container_image");
        cmd = jstrv(p, "Cmd");
        ok(strv_equal_list(cmd, (const char *[]) { "claude", "--print", "hi" }, 3), "Cmd is the given argv");
        is_str(jstr(p, "WorkingDir"), work, "WorkingDir is the work dir");
        ok(jbool_is(p, "Tty", false), "Tty is false");
        ok(jbool_is(p, "AttachStdout", true) && jbool_is(p, "AttachStderr", true), "stdout and stderr are attached");
        ok(jbool_is(p, "AttachStdin", false) && jbool_is(p, "OpenStdin", false), "stdin is neither open nor attached");
        is_str(jstr(p, "Labels.app"), "loop-agent", "label app=loop-agent");
        is_str(jstr(p, "Labels.loop-channel"), "chan", "label loop-channel is the channel");
        is_str(jstr(p, "Labels.loop-type"), "agent", "label loop-type is agent");
        ok(json_object_object_length(body(p, "Labels")) == 3, "exactly three labels");

        if (asprintf(&path, "%s:%s:rw", work, work) < 0)
                abort();
        _cleanup_strv_free_ char **binds = jstrv(p, "HostConfig.Binds");
        ok(strv_length(binds) == 1 && streq(binds[0], path), "with no mounts only the work dir is bound, rw");
        ok(skipped_has(p, "copy file ~/.claude.json", "does not exist"),
           "a missing ~/.claude.json is skipped with a line");
        ok(strv_length(p->copy_sources) == 0 && strv_length(p->copy_targets) == 0, "nothing to copy when it is missing");
        ok(strv_length(p->chown_paths) == 0 && env_count(p, "CHOWN_PATHS") == 0,
           "CHOWN_PATHS is absent when there is nothing to chown");
        ok(body(p, "Volumes") && jget(body(p, "Volumes"), home) &&
           json_object_object_length(body(p, "Volumes")) == 1,
           "HOME is an anonymous volume, writable on the read-only root");

        in.cmd = NULL;
        nocmd = build(&in);
        ok(nocmd && !body(nocmd, "Cmd"), "Cmd is omitted when no command is given");

        in = input(&c);
        in.type = CONTAINER_SHELL;
        shell = build(&in);
        is_str(jstr(shell, "Labels.loop-type"), "shell", "label loop-type is shell for a shell container");
        is_str(jstr(shell, "Image"), "loop-agent:latest", "a shell container uses the agent image");
}

static void test_plan_weird_channel(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        ContainerInput in;

        ok(load_config(&c, "%s", "") == 0, "config for the weird channel loads");
        in = input(&c);
        in.channel = "we\"ird chan/\xc3\xa9";
        p = build(&in);
        is_str(jstr(p, "Labels.loop-channel"), "we\"ird chan/\xc3\xa9", "the channel label is the channel verbatim");
        is_str(env_get(p, "CHANNEL_ID"), "we\"ird chan/\xc3\xa9", "CHANNEL_ID is the channel verbatim");
}

static void test_plan_env_order(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL, *utc = NULL;
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *e_chan = NULL, *e_home = NULL, *e_path = NULL, *e_chown = NULL;
        ContainerInput in;

        write_file(tpath("home/.claude.json"), "{}");
        ok(load_config(&c, "\"envs\": { \"FOO\": \"bar\" }") == 0, "config with one env loads");
        in = input(&c);
        p = build(&in);
        env = jstrv(p, "Env");
        if (asprintf(&e_home, "HOME=%s", home) < 0 ||
            asprintf(&e_path, "PATH=%s/.local/bin:%s/bin:%s/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:"
                     "/usr/sbin:/usr/bin:/sbin:/bin", home, home, home) < 0 ||
            asprintf(&e_chown, "CHOWN_PATHS=%s/.claude.json", home) < 0)
                abort();
        const char *want[] = {
                "CHANNEL_ID=chan", e_home, "HOST_USER=u", "AGENT_UID=1000", "AGENT_GID=1001",
                "TZ=Europe/Bucharest", e_path, e_chown, "LOOP_AGENT_ENV=Rk9PPWJhcgA=",
        };
        ok(strv_equal_list(env, want, ELEMENTSOF(want)),
           "Env is CHANNEL_ID, HOME, HOST_USER, AGENT_UID, AGENT_GID, TZ, PATH, CHOWN_PATHS, the envs encoded, in order");
        if (!strv_equal_list(env, want, ELEMENTSOF(want)))
                show_strv("env", env);

        in.timezone = NULL;
        utc = build(&in);
        is_str(env_get(utc, "TZ"), "UTC", "TZ is UTC when no zone was detected");
        remove_path(tpath("home/.claude.json"));
}

static void test_plan_credentials(void) {
        _cleanup_(loop_config_done) LoopConfig both = {}, key = {}, none = {};
        _cleanup_(container_plan_freep) ContainerPlan *p1 = NULL, *p2 = NULL, *p3 = NULL;
        ContainerInput in;

        ok(load_config(&both, "\"claude_code_oauth_token\": \"" OAUTH_SECRET "\", \"anthropic_api_key\": \"" API_SECRET "\"") == 0,
           "config with both credentials loads");
        ok(load_config(&key, "\"anthropic_api_key\": \"" API_SECRET "\"") == 0, "config with an API key loads");
        ok(load_config(&none, "%s", "") == 0, "config without credentials loads");

        in = input(&both);
        p1 = build(&in);
        ok(streq_ptr(env_get(p1, "CLAUDE_CODE_OAUTH_TOKEN"), OAUTH_SECRET) && env_count(p1, "ANTHROPIC_API_KEY") == 0,
           "OAuth wins over the API key: only CLAUDE_CODE_OAUTH_TOKEN is set");
        ok(env_index(p1, "CLAUDE_CODE_OAUTH_TOKEN") == env_index(p1, "PATH") + 1,
           "the credential follows PATH (and CHOWN_PATHS when present)");
        in = input(&key);
        p2 = build(&in);
        ok(streq_ptr(env_get(p2, "ANTHROPIC_API_KEY"), API_SECRET) && env_count(p2, "CLAUDE_CODE_OAUTH_TOKEN") == 0,
           "an API key alone sets ANTHROPIC_API_KEY");
        in = input(&none);
        p3 = build(&in);
        ok(p3 && env_count(p3, "ANTHROPIC_API_KEY") == 0 && env_count(p3, "CLAUDE_CODE_OAUTH_TOKEN") == 0,
           "no credential variable without credentials");
}

/* Behind the egress gateway the agent holds the dummy key only and leaves through the relay. */
static void test_plan_egress(void) {
        _cleanup_(loop_config_done) LoopConfig both = {}, key = {};
        _cleanup_(container_plan_freep) ContainerPlan *p1 = NULL, *p2 = NULL, *chrome = NULL;
        char *host_env[] = { (char *) "HTTPS_PROXY=http://proxy.corp:8080", NULL };
        ContainerInput in;

        ok(load_config(&both, "\"claude_code_oauth_token\": \"" OAUTH_SECRET "\", \"anthropic_api_key\": \"" API_SECRET "\"") == 0 &&
           load_config(&key, "\"anthropic_api_key\": \"" API_SECRET "\"") == 0, "configs with credentials load");
        in = input(&both);
        in.egress_gateway = true;
        in.host_env = host_env;
        p1 = build(&in);
        is_str(jstr(p1, "HostConfig.NetworkMode"), "none", "behind the gateway the agent container has no network");
        ok(!body(p1, "HostConfig.ExtraHosts"), "... and no ExtraHosts (Docker refuses them without a network)");
        is_str(env_get(p1, "CLAUDE_CODE_OAUTH_TOKEN"), EGRESS_DUMMY_KEY_NONE, "the OAuth token is replaced by the dummy");
        ok(env_count(p1, "ANTHROPIC_API_KEY") == 0, "... and no API key variable is set");
        {
                bool leaked = false;
                char **env = jstrv(p1, "Env");
                STRV_FOREACH(e, env)
                        leaked = leaked || strstr(*e, OAUTH_SECRET) || strstr(*e, API_SECRET);
                strv_free(env);
                ok(!leaked, "no environment entry holds a real credential");
        }
        is_str(env_get(p1, "HTTPS_PROXY"), "http://127.0.0.1:3128", "HTTPS_PROXY is the relay, not the host's proxy");
        is_str(env_get(p1, "http_proxy"), "http://127.0.0.1:3128", "http_proxy is the relay");
        is_str(env_get(p1, "NO_PROXY"), "localhost,127.0.0.1,::1", "NO_PROXY is loopback");
        is_str(env_get(p1, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:2376", "ANTHROPIC_BASE_URL is the relay's API port");
        is_str(env_get(p1, "LOOP_EGRESS_ENABLED"), "1", "the entrypoint is told to start the relay");
        in = input(&key);
        in.egress_gateway = true;
        p2 = build(&in);
        is_str(env_get(p2, "ANTHROPIC_API_KEY"), EGRESS_DUMMY_KEY_NONE, "an API key is replaced by the dummy");
        in = input(&key);
        in.egress_gateway = true;
        in.type = CONTAINER_CHROME;
        chrome = build(&in);
        is_str(jstr(chrome, "HostConfig.NetworkMode"), "none", "behind the gateway the Chrome container has no network either");
        ok(chrome && env_count(chrome, "ANTHROPIC_API_KEY") == 0 && env_count(chrome, "ANTHROPIC_BASE_URL") == 0 &&
           env_count(chrome, "HTTPS_PROXY") == 0, "the Chrome sidecar is not an agent: no key, no API relay, not the host's proxy");
        is_str(env_get(chrome, "LOOP_CHROME_PROXY"), "http://127.0.0.1:3128", "Chrome's proxy is the relay");
        is_str(env_get(chrome, "LOOP_EGRESS_ENABLED"), "1", "the Chrome entrypoint is told to start the relay");
}

static void test_plan_proxy(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL, *merged = NULL, *present = NULL, *none = NULL,
                *podman = NULL, *empty = NULL;
        char *host_env[] = {
                (char *) "PATH=/usr/bin", (char *) "HTTP_PROXY=http://localhost:3128",
                (char *) "https_proxy=:3129", (char *) "HTTPS_PROXY=http://proxy.corp:8080", NULL,
        };
        char *host_env_no[] = {
                (char *) "http_proxy=http://127.0.0.1:3128", (char *) "NO_PROXY=example.com,.corp",
                (char *) "no_proxy=localhost,", NULL,
        };
        char *host_env_has[] = {
                (char *) "http_proxy=http://127.0.0.1:3128", (char *) "NO_PROXY=a, HOST.DOCKER.INTERNAL ,b",
                (char *) "no_proxy=host.docker.internal", NULL,
        };
        char *host_env_none[] = { (char *) "NO_PROXY=example.com", (char *) "no_proxy=example.com", NULL };
        char *host_env_empty[] = { (char *) "HTTP_PROXY=", (char *) "http_proxy=", NULL };
        ContainerInput in;

        ok(load_config(&c, "%s", "") == 0, "config for the proxy cases loads");
        in = input(&c);
        in.host_env = host_env;
        p = build(&in);
        is_str(env_get(p, "HTTP_PROXY"), "http://host.docker.internal:3128", "HTTP_PROXY is forwarded, localhost rewritten");
        is_str(env_get(p, "https_proxy"), "http://host.docker.internal:3129", "a bare-port https_proxy is forwarded rewritten");
        is_str(env_get(p, "HTTPS_PROXY"), "http://proxy.corp:8080", "a real proxy host is forwarded unchanged");
        ok(env_count(p, "http_proxy") == 0, "a proxy variable the host does not have is not invented");
        ok(env_index(p, "HTTP_PROXY") < env_index(p, "HTTPS_PROXY") &&
           env_index(p, "HTTPS_PROXY") < env_index(p, "https_proxy") &&
           env_index(p, "https_proxy") < env_index(p, "NO_PROXY") && env_index(p, "NO_PROXY") < env_index(p, "no_proxy"),
           "proxy variables come in the order HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy, NO_PROXY, no_proxy");
        is_str(env_get(p, "NO_PROXY"), "host.docker.internal", "NO_PROXY is the alias when the host has none");
        is_str(env_get(p, "no_proxy"), "host.docker.internal", "no_proxy is the alias when the host has none");
        ok(env_get(p, "PATH") && strstr(env_get(p, "PATH"), "/.local/bin"), "the host's PATH is not forwarded");

        in.host_env = host_env_no;
        merged = build(&in);
        is_str(env_get(merged, "http_proxy"), "http://host.docker.internal:3128", "127.0.0.1 in http_proxy is rewritten");
        is_str(env_get(merged, "NO_PROXY"), "example.com,.corp,host.docker.internal",
               "the alias is appended to the host's NO_PROXY");
        is_str(env_get(merged, "no_proxy"), "localhost,host.docker.internal",
               "a trailing ',' of the host's no_proxy is not doubled");

        in.host_env = host_env_has;
        present = build(&in);
        is_str(env_get(present, "NO_PROXY"), "a, HOST.DOCKER.INTERNAL ,b",
               "NO_PROXY already naming the alias (any case, spaces) is kept as is");
        is_str(env_get(present, "no_proxy"), "host.docker.internal", "no_proxy already naming the alias is kept");

        in.host_env = host_env_none;
        none = build(&in);
        ok(none && env_count(none, "NO_PROXY") == 0 && env_count(none, "no_proxy") == 0,
           "without proxy variables NO_PROXY is not forwarded");

        in.host_env = host_env_empty;
        empty = build(&in);
        ok(empty && env_count(empty, "HTTP_PROXY") == 0 && env_count(empty, "NO_PROXY") == 0,
           "empty proxy variables count as unset");

        in.host_env = host_env;
        in.engine = ENGINE_PODMAN;
        podman = build(&in);
        is_str(env_get(podman, "HTTP_PROXY"), "http://host.containers.internal:3128", "Podman rewrites to its alias");
        is_str(env_get(podman, "NO_PROXY"), "host.containers.internal", "Podman's NO_PROXY names its alias");
}

static void test_plan_config_envs(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL, *x = NULL;
        _cleanup_free_ char *home_x = NULL;
        char *extra_env[] = {
                (char *) "LOOP_GATE_ENABLED=1", (char *) "FOO=from-runner", (char *) "LOOP_GATE_ENABLED=2", NULL,
        };
        char *bad_extra[] = { (char *) "NOEQUALS", NULL };
        ContainerInput in;

        ok(load_config(&c,
                       "\"envs\": { \"TILDE\": \"~\", \"TILDE_PATH\": \"~/x/y\", \"TILDE_USER\": \"~bob/x\", "
                       "\"MID\": \"a~/b\", \"NUM\": 42, \"FLOAT\": 1.5, \"BOOL\": true, \"NUL\": null, "
                       "\"FOO\": \"from-config\", \"TZ\": \"Asia/Tokyo\", "
                       "\"CHANNEL_ID\": \"evil\", \"HOME\": \"" OAUTH_SECRET "\", \"HOST_USER\": \"root\", "
                       "\"AGENT_UID\": \"0\", \"AGENT_GID\": \"0\", \"CHOWN_PATHS\": \"/etc\", "
                       "\"LD_PRELOAD\": \"/work/evil.so\", \"BASH_ENV\": \"/work/evil.sh\", "
                       "\"LOCPATH\": \"/work/loc\", \"NLSPATH\": \"/work/nls\", \"TZDIR\": \"/work/tz\", "
                       "\"MALLOC_TRACE\": \"/etc/x\", \"RES_OPTIONS\": \"ndots:9\", \"TMPDIR\": \"/work/tmp\", "
                       "\"LOOP_EGRESS_CA\": \"/proc/1/environ\", \"LOOP_GATE_ENABLED\": \"0\", "
                       "\"claude_code_oauth_token\": \"x\" }, \"claude_code_oauth_token\": \"" OAUTH_SECRET "\"") == 0,
           "config with many envs loads");
        in = input(&c);
        p = build(&in);
        if (asprintf(&home_x, "%s/x/y", home) < 0)
                abort();
        is_str(agent_get(p, "TILDE"), home, "an env value of ~ is the user's home");
        is_str(agent_get(p, "TILDE_PATH"), home_x, "an env value starting with ~/ expands to the home");
        is_str(agent_get(p, "TILDE_USER"), "~bob/x", "~user in an env value is left alone");
        is_str(agent_get(p, "MID"), "a~/b", "a ~ inside an env value is left alone");
        is_str(agent_get(p, "NUM"), "42", "a number env is stringified");
        is_str(agent_get(p, "FLOAT"), "1.5", "a float env is stringified");
        is_str(agent_get(p, "BOOL"), "true", "a boolean env is stringified");
        is_str(agent_get(p, "NUL"), "", "a null env is empty");
        is_str(agent_get(p, "TZ"), "Asia/Tokyo", "a configured TZ overrides the detected one for the agent");
        ok(env_count(p, "TZ") == 1 && agent_count(p, "TZ") == 1, "the overridden TZ appears once on each side");
        ok(env_count(p, "TILDE") == 0 && env_count(p, "FOO") == 0 && env_count(p, "TMPDIR") == 0 &&
           env_count(p, "NUM") == 0 && env_count(p, "claude_code_oauth_token") == 0 &&
           streq_ptr(env_get(p, "TZ"), "Europe/Bucharest"),
           "no configured env is in the container's Env: the root side starts without them");
        is_str(agent_get(p, "FOO"), "from-config", "the agent gets the configured envs from " AGENT_ENV_VARIABLE);
        is_str(env_get(p, "CHANNEL_ID"), "chan", "envs cannot override CHANNEL_ID");
        is_str(env_get(p, "HOME"), home, "envs cannot override HOME");
        is_str(env_get(p, "HOST_USER"), "u", "envs cannot override HOST_USER");
        ok(streq_ptr(env_get(p, "AGENT_UID"), "1000") && streq_ptr(env_get(p, "AGENT_GID"), "1001"),
           "envs cannot override AGENT_UID and AGENT_GID");
        ok(env_count(p, "CHOWN_PATHS") == 0, "envs cannot set CHOWN_PATHS");
        ok(agent_count(p, "CHANNEL_ID") == 0 && agent_count(p, "HOME") == 0 && agent_count(p, "HOST_USER") == 0 &&
           agent_count(p, "AGENT_UID") == 0 && agent_count(p, "AGENT_GID") == 0 && agent_count(p, "CHOWN_PATHS") == 0,
           "...nor for the agent");
        ok(skipped_has(p, "env CHANNEL_ID", "set by loop") && skipped_has(p, "env HOME", "set by loop") &&
           skipped_has(p, "env HOST_USER", NULL) && skipped_has(p, "env AGENT_UID", NULL) &&
           skipped_has(p, "env AGENT_GID", NULL) && skipped_has(p, "env CHOWN_PATHS", NULL),
           "each dropped env has a line in skipped");
        ok(env_count(p, "LD_PRELOAD") == 0 && env_count(p, "BASH_ENV") == 0 && agent_count(p, "LD_PRELOAD") == 0 &&
           agent_count(p, "BASH_ENV") == 0 && skipped_has(p, "env LD_PRELOAD", "loader or shell"),
           "loader and shell start-up variables from envs are dropped for the agent too, with a line");
        ok(env_count(p, "LOCPATH") == 0 && env_count(p, "NLSPATH") == 0 && env_count(p, "TZDIR") == 0 &&
           env_count(p, "MALLOC_TRACE") == 0 && env_count(p, "RES_OPTIONS") == 0 &&
           streq_ptr(agent_get(p, "LOCPATH"), "/work/loc") && streq_ptr(agent_get(p, "RES_OPTIONS"), "ndots:9") &&
           !skipped_has(p, "env LOCPATH", NULL),
           "what glibc refuses in a setuid program (locales, zones, resolver, malloc trace) reaches the agent alone");
        is_str(agent_get(p, "TMPDIR"), "/work/tmp", "TMPDIR is the agent's to set");
        ok(env_count(p, "LOOP_EGRESS_CA") == 0 && env_count(p, "LOOP_GATE_ENABLED") == 0 &&
           agent_count(p, "LOOP_EGRESS_CA") == 0 && agent_count(p, "LOOP_GATE_ENABLED") == 0 &&
           skipped_has(p, "env LOOP_EGRESS_CA", "set by loop"),
           "LOOP_* envs are loop's (the root entrypoint reads them): dropped with a line");
        is_str(agent_get(p, "claude_code_oauth_token"), "x", "env names are case-sensitive");
        is_str(agent_get(p, "CLAUDE_CODE_OAUTH_TOKEN"), OAUTH_SECRET, "the credential stays loop's");

        in.extra_env = extra_env;
        x = build(&in);
        is_str(agent_get(x, "FOO"), "from-runner", "extra_env overrides a configured env");
        ok(env_count(x, "FOO") == 1 && agent_count(x, "FOO") == 0, "the overridden env appears once, the runner's");
        is_str(env_get(x, "LOOP_GATE_ENABLED"), "2", "a later extra_env entry wins over an earlier one");
        is_int(env_count(x, "LOOP_GATE_ENABLED"), 1, "duplicate extra_env entries are deduplicated");
        is_str(agent_get(x, "TILDE"), home, "the other configured envs still reach the agent");

        _cleanup_strv_free_ char **env = jstrv(x, "Env");
        bool unique = true;
        STRV_FOREACH(e, env) {
                char key[256];
                snprintf(key, sizeof key, "%.*s", (int) strcspn(*e, "="), *e);
                if (env_count(x, key) != 1)
                        unique = false;
        }
        ok(unique, "every variable appears exactly once");

        in.extra_env = bad_extra;
        ContainerPlan *bad = NULL;
        is_int(container_plan_build(&in, &bad), -EINVAL, "an extra_env entry without = is -EINVAL");
        ok(!bad, "a failed build leaves the output untouched");

        bool clean = true;
        STRV_FOREACH(s, p->skipped)
                if (strstr(*s, OAUTH_SECRET) || strstr(*s, "evil")) {
                        printf("#   leaked: %s\n", *s);
                        clean = false;
                }
        ok(clean && strv_length(p->skipped) > 0, "skipped lines name variables, never their values");
}

static void test_plan_mounts(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        _cleanup_free_ char *ssh = NULL, *vol = NULL, *rel = NULL, *wd = NULL, *exc = NULL, *e1 = NULL, *e2 = NULL,
                *xb = NULL, *chown = NULL, *dotdot = NULL;
        char *extra_binds[] = { (char *) "/run/loop/chan/gate.sock:/run/loop/gate.sock:ro", NULL };
        ContainerInput in;

        mkdir_p(tpath("home/.ssh"));
        mkdir_p(tpath("work/sub"));
        mkdir_p(tpath("extra1"));
        mkdir_p(tpath("home/extra2"));
        write_file(tpath("excludes"), "*.o\n");
        ok(load_config(&c,
                       "\"mounts\": [ \"loop-npmcache:~/.npm\", \"loop-gocache:/go\", \"~/.ssh:~/.ssh:ro\", "
                       "\"%s:/missing\", \"./sub:/sub:ro,z\", \"~bob/x:/x\", \"%s/../extra1:/dotdot\" ], "
                       "\"extra_dirs\": [ \"%s\", \"~/extra2\", \"%s\" ]",
                       tpath("does-not-exist"), work, tpath("extra1"), tpath("extra-missing")) == 0,
           "config with mounts and extra dirs loads");
        in = input(&c);
        in.git_excludes_file = tpath("excludes");
        in.extra_binds = extra_binds;
        p = build(&in);

        if (asprintf(&ssh, "%s/.ssh:%s/.ssh:ro", home, home) < 0 ||
            asprintf(&vol, "loop-npmcache:%s/.npm", home) < 0 ||
            asprintf(&rel, "%s/sub:/sub:ro,z", work) < 0 ||
            asprintf(&dotdot, "%s:/dotdot", tpath("extra1")) < 0 ||
            asprintf(&wd, "%s:%s:rw", work, work) < 0 ||
            asprintf(&exc, "%s:%s:ro", tpath("excludes"), tpath("excludes")) < 0 ||
            asprintf(&e1, "%s:%s:rw", tpath("extra1"), tpath("extra1")) < 0 ||
            asprintf(&e2, "%s/extra2:%s/extra2:rw", home, home) < 0 ||
            asprintf(&xb, "%s", extra_binds[0]) < 0 ||
            asprintf(&chown, "%s/.npm:/go", home) < 0)
                abort();

        ok(bound(p, vol), "a named volume is passed through with its target ~-expanded");
        ok(bound(p, "loop-gocache:/go"), "a named volume with an absolute target is passed through");
        ok(bound(p, ssh), "a host path mount expands ~ on both sides and keeps its options");
        ok(no_bind_mentions(p, "/missing") && skipped_has(p, "mount ", "does not exist"),
           "a host path that does not exist is skipped with a line");
        ok(bound(p, rel), "a relative source resolves against the work dir, options kept as given");
        ok(bound(p, dotdot), "a source with .. is cleaned");
        ok(no_bind_mentions(p, "bob") && skipped_has(p, "mount ~bob/x:/x", "skipped"),
           "an unusable mount spec is skipped with a line");
        ok(bound(p, exc), "the git excludes file is bound read-only at the same path");
        ok(bound(p, wd), "the work dir is bound read-write at the same path");
        ok(bound(p, e1) && bound(p, e2), "extra dirs are bound at their path, ~ expanded");
        ok(no_bind_mentions(p, "extra-missing") && skipped_has(p, "extra dir", "does not exist"),
           "a missing extra dir is skipped with a line");
        ok(bound(p, xb), "extra_binds are passed through");
        {
                _cleanup_strv_free_ char **all = jstrv(p, "HostConfig.Binds");
                bool sorted = true;
                for (size_t i = 1; all && all[i]; i++) {
                        const char *t0 = strchr(all[i - 1], ':') + 1, *t1 = strchr(all[i], ':') + 1;
                        size_t d0 = 0, d1 = 0;
                        for (const char *q = t0; *q && *q != ':'; q++)
                                d0 += *q == '/';
                        for (const char *q = t1; *q && *q != ':'; q++)
                                d1 += *q == '/';
                        sorted = sorted && d0 <= d1;
                }
                ok(sorted, "binds come parents first (by the depth of their target), so none hides another");
        }
        is_str(env_get(p, "CHOWN_PATHS"), chown, "named volume targets are in CHOWN_PATHS, host paths are not");
        ok(strv_length(p->chown_paths) == 2, "plan->chown_paths matches CHOWN_PATHS");
        remove_path(tpath("excludes"));
}

static void test_plan_git_excludes(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *missing = NULL, *none = NULL;
        ContainerInput in;

        ok(load_config(&c, "%s", "") == 0, "config for the excludes cases loads");
        in = input(&c);
        in.git_excludes_file = tpath("no-excludes");
        missing = build(&in);
        ok(missing && no_bind_mentions(missing, "no-excludes") && skipped_has(missing, "git excludes", "does not exist"),
           "a git excludes file that does not exist is skipped with a line");
        in.git_excludes_file = NULL;
        none = build(&in);
        _cleanup_strv_free_ char **binds = jstrv(none, "HostConfig.Binds");
        ok(strv_length(binds) == 1, "no git excludes file: no bind for it");
}

static void test_plan_parent_dir(void) {
        _cleanup_(loop_config_done) LoopConfig in_parent = {}, outside = {}, prefix = {}, same = {};
        _cleanup_(container_plan_freep) ContainerPlan *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
        _cleanup_free_ char *parent_bind = NULL, *wt_bind = NULL, *wt = NULL;
        char saved[PATH_MAX];
        ContainerInput in;

        mkdir_p(tpath("proj/.worktrees/wt1"));
        mkdir_p(tpath("other"));
        mkdir_p(tpath("pro"));
        snprintf(saved, sizeof saved, "%s", work);
        snprintf(work, sizeof work, "%s", tpath("proj/.worktrees/wt1"));
        ok(load_config(&in_parent, "\"parent_dir\": \"%s\"", tpath("proj")) == 0 &&
           load_config(&outside, "\"parent_dir\": \"%s\"", tpath("other")) == 0 &&
           load_config(&prefix, "\"parent_dir\": \"%s\"", tpath("pro")) == 0 &&
           load_config(&same, "\"parent_dir\": \"%s/\"", work) == 0, "configs with parent_dir load");
        if (asprintf(&parent_bind, "%s:%s:rw", tpath("proj"), tpath("proj")) < 0 ||
            asprintf(&wt_bind, "%s:%s:rw", work, work) < 0 || !(wt = strdup(work)))
                abort();

        in = input(&in_parent);
        p1 = build(&in);
        ok(bound(p1, parent_bind) && !has_bind(p1, wt_bind),
           "a work dir inside parent_dir mounts the parent instead");
        is_str(jstr(p1, "WorkingDir"), wt, "WorkingDir stays the work dir when the parent is mounted");
        in = input(&outside);
        p2 = build(&in);
        ok(bound(p2, wt_bind) && no_bind_mentions(p2, tpath("other")),
           "a parent_dir that does not contain the work dir is not mounted");
        in = input(&prefix);
        p3 = build(&in);
        ok(bound(p3, wt_bind), "a parent_dir that is only a string prefix (/x/pro vs /x/proj) does not count");
        in = input(&same);
        p4 = build(&in);
        _cleanup_strv_free_ char **binds = jstrv(p4, "HostConfig.Binds");
        ok(strv_length(binds) == 1 && streq(binds[0], wt_bind), "a parent_dir equal to the work dir binds it once");
        snprintf(work, sizeof work, "%s", saved);
}

static void test_plan_bind_replacement(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        _cleanup_free_ char *wd = NULL, *own = NULL, *shadow = NULL;
        char *extra_binds[] = { (char *) "/run/loop/chan/policy.json:/etc/loop/gate-policy.json:ro", NULL };
        ContainerInput in;

        write_file(tpath("fake-policy.json"), "{}");
        mkdir_p(tpath("extra1"));
        ok(load_config(&c, "\"mounts\": [ \"%s:/etc/loop/gate-policy.json\", \"%s:%s:ro\" ]",
                       tpath("fake-policy.json"), tpath("extra1"), work) == 0,
           "config with mounts colliding with loop's binds loads");
        in = input(&c);
        in.extra_binds = extra_binds;
        p = build(&in);
        if (asprintf(&wd, "%s:%s:rw", work, work) < 0 ||
            asprintf(&own, "%s:/etc/loop/gate-policy.json", tpath("fake-policy.json")) < 0 ||
            asprintf(&shadow, "%s:%s:ro", tpath("extra1"), work) < 0)
                abort();
        ok(bound(p, extra_binds[0]) && !has_bind(p, own),
           "a runner bind replaces a configured mount at the same target");
        ok(skipped_has(p, own, "replaced"), "the replaced mount has a line in skipped");
        ok(bound(p, wd) && !has_bind(p, shadow) && skipped_has(p, shadow, "replaced"),
           "the work dir replaces a configured mount at its path, with a line");
        _cleanup_strv_free_ char **binds = jstrv(p, "HostConfig.Binds");
        ok(strv_length(binds) == 2, "no target is bound twice");
        remove_path(tpath("fake-policy.json"));
}

static void test_plan_copy_files(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        _cleanup_free_ char *claude = NULL, *netrc = NULL, *chown = NULL;
        ContainerInput in;

        write_file(tpath("home/.claude.json"), "{}");
        write_file(tpath("home/.netrc"), "machine x\n");
        write_file(tpath("home/.gitconfig"), "[user]\n");
        write_file(tpath("home/.config/app/settings.json"), "{}");
        write_file(tpath("home/.npm/x.json"), "{}");
        write_file(tpath("outside.txt"), "x");
        write_file(tpath("home/we:ird"), "x");
        mkdir_p(tpath("home/adir"));
        ok(load_config(&c,
                       "\"mounts\": [ \"~/.gitconfig:~/.gitconfig:ro\", \"~/.config:~/.config\", "
                       "\"loop-npmcache:~/.npm\" ], "
                       "\"copy_files\": [ \"~/.netrc\", \"~/.netrc\", \"~/.gitconfig\", \"~/.config/app/settings.json\", "
                       "\"~/.npm/x.json\", \"~/nope.json\", \"%s\", \"~/adir\", \"~/we:ird\" ]",
                       tpath("outside.txt")) == 0, "config with copy files loads");
        /* The config module refuses ~user; the plan must cope with one anyway. */
        if (strv_extend(&c.copy_files, "~bob/.x") < 0)
                abort();
        in = input(&c);
        p = build(&in);
        if (asprintf(&claude, "%s/.claude.json", home) < 0 || asprintf(&netrc, "%s/.netrc", home) < 0 ||
            asprintf(&chown, "%s/.npm:%s:%s", home, netrc, claude) < 0)
                abort();

        ok(p && strv_length(p->copy_sources) == 2 && streq(p->copy_sources[0], netrc) &&
           streq(p->copy_sources[1], claude), "existing copy files are listed once each, ~ expanded, in order");
        if (p && strv_length(p->copy_sources) != 2)
                show_strv("copy", p->copy_sources);
        ok(p && strv_length(p->copy_targets) == 2 && streq(p->copy_targets[0], netrc) &&
           streq(p->copy_targets[1], claude), "each copy goes to the same path in the container");
        ok(skipped_has(p, "copy file ~/.gitconfig", "mounted there"),
           "a copy file that is exactly a bind target is skipped");
        ok(skipped_has(p, "copy file ~/.config/app/settings.json", "mounted there"),
           "a copy file inside a bind-mounted directory is skipped (the copy would write to the host)");
        ok(skipped_has(p, "copy file ~/.npm/x.json", "mounted there"),
           "a copy file inside a named volume is skipped (it would leak into the shared volume)");
        ok(skipped_has(p, "copy file ~/nope.json", "does not exist"), "a missing copy file is skipped with a line");
        ok(skipped_has(p, "outside.txt", "skipped"),
           "a copy file outside the writable home is skipped (read-only root)");
        ok(skipped_has(p, "copy file ~/adir", "not a regular file"), "a directory in copy_files is skipped");
        ok(skipped_has(p, "copy file ~bob/.x", "skipped"), "a ~user copy file is skipped");
        ok(skipped_has(p, "copy file ~/we:ird", "CHOWN_PATHS"), "a copy file with ':' is skipped");
        is_str(env_get(p, "CHOWN_PATHS"), chown, "CHOWN_PATHS lists named volume targets, then copy targets");
        ok(p && strv_length(p->chown_paths) == 3, "plan->chown_paths has the same entries");
}

static void test_plan_home_is_bound(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        char saved[PATH_MAX];
        ContainerInput in;

        write_file(tpath("home/.claude.json"), "{}");
        snprintf(saved, sizeof saved, "%s", work);
        snprintf(work, sizeof work, "%s", home);
        ok(load_config(&c, "%s", "") == 0, "config with the home as work dir loads");
        in = input(&c);
        p = build(&in);
        ok(p && !body(p, "Volumes"), "no home volume when a bind mount provides the home");
        ok(p && strv_length(p->copy_sources) == 0 && skipped_has(p, "copy file ~/.claude.json", "mounted there"),
           "a copy file on the bound home is skipped: it would overwrite the host's file");
        snprintf(work, sizeof work, "%s", saved);
}

static void test_plan_home_dir(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        _cleanup_free_ char *claude = NULL, *bind = NULL;
        ContainerInput in;

        write_file(tpath("home/.claude.json"), "{}");
        mkdir_p(tpath("chanhome"));
        mkdir_p(tpath("outside-home"));
        ok(load_config(&c, "\"mounts\": [\"%s:~\"]", tpath("outside-home")) == 0, "config with a mount at HOME loads");
        in = input(&c);
        in.home_dir = tpath("chanhome");
        p = build(&in);
        if (asprintf(&claude, "%s/.claude.json", home) < 0 || asprintf(&bind, "%s:%s:rw", tpath("chanhome"), home) < 0)
                abort();
        ok(p && !body(p, "Volumes"), "no home volume when the runner gives the channel's home dir");
        ok(p && has_bind(p, bind),
           "the channel's home dir is bound at HOME, read-write");
        ok(p && skipped_has(p, "outside-home", "replaced"),
           "a config mount at HOME is replaced by the channel's home dir");
        ok(p && strv_length(p->copy_sources) == 1 && streq(p->copy_targets[0], claude),
           "copy files go into the channel's home dir");
}

static void test_plan_host_config(void) {
        _cleanup_(loop_config_done) LoopConfig c = {}, small = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL, *podman = NULL, *unknown = NULL, *s = NULL,
                *tmpbound = NULL;
        _cleanup_strv_free_ char **capdrop = NULL, **capadd = NULL, **secopt = NULL, **hosts = NULL;
        char *bind_tmp[] = { (char *) "loop-tmp:/tmp", NULL };
        ContainerInput in;

        ok(load_config(&c, "\"container_memory_mb\": 2048, \"container_cpus\": 1.5") == 0 &&
           load_config(&small, "%s", "") == 0, "configs with limits load");
        in = input(&c);
        in.cgroup_parent = "loop-chan.slice";
        p = build(&in);
        is_int(jint(p, "HostConfig.Memory"), 2048LL * 1024 * 1024, "Memory is container_memory_mb in bytes");
        is_int(jint(p, "HostConfig.MemorySwap"), 2048LL * 1024 * 1024, "MemorySwap equals Memory: no swap");
        is_int(jint(p, "HostConfig.NanoCpus"), 1500000000LL, "NanoCpus is container_cpus * 1e9");
        is_int(jint(p, "HostConfig.PidsLimit"), CONTAINER_PIDS_LIMIT, "PidsLimit is CONTAINER_PIDS_LIMIT");
        capdrop = jstrv(p, "HostConfig.CapDrop");
        ok(strv_equal_list(capdrop, (const char *[]) { "ALL" }, 1), "CapDrop is [ALL]");
        capadd = jstrv(p, "HostConfig.CapAdd");
        ok(strv_equal_list(capadd, (const char *[]) { "CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "SETPCAP" }, 6),
           "CapAdd is exactly what the entrypoint needs to drop privileges");
        is_str(json_object_get_string(jget(jget(body(p, "HostConfig"), "LogConfig"), "Type")),
               in.engine == ENGINE_PODMAN ? "k8s-file" : "json-file", "a log driver that can be followed is chosen");
        secopt = jstrv(p, "HostConfig.SecurityOpt");
        ok(strv_equal_list(secopt, (const char *[]) { "no-new-privileges" }, 1), "SecurityOpt is no-new-privileges");
        ok(jbool_is(p, "HostConfig.ReadonlyRootfs", true), "the root file system is read-only");
        ok(jbool_is(p, "HostConfig.Init", false), "Init is false");
        ok(json_object_object_length(body(p, "HostConfig.Tmpfs")) == 2, "two tmpfs mounts");
        ok(p && json_object_object_get_ex(body(p, "HostConfig.Tmpfs"), "/tmp", NULL) &&
           streq(json_object_get_string(json_object_object_get(body(p, "HostConfig.Tmpfs"), "/tmp")),
                 "rw,nosuid,nodev,size=1g"), "/tmp is a 1 GiB nosuid,nodev tmpfs");
        ok(p && streq_ptr(json_object_get_string(json_object_object_get(body(p, "HostConfig.Tmpfs"), "/run")),
                          "rw,nosuid,nodev,mode=0755,size=64m"), "/run is a 64 MiB nosuid,nodev tmpfs");
        hosts = jstrv(p, "HostConfig.ExtraHosts");
        ok(strv_equal_list(hosts, (const char *[]) { "host.docker.internal:host-gateway" }, 1),
           "Docker gets ExtraHosts host.docker.internal:host-gateway");
        is_str(jstr(p, "HostConfig.CgroupParent"), "loop-chan.slice", "CgroupParent is the given slice");

        in.engine = ENGINE_PODMAN;
        in.cgroup_parent = NULL;
        podman = build(&in);
        ok(podman && !body(podman, "HostConfig.ExtraHosts"), "Podman gets no ExtraHosts (it adds its alias itself)");
        ok(podman && !body(podman, "HostConfig.CgroupParent"), "no CgroupParent when none is given");
        in.engine = ENGINE_UNKNOWN;
        unknown = build(&in);
        ok(unknown && !body(unknown, "HostConfig.ExtraHosts"), "an unknown engine gets no ExtraHosts");

        {
                _cleanup_(container_plan_freep) ContainerPlan *sec = NULL, *chrome = NULL, *bad = NULL;
                _cleanup_strv_free_ char **opts = NULL, **chrome_opts = NULL;

                in = input(&c);
                in.seccomp_option = "seccomp=/var/lib/loop/chan/seccomp-workload.json";
                sec = build(&in);
                opts = jstrv(sec, "HostConfig.SecurityOpt");
                ok(strv_equal_list(opts, (const char *[]) { "no-new-privileges", in.seccomp_option }, 2),
                   "the seccomp workload profile joins no-new-privileges in SecurityOpt");
                in.type = CONTAINER_CHROME;
                chrome = build(&in);
                chrome_opts = jstrv(chrome, "HostConfig.SecurityOpt");
                ok(strv_equal_list(chrome_opts, (const char *[]) { "no-new-privileges", in.seccomp_option }, 2),
                   "chrome gets the seccomp profile it is given (the runner gives it Chrome's)");
                in.type = CONTAINER_AGENT;
                in.seccomp_option = "label=disable";
                ok(container_plan_build(&in, &bad) == -EINVAL && !bad,
                   "a seccomp option that is not seccomp=... is refused");
        }

        in = input(&small);
        s = build(&in);
        is_int(jint(s, "HostConfig.Memory"), 1024LL * 1024 * 1024, "the default memory is 1024 MiB");
        is_int(jint(s, "HostConfig.NanoCpus"), 1000000000LL, "the default is one CPU");

        in.extra_binds = bind_tmp;
        tmpbound = build(&in);
        ok(tmpbound && !json_object_object_get_ex(body(tmpbound, "HostConfig.Tmpfs"), "/tmp", NULL) &&
           json_object_object_get_ex(body(tmpbound, "HostConfig.Tmpfs"), "/run", NULL),
           "no /tmp tmpfs when /tmp is a bind target; /run stays");
}

static void test_plan_chrome(void) {
        _cleanup_(loop_config_done) LoopConfig c = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
        _cleanup_strv_free_ char **binds = NULL;
        char *extra_binds[] = { (char *) "/run/loop/chan/cdp.sock:/run/cdp.sock", NULL };
        char *host_env[] = { (char *) "HTTP_PROXY=http://localhost:3128", NULL };
        ContainerInput in;

        write_file(tpath("home/.claude.json"), "{}");
        ok(load_config(&c, "\"claude_code_oauth_token\": \"" OAUTH_SECRET "\", \"envs\": { \"GITHUB_TOKEN\": \"t\" }, "
                       "\"mounts\": [ \"loop-npmcache:~/.npm\" ], \"browser\": { \"chrome_image\": \"my-chrome:1\" }") == 0,
           "config for the chrome sidecar loads");
        in = input(&c);
        in.type = CONTAINER_CHROME;
        in.cmd = NULL;
        in.extra_binds = extra_binds;
        in.host_env = host_env;
        p = build(&in);
        is_str(jstr(p, "Image"), "my-chrome:1", "chrome uses browser.chrome_image");
        is_str(jstr(p, "Labels.loop-type"), "chrome", "label loop-type is chrome");
        is_int(jint(p, "HostConfig.Memory"), 512LL * 1024 * 1024, "chrome's memory is browser.memory_mb");
        is_int(jint(p, "HostConfig.NanoCpus"), 500000000LL, "chrome gets half a CPU");
        ok(p && env_count(p, "CLAUDE_CODE_OAUTH_TOKEN") == 0 && env_count(p, "GITHUB_TOKEN") == 0 &&
           env_count(p, AGENT_ENV_VARIABLE) == 0,
           "chrome gets neither the credential nor the configured envs");
        is_str(env_get(p, "HTTP_PROXY"), "http://host.docker.internal:3128", "chrome still gets the proxy");
        binds = jstrv(p, "HostConfig.Binds");
        ok(strv_equal_list(binds, (const char *[]) { extra_binds[0] }, 1),
           "chrome gets only the runner's binds: no work dir, no configured mounts");
        ok(p && !body(p, "WorkingDir") && strv_length(p->copy_sources) == 0,
           "chrome has no WorkingDir and nothing to copy");
        ok(jbool_is(p, "HostConfig.ReadonlyRootfs", true), "chrome is hardened like the agent");
}

/* Whether some bind's target is target. */
static bool has_bind_target(const ContainerPlan *p, const char *target) {
        _cleanup_strv_free_ char **binds = jstrv(p, "HostConfig.Binds");

        STRV_FOREACH(b, binds) {
                const char *t = strchr(*b, ':');
                size_t n = strlen(target);
                if (t && strncmp(t + 1, target, n) == 0 && (t[1 + n] == 0 || t[1 + n] == ':'))
                        return true;
        }
        return false;
}

static void test_plan_protection(void) {
        _cleanup_(loop_config_done) LoopConfig c = {}, tuned = {}, conflict = {};
        _cleanup_(container_plan_freep) ContainerPlan *p = NULL, *podman = NULL, *t = NULL, *bad = NULL, *services = NULL;
        _cleanup_strv_free_ char **masked = NULL, **secopt = NULL;
        char bind[PATH_MAX * 3];
        char *link = tpath("work/.idea");

        write_file(tpath("work/.git/hooks/pre-commit"), "#!/bin/sh\n");
        write_file(tpath("work/.git/config"), "[core]\n");
        write_file(tpath("work/.mcp.json"), "{}");
        write_file(tpath("work/.env"), "SECRET=1\n");
        write_file(tpath("work/.aws/credentials"), "x\n");
        write_file(tpath("work/src/main.c"), "int main;\n");
        ok(symlink("/etc", link) == 0, "setup: a protected path that is a symbolic link");
        ok(symlink("/nonexistent-loop-test/codex", tpath("work/.codex")) == 0,
           "setup: a protected path that is a dangling symbolic link out of the tree");

        ok(load_config(&c, "%s", "") == 0, "a plain config loads");
        ContainerInput in = input(&c);
        in.empty_dir = "/var/lib/loop/chan/empty";
        p = build(&in);
        snprintf(bind, sizeof bind, "%s/.git/hooks:%s/.git/hooks:ro", work, work);
        ok(bound(p, bind), ".git/hooks is bound read-only over itself");
        snprintf(bind, sizeof bind, "%s/.git/config:%s/.git/config:ro", work, work);
        ok(bound(p, bind), ".git/config is bound read-only over itself");
        snprintf(bind, sizeof bind, "%s/.mcp.json:%s/.mcp.json:ro", work, work);
        ok(bound(p, bind), ".mcp.json is bound read-only over itself");
        snprintf(bind, sizeof bind, "/dev/null:%s/.env:ro", work);
        ok(bound(p, bind), ".env is masked with /dev/null");
        snprintf(bind, sizeof bind, "/var/lib/loop/chan/empty:%s/.aws:ro", work);
        ok(bound(p, bind), "the .aws directory is masked with the empty dir");
        snprintf(bind, sizeof bind, "%s/.claude:%s/.claude:ro", work, work);
        ok(p && !has_bind(p, bind), "a protected path that does not exist is not bound (the engine would create it)");
        ok(skipped_has(p, ".idea", "symbolic link"), "a protected path that is a symbolic link is skipped with a notice");
        ok(skipped_has(p, ".idea", "to /etc, outside the mounted tree") && skipped_has(p, ".idea", "not in the container"),
           "...which says its target outside the mounted tree is not in the container");
        ok(skipped_has(p, ".codex", "to /nonexistent-loop-test/codex, outside") && skipped_has(p, ".codex", "not in the container"),
           "...also for a dangling link out of the tree");
        {
                int i, w;
                snprintf(bind, sizeof bind, "/dev/null:%s/.env:ro", work);
                i = bind_index(p, bind);
                snprintf(bind, sizeof bind, "%s:%s:rw", work, work);
                w = bind_index(p, bind);
                ok(w >= 0 && i > w, "the protections come after the work dir, so they are mounted on top of it");
        }
        masked = jstrv(p, "HostConfig.MaskedPaths");
        ok(strv_contains(masked, "/proc/kcore") && strv_contains(masked, "/proc/kallsyms") &&
           strv_contains(masked, "/sys/kernel/debug") && strv_contains(masked, "/proc/sched_debug"),
           "Docker gets MaskedPaths: the reference's kernel paths and its own defaults");

        in.engine = ENGINE_PODMAN;
        podman = build(&in);
        secopt = jstrv(podman, "HostConfig.SecurityOpt");
        ok(podman && !body(podman, "HostConfig.MaskedPaths") && secopt && secopt[1] && startswith(secopt[1], "mask=/proc/") &&
           strstr(secopt[1], ":/proc/kallsyms:"), "Podman gets them as a mask= security option");

        ok(load_config(&tuned, "\"unmask_paths\": [ \".env\", \"/proc/version\" ], \"protect_paths\": [ \"src\" ]") == 0,
           "a config with unmask_paths and protect_paths loads");
        in = input(&tuned);
        in.engine = ENGINE_PODMAN;
        t = build(&in);
        snprintf(bind, sizeof bind, "/dev/null:%s/.env:ro", work);
        ok(t && !has_bind(t, bind), "unmask_paths takes .env off the list");
        snprintf(bind, sizeof bind, "%s/src:%s/src:ro", work, work);
        ok(bound(t, bind), "protect_paths adds src");
        {
                _cleanup_strv_free_ char **o = jstrv(t, "HostConfig.SecurityOpt");
                ok(strv_contains(o, "unmask=/proc/version"), "a kernel path in unmask_paths becomes Podman's unmask=");
                ok(o && o[1] && !strstr(o[1], "/proc/version"), "...and is not masked");
        }

        /* A writable mount over a protected path, as a project config could ask: refused at run time. */
        snprintf(bind, sizeof bind, "\"mounts\": [ \"%s:%s/.git/hooks\" ]", home, work);
        ok(load_config(&conflict, "%s", bind) == 0, "a config with a writable mount at .git/hooks loads (the config check is elsewhere)");
        in = input(&conflict);
        ok(container_plan_build(&in, &bad) == -EINVAL && !bad, "a writable mount at a protected path stops the plan");

        /* Host services never go in; symlinks are seen through. */
        {
                _cleanup_(loop_config_done) LoopConfig sc = {};
                char *jl = tpath("journal-link");
                ok(symlink("/run/systemd", jl) == 0, "setup: a symlink to /run/systemd");
                snprintf(bind, sizeof bind, "\"mounts\": [ \"%s:/j\", \"/:/host:ro\", \"%s:/h\" ]", jl, home);
                ok(load_config(&sc, "%s", bind) == 0, "a config with host mounts loads");
                in = input(&sc);
                services = build(&in);
                ok(services && !has_bind_target(services, "/j") && skipped_has(services, "journal-link", "systemd"),
                   "a mount through a symlink to /run/systemd is refused with a notice");
                ok(services && !has_bind_target(services, "/host") && skipped_has(services, "/:/host", "would expose"),
                   "a mount of / is refused (it holds every host socket)");
                ok(services && has_bind_target(services, "/h"), "an ordinary host dir is still mounted");
                remove_path(jl);
        }

        remove_path(link);
        remove_path(tpath("work/.git"));
        remove_path(tpath("work/.aws"));
        remove_path(tpath("work/src"));
        remove_path(tpath("work/.mcp.json"));
        remove_path(tpath("work/.env"));
}

/* "connect_tcp": the seal's TCP restriction reaches the container as LOOP_SEAL_CONNECT_TCP; behind the
 * egress gateway the relay's ports are added. */
static void test_plan_connect_tcp(void) {
        _cleanup_(loop_config_done) LoopConfig none = {}, some = {}, unset = {}, overridden = {};
        _cleanup_(container_plan_freep) ContainerPlan *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL, *p5 = NULL,
                *chrome = NULL, *p6 = NULL;
        LoopConfig bad = {};
        ContainerInput in;

        ok(load_config(&none, "\"connect_tcp\": \"none\"") == 0 && load_config(&some, "\"connect_tcp\": \"443,8080\"") == 0 &&
           load_config(&unset, "%s", "") == 0, "connect_tcp \"none\" and \"443,8080\" load");
        ok(load_config(&bad, "\"connect_tcp\": \"0\"") < 0 && load_config(&bad, "\"connect_tcp\": \"443;rm\"") < 0 &&
           load_config(&bad, "\"connect_tcp\": \"\"") < 0, "port 0, junk and an empty string are refused");
        in = input(&unset);
        p1 = build(&in);
        ok(p1 && env_count(p1, SEAL_CONNECT_TCP_ENV) == 0, "without connect_tcp TCP connections are not restricted");
        in = input(&none);
        p2 = build(&in);
        is_str(env_get(p2, SEAL_CONNECT_TCP_ENV), "none", "\"none\" reaches the seal as none");
        in = input(&some);
        p3 = build(&in);
        is_str(env_get(p3, SEAL_CONNECT_TCP_ENV), "443,8080", "a port list reaches the seal as it is");
        in = input(&none);
        in.egress_gateway = true;
        p4 = build(&in);
        is_str(env_get(p4, SEAL_CONNECT_TCP_ENV), "3128,2376", "behind the egress gateway \"none\" leaves the relay's two ports");
        in = input(&some);
        in.egress_gateway = true;
        p5 = build(&in);
        is_str(env_get(p5, SEAL_CONNECT_TCP_ENV), "443,8080,3128,2376", "...and a list gets them added");
        in = input(&none);
        in.type = CONTAINER_SHELL;
        p6 = build(&in);
        is_str(env_get(p6, SEAL_CONNECT_TCP_ENV), "none", "the shell container gets it too (its sessions are sealed alike)");
        in = input(&none);
        in.type = CONTAINER_CHROME;
        chrome = build(&in);
        ok(chrome && env_count(chrome, SEAL_CONNECT_TCP_ENV) == 0, "the Chrome sidecar is not sealed and does not get it");
        ok(load_config(&overridden, "\"connect_tcp\": \"none\", \"envs\": { \"" SEAL_CONNECT_TCP_ENV "\": \"1,2,3\" }") == 0,
           "a config whose envs name " SEAL_CONNECT_TCP_ENV " loads");
        {
                _cleanup_(container_plan_freep) ContainerPlan *p = NULL;
                in = input(&overridden);
                p = build(&in);
                is_str(env_get(p, SEAL_CONNECT_TCP_ENV), "none", "...but envs cannot widen connect_tcp");
        }
}

static void test_plan_invalid(void) {
        _cleanup_(loop_config_done) LoopConfig c = {}, colon = {};
        ContainerPlan *p = NULL;
        HostUser relative_home = { .name = (char *) "u", .uid = 1, .gid = 1, .home = (char *) "home" };
        HostUser no_name = { .name = (char *) "", .uid = 1, .gid = 1, .home = home };
        char *bad_binds[] = { (char *) "not-a-bind", NULL };
        char *relative_bind[] = { (char *) "./x:/x", NULL };
        char saved[PATH_MAX];
        ContainerInput in;

        ok(load_config(&c, "%s", "") == 0, "config for the invalid inputs loads");
        in = input(&c);
        in.channel = NULL;
        is_int(container_plan_build(&in, &p), -EINVAL, "a missing channel is -EINVAL");
        in = input(&c);
        in.channel = "";
        is_int(container_plan_build(&in, &p), -EINVAL, "an empty channel is -EINVAL");
        in = input(&c);
        in.user = NULL;
        is_int(container_plan_build(&in, &p), -EINVAL, "a missing user is -EINVAL");
        in.user = &relative_home;
        is_int(container_plan_build(&in, &p), -EINVAL, "a user with a relative home is -EINVAL");
        in.user = &no_name;
        is_int(container_plan_build(&in, &p), -EINVAL, "a user without a name is -EINVAL");
        in = input(&c);
        in.type = _CONTAINER_TYPE_MAX;
        is_int(container_plan_build(&in, &p), -EINVAL, "an invalid container type is -EINVAL");
        in = input(&c);
        in.config = NULL;
        is_int(container_plan_build(&in, &p), -EINVAL, "a missing config is -EINVAL");
        in = input(&c);
        in.extra_binds = bad_binds;
        is_int(container_plan_build(&in, &p), -EINVAL, "a malformed runner bind is -EINVAL");
        in.extra_binds = relative_bind;
        is_int(container_plan_build(&in, &p), -EINVAL, "a relative runner bind source is -EINVAL");

        snprintf(saved, sizeof saved, "%s", work);
        snprintf(work, sizeof work, "%s", tpath("a:b"));
        ok(load_config(&colon, "%s", "") == 0, "a work dir with ':' passes the config module");
        in = input(&colon);
        is_int(container_plan_build(&in, &p), -EINVAL, "...but cannot be bound: -EINVAL");
        snprintf(work, sizeof work, "%s", saved);
        ok(!p, "failed builds never set the output");
}

int main(void) {
        if (!mkdtemp(tmpdir))
                abort();
        snprintf(home, sizeof home, "%s/home", tmpdir);
        snprintf(work, sizeof work, "%s/work", tmpdir);
        mkdir_p(home);
        mkdir_p(work);
        user = (HostUser) { .name = (char *) "u", .uid = 1000, .gid = 1001, .home = home };

        test_container_type();
        test_host_user();
        test_names();
        test_timezone();
        test_host_alias();
        test_proxy_rewrite();
        test_mount_spec();
        test_plan_basics();
        test_plan_weird_channel();
        test_plan_env_order();
        test_plan_credentials();
        test_plan_proxy();
        test_plan_egress();
        test_plan_config_envs();
        test_plan_mounts();
        test_plan_git_excludes();
        test_plan_parent_dir();
        test_plan_bind_replacement();
        test_plan_copy_files();
        test_plan_home_is_bound();
        test_plan_home_dir();
        test_plan_host_config();
        test_plan_chrome();
        test_plan_protection();
        test_plan_connect_tcp();
        test_plan_invalid();

        remove_path(tmpdir);
        return done_testing();
}
