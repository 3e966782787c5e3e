/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The gate's policy: compiling, every rule type, first match, unwrapping, globs, the
 * per-container document with its default rules, cache keys. Path cleaning is in test-path-util. */

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "gate-approval.h"
#include "gate-policy.h"
#include "io-util.h"
#include "json-util.h"
#include "strv.h"
#include "tap.h"

#define ARGV(...) ((char **) ((const char *[]) { __VA_ARGS__, NULL }))
#define OP(o) (1U << (o))

static json_object *parse(const char *text) {
        json_object *o = json_tokener_parse(text);
        if (!o) {
                printf("# test bug: invalid JSON: %s\n", text);
                abort();
        }
        return o;
}

static GatePolicy *policy(const char *text) {
        _cleanup_(json_object_putp) json_object *doc = parse(text);
        _cleanup_free_ char *error = NULL;
        GatePolicy *p = NULL;

        if (gate_policy_compile(doc, &p, &error) < 0) {
                printf("# test bug: policy does not compile: %s\n", strna(error));
                abort();
        }
        return p;
}

/* The per-container document, compiled. */
static GatePolicy *policy_document(const AgentGateConfig *cfg, const char *work_dir, const char *home) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *error = NULL;
        GatePolicy *p = NULL;

        if (gate_policy_document_home(cfg, work_dir, home, &doc) < 0 || gate_policy_compile(doc, &p, &error) < 0) {
                printf("# test bug: document does not compile: %s\n", strna(error));
                abort();
        }
        return p;
}

/* A document that must be refused with exactly this reason. */
static void refused(const char *text, const char *reason, const char *what) {
        _cleanup_(json_object_putp) json_object *doc = parse(text);
        _cleanup_free_ char *error = NULL;
        GatePolicy *p = NULL;
        int r = gate_policy_compile(doc, &p, &error);

        if (!ok(r == -EINVAL && !p && streq_ptr(error, reason), "%s", what))
                printf("#   r=%d got: %s\n#   want: %s\n", r, strna(error), reason);
        gate_policy_free(p);
}

static bool verdict_is(const GateVerdict *v, Decision d, const char *id) {
        return v->decision == d && streq(v->rule_id, id);
}

/* id NULL: any rule. */
static void expect(GateVerdict v, Decision d, const char *id, const char *what) {
        if (!ok(id ? verdict_is(&v, d, id) : v.decision == d, "%s", what))
                printf("#   got %s by %s, want %s by %s\n", strna(decision_to_string(v.decision)), v.rule_id,
                       decision_to_string(d), strna(id));
}

static GateVerdict exec_in(const GatePolicy *p, const char *cwd, char **argv) {
        GateVerdict v;
        gate_policy_check_exec(p, argv, cwd, &v);
        return v;
}

static GateVerdict exec_(const GatePolicy *p, char **argv) {
        return exec_in(p, "/", argv);
}

static GateVerdict file_(const GatePolicy *p, FileOp op, const char *path) {
        GateVerdict v;
        gate_policy_check_file(p, op, path, &v);
        return v;
}

static GateVerdict connect_(const GatePolicy *p, const char *path) {
        GateVerdict v;
        gate_policy_check_connect(p, path, &v);
        return v;
}

static void test_kinds(void) {
        is_str(gate_kind_to_string(GATE_KIND_CONNECT), "connect", "kind connect is \"connect\"");
        is_str(gate_kind_to_string(GATE_KIND_EXEC), "execve", "kind exec is \"execve\", the protocol's name");
        is_str(gate_kind_to_string(GATE_KIND_FILE), "file", "kind file is \"file\"");
        ok(gate_kind_to_string(_GATE_KIND_MAX) == NULL, "an out-of-range kind has no name");
        ok(gate_kind_from_string("execve") == GATE_KIND_EXEC, "\"execve\" parses as the exec kind");
        ok(gate_kind_from_string("exec") < 0 && gate_kind_from_string(NULL) < 0,
           "unknown kind names are refused");
}

static void glob_is(const char *pattern, const char *path, bool want) {
        ok(gate_glob_match(pattern, path) == want, "glob %s %s %s", pattern, want ? "matches" : "does not match",
           path);
}

/* The matcher's specification, written the slow obvious way: backtracking without any shortcut. */
static bool naive_match(const char *p, const char *t) {
        if (p[0] == '/' && p[1] == '*' && p[2] == '*' && (p[3] == '/' || p[3] == 0) && naive_match(p + 3, t))
                return true;
        switch (*p) {
        case 0:
                return *t == 0;
        case '*':
                if (p[1] == '*') {
                        const char *q = p;
                        while (*q == '*')
                                q++;
                        for (size_t k = 0;; k++) {
                                if (naive_match(q, t + k))
                                        return true;
                                if (!t[k])
                                        return false;
                        }
                }
                for (size_t k = 0;; k++) {
                        if (naive_match(p + 1, t + k))
                                return true;
                        if (!t[k] || t[k] == '/')
                                return false;
                }
        case '?':
                return *t && *t != '/' && naive_match(p + 1, t + 1);
        case '[': {             /* only [xy], [!xy] and []x] are generated */
                bool negate = p[1] == '!', in = false;
                const char *q = p + 1 + negate;
                for (bool first = true; *q != ']' || first; q++, first = false)
                        if (*q == *t)
                                in = true;
                return *t && *t != '/' && in != negate && naive_match(q + 1, t + 1);
        }
        default:
                return *t == *p && naive_match(p + 1, t + 1);
        }
}

