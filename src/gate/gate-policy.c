/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The security gate's policy: compiling the document once, then matching trapped syscalls against it on
 * the hot path. Everything a check needs is prepared at compile time; a check allocates only for inputs
 * that are rare or huge (an argv whose arguments exceed a page, command strings of script -c / env -S, an
 * execve whose path names another binary than argv[0]). */

#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdarg.h>

#include <openssl/sha.h>

#include "config-schema.h"
#include "gate-glob.h"
#include "gate-unwrap.h"
#include "gate-policy.h"
#include "policy-compile.h"
#include "io-util.h"
#include "json-util.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"
#include "regex-util.h"

#define GATE_STACK_BUF 4096U            /* joined args and resolved paths up to this size stay on the stack */

static const char * const gate_kind_table[_GATE_KIND_MAX] = {
        [GATE_KIND_CONNECT] = "connect",
        [GATE_KIND_EXEC] = "execve",
        [GATE_KIND_FILE] = "file",
};

const char *gate_kind_to_string(GateKind k) {
        return k >= 0 && k < _GATE_KIND_MAX ? gate_kind_table[k] : NULL;
}

GateKind gate_kind_from_string(const char *s) {
        return (GateKind) string_table_lookup(gate_kind_table, _GATE_KIND_MAX, s);
}

/* deny > approve > allow */
static unsigned decision_rank(Decision d) {
        switch (d) {
        case DECISION_ALLOW:
                return 0;
        case DECISION_APPROVE:
                return 1;
        default:
                return 2;
        }
}

/* ---- compiled policy ---- */

typedef struct GatePathRule {
        char *pattern;                  /* cleaned when absolute */
        Decision decision;
        char *message;
        char id[GATE_RULE_ID_MAX];
} GatePathRule;

typedef struct GateCommandRule {
        char **commands;
        size_t n_commands;
        regex_t *regexes;
        size_t n_regexes;               /* compiled ones, freed with the rule */
        char *within;                   /* args_within, cleaned; NULL: none */
        Decision decision;
        char *message;
        char id[GATE_RULE_ID_MAX];
} GateCommandRule;

typedef struct GateFileRule {
        GateGlob *paths;
        GateGlob *paths_folded;         /* the same globs with ASCII letters in lower case */
        size_t n_paths;
        unsigned operations;            /* 0: any */
        Decision decision;
        char *message;
        char id[GATE_RULE_ID_MAX];
} GateFileRule;

struct GatePolicy {
        Decision default_decision;
        bool exec_shared_memory_check;
        GatePathRule *path_rules;
        size_t n_path_rules;
        GateCommandRule *command_rules;
        size_t n_command_rules;
        GateFileRule *file_rules;
        size_t n_file_rules;
};

GatePolicy *gate_policy_free(GatePolicy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_path_rules; i++) {
                free(p->path_rules[i].pattern);
                free(p->path_rules[i].message);
        }
        free(p->path_rules);
        for (size_t i = 0; i < p->n_command_rules; i++) {
                GateCommandRule *c = &p->command_rules[i];
                strv_free(c->commands);
                for (size_t j = 0; j < c->n_regexes; j++)
                        regfree(&c->regexes[j]);
                free(c->regexes);
                free(c->within);
                free(c->message);
        }
        free(p->command_rules);
        for (size_t i = 0; i < p->n_file_rules; i++) {
                GateFileRule *f = &p->file_rules[i];
                for (size_t j = 0; j < f->n_paths; j++) {
                        gate_glob_done(&f->paths[j]);
                        gate_glob_done(&f->paths_folded[j]);
                }
                free(f->paths);
                free(f->paths_folded);
                free(f->message);
        }
        free(p->file_rules);
        return mfree(p);
}

static void verdict_set(GateVerdict *v, Decision d, const char *id, const char *message) {
        v->decision = d;
        (void) snprintf(v->rule_id, sizeof v->rule_id, "%s", id);
        v->message = message;
        v->by_operand_names = false;
}

static void verdict_error(GateVerdict *v) {
        verdict_set(v, DECISION_DENY, GATE_RULE_ID_ERROR, "the gate could not judge this request");
}

static void verdict_default(const GatePolicy *p, GateVerdict *v) {
        verdict_set(v, p->default_decision, "default", NULL);
}

/* ---- compiling ---- */


static const char *json_type_name_of(json_object *o) {
        return json_type_to_name(json_object_get_type(o));
}

static int compile_keys(PolicyCompiler *c, json_object *o, const char *where, const char * const *known) {
        json_object_object_foreach(o, key, val) {
                bool found = false;
                (void) val;
                for (const char * const *k = known; *k; k++)
                        if (streq(*k, key))
                                found = true;
                if (!found)
                        return policy_compile_fail(c, "%s: unknown key %s", where, POLICY_QUOTE(key));
        }
        return 0;
}