static void test_globs(void) {
        glob_is("/a/**", "/a", true);
        glob_is("/a/**", "/a/b", true);
        glob_is("/a/**", "/a/b/c/d", true);
        glob_is("/a/**", "/ab", false);
        glob_is("/a/**", "/b/a", false);
        glob_is("/**", "/", true);
        glob_is("/**", "/etc/passwd", true);
        glob_is("**/.ssh/**", "/.ssh", true);
        glob_is("**/.ssh/**", "/home/u/.ssh", true);
        glob_is("**/.ssh/**", "/home/u/.ssh/id_rsa", true);
        glob_is("**/.ssh/**", "/work/p/sub/.ssh/config", true);
        glob_is("**/.ssh/**", "/home/u/.sshx/id", false);
        glob_is("**/.ssh/**", "/home/u/x.ssh/id", false);
        glob_is("**/.netrc", "/.netrc", true);
        glob_is("**/.netrc", "/home/u/.netrc", true);
        glob_is("**/.netrc", "/home/u/.netrc.bak", false);
        glob_is("/a/**/b", "/a/b", true);
        glob_is("/a/**/b", "/a/x/b", true);
        glob_is("/a/**/b", "/a/x/y/b", true);
        glob_is("/a/**/b", "/a/xb", false);
        glob_is("/a/**/b", "/a/b/c", false);
        glob_is("/a/*", "/a/b", true);
        glob_is("/a/*", "/a/b/c", false);
        glob_is("/a/*/c", "/a/b/c", true);
        glob_is("/a/*/c", "/a/b/x/c", false);
        glob_is("/a/?", "/a/b", true);
        glob_is("/a/?", "/a/bc", false);
        glob_is("/a?b", "/a/b", false);
        glob_is("/a/**.json", "/a/b/c.json", true);
        glob_is("/lib*/**", "/lib64/libc.so.6", true);
        glob_is("/lib*/**", "/lib", true);
        glob_is("/lib*/**", "/usr/lib/x", false);
        glob_is("/proc/*/mem", "/proc/1/mem", true);
        glob_is("/proc/*/mem", "/proc/1/task/1/mem", false);
        glob_is("/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_ed25519_key", true);
        glob_is("/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_ed25519_key.pub", false);
        glob_is("/x/[bc]", "/x/b", true);
        glob_is("/x/[bc]", "/x/d", false);
        glob_is("/x/[!bc]", "/x/d", true);
        glob_is("/x/[!bc]", "/x/b", false);
        glob_is("/x/[^bc]", "/x/b", false);
        glob_is("/x/[a-c]9", "/x/b9", true);
        glob_is("/x/[]]", "/x/]", true);
        glob_is("/x/[[:digit:]]", "/x/7", true);
        glob_is("/x/[[:digit:]]", "/x/a", false);
        glob_is("/x[!a]y", "/x/y", false);
        glob_is("/a/\\*", "/a/*", true);
        glob_is("/a/\\*", "/a/b", false);
        glob_is("/a/\\[1]", "/a/[1]", true);
        glob_is("/a/\\[1]", "/a/1", false);

        /* Against the obvious backtracking matcher, on many small random cases. */
        static const char * const pattern_parts[] = { "a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "/**/", "/**" };
        static const char * const text_parts[] = { "a", "b", "/" };
        unsigned seed = 12345, disagree = 0;
        for (unsigned i = 0; i < 30000; i++) {
                char pattern[64] = "", text[32] = "";
                size_t np = 1 + rand_r(&seed) % 6, nt = rand_r(&seed) % 9;
                for (size_t k = 0; k < np; k++)
                        strcat(pattern, pattern_parts[rand_r(&seed) % ELEMENTSOF(pattern_parts)]);
                for (size_t k = 0; k < nt; k++)
                        strcat(text, text_parts[rand_r(&seed) % ELEMENTSOF(text_parts)]);
                if (gate_glob_match(pattern, text) != naive_match(pattern, text) && disagree++ < 5)
                        printf("#   disagree: pattern %s text %s\n", pattern, text);
        }
        ok(disagree == 0, "the glob matcher agrees with a naive backtracking matcher on 30000 random cases");

        /* A compiled file rule refuses most paths by the plain start and end of its pattern first: it must
         * decide as the matcher does, wildcards next to either end included. */
        static const char * const rule_parts[] = { "a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "/**/", "/**", "[]a]", "]" };
        static const char * const component_parts[] = { "a", "b", "ab", "ba", "]" };
        disagree = 0;
        for (unsigned i = 0; i < 3000; i++) {
                char pattern[80] = "", text[40] = "", doc[256];
                size_t np = rand_r(&seed) % 6, nt = rand_r(&seed) % 5;
                if (rand_r(&seed) % 4)
                        strcat(pattern, "/");
                for (size_t k = 0; k < np; k++)
                        strcat(pattern, rule_parts[rand_r(&seed) % ELEMENTSOF(rule_parts)]);
                if (isempty(pattern))
                        strcat(pattern, "*");
                for (size_t k = 0; k < nt; k++) {
                        strcat(text, "/");
                        strcat(text, component_parts[rand_r(&seed) % ELEMENTSOF(component_parts)]);
                }
                if (isempty(text))
                        strcat(text, "/");
                if (gate_glob_check_path(pattern))
                        continue;       /* one that could never match a clean path: refused, tested below */
                (void) snprintf(doc, sizeof(doc),
                                "{\"default_decision\": \"deny\", \"file_rules\": [{\"paths\": [\"%s\"], \"decision\": \"allow\"}]}",
                                pattern);
                _cleanup_(gate_policy_freep) GatePolicy *p = policy(doc);
                if (!p)
                        continue;       /* an unclosed bracket: refused at compile time, tested below */
                GateVerdict v = file_(p, FILE_OP_READ, text);
                if ((v.decision == DECISION_ALLOW) != naive_match(pattern, text) && disagree++ < 5)
                        printf("#   disagree: rule %s path %s\n", pattern, text);
        }
        ok(disagree == 0, "a compiled file rule decides as the naive matcher on 3000 random rules and paths");
        {
                _cleanup_(gate_policy_freep) GatePolicy *p = policy(
                        "{\"default_decision\": \"deny\", \"file_rules\": [{\"paths\": [\"/etc/**\", \"**/.netrc\", \"/a/**/b\", \"/h/*/.rc\", \"/k/[ab]\"], \"decision\": \"allow\"}]}");
                ok(p && file_(p, FILE_OP_READ, "/etc").decision == DECISION_ALLOW &&
                   file_(p, FILE_OP_READ, "/.netrc").decision == DECISION_ALLOW &&
                   file_(p, FILE_OP_READ, "/a/b").decision == DECISION_ALLOW &&
                   file_(p, FILE_OP_READ, "/h/u/.rc").decision == DECISION_ALLOW &&
                   file_(p, FILE_OP_READ, "/k/b").decision == DECISION_ALLOW &&
                   file_(p, FILE_OP_READ, "/etcx").decision == DECISION_DENY &&
                   file_(p, FILE_OP_READ, "/h/u/.rcx").decision == DECISION_DENY &&
                   file_(p, FILE_OP_READ, "/k/c").decision == DECISION_DENY,
                   "a compiled rule whose pattern may match with nothing after its plain start (/etc/**, /a/**/b) still does");
        }

        /* Stars that would make a backtracking matcher exponential. */
        char deep[4096] = "";
        for (int i = 0; i < 300; i++)
                strcat(deep, "/a");
        strcat(deep, "/b");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bool m = gate_glob_match("/**/a*/**/a*/**/a*/**/a*/**/a*/**/c", deep);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
        /* No timing assertion (test/bench measures speed); a matcher that backtracks exponentially would
         * not finish within the test's timeout. */
        ok(!m, "a pattern with many stars against a 300-component path does not match (%.2f ms)", ms);
}

static void test_compile_errors(void) {
        /* A file rule's glob that no path as the gate checks it (absolute, clean) can match would deny
         * nothing while looking as if it did. */
        refused("{\"file_rules\":[{\"paths\":[\"~/.ssh/**\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: never matches: paths are checked absolute (start it with / or **; ~ is not expanded) \"~/.ssh/**\"",
                "a file glob starting with ~ is refused: it is not expanded and would deny nothing");
        refused("{\"file_rules\":[{\"paths\":[\"/srv/secret/\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: never matches: paths are checked without a trailing / (end it with /** for what is below a directory) \"/srv/secret/\"",
                "a file glob with a trailing / is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/srv//secret\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: never matches: paths are checked clean, without // \"/srv//secret\"",
                "a file glob with // is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/srv/./secret/**\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: never matches: paths are checked clean, without . or .. components \"/srv/./secret/**\"",
                "a file glob with a . component is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/srv/x/../secret\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: never matches: paths are checked clean, without . or .. components \"/srv/x/../secret\"",
                "  ... and one with a .. component");
        {
                _cleanup_(gate_policy_freep) GatePolicy *p = policy(
                        "{\"default_decision\":\"allow\",\"file_rules\":[{\"paths\":[\"/\",\"**/.env\",\"*/x\",\"/.x/**\"],\"decision\":\"deny\"}]}");
                ok(p && file_(p, FILE_OP_READ, "/").decision == DECISION_DENY &&
                   file_(p, FILE_OP_READ, "/w/.env").decision == DECISION_DENY &&
                   file_(p, FILE_OP_READ, "/x").decision == DECISION_DENY &&
                   file_(p, FILE_OP_READ, "/.x/y").decision == DECISION_DENY,
                   "/ itself, a leading ** or * and dot-files are accepted");
        }
        refused("[]", "policy: must be a JSON object, not array", "a document that is not an object is refused");
        refused("{\"default_decision\":\"allow\",\"file_ruls\":[]}", "policy: unknown key \"file_ruls\"",
                "an unknown top-level key is refused");
        refused("{\"default_decision\":\"maybe\"}",
                "default_decision: unknown decision \"maybe\" (allow, deny or approve)",
                "an unknown default decision is refused");
        refused("{\"default_decision\":true}", "default_decision: must be a string, not boolean",
                "a default decision that is not a string is refused");
        refused("{\"path_rules\":{}}", "path_rules: must be an array, not object",
                "rules that are not an array are refused");
        refused("{\"path_rules\":[\"/x\"]}", "path_rules[0]: must be an object, not string",
                "a rule that is not an object is refused");
        refused("{\"path_rules\":[{\"pattern\":\"\",\"decision\":\"deny\"}]}", "path_rules[0].pattern: empty pattern",
                "an empty socket pattern is refused");
        refused("{\"path_rules\":[{\"pattern\":\"run/x.sock\",\"decision\":\"deny\"}]}",
                "path_rules[0].pattern: \"run/x.sock\" is neither an absolute socket path nor @name",
                "a relative socket pattern is refused");
        refused("{\"path_rules\":[{\"decision\":\"deny\"}]}", "path_rules[0].pattern: missing",
                "a path rule without a pattern is refused");
        refused("{\"path_rules\":[{\"pattern\":\"/x\"}]}", "path_rules[0].decision: missing",
                "a rule without a decision is refused");
        refused("{\"path_rules\":[{\"pattern\":\"/x\",\"decision\":\"Deny\"}]}",
                "path_rules[0].decision: unknown decision \"Deny\" (allow, deny or approve)",
                "an unknown rule decision is refused (decisions are case-sensitive)");
        refused("{\"path_rules\":[{\"pattern\":\"/x\",\"decision\":1}]}",
                "path_rules[0].decision: must be a string, not int", "a decision that is not a string is refused");
        refused("{\"path_rules\":[{\"pattern\":\"/x\",\"decision\":\"deny\",\"message\":5}]}",
                "path_rules[0].message: must be a string, not int", "a message that is not a string is refused");
        refused("{\"command_rules\":[{\"comands\":[\"rm\"],\"decision\":\"deny\"}]}",
                "command_rules[0]: unknown key \"comands\"", "an unknown key in a rule is refused");
        refused("{\"command_rules\":[{\"decision\":\"deny\"},{\"commands\":[\"\"],\"decision\":\"deny\"}]}",
                "command_rules[1].commands[0]: empty pattern \"\"", "an empty command glob is refused, naming the rule");
        refused("{\"command_rules\":[{\"commands\":[\"r[m\"],\"decision\":\"deny\"}]}",
                "command_rules[0].commands[0]: invalid glob (unclosed '[') \"r[m\"", "a bad command glob is refused");
        refused("{\"command_rules\":[{\"commands\":\"rm\",\"decision\":\"deny\"}]}",
                "command_rules[0].commands: must be an array of strings, not string",
                "commands that are not an array are refused");
        refused("{\"command_rules\":[{\"commands\":[\"rm\",3],\"decision\":\"deny\"}]}",
                "command_rules[0].commands[1]: must be a string, not int", "a command that is not a string is refused");
        refused("{\"command_rules\":[{\"args_patterns\":[\"ok\",\"(\"],\"decision\":\"deny\"}]}",
                "command_rules[0].args_patterns[1]: invalid regular expression \"(\": Unmatched ( or \\(",
                "a bad regular expression is refused with regcomp's reason");
        refused("{\"command_rules\":[{\"args_patterns\":[\"\"],\"decision\":\"deny\"}]}",
                "command_rules[0].args_patterns[0]: empty pattern", "an empty regular expression is refused");
        refused("{\"command_rules\":[{\"commands\":[\"rm\"],\"args_within\":\"/\",\"decision\":\"allow\"}]}",
                "command_rules[0].args_within: the root directory would contain everything",
                "args_within / is refused: it would allow rm -rf /");
        refused("{\"command_rules\":[{\"commands\":[\"rm\"],\"args_within\":\"/a/..\",\"decision\":\"allow\"}]}",
                "command_rules[0].args_within: the root directory would contain everything",
                "args_within that cleans to / is refused");
        refused("{\"command_rules\":[{\"commands\":[\"rm\"],\"args_within\":\"work\",\"decision\":\"allow\"}]}",
                "command_rules[0].args_within: \"work\" is not an absolute directory", "a relative args_within is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/a\"],\"decision\":\"deny\"},{\"paths\":[\"/b\"],\"decision\":\"deny\"},"
                "{\"paths\":[\"/c\"],\"decision\":\"deny\"},"
                "{\"paths\":[\"/d\"],\"operations\":[\"read\",\"wrtie\"],\"decision\":\"deny\"}]}",
                "file_rules[3].operations[1]: unknown operation \"wrtie\"", "an unknown operation is refused, naming rule and index");
        refused("{\"file_rules\":[{\"paths\":[\"/a/[bc\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: invalid glob (unclosed '[') \"/a/[bc\"", "an unclosed bracket in a path glob is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/a/\\\\\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: invalid glob (trailing '\\') \"/a/\\\\\"", "a trailing backslash in a glob is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/a/[[:bogus:]]\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: invalid glob (unclosed '[') \"/a/[[:bogus:]]\"", "an unknown character class is refused");
        refused("{\"file_rules\":[{\"paths\":[\"\"],\"decision\":\"deny\"}]}",
                "file_rules[0].paths[0]: empty pattern \"\"", "an empty path glob is refused");
        refused("{\"file_rules\":[{\"paths\":[],\"decision\":\"deny\"}]}",
                "file_rules[0].paths: must list at least one glob", "a file rule without paths is refused");
        refused("{\"file_rules\":[{\"paths\":[\"/a\"],\"operations\":\"read\",\"decision\":\"deny\"}]}",
                "file_rules[0].operations: must be an array of strings, not string", "operations that are not an array are refused");
        refused("{\"file_rules\":[{\"paths\":[\"/a\\u0001\"],\"operations\":[\"re\\nad\"],\"decision\":\"deny\"}]}",
                "file_rules[0].operations[0]: unknown operation \"re\\x0aad\"",
                "a reason escapes control characters, staying one line");

        /* More than GATE_POLICY_RULES_MAX rules of one kind. */
        _cleanup_(json_object_putp) json_object *doc = json_object_new_object(), *rules = json_object_new_array();
        for (unsigned i = 0; i <= GATE_POLICY_RULES_MAX; i++) {
                json_object *rule = json_object_new_object();
                json_object_object_add(rule, "pattern", json_object_new_string("/x"));
                json_object_object_add(rule, "decision", json_object_new_string("deny"));
                json_object_array_add(rules, rule);
        }
        json_object_object_add(doc, "path_rules", json_object_get(rules));
        _cleanup_free_ char *error = NULL;
        GatePolicy *p = NULL;
        int r = gate_policy_compile(doc, &p, &error);
        ok(r == -EINVAL && !p && error && strstr(error, "path_rules: 4097 rules, more than the 4096 allowed"),
           "more than GATE_POLICY_RULES_MAX rules are refused");
        json_object_array_del_idx(rules, 0, 1);
        error = mfree(error);
        r = gate_policy_compile(doc, &p, &error);
        ok(r == 0 && p && !error, "exactly GATE_POLICY_RULES_MAX rules compile");
        p = gate_policy_free(p);

        _cleanup_(json_object_putp) json_object *bad = parse("{\"default_decision\":\"nope\"}");
        ok(gate_policy_compile(bad, &p, NULL) == -EINVAL && !p, "a compile error without a place for the reason is still refused");
}

static void test_path_rules(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy(
                "{\"default_decision\":\"approve\",\"path_rules\":["
                "{\"pattern\":\"/run/a.sock\",\"decision\":\"allow\",\"message\":\"a is fine\"},"
                "{\"pattern\":\"@abstract\",\"decision\":\"deny\"},"
                "{\"pattern\":\"/run/a.sock\",\"decision\":\"deny\"},"
                "{\"pattern\":\"/run//b.sock\",\"decision\":\"deny\"}]}");
        GateVerdict v = connect_(p, "/run/a.sock");
        expect(v, DECISION_ALLOW, "path[0]", "a path rule matches its socket exactly (first match wins over path[2])");
        is_str(v.message, "a is fine", "the verdict carries the rule's message");
        expect(connect_(p, "/run/a.sock2"), DECISION_APPROVE, "default", "a path rule does not match a longer path");
        expect(connect_(p, "/run"), DECISION_APPROVE, "default", "a path rule does not match a prefix");
        expect(connect_(p, "@abstract"), DECISION_DENY, "path[1]", "an abstract socket matches as @name");
        expect(connect_(p, "/abstract"), DECISION_APPROVE, "default", "@name does not match a path of that name");
        expect(connect_(p, "/run/./x/../a.sock"), DECISION_ALLOW, "path[0]", "a socket path is cleaned before matching");
        expect(connect_(p, "/run/b.sock"), DECISION_DENY, "path[3]", "a pattern is cleaned when compiled");
        ok(connect_(p, "/run/other").message == NULL, "the default verdict has no message");
        expect(connect_(p, ""), DECISION_DENY, GATE_RULE_ID_ERROR, "an empty socket path is denied as unjudgeable");
        expect(connect_(p, "run/a.sock"), DECISION_DENY, GATE_RULE_ID_ERROR, "a relative socket path is denied as unjudgeable");
}

static void test_command_rules(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy(
                "{\"default_decision\":\"allow\",\"command_rules\":["
                "{\"commands\":[\"curl\",\"wget\"],\"args_patterns\":[\"--upload-file\",\"(^| )-T( |$)\"],\"decision\":\"deny\"},"
                "{\"commands\":[\"py*\"],\"decision\":\"approve\"},"
                "{\"args_patterns\":[\"secret\"],\"decision\":\"deny\"},"
                "{\"commands\":[\"git\"],\"args_patterns\":[\"^push --force$\"],\"decision\":\"deny\"},"
                "{\"commands\":[\"git\"],\"decision\":\"allow\"},"
                "{\"commands\":[\"git\"],\"decision\":\"deny\"},"
                "{\"commands\":[\"mkdir\"],\"args_within\":\"/w\",\"decision\":\"approve\"}]}");

        expect(exec_(p, ARGV("curl", "-T", "f", "http://x")), DECISION_DENY, "cmd[0]",
               "a command rule matches a listed command and one of its patterns");
        expect(exec_(p, ARGV("wget", "--upload-file=x")), DECISION_DENY, "cmd[0]", "any listed command counts");
        expect(exec_(p, ARGV("curl", "http://x")), DECISION_ALLOW, "default", "no pattern matching: the rule does not apply");
        expect(exec_(p, ARGV("/usr/bin/curl", "-T", "f")), DECISION_DENY, "cmd[0]", "commands match the basename of argv[0]");
        expect(exec_(p, ARGV("python3", "-c", "1")), DECISION_APPROVE, "cmd[1]", "commands are shell globs");
        expect(exec_(p, ARGV("cat", "/run/secret")), DECISION_DENY, "cmd[2]", "an empty command list matches any command");
        expect(exec_(p, ARGV("git", "push", "--force")), DECISION_DENY, "cmd[3]",
               "args_patterns see argv[1..] joined by single spaces");
        expect(exec_(p, ARGV("git", "push", "--force", "x")), DECISION_ALLOW, "cmd[4]", "regexes anchor on the joined string");
        expect(exec_(p, ARGV("git", "status")), DECISION_ALLOW, "cmd[4]", "first match wins: cmd[4] before cmd[5]");
        expect(exec_(p, ARGV("/usr/bin/gitx")), DECISION_ALLOW, "default", "a glob without wildcards is exact");
        expect(exec_in(p, "/w", ARGV("mkdir", "-p", "a/b", "/w/c")), DECISION_APPROVE, "cmd[6]",
               "args_within matches when every operand is inside the directory");
        expect(exec_in(p, "/w", ARGV("mkdir", "a", "/x")), DECISION_ALLOW, "default",
               "args_within does not match when one operand is outside");
        expect(exec_in(p, "/w", ARGV("mkdir", "../w2")), DECISION_ALLOW, "default",
               "args_within compares whole components (/w2 is not inside /w)");
        expect(exec_in(p, "/w", ARGV("mkdir", "-p")), DECISION_ALLOW, "default", "args_within needs at least one operand");
        expect(exec_in(p, "/w", ARGV("mkdir", ".")), DECISION_ALLOW, "default",
               "args_within means strictly inside: the directory itself is not");
        expect(exec_in(p, "/w", ARGV("mkdir", "--", "-x")), DECISION_APPROVE, "cmd[6]", "after -- every argument is an operand");
        expect(exec_in(p, NULL, ARGV("mkdir", "a")), DECISION_ALLOW, "default",
               "a relative operand without a cwd is not inside");
        ok(exec_in(p, NULL, ARGV("mkdir", "a")).needs_cwd && exec_in(p, NULL, ARGV("env", "mkdir", "a")).needs_cwd,
           "  ... and the verdict says the cwd was wanted, also through a wrapper");
        ok(!exec_in(p, NULL, ARGV("mkdir", "/w/a")).needs_cwd && !exec_in(p, NULL, ARGV("git", "add", "a")).needs_cwd &&
           !exec_in(p, "/w", ARGV("mkdir", "a")).needs_cwd,
           "  ... but not for absolute operands, for commands no args_within rule names, nor when a cwd was given");
        {
                GateVerdict v;
                gate_policy_check_execve(p, "/usr/bin/mkdir", ARGV("ls", "a"), NULL, &v);
                ok(v.needs_cwd, "  ... also when only the reading as the executed path (mkdir run as ls) wanted the cwd");
        }
        ok(exec_in(p, "/w", ARGV("mkdir", "a")).by_operand_names && exec_in(p, "/w", ARGV("mkdir", "/x")).by_operand_names &&
           exec_in(p, "/w", ARGV("env", "mkdir", "/w/link/../x")).by_operand_names,
           "a verdict an args_within rule was weighed for says so (it compared names), matched or not, also through a wrapper");
        ok(!exec_in(p, "/w", ARGV("git", "status")).by_operand_names && !exec_in(p, "/w", ARGV("cat", "secret")).by_operand_names,
           "  ... and no other verdict does");
        expect(exec_(p, ARGV("")), DECISION_ALLOW, "default", "an empty argv[0] matches no command glob");
        expect(exec_(p, (char *[]) { NULL }), DECISION_ALLOW, "default", "an empty argv is checked, not crashed on");
}

static void test_file_rules(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy(
                "{\"default_decision\":\"deny\",\"file_rules\":["
                "{\"paths\":[\"/data/**\"],\"operations\":[\"read\",\"stat\"],\"decision\":\"allow\",\"message\":\"m\"},"
                "{\"paths\":[\"/data/*.log\",\"/logs/**\"],\"operations\":[\"write\"],\"decision\":\"approve\"},"
                "{\"paths\":[\"/data/**\"],\"decision\":\"deny\"},"
                "{\"paths\":[\"/data/**\"],\"decision\":\"allow\"}]}");

        expect(file_(p, FILE_OP_READ, "/data/a/b"), DECISION_ALLOW, "file[0]", "a file rule matches its operation and glob");
        expect(file_(p, FILE_OP_STAT, "/data"), DECISION_ALLOW, "file[0]", "a file rule with /x/** covers /x itself");
        expect(file_(p, FILE_OP_WRITE, "/data/x.log"), DECISION_APPROVE, "file[1]", "a rule's operations filter it");
        expect(file_(p, FILE_OP_WRITE, "/logs/a/b"), DECISION_APPROVE, "file[1]", "any of a rule's globs counts");
        expect(file_(p, FILE_OP_CHMOD, "/data/x.log"), DECISION_DENY, "file[2]", "empty operations mean any operation");
        expect(file_(p, FILE_OP_DELETE, "/data/x"), DECISION_DENY, "file[2]", "first match wins: file[2] before file[3]");
        expect(file_(p, FILE_OP_READ, "/other"), DECISION_DENY, "default", "no rule: the default decision");
        expect(file_(p, FILE_OP_READ, "/data/../etc/x"), DECISION_DENY, "default", "paths are cleaned before matching");
        expect(file_(p, FILE_OP_READ, "//data//x"), DECISION_ALLOW, "file[0]", "doubled slashes do not dodge a rule");
        expect(file_(p, FILE_OP_READ, "data/x"), DECISION_DENY, GATE_RULE_ID_ERROR, "a relative path is denied as unjudgeable");
        expect(file_(p, _FILE_OP_MAX, "/data/x"), DECISION_DENY, GATE_RULE_ID_ERROR, "an invalid operation is denied");
        is_str(file_(p, FILE_OP_READ, "/data/x").message, "m", "a file verdict carries the rule's message");

        _cleanup_(gate_policy_freep) GatePolicy *allow = policy(
                "{\"file_rules\":[{\"paths\":[\"/a\"],\"operations\":[\"delete\"],\"decision\":\"deny\"}]}");
        expect(file_(allow, FILE_OP_READ, "/a"), DECISION_ALLOW, "default", "a missing default_decision means allow");
}

static void unwrap_is(char **argv, size_t want, const char *what) {
        size_t got = gate_unwrap_argv(argv);
        if (!ok(got == want, "unwrap: %s", what))
                printf("#   got index %zu, want %zu\n", got, want);
}

static void test_unwrap(void) {
        unwrap_is(ARGV("rm", "-rf", "/"), 0, "a plain command stays");
        unwrap_is(ARGV("env", "rm"), 1, "env");
        unwrap_is(ARGV("/usr/bin/env", "rm"), 1, "wrappers are recognised by basename");
        unwrap_is(ARGV("env", "-i", "A=1", "B=2", "rm"), 4, "env's flags and K=V arguments are dropped");
        unwrap_is(ARGV("env", "-u", "HOME", "rm"), 3, "env -u takes a value");
        unwrap_is(ARGV("env", "-uHOME", "rm"), 2, "an attached short value");
        unwrap_is(ARGV("env", "--unset=HOME", "rm"), 2, "--opt=value");
        unwrap_is(ARGV("env", "--unset", "HOME", "rm"), 3, "--opt value");
        unwrap_is(ARGV("env", "--uns", "HOME", "rm"), 3, "an abbreviated long option takes its value like the full one");
        unwrap_is(ARGV("env", "-C", "/tmp", "rm"), 3, "env -C takes a directory");
        unwrap_is(ARGV("env", "-", "rm"), 2, "env's lone - is -i");
        unwrap_is(ARGV("env", "--", "A=1", "rm"), 3, "-- ends options, assignments may follow");
        unwrap_is(ARGV("env", "A=1", "-i"), 2, "after an assignment nothing is an option");
        unwrap_is(ARGV("sudo", "-u", "root", "rm"), 3, "sudo -u takes a user");
        unwrap_is(ARGV("sudo", "-E", "-g", "wheel", "X=1", "rm"), 5, "sudo flags, -g value and assignments");
        unwrap_is(ARGV("sudo", "--", "rm"), 2, "sudo --");
        unwrap_is(ARGV("nice", "-n", "5", "rm"), 3, "nice -n takes a value");
        unwrap_is(ARGV("nice", "-n5", "rm"), 2, "nice -n5");
        unwrap_is(ARGV("nice", "-5", "rm"), 2, "nice -5 (the old form)");
        unwrap_is(ARGV("nice", "--10", "rm"), 2, "nice --10");
        unwrap_is(ARGV("nice", "--adjustment", "5", "rm"), 3, "nice --adjustment 5");
        unwrap_is(ARGV("ionice", "-c", "3", "rm"), 3, "ionice -c takes a class");
        unwrap_is(ARGV("ionice", "-c3", "-n7", "-t", "rm"), 4, "ionice attached values and -t");
        unwrap_is(ARGV("chrt", "-f", "10", "rm"), 3, "chrt's priority comes before the command");
        unwrap_is(ARGV("chrt", "10", "rm"), 2, "chrt priority without a policy option");
        unwrap_is(ARGV("chrt", "-o", "rm"), 2, "chrt without a priority: a non-number is the command");
        unwrap_is(ARGV("chrt", "-T", "100", "-d", "0", "rm"), 5, "chrt -T takes a value, then the priority");
        unwrap_is(ARGV("timeout", "5", "rm"), 2, "timeout's duration comes before the command");
        unwrap_is(ARGV("timeout", "-s", "KILL", "5", "rm"), 4, "timeout -s takes a signal, then the duration");
        unwrap_is(ARGV("timeout", "--signal=KILL", "-k", "1", "5s", "rm"), 5, "timeout --signal= and -k");
        unwrap_is(ARGV("timeout", "--sig", "KILL", "5", "rm"), 4, "timeout with an abbreviated --signal");
        unwrap_is(ARGV("timeout", "--foreground", "5", "rm"), 3, "timeout --foreground is a flag");
        unwrap_is(ARGV("nohup", "rm"), 1, "nohup");
        unwrap_is(ARGV("nohup", "--", "rm"), 2, "nohup --");
        unwrap_is(ARGV("unshare", "-r", "-m", "rm"), 3, "unshare flags");
        unwrap_is(ARGV("unshare", "-S", "0", "--wd", "/", "rm"), 5, "unshare -S and --wd take values");
        unwrap_is(ARGV("unshare", "--mount=/x", "--fork", "rm"), 3, "unshare optional values are attached");
        unwrap_is(ARGV("unshare", "--map-user", "0", "rm"), 3, "unshare --map-user (an exact name, also a prefix)");
        unwrap_is(ARGV("setsid", "-f", "-w", "rm"), 3, "setsid flags");
        unwrap_is(ARGV("taskset", "0x1", "rm"), 2, "taskset's mask comes before the command");
        unwrap_is(ARGV("taskset", "-c", "0-3", "rm"), 3, "taskset -c: the mask is a list");
        unwrap_is(ARGV("stdbuf", "-o", "L", "rm"), 3, "stdbuf -o takes a mode");
        unwrap_is(ARGV("stdbuf", "-oL", "-e0", "rm"), 3, "stdbuf attached modes");
        unwrap_is(ARGV("stdbuf", "--output=L", "rm"), 2, "stdbuf --output=L");
        unwrap_is(ARGV("/lib64/ld-linux-x86-64.so.2", "/bin/rm", "-rf", "/"), 1, "the dynamic loader");
        unwrap_is(ARGV("ld-linux-aarch64.so.1", "--library-path", "/x", "--argv0", "ls", "/bin/rm"), 5,
                  "the loader's options with values");
        unwrap_is(ARGV("ld-linux.so.2", "--verify", "/bin/rm"), 2, "the loader's flags");
        unwrap_is(ARGV("ld-musl-x86_64.so.1", "/bin/rm"), 1, "the musl loader");
        unwrap_is(ARGV("sudo", "env", "-i", "nice", "rm", "-rf", "/"), 4, "nested wrappers unwrap repeatedly");
        unwrap_is(ARGV("timeout", "5", "env", "A=1", "nohup", "setsid", "rm"), 6, "a chain of five wrappers");
        unwrap_is(ARGV("env"), 1, "a bare env leaves nothing: the count");
        unwrap_is(ARGV("env", "-i", "A=1"), 3, "env with only options and assignments leaves nothing");
        unwrap_is(ARGV("timeout", "-s", "KILL"), 3, "a wrapper missing its value leaves nothing");
        unwrap_is(ARGV("script", "-q", "-c", "rm -rf /", "log"), 3, "script: the index of the -c string");
        unwrap_is(ARGV("script", "log"), 2, "script without -c runs a shell: nothing left");
        unwrap_is(ARGV("env", "-S", "rm -rf /"), 2, "env -S: the index of the string");
        unwrap_is(ARGV("envx", "rm"), 0, "a name that only starts like a wrapper is not one");
        ok(gate_unwrap_argv(NULL) == 0 && gate_unwrap_argv((char *[]) { NULL }) == 0, "an empty argv unwraps to 0");
}

/* "env -S 'env -S ... ssh'" with levels env -S strings, each nested in the one before by escaping. */
static char *nested_split(unsigned levels) {
        char *s = strdup("ssh");
        for (unsigned i = 1; i < levels && s; i++) {
                char *next = malloc(strlen(s) * 2 + 16), *q;
                if (!next)
                        abort();
                q = stpcpy(next, "env -S ");
                for (const char *c = s; *c; c++) {
                        if (*c == ' ' || *c == '\\')
                                *q++ = '\\';
                        *q++ = *c;
                }
                *q = 0;
                free(s);
                s = next;
        }
        if (!s)
                abort();
        return s;
}

/* Unwrapping inside the checks: odd shapes never make a check less strict than for the plain command. */
static void test_unwrap_checks(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy(
                "{\"default_decision\":\"allow\",\"command_rules\":["
                "{\"commands\":[\"rm\"],\"args_patterns\":[\"-rf /\"],\"decision\":\"deny\"},"
                "{\"commands\":[\"ssh\"],\"decision\":\"approve\"},"
                "{\"commands\":[\"X\"],\"decision\":\"approve\"},"
                "{\"commands\":[\"mv\"],\"decision\":\"allow\"}]}");

        expect(exec_(p, ARGV("rm", "-rf", "/")), DECISION_DENY, "cmd[0]", "the plain rm -rf / is denied");
        expect(exec_(p, ARGV("env", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]", "env rm -rf / is denied like rm");
        expect(exec_(p, ARGV("sudo", "env", "-i", "nice", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "sudo env -i nice rm -rf / is denied");
        expect(exec_(p, ARGV("timeout", "-s", "KILL", "5", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "timeout -s KILL 5 rm -rf / is denied");
        expect(exec_(p, ARGV("/lib64/ld-linux-x86-64.so.2", "/bin/rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "rm run through the dynamic loader is denied");
        expect(exec_(p, ARGV("ld-linux-x86-64.so.2", "--frob", "/bin/rm")), DECISION_ALLOW, "default",
               "the loader runs an unknown option as the program");
        expect(exec_(p, ARGV("env", "--frobnicate", "rm", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "an unknown long option is also read as taking a value");
        expect(exec_(p, ARGV("env", "--frobnicate", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "an unknown long option is also read as a flag");
        expect(exec_(p, ARGV("nice", "-Z", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "an unknown short option is read as a flag as well");
        expect(exec_(p, ARGV("nice", "-Z", "X", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "an unknown short option is read as taking the next word as well");
        expect(exec_(p, ARGV("stdbuf", "-Zq", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "an unknown short option inside a cluster keeps both readings");
        expect(exec_(p, ARGV("env", "--frob", "X", "mv", "a", "b")), DECISION_APPROVE, "cmd[2]",
               "the stricter reading wins: approve (X) over allow (mv)");
        expect(exec_(p, ARGV("env", "--frob", "ssh", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "deny wins over approve between readings");
        expect(exec_(p, ARGV("sudo", "-h", "rm", "rm", "-rf", "/")), DECISION_DENY, "cmd[0]",
               "sudo -h (help, or host) is read both ways");
        expect(exec_(p, ARGV("env", "--unset", "X", "mv", "a")), DECISION_ALLOW, "cmd[3]",
               "a known option with a value is read one way only");
        expect(exec_(p, ARGV("script", "-q", "-c", "rm -rf /", "/tmp/log")), DECISION_DENY, "cmd[0]",
               "script -c runs its string: rm -rf / inside is denied");
        expect(exec_(p, ARGV("script", "-qc", "echo hi; FOO=1 exec rm -rf /")), DECISION_DENY, "cmd[0]",
               "every command of a script -c string is checked, past assignments and exec");
        expect(exec_(p, ARGV("script", "--command=ssh host", "/dev/null")), DECISION_APPROVE, "cmd[1]",
               "script --command=CMD");
        expect(exec_(p, ARGV("script", "--comm", "'rm' \"-rf\" /")), DECISION_DENY, "cmd[0]",
               "script's string is split with shell quoting");
        expect(exec_(p, ARGV("script", "-E", "-c", "rm -rf /")), DECISION_DENY, "cmd[0]",
               "a -c that another option may have swallowed still counts");
        expect(exec_(p, ARGV("script", "-c", "sudo env rm -rf /")), DECISION_DENY, "cmd[0]",
               "wrappers inside a script string unwrap too");
        expect(exec_(p, ARGV("script", "/tmp/typescript")), DECISION_ALLOW, "default",
               "script without -c is checked as script");
        expect(exec_(p, ARGV("env", "-S", "rm -rf /")), DECISION_DENY, "cmd[0]", "env -S splits its string into the command");
        expect(exec_(p, ARGV("env", "-S", "-i A=1 rm -rf", "/")), DECISION_DENY, "cmd[0]",
               "env -S words are options and arguments, followed by the rest of argv");
        expect(exec_(p, ARGV("env", "--split-string=rm -rf /")), DECISION_DENY, "cmd[0]", "env --split-string=");
        char *nested = nested_split(GATE_UNWRAP_DEPTH_MAX);
        expect(exec_(p, ARGV("env", "-S", nested)), DECISION_APPROVE, "cmd[1]",
               "env -S strings nested GATE_UNWRAP_DEPTH_MAX deep are unwrapped");
        free(nested);
        nested = nested_split(GATE_UNWRAP_DEPTH_MAX + 1);
        expect(exec_(p, ARGV("env", "-S", nested)), DECISION_DENY, GATE_RULE_ID_ERROR,
               "command strings nested deeper than GATE_UNWRAP_DEPTH_MAX are denied");
        free(nested);
        expect(exec_(p, ARGV("script", "-c", "script -c 'ls'")), DECISION_ALLOW, "default",
               "a command string inside a command string is still checked");
        expect(exec_(p, ARGV("env", "--q1", "1", "--q2", "2", "--q3", "3", "--q4", "4", "mv")), DECISION_ALLOW,
               "cmd[3]", "each reading of several unknown options is checked (here all allowed)");
        expect(exec_(p, ARGV("env", "--q1", "--q2", "--q3", "--q4", "--q5", "--q6", "--q7", "--q8", "--q9", "--q10",
                             "--q11", "--q12", "--q13", "--q14", "mv")), DECISION_DENY, GATE_RULE_ID_ERROR,
               "an argv whose readings branch past GATE_UNWRAP_STEPS_MAX is denied, not guessed");
        expect(exec_(p, ARGV("env", "--q1", "a1", "--q2", "a2", "--q3", "a3", "--q4", "a4", "--q5", "a5", "--q6", "a6",
                             "--q7", "a7", "--q8", "a8", "--q9", "a9", "--q10", "a10", "--q11", "a11", "--q12", "a12",
                             "--q13", "a13", "--q14", "a14", "--q15", "a15", "--q16", "a16", "mv")),
               DECISION_DENY, GATE_RULE_ID_ERROR,
               "an argv with more readings than GATE_UNWRAP_CANDIDATES_MAX is denied");
        char *many[GATE_UNWRAP_STEPS_MAX + 3];
        for (size_t i = 0; i < GATE_UNWRAP_STEPS_MAX + 1; i++)
                many[i] = (char *) "nohup";
        many[GATE_UNWRAP_STEPS_MAX + 1] = (char *) "mv";
        many[GATE_UNWRAP_STEPS_MAX + 2] = NULL;
        expect(exec_(p, many), DECISION_DENY, GATE_RULE_ID_ERROR, "more nested wrappers than the cap are denied");
        many[GATE_UNWRAP_STEPS_MAX - 10] = (char *) "mv";
        many[GATE_UNWRAP_STEPS_MAX - 9] = NULL;
        expect(exec_(p, many), DECISION_ALLOW, "cmd[3]", "a long but bounded wrapper chain unwraps");

        GateVerdict v;
        gate_policy_check_execve(p, "/bin/rm", ARGV("ls", "-rf", "/"), "/", &v);
        expect(v, DECISION_DENY, "cmd[0]", "execve of /bin/rm with argv[0] \"ls\" is checked as rm");
        gate_policy_check_execve(p, "/bin/busybox", ARGV("rm", "-rf", "/"), "/", &v);
        expect(v, DECISION_DENY, "cmd[0]", "a multi-call binary is checked by its argv[0] too");
        gate_policy_check_execve(p, "/usr/bin/mv", ARGV("mv", "a"), "/", &v);
        expect(v, DECISION_ALLOW, "cmd[3]", "execve with matching path and argv[0] is checked once");
        gate_policy_check_execve(p, "/lib64/ld-linux-x86-64.so.2", ARGV("x", "/bin/rm", "-rf", "/"), "/", &v);
        expect(v, DECISION_DENY, "cmd[0]", "execve of the loader with a disguised argv[0] still unwraps");
        gate_policy_check_execve(p, "/bin/rm", (char *[]) { NULL }, "/", &v);
        expect(v, DECISION_ALLOW, "default", "execve with an empty argv is checked by its path");
}

static void test_document(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy_document(NULL, "/work/proj", NULL);
        _cleanup_(json_object_putp) json_object *doc = NULL;

        ok(gate_policy_document(NULL, "relative", &doc) == -EINVAL, "a relative work dir is refused");
        ok(gate_policy_document(NULL, "/", &doc) == -EINVAL, "the root as work dir is refused");
        ok(gate_policy_document(NULL, "/a/..", &doc) == -EINVAL, "a work dir that cleans to / is refused");
        ok(gate_policy_document_home(NULL, "/w", "home", &doc) == -EINVAL, "a relative HOME is refused");
        ok(gate_policy_document(NULL, "/work/proj", &doc) == 0 && doc, "the document builds without a config");
        is_str(json_object_get_string(json_object_object_get(doc, "default_decision")), "allow",
               "without a config the default decision is allow");

        /* Sockets */
        expect(connect_(p, "/var/run/docker.sock.host"), DECISION_DENY, "path[0]", "the engine's real socket is denied");
        expect(connect_(p, "/run/docker.sock.host"), DECISION_DENY, "path[1]", "the engine's real socket under /run is denied");
        expect(connect_(p, "/var/run/docker.sock"), DECISION_ALLOW, "path[2]", "the proxy's docker.sock is allowed");

        /* Commands */
        expect(exec_(p, ARGV("rm", "-rf", "/")), DECISION_DENY, "cmd[2]", "rm -rf / is denied by cmd[2]");
        expect(exec_(p, ARGV("env", "rm", "-rf", "/x")), DECISION_DENY, "cmd[2]", "env rm -rf /x is denied");
        expect(exec_(p, ARGV("rm", "-r", "-f", "/etc")), DECISION_DENY, "cmd[2]", "rm -r -f /etc is denied");
        expect(exec_(p, ARGV("rm", "/usr", "--recursive")), DECISION_DENY, "cmd[2]", "rm PATH --recursive is denied");
        expect(exec_(p, ARGV("rm", "-fR", "/home")), DECISION_DENY, "cmd[2]", "rm -fR is recursive too");
        expect(exec_(p, ARGV("rm", "--no-preserve-root", "x")), DECISION_DENY, "cmd[2]", "rm --no-preserve-root is denied");
        expect(exec_(p, ARGV("rm", "/tmp/x")), DECISION_ALLOW, "cmd[1]", "rm /tmp/x is allowed by cmd[1]");
        expect(exec_(p, ARGV("rm", "-rf", "/tmp/build")), DECISION_ALLOW, "cmd[1]", "rm -rf of a /tmp path is allowed");
        expect(exec_(p, ARGV("rm", "-rf", "/tmp/../etc")), DECISION_DENY, "cmd[2]",
               "rm -rf /tmp/../etc is not inside /tmp: denied");
        expect(exec_(p, ARGV("rm", "-rf", "/tmp")), DECISION_DENY, "cmd[2]", "rm -rf /tmp itself is denied");
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "build", "/work/proj/dist")), DECISION_ALLOW, "cmd[0]",
               "rm inside the workspace is allowed by cmd[0], relative operands resolved against cwd");
        expect(exec_in(p, "/work/proj/sub", ARGV("rm", "-rf", "../x")), DECISION_ALLOW, "cmd[0]",
               "rm of ../x that stays in the workspace is allowed");
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "../..")), DECISION_DENY, "cmd[2]",
               "rm -rf ../.. from the workspace is denied");
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "/work/proj")), DECISION_DENY, "cmd[2]",
               "rm -rf of the workspace itself is denied");
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "x", "/etc")), DECISION_DENY, "cmd[2]",
               "one operand outside the workspace makes rm -rf denied");
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "/work/projX/a")), DECISION_DENY, "cmd[2]",
               "a sibling with the workspace's name as prefix is outside");
        expect(exec_in(p, "/", ARGV("sudo", "rm", "-rf", "/work/proj/a")), DECISION_ALLOW, "cmd[0]",
               "the workspace rm allow sees through wrappers");
        /* The deny must hold however an operand outside is spelled: it is every recursive rm with an
         * operand that the allows above did not take, not a list of spellings of "outside". */
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "sub/../../../etc")), DECISION_DENY, "cmd[2]",
               "rm -rf DIR/../../.. leaving the workspace is denied, though no operand starts with / or ..");
        expect(exec_in(p, "/work/proj", ARGV("rm", "-rf", "./../..")), DECISION_DENY, "cmd[2]",
               "rm -rf ./../.. is denied like ../..");
        expect(exec_in(p, "/home/agent", ARGV("rm", "-rf", "cache")), DECISION_DENY, "cmd[2]",
               "rm -rf of a relative operand outside the workspace (cwd elsewhere) is denied like its absolute path");
        expect(exec_in(p, "/home/agent", ARGV("rm", "cache", "-r")), DECISION_DENY, "cmd[2]",
               "  ... also with the flag after the operand");
        expect(exec_in(p, "/home/agent", ARGV("rm", "-rf", "--", "-cache")), DECISION_DENY, "cmd[2]",
               "  ... and an operand after --");
        expect(exec_in(p, "/home/agent", ARGV("rm", "-rf")), DECISION_ALLOW, "default",
               "a recursive rm without an operand deletes nothing: the default");
        expect(exec_(p, ARGV("rm", "notes.txt")), DECISION_ALLOW, "default", "a plain rm elsewhere falls to the default");

        /* Files: the injected rules first */
        expect(file_(p, FILE_OP_READ, "/etc/loop/loop.json"), DECISION_DENY, "file[0]", "/etc/loop is denied by file[0]");
        expect(file_(p, FILE_OP_STAT, "/etc/loop"), DECISION_DENY, "file[0]", "/etc/loop itself is denied");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/.loop/config.json"), DECISION_APPROVE, "file[1]",
               "writing the project's .loop/config.json needs approval");
        expect(file_(p, FILE_OP_CREATE, "/work/proj/.loop/other.json"), DECISION_APPROVE, "file[1]",
               "creating files under .loop needs approval");
        expect(file_(p, FILE_OP_DELETE, "/work/proj/.loop"), DECISION_APPROVE, "file[1]", "deleting .loop needs approval");
        expect(file_(p, FILE_OP_READ, "/work/proj/.loop/config.json"), DECISION_ALLOW, "file[9]",
               "reading the project config is allowed by the workspace rule");

        /* Files: defaults */
        expect(file_(p, FILE_OP_READ, "/proc/self/mem"), DECISION_DENY, "file[2]", "reading /proc/self/mem is denied");
        expect(file_(p, FILE_OP_WRITE, "/proc/1/task/1/mem"), DECISION_DENY, "file[2]", "a thread's mem is denied too");
        expect(file_(p, FILE_OP_READ, "/proc/kcore"), DECISION_DENY, "file[2]", "reading /proc/kcore is denied");
        expect(file_(p, FILE_OP_READ, "/etc/shadow"), DECISION_DENY, "file[3]", "reading /etc/shadow is denied");
        expect(file_(p, FILE_OP_READ, "/etc/gshadow"), DECISION_DENY, "file[3]", "reading /etc/gshadow is denied");
        expect(file_(p, FILE_OP_READ, "/etc/sudoers.d/90-x"), DECISION_DENY, "file[3]", "reading sudoers.d is denied");
        expect(file_(p, FILE_OP_READ, "/etc/ssh/ssh_host_rsa_key"), DECISION_DENY, "file[3]", "reading a host key is denied");
        expect(file_(p, FILE_OP_READ, "/etc/ssh/ssh_host_rsa_key.pub"), DECISION_ALLOW, "default",
               "reading a public host key is allowed");
        expect(file_(p, FILE_OP_READ, "/root/.ssh/id_ed25519"), DECISION_DENY, "file[4]", "reading ~/.ssh is denied");
        expect(file_(p, FILE_OP_READ, "/home/u/.aws/credentials"), DECISION_DENY, "file[4]", ".aws is denied");
        expect(file_(p, FILE_OP_READ, "/home/u/.config/gcloud/x"), DECISION_DENY, "file[4]", ".config/gcloud is denied");
        expect(file_(p, FILE_OP_READ, "/home/u/.kube/config"), DECISION_DENY, "file[4]", ".kube is denied");
        expect(file_(p, FILE_OP_READ, "/root/.netrc"), DECISION_DENY, "file[4]", ".netrc is denied");
        expect(file_(p, FILE_OP_READ, "/home/u/.pgpass"), DECISION_DENY, "file[4]", ".pgpass is denied");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/.ssh/authorized_keys"), DECISION_DENY, "file[4]",
               "a .ssh inside the workspace stays denied (the workspace allow comes after)");
        expect(file_(p, FILE_OP_WRITE, "/root/.docker/config.json"), DECISION_DENY, "file[5]",
               "writing .docker/config.json is denied");
        expect(file_(p, FILE_OP_READ, "/root/.docker/config.json"), DECISION_ALLOW, "default",
               "reading .docker/config.json is not");
        expect(file_(p, FILE_OP_WRITE, "/home/u/.npmrc"), DECISION_DENY, "file[5]", "writing .npmrc is denied");
        expect(file_(p, FILE_OP_CREATE, "/work/proj/.claude/settings.local.json"), DECISION_DENY, "file[5]",
               "creating .claude/settings.local.json in the workspace is denied");
        expect(file_(p, FILE_OP_WRITE, "/root/.bashrc"), DECISION_DENY, "file[6]", "writing /root/.bashrc is denied");
        expect(file_(p, FILE_OP_WRITE, "/home/alice/.bashrc"), DECISION_DENY, "file[6]", "writing ~/.bashrc is denied");
        expect(file_(p, FILE_OP_DELETE, "/home/alice/.zshenv"), DECISION_DENY, "file[6]", "deleting ~/.zshenv is denied");
        expect(file_(p, FILE_OP_READ, "/home/alice/.bashrc"), DECISION_ALLOW, "default", "reading ~/.bashrc is allowed");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/.bashrc"), DECISION_ALLOW, "file[9]",
               "a .bashrc in the workspace is just a file");
        expect(file_(p, FILE_OP_WRITE, "/etc/passwd"), DECISION_DENY, "file[7]", "writing /etc is denied");
        expect(file_(p, FILE_OP_CREATE, "/usr/local/bin/x"), DECISION_DENY, "file[7]", "creating in /usr is denied");
        expect(file_(p, FILE_OP_CHMOD, "/bin/sh"), DECISION_DENY, "file[7]", "chmod in /bin is denied");
        expect(file_(p, FILE_OP_DELETE, "/lib64/libc.so.6"), DECISION_DENY, "file[7]", "deleting in /lib64 is denied");
        expect(file_(p, FILE_OP_LINK, "/boot/vmlinuz"), DECISION_DENY, "file[7]", "linking in /boot is denied");
        expect(file_(p, FILE_OP_READ, "/usr/bin/ls"), DECISION_ALLOW, "default", "reading /usr is allowed");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/src/main.c"), DECISION_ALLOW, "file[9]",
               "writing in the workspace is allowed by file[9]");
        expect(file_(p, FILE_OP_WRITE, "/tmp/x"), DECISION_ALLOW, "file[10]", "writing /tmp is allowed");
        expect(file_(p, FILE_OP_READ, "/proc/cpuinfo"), DECISION_ALLOW, "file[11]", "reading /proc is allowed");
        expect(file_(p, FILE_OP_WRITE, "/proc/sys/kernel/x"), DECISION_ALLOW, "default",
               "writing /proc is not covered by the read allow");
}

static void test_document_config(void) {
        char *hosts[] = { (char *) "/etc/hosts", NULL }, *loop[] = { (char *) "/etc/loop/**", NULL },
             *rm[] = { (char *) "rm", NULL }, *proj_paths[] = { (char *) "/work/proj/secret/**", NULL };
        FileRule file_rules[] = {
                { .paths = hosts, .operations = OP(FILE_OP_WRITE), .decision = DECISION_ALLOW },
                { .paths = loop, .decision = DECISION_ALLOW },
                { .paths = proj_paths, .decision = DECISION_DENY, .message = (char *) "no secrets" },
        };
        CommandRule command_rules[] = { { .commands = rm, .decision = DECISION_APPROVE } };
        PathRule path_rules[] = { { .pattern = (char *) "/var/run/docker.sock", .decision = DECISION_APPROVE } };
        AgentGateConfig cfg = {
                .enabled = true, .default_decision = DECISION_DENY,
                .path_rules = path_rules, .n_path_rules = 1,
                .command_rules = command_rules, .n_command_rules = 1,
                .file_rules = file_rules, .n_file_rules = ELEMENTSOF(file_rules),
        };
        _cleanup_(gate_policy_freep) GatePolicy *p = policy_document(&cfg, "/work/proj", "/srv/agent");

        expect(file_(p, FILE_OP_WRITE, "/etc/hosts"), DECISION_ALLOW, "file[2]",
               "a channel rule overrides a default by order (writing /etc/hosts)");
        expect(file_(p, FILE_OP_READ, "/etc/loop/loop.json"), DECISION_DENY, "file[0]",
               "/etc/loop is denied before any channel rule");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/.loop/config.json"), DECISION_APPROVE, "file[1]",
               "the .loop approval comes before the channel's rules");
        GateVerdict v = file_(p, FILE_OP_READ, "/work/proj/secret/key");
        expect(v, DECISION_DENY, "file[4]", "a channel deny inside the workspace beats the workspace allow");
        is_str(v.message, "no secrets", "the channel rule's message reaches the verdict");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/a"), DECISION_ALLOW, "file[12]",
               "the workspace is allowed under a deny default");
        expect(file_(p, FILE_OP_WRITE, "/srv/agent/.claude.json"), DECISION_ALLOW, "file[13]",
               "HOME is allowed under a deny default");
        expect(file_(p, FILE_OP_WRITE, "/srv/agent/.bashrc"), DECISION_DENY, "file[9]",
               "a HOME outside /home and /root still has its rc files denied");
        expect(file_(p, FILE_OP_READ, "/srv/agent/.ssh/id_rsa"), DECISION_DENY, "file[7]", "HOME's .ssh stays denied");
        expect(file_(p, FILE_OP_WRITE, "/var/lib/x"), DECISION_DENY, "default", "elsewhere the deny default holds");
        expect(file_(p, FILE_OP_READ, "/sys/class/net"), DECISION_ALLOW, "file[15]", "/sys reads are allowed");
        expect(exec_in(p, "/work/proj", ARGV("rm", "x")), DECISION_APPROVE, "cmd[0]",
               "a channel command rule comes before the workspace rm allow");
        expect(exec_(p, ARGV("ls")), DECISION_DENY, "default", "the channel's default decision is the document's");
        expect(connect_(p, "/var/run/docker.sock"), DECISION_APPROVE, "path[0]", "a channel path rule comes first");

        _cleanup_(gate_policy_freep) GatePolicy *root_home = policy_document(&cfg, "/work/proj", "/");
        expect(file_(root_home, FILE_OP_WRITE, "/var/lib/x"), DECISION_DENY, "default",
               "HOME=/ does not allow everything");
        _cleanup_(gate_policy_freep) GatePolicy *odd = policy_document(NULL, "/work/a[1]*", NULL);
        expect(file_(odd, FILE_OP_WRITE, "/work/a[1]*/x"), DECISION_ALLOW, "file[9]",
               "glob characters in the work dir are taken literally");
        expect(file_(odd, FILE_OP_WRITE, "/work/a1x/x"), DECISION_ALLOW, "default",
               "a work dir with glob characters does not match other dirs");
        expect(exec_in(odd, "/work/a[1]*", ARGV("rm", "-rf", "x")), DECISION_ALLOW, "cmd[0]",
               "rm inside a work dir with glob characters");
}