static int compile_rules_array(PolicyCompiler *c, json_object *doc, const char *key, json_object **ret, size_t *ret_n) {
        json_object *v;
        size_t n;

        *ret = NULL;
        *ret_n = 0;
        if (!json_object_object_get_ex(doc, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return policy_compile_fail(c, "%s: must be an array, not %s", key, json_type_name_of(v));
        n = json_object_array_length(v);
        if (n > GATE_POLICY_RULES_MAX)
                return policy_compile_fail(c, "%s: %zu rules, more than the %u allowed", key, n, GATE_POLICY_RULES_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!json_object_is_type(e, json_type_object))
                        return policy_compile_fail(c, "%s[%zu]: must be an object, not %s", key, i, json_type_name_of(e));
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int compile_path_rule(PolicyCompiler *c, json_object *o, size_t i, GatePathRule *rule) {
        static const char * const keys[] = { "pattern", "decision", "message", NULL };
        char where[64];
        const char *s;
        json_object *v;
        int r;

        (void) snprintf(where, sizeof where, "path_rules[%zu]", i);
        (void) snprintf(rule->id, sizeof rule->id, "path[%zu]", i);
        if ((r = compile_keys(c, o, where, keys)) < 0)
                return r;
        if (!json_object_object_get_ex(o, "pattern", &v))
                return policy_compile_fail(c, "%s.pattern: missing", where);
        if (!json_object_is_type(v, json_type_string))
                return policy_compile_fail(c, "%s.pattern: must be a string, not %s", where, json_type_name_of(v));
        s = json_object_get_string(v);
        if (isempty(s))
                return policy_compile_fail(c, "%s.pattern: empty pattern", where);
        if (s[0] != '/' && s[0] != '@')
                return policy_compile_fail(c, "%s.pattern: %s is neither an absolute socket path nor @name", where,
                                    POLICY_QUOTE(s));
        rule->pattern = s[0] == '/' ? path_clean(s) : strdup(s);
        if (!rule->pattern)
                return -ENOMEM;
        if ((r = policy_compile_decision(c, o, where, &rule->decision)) < 0 ||
            (r = policy_compile_message(c, o, where, &rule->message)) < 0)
                return r;
        return 0;
}

static int compile_command_rule(PolicyCompiler *c, json_object *o, size_t i, GateCommandRule *rule) {
        static const char * const keys[] = { "commands", "args_patterns", "args_within", "decision", "message", NULL };
        json_object *commands, *patterns, *v;
        size_t n_commands, n_patterns;
        char where[64];
        int r;

        (void) snprintf(where, sizeof where, "command_rules[%zu]", i);
        (void) snprintf(rule->id, sizeof rule->id, "cmd[%zu]", i);
        if ((r = compile_keys(c, o, where, keys)) < 0 ||
            (r = policy_compile_strings(c, o, where, "commands", &commands, &n_commands)) < 0 ||
            (r = policy_compile_strings(c, o, where, "args_patterns", &patterns, &n_patterns)) < 0)
                return r;

        if (n_commands > 0) {
                rule->commands = calloc(n_commands + 1, sizeof(char *));
                if (!rule->commands)
                        return -ENOMEM;
        }
        for (size_t j = 0; j < n_commands; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(commands, j));
                const char *why = gate_glob_check(s);
                if (why)
                        return policy_compile_fail(c, "%s.commands[%zu]: %s %s", where, j, why, POLICY_QUOTE(s));
                rule->commands[j] = strdup(s);
                if (!rule->commands[j])
                        return -ENOMEM;
                rule->n_commands++;
        }

        if (n_patterns > 0) {
                rule->regexes = calloc(n_patterns, sizeof(regex_t));
                if (!rule->regexes)
                        return -ENOMEM;
        }
        for (size_t j = 0; j < n_patterns; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(patterns, j));
                char msg[128];

                if (isempty(s))
                        return policy_compile_fail(c, "%s.args_patterns[%zu]: empty pattern", where, j);
                r = regcomp_bounded(&rule->regexes[j], s, REG_EXTENDED | REG_NOSUB);
                if (r == REG_ESPACE)
                        return -ENOMEM;
                if (r != 0) {
                        (void) regerror(r, &rule->regexes[j], msg, sizeof msg);
                        return policy_compile_fail(c, "%s.args_patterns[%zu]: invalid regular expression %s: %s",
                                            where, j, POLICY_QUOTE(s), msg);
                }
                rule->n_regexes++;
        }

        if (json_object_object_get_ex(o, "args_within", &v)) {
                const char *s;

                if (!json_object_is_type(v, json_type_string))
                        return policy_compile_fail(c, "%s.args_within: must be a string, not %s", where,
                                            json_type_name_of(v));
                s = json_object_get_string(v);
                if (isempty(s))
                        return policy_compile_fail(c, "%s.args_within: empty directory", where);
                if (s[0] != '/')
                        return policy_compile_fail(c, "%s.args_within: %s is not an absolute directory", where, POLICY_QUOTE(s));
                rule->within = path_clean(s);
                if (!rule->within)
                        return -ENOMEM;
                if (streq(rule->within, "/"))
                        return policy_compile_fail(c, "%s.args_within: the root directory would contain everything", where);
        }

        if ((r = policy_compile_decision(c, o, where, &rule->decision)) < 0 ||
            (r = policy_compile_message(c, o, where, &rule->message)) < 0)
                return r;
        return 0;
}

static int compile_file_rule(PolicyCompiler *c, json_object *o, size_t i, GateFileRule *rule) {
        static const char * const keys[] = { "paths", "operations", "decision", "message", NULL };
        json_object *paths, *ops;
        size_t n_paths, n_ops;
        char where[64];
        int r;

        (void) snprintf(where, sizeof where, "file_rules[%zu]", i);
        (void) snprintf(rule->id, sizeof rule->id, "file[%zu]", i);
        if ((r = compile_keys(c, o, where, keys)) < 0 ||
            (r = policy_compile_strings(c, o, where, "paths", &paths, &n_paths)) < 0 ||
            (r = policy_compile_strings(c, o, where, "operations", &ops, &n_ops)) < 0)
                return r;
        /* An empty list would match every path: a rule that means that must say "/" "**". */
        if (n_paths == 0)
                return policy_compile_fail(c, "%s.paths: must list at least one glob", where);

        rule->paths = calloc(n_paths, sizeof(GateGlob));
        rule->paths_folded = calloc(n_paths, sizeof(GateGlob));
        if (!rule->paths || !rule->paths_folded)
                return -ENOMEM;
        for (size_t j = 0; j < n_paths; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(paths, j));
                const char *why = gate_glob_check_path(s);
                _cleanup_free_ char *folded = NULL;

                if (why)
                        return policy_compile_fail(c, "%s.paths[%zu]: %s %s", where, j, why, POLICY_QUOTE(s));
                folded = ascii_strlower(strdup(s));
                if (!folded)
                        return -ENOMEM;
                r = gate_glob_compile(s, &rule->paths[j]);
                if (r < 0)
                        return r;
                r = gate_glob_compile(folded, &rule->paths_folded[j]);
                if (r < 0) {
                        gate_glob_done(&rule->paths[j]);
                        return r;
                }
                rule->n_paths++;
        }
        for (size_t j = 0; j < n_ops; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(ops, j));
                FileOp op = file_op_from_string(s);
                if (op < 0)
                        return policy_compile_fail(c, "%s.operations[%zu]: unknown operation %s", where, j, POLICY_QUOTE(s));
                rule->operations |= 1U << op;
        }
        if ((r = policy_compile_decision(c, o, where, &rule->decision)) < 0 ||
            (r = policy_compile_message(c, o, where, &rule->message)) < 0)
                return r;
        return 0;
}