static void test_cache_keys(void) {
        _cleanup_free_ char *c = gate_cache_key_connect("/run/x.sock"),
                            *e1 = gate_cache_key_exec("/usr/bin/uname", ARGV("uname", "-s", "-n")),
                            *e2 = gate_cache_key_exec("/usr/bin/uname", ARGV("uname", "-s", "-n", "-r", "--all")),
                            *e3 = gate_cache_key_exec("/tmp/uname", ARGV("uname", "-s", "-n")),
                            *e4 = gate_cache_key_exec("/usr/bin/curl", ARGV("curl", "a b")),
                            *e5 = gate_cache_key_exec("/usr/bin/curl", ARGV("curl", "a", "b")),
                            *f = gate_cache_key_file(FILE_OP_WRITE, "/etc/hosts");
        _cleanup_free_ char *big = malloc(10000), *e6 = NULL;

        is_str(c, "connect:/run/x.sock", "connect cache key");
        is_str(e1, "execve:/usr/bin/uname:[\"uname\",\"-s\",\"-n\"]", "exec cache key: the file that runs and every argument");
        ok(!streq_ptr(e1, e2), "approving uname -s -n does not approve uname -s -n -r --all (the whole argv is the key)");
        ok(!streq_ptr(e1, e3), "...nor the same command line running another file");
        ok(!streq_ptr(e4, e5), "...and one argument with a space is not two arguments");
        memset(big, 'x', 9999);
        big[9999] = 0;
        e6 = gate_cache_key_exec("/usr/bin/echo", ARGV("echo", big));
        ok(e6 && strlen(e6) < GATE_CACHE_KEY_MAX && startswith(e6, "execve:/usr/bin/echo:sha256:"),
           "a command line longer than a key is keyed by its SHA-256");
        is_str(f, "file:write:/etc/hosts", "file cache key");
        ok(gate_cache_key_file(_FILE_OP_MAX, "/x") == NULL, "no file cache key for an invalid operation");
}

static void test_load_file(void) {
        char dir[] = "/tmp/test-gate-policy-XXXXXX", path[64];
        _cleanup_free_ char *error = NULL;
        GatePolicy *p = NULL;
        int fd;

        if (!mkdtemp(dir))
                abort();
        snprintf(path, sizeof path, "%s/policy.json", dir);

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        const char *good = "{\"default_decision\":\"deny\",\"path_rules\":[{\"pattern\":\"/a\",\"decision\":\"allow\"}]}";
        if (fd < 0 || loop_write(fd, good, strlen(good)) < 0)
                abort();
        close(fd);
        ok(gate_policy_load_file(path, &p, &error) == 0 && p && !error, "a policy file loads");
        if (p)
                expect(connect_(p, "/a"), DECISION_ALLOW, "path[0]", "a loaded policy works");
        p = gate_policy_free(p);

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || loop_write(fd, "{\"default_decision\":", 20) < 0)
                abort();
        close(fd);
        ok(gate_policy_load_file(path, &p, &error) == -EINVAL && !p && error && strstr(error, "invalid JSON"),
           "a policy file with invalid JSON is refused with a reason");
        error = mfree(error);

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || ftruncate(fd, GATE_POLICY_FILE_MAX + 1) < 0)
                abort();
        close(fd);
        ok(gate_policy_load_file(path, &p, &error) == -EFBIG && !p && error, "a policy file over 4 MiB is refused");
        error = mfree(error);

        unlink(path);
        ok(gate_policy_load_file(path, &p, &error) == -ENOENT && !p && error, "a missing policy file is an error");
        rmdir(dir);
}