int gate_policy_compile(json_object *doc, GatePolicy **ret, char **ret_error) {
        static const char * const keys[] = { "default_decision", "exec_shared_memory", "path_rules", "command_rules",
                                             "file_rules", NULL };
        _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
        json_object *v, *path_rules, *command_rules, *file_rules;
        size_t n_path, n_command, n_file;
        PolicyCompiler c = {};
        int r;

        assert(ret);

        if (!doc || !json_object_is_type(doc, json_type_object)) {
                r = policy_compile_fail(&c, "policy: must be a JSON object, not %s", doc ? json_type_name_of(doc) : "null");
                goto finish;
        }
        p = calloc(1, sizeof(GatePolicy));
        if (!p) {
                r = -ENOMEM;
                goto finish;
        }
        p->default_decision = DECISION_ALLOW;   /* the reference's default */

        if ((r = compile_keys(&c, doc, "policy", keys)) < 0)
                goto finish;
        if (json_object_object_get_ex(doc, "default_decision", &v)) {
                if (!json_object_is_type(v, json_type_string)) {
                        r = policy_compile_fail(&c, "default_decision: must be a string, not %s", json_type_name_of(v));
                        goto finish;
                }
                p->default_decision = decision_from_string(json_object_get_string(v));
                if (p->default_decision < 0) {
                        r = policy_compile_fail(&c, "default_decision: unknown decision %s (allow, deny or approve)",
                                         POLICY_QUOTE(json_object_get_string(v)));
                        goto finish;
                }
        }

        if (json_object_object_get_ex(doc, "exec_shared_memory", &v)) {
                const char *e = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
                if (!streq_ptr(e, "deny") && !streq_ptr(e, "check")) {
                        r = policy_compile_fail(&c, "exec_shared_memory: must be \"deny\" or \"check\"");
                        goto finish;
                }
                p->exec_shared_memory_check = streq(e, "check");
        }

        if ((r = compile_rules_array(&c, doc, "path_rules", &path_rules, &n_path)) < 0 ||
            (r = compile_rules_array(&c, doc, "command_rules", &command_rules, &n_command)) < 0 ||
            (r = compile_rules_array(&c, doc, "file_rules", &file_rules, &n_file)) < 0)
                goto finish;

        p->path_rules = calloc(n_path ?: 1, sizeof(GatePathRule));
        p->command_rules = calloc(n_command ?: 1, sizeof(GateCommandRule));
        p->file_rules = calloc(n_file ?: 1, sizeof(GateFileRule));
        if (!p->path_rules || !p->command_rules || !p->file_rules) {
                r = -ENOMEM;
                goto finish;
        }
        /* Counted as they are filled, so that freeing a half-compiled policy frees what exists. */
        for (size_t i = 0; i < n_path; i++) {
                p->n_path_rules++;
                if ((r = compile_path_rule(&c, json_object_array_get_idx(path_rules, i), i, &p->path_rules[i])) < 0)
                        goto finish;
        }
        for (size_t i = 0; i < n_command; i++) {
                p->n_command_rules++;
                r = compile_command_rule(&c, json_object_array_get_idx(command_rules, i), i, &p->command_rules[i]);
                if (r < 0)
                        goto finish;
        }
        for (size_t i = 0; i < n_file; i++) {
                p->n_file_rules++;
                if ((r = compile_file_rule(&c, json_object_array_get_idx(file_rules, i), i, &p->file_rules[i])) < 0)
                        goto finish;
        }
        *ret = TAKE_PTR(p);
        r = 0;

finish:
        if (r == -ENOMEM) {
                c.error = mfree(c.error);
                c.error = strdup("out of memory");
        }
        if (ret_error)
                *ret_error = TAKE_PTR(c.error);
        free(c.error);
        return r;
}

int gate_policy_load_file(const char *path, GatePolicy **ret, char **ret_error) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *text = NULL, *reason = NULL;
        size_t size;
        int r;

        assert(path);
        assert(ret);

        r = read_full_file_at(AT_FDCWD, path, GATE_POLICY_FILE_MAX, false, &text, &size);
        if (r < 0) {
                if (ret_error) {
                        if (r == -EFBIG)
                                *ret_error = strdup("the policy file is larger than 4 MiB");
                        else if (asprintf(ret_error, "cannot read the policy file: %s", strerror(-r)) < 0)
                                *ret_error = NULL;
                }
                return r;
        }
        r = config_parse_text(text, size, &doc, &reason);
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(reason);
                return r;
        }
        return gate_policy_compile(doc, ret, ret_error);
}

/* ---- connect ---- */

void gate_policy_check_connect(const GatePolicy *p, const char *socket_path, GateVerdict *ret) {
        char stack[GATE_STACK_BUF];
        _cleanup_free_ char *heap = NULL;
        const char *path = socket_path;

        assert(p);
        assert(ret);

        /* Relative paths are the supervisor's to resolve; one that arrives here cannot be judged. */
        if (isempty(socket_path) || (socket_path[0] != '/' && socket_path[0] != '@'))
                { verdict_error(ret); return; }
        /* A path given with "//" or "/./" must not slip past an exact rule. */
        if (socket_path[0] == '/') {
                char *buf;
                if (path_resolve_clean(NULL, socket_path, stack, sizeof stack, &buf, &heap) < 0)
                        { verdict_error(ret); return; }
                path = buf;
        }
        for (size_t i = 0; i < p->n_path_rules; i++)
                if (streq(p->path_rules[i].pattern, path))
                        { verdict_set(ret, p->path_rules[i].decision, p->path_rules[i].id,
                                           p->path_rules[i].message); return; }
        verdict_default(p, ret);
}