static double ns_since(const struct timespec *t0) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double) (t1.tv_sec - t0->tv_sec) * 1e9 + (double) (t1.tv_nsec - t0->tv_nsec);
}

/* The hot path with the default document: the decisions are asserted, the time only reported (the
 * benchmark in test/bench/gate holds the goal). */
static void test_speed(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy_document(NULL, "/work/proj", "/home/agent");
        const unsigned n = 20000;
        struct timespec t0;
        GateVerdict v;
        double ns;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned i = 0; i < n; i++)
                gate_policy_check_file(p, FILE_OP_WRITE, "/work/proj/src/module/file.c", &v);
        ns = ns_since(&t0) / n;
        ok(v.decision == DECISION_ALLOW, "a file check of the default document takes %.0f ns", ns);

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned i = 0; i < n; i++)
                gate_policy_check_exec(p, ARGV("/usr/bin/git", "commit", "-m", "message"), "/work/proj", &v);
        ns = ns_since(&t0) / n;
        ok(v.decision == DECISION_ALLOW, "an exec check of the default document takes %.0f ns", ns);

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned i = 0; i < n; i++)
                gate_policy_check_exec(p, ARGV("env", "A=1", "rm", "-rf", "/work/proj/build"), "/work/proj", &v);
        ns = ns_since(&t0) / n;
        ok(v.decision == DECISION_ALLOW, "a wrapped rm check of the default document takes %.0f ns", ns);
}