/* ---- file ---- */

/* The first file rule for op whose glob (folded or not) matches path, or the default. */
static void file_rules_check(const GatePolicy *p, FileOp op, const char *path, bool folded, GateVerdict *ret) {
        size_t len = strlen(path);

        for (size_t i = 0; i < p->n_file_rules; i++) {
                const GateFileRule *f = &p->file_rules[i];
                if (f->operations != 0 && !(f->operations & (1U << op)))
                        continue;
                for (size_t j = 0; j < f->n_paths; j++)
                        if (gate_glob_matches(folded ? &f->paths_folded[j] : &f->paths[j], path, len))
                                { verdict_set(ret, f->decision, f->id, f->message); return; }
        }
        verdict_default(p, ret);
}

void gate_policy_check_file(const GatePolicy *p, FileOp op, const char *path, GateVerdict *ret) {
        char stack[GATE_STACK_BUF], *clean;
        _cleanup_free_ char *heap = NULL;

        assert(p);
        assert(ret);

        if (op < 0 || op >= _FILE_OP_MAX || !path || path[0] != '/')
                { verdict_error(ret); return; }
        /* The supervisor cleans already; doing it again costs one pass and closes "/etc/./shadow". */
        if (path_resolve_clean(NULL, path, stack, sizeof stack, &clean, &heap) < 0)
                { verdict_error(ret); return; }

        file_rules_check(p, op, clean, false, ret);
}

void gate_policy_check_file_folding(const GatePolicy *p, FileOp op, const char *path, size_t fold_from,
                                    GateVerdict *ret) {
        char stack[GATE_STACK_BUF], *clean;
        _cleanup_free_ char *heap = NULL, *lower = NULL;
        GateVerdict v;

        gate_policy_check_file(p, op, path, ret);
        if (fold_from == SIZE_MAX || ret->decision == DECISION_DENY)
                return;
        if (fold_from > strlen(path))
                { verdict_error(ret); return; }
        /* The kernel folds Unicode (utf8 casefold: "\u212a" is "k", "\u017f" is "s"); the gate folds
         * ASCII only, so a name it cannot fold as the kernel would is not let through. */
        for (const char *c = path + fold_from; *c; c++)
                if ((unsigned char) *c >= 0x80) {
                        verdict_set(ret, DECISION_DENY, GATE_RULE_ID_CASEFOLD,
                                    "a name with non-ASCII characters in a case-folding directory");
                        return;
                }
        if (path_resolve_clean(NULL, path, stack, sizeof stack, &clean, &heap) < 0)
                { verdict_error(ret); return; }
        /* All of the path in lower case against all of each glob in lower case: beyond the folding
         * directories too, which can only match more. */
        lower = ascii_strlower(strdup(clean));
        if (!lower)
                { verdict_error(ret); return; }
        file_rules_check(p, op, lower, true, &v);
        if (decision_rank(v.decision) > decision_rank(ret->decision))
                *ret = v;
}

bool gate_policy_check_file_fold_matters(const GatePolicy *p, FileOp op, const char *path) {
        GateVerdict plain, folded;

        gate_policy_check_file(p, op, path, &plain);
        gate_policy_check_file_folding(p, op, path, 0, &folded);
        return decision_rank(folded.decision) > decision_rank(plain.decision);
}

/* ---- exec: matching ---- */

/* argv[1..] joined by single spaces, in stack when it fits. */
static int args_join(char * const *args, char *stack, size_t stack_size, char **ret, char **ret_heap) {
        size_t need = 1, n = 0;
        char *buf = stack;

        *ret_heap = NULL;
        for (char * const *a = args; *a; a++)
                need += strlen(*a) + 1;
        if (need > stack_size) {
                buf = *ret_heap = malloc(need);
                if (!buf)
                        return -ENOMEM;
        }
        for (char * const *a = args; *a; a++) {
                size_t l = strlen(*a);
                if (a != args)
                        buf[n++] = ' ';
                memcpy(buf + n, *a, l);
                n += l;
        }
        buf[n] = 0;
        *ret = buf;
        return 0;
}

/* 1 when every operand of args, resolved against cwd, is strictly inside rule->within and there is at
 * least one; 0 when not; -EAGAIN when not for want of a cwd (NULL) for a relative operand; -ENOMEM. */
static int args_within(const GateCommandRule *rule, char * const *args, const char *cwd) {
        bool options_done = false;
        unsigned operands = 0;

        for (char * const *a = args; *a; a++) {
                char stack[GATE_STACK_BUF], *path;
                _cleanup_free_ char *heap = NULL;
                int r;

                if (!options_done && streq(*a, "--")) {
                        options_done = true;
                        continue;
                }
                if (!options_done && (*a)[0] == '-' && (*a)[1])
                        continue;
                if (isempty(*a))
                        return 0;
                r = path_resolve_clean(cwd, *a, stack, sizeof stack, &path, &heap);
                if (r == -EINVAL)
                        return cwd ? 0 : -EAGAIN;       /* relative, no cwd: cannot be shown to be inside */
                if (r < 0)
                        return r;
                if (!path_is_inside(path, rule->within) || streq(path, rule->within))
                        return 0;
                operands++;
        }
        return operands > 0;
}