/* The guarded paths go in front of every file rule: neither the workspace allow nor a channel's allow
 * reaches them, and creating a missing one is as denied as writing an existing one. */
static void test_document_guard(void) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
        _cleanup_free_ char *error = NULL;
        char *guarded[] = { (char *) "/work/proj/.git/commondir", (char *) "/work/proj/.git/hooks",
                            (char *) "/work/p[1]/.vscode", NULL };

        ok(gate_policy_document(NULL, "/work/proj", &doc) == 0 && gate_policy_document_guard(doc, guarded) == 0 &&
           gate_policy_compile(doc, &p, &error) == 0, "a document with guarded paths compiles");
        expect(file_(p, FILE_OP_CREATE, "/work/proj/.git/commondir"), DECISION_DENY, "file[0]",
               "creating a missing guarded file (.git/commondir) is denied, before the workspace allow");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/.git/hooks/pre-commit"), DECISION_DENY, "file[0]",
               "writing below a guarded directory is denied");
        expect(file_(p, FILE_OP_DELETE, "/work/proj/.git/hooks"), DECISION_DENY, "file[0]", "...so is removing it");
        expect(file_(p, FILE_OP_CREATE, "/work/p[1]/.vscode/tasks.json"), DECISION_DENY, "file[0]",
               "glob characters in a guarded path are taken literally");
        ok(file_(p, FILE_OP_READ, "/work/proj/.git/hooks/pre-commit").decision == DECISION_ALLOW,
           "reading a guarded path stays allowed");
        ok(file_(p, FILE_OP_WRITE, "/work/proj/.git/index").decision == DECISION_ALLOW &&
           file_(p, FILE_OP_CREATE, "/work/proj/.git/objects/ab/cd").decision == DECISION_ALLOW,
           "the rest of .git stays writable (commits work)");
        ok(gate_policy_document_guard(doc, (char *[]) { (char *) "rel", NULL }) == -EINVAL, "a relative guarded path is refused");
}

static GateVerdict file_folding(const GatePolicy *p, FileOp op, const char *path, const char *fold_at) {
        GateVerdict v;
        const char *at = fold_at ? strstr(path, fold_at) : NULL;

        gate_policy_check_file_folding(p, op, path, at ? (size_t) (at - path) : SIZE_MAX, &v);
        return v;
}