static void check_exec_candidate(const GatePolicy *p, char * const *argv, size_t index, const char *cwd,
                                 GateVerdict *ret) {
        const char *base = path_basename(argv[index]);
        char stack[GATE_STACK_BUF], *joined = NULL;
        _cleanup_free_ char *heap = NULL;
        bool by_names = false;

        ret->needs_cwd = false;
        for (size_t i = 0; i < p->n_command_rules; i++) {
                const GateCommandRule *c = &p->command_rules[i];
                bool match = c->n_commands == 0;

                for (size_t j = 0; !match && j < c->n_commands; j++)
                        match = fnmatch(c->commands[j], base, 0) == 0;
                if (!match)
                        continue;

                if (c->n_regexes > 0) {
                        if (!joined && args_join(argv + index + 1, stack, sizeof stack, &joined, &heap) < 0)
                                { verdict_error(ret); return; }
                        match = false;
                        for (size_t j = 0; !match && j < c->n_regexes; j++)
                                match = regexec(&c->regexes[j], joined, 0, NULL, 0) == 0;
                        if (!match)
                                continue;
                }
                if (c->within) {
                        int r = args_within(c, argv + index + 1, cwd);

                        by_names = true;
                        if (r == -EAGAIN) {
                                ret->needs_cwd = true;
                                r = 0;
                        }
                        if (r < 0)
                                { verdict_error(ret); return; }
                        if (r == 0)
                                continue;
                }
                verdict_set(ret, c->decision, c->id, c->message);
                ret->by_operand_names = by_names;
                return;
        }
        verdict_default(p, ret);
        ret->by_operand_names = by_names;
}

/* The strictest verdict over every reading of argv; on a tie the earlier reading's rule. */
static void check_exec_all(const GatePolicy *p, char * const *argv, const char *cwd, GateVerdict *ret) {
        bool needs_cwd = false, by_names = false;
        GateUnwrap u;

        ret->needs_cwd = false;
        gate_unwrap_all(&u, argv, false);
        if (u.error < 0) {
                gate_unwrap_done(&u);
                { verdict_error(ret); return; }
        }
        for (size_t i = 0; i < u.n; i++) {
                GateVerdict v;
                check_exec_candidate(p, u.items[i].argv, u.items[i].index, cwd, &v);
                needs_cwd = needs_cwd || v.needs_cwd;
                by_names = by_names || v.by_operand_names;
                if (i == 0 || decision_rank(v.decision) > decision_rank(ret->decision))
                        *ret = v;
                if (streq(ret->rule_id, GATE_RULE_ID_ERROR))
                        break;
        }
        ret->needs_cwd = needs_cwd;
        ret->by_operand_names = by_names;
        gate_unwrap_done(&u);
}

void gate_policy_check_exec(const GatePolicy *p, char * const *argv, const char *cwd, GateVerdict *ret) {
        assert(p);
        assert(ret);
        check_exec_all(p, argv, cwd, ret);
}

void gate_policy_check_execve(const GatePolicy *p, const char *path, char * const *argv, const char *cwd,
                              GateVerdict *ret) {
        _cleanup_free_ char **copy = NULL;
        GateVerdict v;
        bool needs_cwd, by_names;
        size_t n;

        assert(p);
        assert(ret);

        check_exec_all(p, argv, cwd, ret);
        if (isempty(path) || streq(ret->rule_id, GATE_RULE_ID_ERROR))
                return;
        if (argv && argv[0] && streq(path_basename(path), path_basename(argv[0])))
                return;         /* the same command either way */

        n = argv ? strv_length((char **) argv) : 0;
        copy = calloc(MAX(n, 1U) + 1, sizeof(char *));
        if (!copy)
                { verdict_error(ret); return; }
        copy[0] = (char *) path;
        for (size_t i = 1; i < n; i++)
                copy[i] = argv[i];
        copy[MAX(n, 1U)] = NULL;
        check_exec_all(p, copy, cwd, &v);
        needs_cwd = ret->needs_cwd || v.needs_cwd;
        by_names = ret->by_operand_names || v.by_operand_names;
        if (decision_rank(v.decision) > decision_rank(ret->decision))
                *ret = v;
        ret->needs_cwd = needs_cwd;
        ret->by_operand_names = by_names;
}

/* ---- cache keys ---- */

char *gate_cache_key_connect(const char *socket_path) {
        char *s;
        return asprintf(&s, "connect:%s", strempty(socket_path)) < 0 ? NULL : s;
}

/* The exec key names exactly what was shown and approved: the file that runs (symlinks resolved) and
 * every argument, as a JSON array (unambiguous, readable). A key longer than the host takes is the
 * file and the SHA-256 of that array: still one key per command line. */
#define GATE_CACHE_KEY_EXEC_MAX 4096U

char *gate_cache_key_exec(const char *file, char * const *argv) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
        const char *text;
        char *s;

        if (!a)
                return NULL;
        STRV_FOREACH(arg, argv) {
                json_object *v = json_object_new_string(*arg);
                if (!v || json_object_array_add(a, v) < 0) {
                        json_object_put(v);
                        return NULL;
                }
        }
        text = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return NULL;
        if (strlen(strempty(file)) + strlen(text) + 16 <= GATE_CACHE_KEY_EXEC_MAX)
                return asprintf(&s, "execve:%s:%s", strempty(file), text) < 0 ? NULL : s;
        {
                unsigned char md[SHA256_DIGEST_LENGTH];
                char hex[2 * SHA256_DIGEST_LENGTH + 1];

                SHA256((const unsigned char *) text, strlen(text), md);
                for (size_t i = 0; i < sizeof(md); i++)
                        snprintf(hex + 2 * i, 3, "%02x", md[i]);
                if (strlen(strempty(file)) > GATE_CACHE_KEY_EXEC_MAX - 100)
                        return NULL;
                return asprintf(&s, "execve:%s:sha256:%s", strempty(file), hex) < 0 ? NULL : s;
        }
}

char *gate_cache_key_file(FileOp op, const char *path) {
        const char *o = file_op_to_string(op);
        char *s;

        if (!o) {
                errno = EINVAL;
                return NULL;
        }
        return asprintf(&s, "file:%s:%s", o, strempty(path)) < 0 ? NULL : s;
}

/* ---- the per-container document ---- */

#define STRV(...) ((const char * const[]) { __VA_ARGS__, NULL })
#define OP(o) (1U << (o))
#define OPS_ANY 0U
#define OPS_MODIFY (OP(FILE_OP_WRITE) | OP(FILE_OP_CREATE) | OP(FILE_OP_DELETE) | OP(FILE_OP_CHMOD) | \
                    OP(FILE_OP_CHOWN) | OP(FILE_OP_LINK))
#define OPS_READING (OP(FILE_OP_READ) | OP(FILE_OP_STAT) | OP(FILE_OP_LIST))

typedef struct DefaultFileRule {
        const char * const *paths;
        unsigned operations;
        Decision decision;
        const char *message;
} DefaultFileRule;

/* The default denies, in this order; they come before the workspace and HOME allows. The shell rc rule
 * (built from shell_rc_files, for /root, /home/ * and HOME) sits between the two tables. "Writes" deny
 * every modifying operation: deleting or replacing a file (rename, link) changes it as much as writing. */
static const DefaultFileRule default_file_denies[] = {
        { STRV("/proc/*/mem", "/proc/*/task/*/mem", "/proc/kcore"), OP(FILE_OP_READ) | OP(FILE_OP_WRITE),
          DECISION_DENY, "process memory and the kernel's are off limits" },
        { STRV("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d/**",
               "/etc/ssh/ssh_host_*_key"), OPS_ANY,
          DECISION_DENY, "password hashes, sudoers and host keys are off limits" },
        { STRV("**/.ssh/**", "**/.aws/**", "**/.gcp/**", "**/.config/gcloud/**", "**/.kube/**", "**/.netrc",
               "**/.pgpass"), OPS_ANY,
          DECISION_DENY, "credentials are off limits" },
        { STRV("**/.docker/config.json", "**/.npmrc", "**/.claude/settings*.json"), OPS_MODIFY,
          DECISION_DENY, "tool configuration that grants access or runs code must not be changed" },
};

/* Below the work dir, at any depth: the reference's credential files (protected-paths.c masks those
 * present at the start; these deny reading them whenever they appear). */
static const char * const work_dir_secret_files[] = {
        "/**/.env", "/**/.env.*", "/**/.envrc", "/**/.npmrc", "/**/.pypirc", "/**/.netrc", "/**/.pgpass",
        "/**/.docker/config.json", "/**/.cargo/credentials.toml", "/**/.cargo/credentials", "/**/.aws/**",
        "/**/.kube/**",
};

static const DefaultFileRule default_file_system_denies[] = {
        { STRV("/etc/**", "/usr/**", "/bin/**", "/sbin/**", "/lib*/**", "/boot/**"), OPS_MODIFY,
          DECISION_DENY, "system directories must not be changed" },
};

/* The default allows; they come after the workspace and HOME allows. Reading /proc and /sys includes
 * stat and list: a listing is a read of the directory. */
static const DefaultFileRule default_file_allows[] = {
        { STRV("/tmp/**", "/var/tmp/**"), OPS_ANY, DECISION_ALLOW, NULL },
        { STRV("/proc/**", "/sys/**"), OPS_READING, DECISION_ALLOW, NULL },
};

static const char * const shell_rc_files[] = {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
        ".zshrc", ".zprofile", ".zshenv", ".zlogin",
};

/* A recursive rm (-r, -R, --recursive or an abbreviation, in any word). */
#define RM_RECURSIVE "(-[a-zA-Z]*[rR][a-zA-Z]*|--r[a-z]*)"
/* Every recursive rm with an operand that the allows before it (every operand strictly inside the
 * workspace or /tmp, compared resolved) did not take: an operand before or after the flag, or after "--";
 * and --no-preserve-root at all. Not a list of spellings of "outside" ("/", ".."), which "sub/../../.." or
 * a relative operand from a cwd outside the workspace slipped past. Over-matching only makes it stricter
 * (an argument with a space in it). */
static const char * const rm_deny_patterns[] = {
        "(^| )" RM_RECURSIVE " (.* )?[^- ]",
        "(^| )[^- ].* " RM_RECURSIVE "( |$)",
        "(^| )" RM_RECURSIVE " (.* )?-- .",
        "(^| )--n[a-z-]*( |$)",
        NULL,
};

static json_object *rule_new(Decision decision, const char *message) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (json_add(o, "decision", json_object_new_string(decision_to_string(decision))) < 0 ||
            (message && json_add(o, "message", json_object_new_string(message)) < 0))
                return json_object_put(o), NULL;
        return o;
}

static int add_path_rule(json_object *rules, const char *pattern, Decision decision, const char *message) {
        json_object *o = rule_new(decision, message);

        if (!o || json_add(o, "pattern", json_object_new_string(pattern)) < 0)
                return json_object_put(o), -ENOMEM;
        return json_push(rules, o);
}

static int add_command_rule(json_object *rules, const char * const *commands, const char * const *args,
                            const char *within, Decision decision, const char *message) {
        json_object *o = rule_new(decision, message);

        if (!o ||
            (commands && json_add(o, "commands", json_strings_new(commands, strv_length((char **) commands))) < 0) ||
            (args && json_add(o, "args_patterns", json_strings_new(args, strv_length((char **) args))) < 0) ||
            (within && json_add(o, "args_within", json_object_new_string(within)) < 0))
                return json_object_put(o), -ENOMEM;
        return json_push(rules, o);
}

static int add_file_rule(json_object *rules, const char * const *paths, size_t n_paths, unsigned operations,
                         Decision decision, const char *message) {
        json_object *o = rule_new(decision, message), *ops;

        if (!o || json_add(o, "paths", json_strings_new(paths, n_paths)) < 0)
                return json_object_put(o), -ENOMEM;
        if (operations != 0) {
                ops = json_object_new_array();
                if (json_add(o, "operations", ops) < 0)
                        return json_object_put(o), -ENOMEM;
                for (FileOp op = 0; op < _FILE_OP_MAX; op++)
                        if ((operations & (1U << op)) && json_push(ops, json_object_new_string(file_op_to_string(op))) < 0)
                                return json_object_put(o), -ENOMEM;
        }
        return json_push(rules, o);
}