/* In a directory that folds case the kernel opens .git for .GIT: the names are weighed folded too. */
static void test_document_casefold(void) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_(gate_policy_freep) GatePolicy *p = NULL, *mixed = NULL;
        _cleanup_free_ char *error = NULL;
        char *guarded[] = { (char *) "/work/proj/.git/hooks", (char *) "/work/proj/Makefile", NULL };

        ok(gate_policy_document(NULL, "/work/proj", &doc) == 0 && gate_policy_document_guard(doc, guarded) == 0 &&
           gate_policy_compile(doc, &p, &error) == 0, "a document with guarded paths compiles");
        expect(file_(p, FILE_OP_WRITE, "/work/proj/.GIT/hooks/pre-commit"), DECISION_ALLOW, NULL,
               "byte for byte, .GIT/hooks is not .git/hooks (what the gate did in a folding directory)");
        expect(file_folding(p, FILE_OP_WRITE, "/work/proj/.GIT/hooks/pre-commit", ".GIT"), DECISION_DENY, "file[0]",
               "where /work/proj folds case, writing into .GIT/hooks is writing into the guarded .git/hooks");
        expect(file_folding(p, FILE_OP_CREATE, "/work/proj/.Git/HOOKS", ".Git"), DECISION_DENY, "file[0]",
               "...creating .Git/HOOKS (where .git/hooks is missing) is creating it");
        expect(file_folding(p, FILE_OP_WRITE, "/work/proj/MAKEFILE", "MAKEFILE"), DECISION_DENY, "file[0]",
               "...a guarded name with capitals (Makefile) is matched folded too");
        expect(file_folding(p, FILE_OP_READ, "/work/proj/api/.ENV", "api"), DECISION_DENY, NULL,
               "...reading .ENV is reading .env (denied)");
        expect(file_folding(p, FILE_OP_READ, "/work/proj/api/.ENV", NULL), DECISION_ALLOW, NULL,
               "...but not where no directory folds (SIZE_MAX)");
        expect(file_folding(p, FILE_OP_WRITE, "/work/proj/src/Main.c", "src"), DECISION_ALLOW, NULL,
               "...and other names stay writable in a folding directory");
        expect(file_folding(p, FILE_OP_READ, "/work/proj/.pgpa\xc5\xbfs", ".pgpa"), DECISION_DENY, GATE_RULE_ID_CASEFOLD,
               "a non-ASCII name in a folding directory is denied (the kernel folds the long s \\u017f to s: .pgpass)");
        expect(file_folding(p, FILE_OP_READ, "/work/proj/r\xc3\xa9sum\xc3\xa9/src/a.c", "src"), DECISION_ALLOW, NULL,
               "...non-ASCII above the folding directories is decided as written");
        expect(file_folding(p, FILE_OP_WRITE, "/work/proj/.git/hooks/x", ".git"), DECISION_DENY, "file[0]",
               "a path denied as written stays denied");
        expect(file_folding(p, FILE_OP_READ, "/work/proj/a", "nowhere-in-path"), DECISION_ALLOW, NULL,
               "(the test's own check: no fold offset when the marker is missing)");

        ok(gate_policy_check_file_fold_matters(p, FILE_OP_WRITE, "/work/proj/.GIT/hooks/pre-commit") &&
           gate_policy_check_file_fold_matters(p, FILE_OP_READ, "/work/proj/api/.Env") &&
           gate_policy_check_file_fold_matters(p, FILE_OP_CREATE, "/work/proj/caf\xc3\xa9"),
           "folding matters to .GIT/hooks, .Env and a non-ASCII name: their directories are asked");
        ok(!gate_policy_check_file_fold_matters(p, FILE_OP_WRITE, "/work/proj/src/Main.c") &&
           !gate_policy_check_file_fold_matters(p, FILE_OP_READ, "/work/proj/.env") &&
           !gate_policy_check_file_fold_matters(p, FILE_OP_READ, "/work/proj/.git/hooks/pre-commit"),
           "...not to other names, nor to a name denied (or allowed) as written already: no directory is asked");

        /* The folded verdict never loosens: a rule order where an allow comes first. */
        mixed = policy("{\"default_decision\":\"deny\",\"file_rules\":["
                       "{\"paths\":[\"/w/Docs/**\"],\"decision\":\"allow\"},"
                       "{\"paths\":[\"/w/**\"],\"operations\":[\"read\"],\"decision\":\"approve\"}]}");
        expect(file_folding(mixed, FILE_OP_READ, "/w/docs/a", "docs"), DECISION_APPROVE, "file[1]",
               "the stricter of the two readings wins: the path as written asks a human, folded it is allowed");
        expect(file_folding(mixed, FILE_OP_WRITE, "/w/docs/a", "docs"), DECISION_DENY, "default",
               "...and a default deny as written stays deny");
}

/* Secret files anywhere in the work dir are not read, also ones that appear during the run. */
static void test_document_secrets(void) {
        _cleanup_(gate_policy_freep) GatePolicy *p = policy_document(NULL, "/work/proj", NULL);

        ok(file_(p, FILE_OP_READ, "/work/proj/.env").decision == DECISION_DENY &&
           file_(p, FILE_OP_READ, "/work/proj/.env.local").decision == DECISION_DENY &&
           file_(p, FILE_OP_READ, "/work/proj/api/.env").decision == DECISION_DENY &&
           file_(p, FILE_OP_READ, "/work/proj/a/b/.env.production").decision == DECISION_DENY,
           "reading .env and .env.* at any depth of the work dir is denied");
        ok(file_(p, FILE_OP_READ, "/work/proj/svc/.npmrc").decision == DECISION_DENY &&
           file_(p, FILE_OP_READ, "/work/proj/svc/.cargo/credentials.toml").decision == DECISION_DENY &&
           file_(p, FILE_OP_READ, "/work/proj/svc/.aws/credentials").decision == DECISION_DENY &&
           file_(p, FILE_OP_READ, "/work/proj/.envrc").decision == DECISION_DENY,
           "...and so are the reference's other credential files");
        ok(file_(p, FILE_OP_READ, "/work/proj/src/environment.c").decision == DECISION_ALLOW &&
           file_(p, FILE_OP_READ, "/work/proj/.envoy.yaml").decision == DECISION_ALLOW &&
           file_(p, FILE_OP_WRITE, "/work/proj/.env").decision == DECISION_ALLOW,
           "...while other files, and writing a .env, stay allowed");
}

/* What the exec floor may refuse by file: commands denied whatever their arguments, and only those. */
static void test_denied_commands(void) {
        _cleanup_(json_object_putp) json_object *doc = parse(
                "{ \"command_rules\": ["
                "  { \"commands\": [ \"curl\" ], \"args_patterns\": [ \"localhost\" ], \"decision\": \"allow\" },"
                "  { \"commands\": [ \"curl\", \"nc\", \"py*\" ], \"decision\": \"deny\" },"
                "  { \"commands\": [ \"rm\" ], \"args_patterns\": [ \"-rf /\" ], \"decision\": \"deny\" },"
                "  { \"commands\": [ \"rm\", \"wget\" ], \"decision\": \"deny\" },"
                "  { \"commands\": [ \"ssh\" ], \"decision\": \"approve\" },"
                "  { \"commands\": [ \"ssh\" ], \"decision\": \"deny\" } ] }");
        _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *error = NULL;

        ok(gate_policy_compile(doc, &p, &error) == 0 && gate_policy_denied_commands(p, &l) == 0,
           "the commands denied outright are listed");
        ok(strv_contains(l, "nc") && strv_contains(l, "wget") && strv_contains(l, "rm"),
           "...a deny without arguments, also after a conditional deny (rm)");
        ok(!strv_contains(l, "curl"), "...not one an earlier rule allows with some arguments");
        ok(!strv_contains(l, "ssh"), "...not one an earlier rule sends to a human");
        ok(strv_length(l) == 3, "...and no glob pattern (py*)");
}

/* Whether an exec's verdict can depend on more than its file: then the supervisor must make sure no other
 * task can change the arguments before the kernel reads them (gate-mm.h). */
static void test_exec_reads_memory(void) {
        static const struct { const char *doc; bool expect; const char *name; } cases[] = {
                { "{ \"command_rules\": [ { \"commands\": [ \"nc\", \"wget\" ], \"decision\": \"deny\" } ] }", false,
                  "plain denials only: the floor decides, nothing read from memory matters" },
                { "{ \"command_rules\": [] }", false, "no command rules at all" },
                { "{ \"command_rules\": [ { \"commands\": [ \"rm\" ], \"args_patterns\": [ \"-rf /\" ], \"decision\": \"deny\" } ] }", true,
                  "an argument rule" },
                { "{ \"command_rules\": [ { \"commands\": [ \"rm\" ], \"args_within\": \"/work\", \"decision\": \"allow\" } ] }", true,
                  "an args_within rule" },
                { "{ \"command_rules\": [ { \"commands\": [ \"ssh\" ], \"decision\": \"approve\" } ] }", true,
                  "an approval" },
                { "{ \"command_rules\": [ { \"commands\": [ \"py*\" ], \"decision\": \"deny\" } ] }", true,
                  "a glob, which the floor cannot list" },
                { "{ \"default_decision\": \"deny\", \"command_rules\": [] }", true, "a default other than allow" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_object_putp) json_object *doc = parse(cases[i].doc);
                _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
                _cleanup_free_ char *error = NULL;

                ok(gate_policy_compile(doc, &p, &error) == 0 && gate_policy_exec_reads_memory(p) == cases[i].expect,
                   "exec verdicts %s memory: %s", cases[i].expect ? "read" : "do not read", cases[i].name);
        }
}

/* exec_shared_memory: the operator's choice between refusing an exec beside other threads (default) and
 * deciding it on arguments they could change; only the global or channel config can choose "check". */
static void test_exec_shared_memory(void) {
        static const struct { const char *doc; int compiles; bool checked; const char *name; } cases[] = {
                { "{ \"command_rules\": [] }", 1, false, "by default an exec beside other threads is refused" },
                { "{ \"exec_shared_memory\": \"deny\" }", 1, false, "\"deny\" says so" },
                { "{ \"exec_shared_memory\": \"check\" }", 1, true, "\"check\" decides it on what was read" },
                { "{ \"exec_shared_memory\": \"maybe\" }", 0, false, "another word does not compile" },
                { "{ \"exec_shared_memory\": true }", 0, false, "a boolean does not compile" },
        };
        AgentGateConfig cfg = { .enabled = true, .default_decision = DECISION_ALLOW };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_object_putp) json_object *doc = parse(cases[i].doc);
                _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
                _cleanup_free_ char *error = NULL;
                int r = gate_policy_compile(doc, &p, &error);

                ok(cases[i].compiles ? r == 0 && gate_policy_exec_shared_memory_checked(p) == cases[i].checked : r < 0,
                   "exec_shared_memory: %s", cases[i].name);
        }

        for (int check = 0; check <= 1; check++) {
                _cleanup_(json_object_putp) json_object *doc = NULL;
                _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
                _cleanup_free_ char *error = NULL;

                cfg.exec_shared_memory_check = check;
                ok(gate_policy_document(&cfg, "/work", &doc) >= 0 && gate_policy_compile(doc, &p, &error) == 0 &&
                   gate_policy_exec_shared_memory_checked(p) == (bool) check,
                   "the per-container document carries exec_shared_memory %s", check ? "check" : "deny (by leaving it out)");
        }
}

int main(void) {
        test_kinds();
        test_exec_shared_memory();
        test_denied_commands();
        test_exec_reads_memory();
        test_document_secrets();
        test_document_guard();
        test_document_casefold();
        test_globs();
        test_compile_errors();
        test_path_rules();
        test_command_rules();
        test_file_rules();
        test_unwrap();
        test_unwrap_checks();
        test_document();
        test_document_config();
        test_cache_keys();
        test_load_file();
        test_speed();
        return done_testing();
}