static int add_default_file_rules(json_object *rules, const DefaultFileRule *d, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = add_file_rule(rules, d[i].paths, strv_length((char **) d[i].paths), d[i].operations,
                                      d[i].decision, d[i].message);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Shell start-up files under /root, /home/ * and HOME (home_glob: glob-escaped, NULL for none). */
static int add_shell_rc_rule(json_object *rules, const char *home, const char *home_glob) {
        const char *dirs[3] = { "/root", "/home/*", NULL };
        char *paths[3 * ELEMENTSOF(shell_rc_files)] = {};
        size_t n = 0;
        int r = -ENOMEM;

        /* A HOME that /root or /home/ * already covers needs no rules of its own. */
        if (home && !gate_glob_match("/root", home) && !gate_glob_match("/home/*", home))
                dirs[2] = home_glob;
        for (size_t d = 0; d < ELEMENTSOF(dirs); d++)
                for (size_t i = 0; dirs[d] && i < ELEMENTSOF(shell_rc_files); i++) {
                        if (asprintf(&paths[n], "%s/%s", dirs[d], shell_rc_files[i]) < 0) {
                                paths[n] = NULL;
                                goto finish;
                        }
                        n++;
                }
        r = add_file_rule(rules, (const char * const *) paths, n, OPS_MODIFY, DECISION_DENY,
                          "shell start-up files must not be changed");
finish:
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        return r;
}

int gate_policy_document_home(const AgentGateConfig *cfg, const char *work_dir, const char *home,
                              json_object **ret) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *wd = NULL, *hd = NULL, *wd_glob = NULL, *hd_glob = NULL, *hd_escaped = NULL,
                *loop_config = NULL, *loop_dir = NULL;
        json_object *path_rules, *command_rules, *file_rules;
        int r;

        assert(ret);

        if (work_dir) {
                if (work_dir[0] != '/')
                        return -EINVAL;
                wd = path_clean(work_dir);
                if (!wd)
                        return -ENOMEM;
                if (streq(wd, "/"))
                        return -EINVAL;
                wd_glob = gate_glob_escape_join(wd, "/**");
                loop_config = gate_glob_escape_join(wd, "/.loop/config.json");
                loop_dir = gate_glob_escape_join(wd, "/.loop/**");
                if (!wd_glob || !loop_config || !loop_dir)
                        return -ENOMEM;
        }
        if (home) {
                if (home[0] != '/')
                        return -EINVAL;
                hd = path_clean(home);
                if (!hd)
                        return -ENOMEM;
                /* HOME=/ (a passwd entry without a home): allowing "/" "**" would allow everything. */
                if (streq(hd, "/"))
                        hd = mfree(hd);
                else if (!(hd_glob = gate_glob_escape_join(hd, "/**")) || !(hd_escaped = gate_glob_escape_join(hd, "")))
                        return -ENOMEM;
        }

        doc = json_object_new_object();
        if (!doc)
                return -ENOMEM;
        if ((r = json_add(doc, "default_decision",
                          json_object_new_string(decision_to_string(cfg ? cfg->default_decision : DECISION_ALLOW)))) < 0 ||
            (r = json_add(doc, "path_rules", path_rules = json_object_new_array())) < 0 ||
            (r = json_add(doc, "command_rules", command_rules = json_object_new_array())) < 0 ||
            (r = json_add(doc, "file_rules", file_rules = json_object_new_array())) < 0)
                return r;
        if (cfg && cfg->exec_shared_memory_check && (r = json_add(doc, "exec_shared_memory", json_object_new_string("check"))) < 0)
                return r;

        /* Sockets: the channel's rules, then the engine's real socket (never reachable) and the proxy's. On
         * Debian and Fedora /var/run is a symlink to /run, so both spellings are listed. */
        for (size_t i = 0; cfg && i < cfg->n_path_rules; i++)
                if ((r = add_path_rule(path_rules, cfg->path_rules[i].pattern, cfg->path_rules[i].decision,
                                       cfg->path_rules[i].message)) < 0)
                        return r;
        if ((r = add_path_rule(path_rules, "/var/run/docker.sock.host", DECISION_DENY,
                               "the engine's own socket is off limits; use /var/run/docker.sock")) < 0 ||
            (r = add_path_rule(path_rules, "/run/docker.sock.host", DECISION_DENY,
                               "the engine's own socket is off limits; use /var/run/docker.sock")) < 0 ||
            (r = add_path_rule(path_rules, "/var/run/docker.sock", DECISION_ALLOW, NULL)) < 0 ||
            (r = add_path_rule(path_rules, "/run/docker.sock", DECISION_ALLOW, NULL)) < 0)
                return r;

        /* Commands: the channel's rules first, so it can make rm stricter (or looser) than the defaults.
         * Then the rm allows, which compare resolved operands with the workspace and /tmp, so they can
         * never allow "rm -rf /" or "rm -rf /work/../etc" (args_within refuses "/" and needs every operand
         * strictly inside); only then the rm deny, which sees what is left. */
        for (size_t i = 0; cfg && i < cfg->n_command_rules; i++) {
                const CommandRule *c = &cfg->command_rules[i];
                if ((r = add_command_rule(command_rules,
                                          c->commands && c->commands[0] ? (const char * const *) c->commands : NULL,
                                          c->args_patterns && c->args_patterns[0] ? (const char * const *) c->args_patterns : NULL,
                                          NULL, c->decision, c->message)) < 0)
                        return r;
        }
        if (wd && (r = add_command_rule(command_rules, STRV("rm"), NULL, wd, DECISION_ALLOW, NULL)) < 0)
                return r;
        if ((r = add_command_rule(command_rules, STRV("rm"), NULL, "/tmp", DECISION_ALLOW, NULL)) < 0 ||
            (r = add_command_rule(command_rules, STRV("rm"), rm_deny_patterns, NULL, DECISION_DENY,
                                  "recursive rm outside the workspace and /tmp is denied")) < 0)
                return r;

        /* Files: /etc/loop and the project's .loop config first, so that no channel rule can open them
         * (the project config can widen mounts and MCP servers); then the channel's rules; then the
         * default denies; only after those the workspace and HOME allows, so that a .ssh, .aws or
         * .claude/settings.json inside them stays protected; then the remaining default allows. */
        if ((r = add_file_rule(file_rules, STRV("/etc/loop/**"), 1, OPS_ANY, DECISION_DENY,
                               "loop's own configuration is off limits")) < 0)
                return r;
        if (wd && (r = add_file_rule(file_rules, (const char * const[]) { loop_config, loop_dir }, 2, OPS_MODIFY,
                                     DECISION_APPROVE, "changes to the project's loop configuration need approval")) < 0)
                return r;
        for (size_t i = 0; cfg && i < cfg->n_file_rules; i++) {
                const FileRule *f = &cfg->file_rules[i];
                if ((r = add_file_rule(file_rules, (const char * const *) f->paths, strv_length(f->paths),
                                       f->operations, f->decision, f->message)) < 0)
                        return r;
        }
        if ((r = add_default_file_rules(file_rules, default_file_denies, ELEMENTSOF(default_file_denies))) < 0 ||
            (r = add_shell_rc_rule(file_rules, hd, hd_escaped)) < 0 ||
            (r = add_default_file_rules(file_rules, default_file_system_denies,
                                        ELEMENTSOF(default_file_system_denies))) < 0)
                return r;
        if (wd) {
                /* Secret files anywhere in the work dir, also those appearing during the run, which no
                 * mask at the container's start can cover. */
                char *secrets[ELEMENTSOF(work_dir_secret_files)] = {};
                size_t n = 0;

                for (r = 0; n < ELEMENTSOF(work_dir_secret_files); n++)
                        if (!(secrets[n] = gate_glob_escape_join(wd, work_dir_secret_files[n]))) {
                                r = -ENOMEM;
                                break;
                        }
                if (r >= 0)
                        r = add_file_rule(file_rules, (const char * const *) secrets, n, OP(FILE_OP_READ), DECISION_DENY,
                                          "secret files in the work dir are not read (a file rule of the channel "
                                          "that allows it gives one back)");
                for (size_t i = 0; i < n; i++)
                        free(secrets[i]);
                if (r < 0)
                        return r;
        }
        if (wd && (r = add_file_rule(file_rules, (const char * const[]) { wd_glob }, 1, OPS_ANY, DECISION_ALLOW, NULL)) < 0)
                return r;
        if (hd && (r = add_file_rule(file_rules, (const char * const[]) { hd_glob }, 1, OPS_ANY, DECISION_ALLOW, NULL)) < 0)
                return r;
        if ((r = add_default_file_rules(file_rules, default_file_allows, ELEMENTSOF(default_file_allows))) < 0)
                return r;

        *ret = TAKE_PTR(doc);
        return 0;
}

static bool command_always_denied(const GatePolicy *p, const char *name) {
        for (size_t i = 0; i < p->n_command_rules; i++) {
                const GateCommandRule *c = &p->command_rules[i];
                bool match = c->n_commands == 0;

                for (size_t j = 0; !match && j < c->n_commands; j++)
                        match = fnmatch(c->commands[j], name, 0) == 0;
                if (!match)
                        continue;
                if (c->decision != DECISION_DENY)
                        return false;
                if (c->n_regexes == 0 && !c->within)
                        return true;
        }
        return false;
}

bool gate_policy_exec_shared_memory_checked(const GatePolicy *p) {
        return p && p->exec_shared_memory_check;
}

bool gate_policy_exec_reads_memory(const GatePolicy *p) {
        if (!p || p->default_decision != DECISION_ALLOW)
                return true;
        for (size_t i = 0; i < p->n_command_rules; i++) {
                const GateCommandRule *c = &p->command_rules[i];

                if (c->decision != DECISION_DENY || c->n_regexes > 0 || c->within || c->n_commands == 0)
                        return true;
                for (size_t j = 0; j < c->n_commands; j++)
                        if (strpbrk(c->commands[j], "*?[\\/") || !command_always_denied(p, c->commands[j]))
                                return true;
        }
        return false;
}

int gate_policy_denied_commands(const GatePolicy *p, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        for (size_t i = 0; p && i < p->n_command_rules; i++) {
                const GateCommandRule *c = &p->command_rules[i];

                if (c->decision != DECISION_DENY)
                        continue;
                for (size_t j = 0; j < c->n_commands; j++) {
                        const char *n = c->commands[j];

                        if (strpbrk(n, "*?[\\/") || strv_contains(l, n) || !command_always_denied(p, n))
                                continue;
                        if ((r = strv_extend(&l, n)) < 0)
                                return r;
                }
        }
        if (!l && !(l = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

int gate_policy_document_guard(json_object *doc, char * const *paths) {
        _cleanup_(json_object_putp) json_object *rules = NULL;
        json_object *old;
        char **patterns = NULL;
        size_t n = 0, count = strv_length((char **) paths);
        int r = -ENOMEM;

        if (!doc || !json_object_object_get_ex(doc, "file_rules", &old) || !json_object_is_type(old, json_type_array))
                return -EINVAL;
        if (count == 0)
                return 0;
        patterns = calloc(count * 2 + 1, sizeof(char *));
        if (!patterns)
                return -ENOMEM;
        STRV_FOREACH(p, paths) {
                if ((*p)[0] != '/') {
                        r = -EINVAL;
                        goto finish;
                }
                if (!(patterns[n++] = gate_glob_escape_join(*p, "")) || !(patterns[n++] = gate_glob_escape_join(*p, "/**")))
                        goto finish;
        }
        rules = json_object_new_array();
        if (!rules || add_file_rule(rules, (const char * const *) patterns, n, OPS_MODIFY, DECISION_DENY,
                                    "git's control files and the work dir's tool settings must not change or "
                                    "appear: a hook or setting there would run code on the host") < 0)
                goto finish;
        for (size_t i = 0; i < json_object_array_length(old); i++)
                if (json_push(rules, json_object_get(json_object_array_get_idx(old, i))) < 0)
                        goto finish;
        r = json_add(doc, "file_rules", TAKE_PTR(rules));
finish:
        for (size_t i = 0; i < n; i++)
                free(patterns[i]);
        free(patterns);
        return r;
}

int gate_policy_document(const AgentGateConfig *cfg, const char *work_dir, json_object **ret) {
        return gate_policy_document_home(cfg, work_dir, NULL, ret);
}
