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
#include "gate-policy.h"
#include "io-util.h"
#include "json-util.h"
#include "strv.h"

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
        if (!s)
                return _GATE_KIND_INVALID;
        for (size_t i = 0; i < _GATE_KIND_MAX; i++)
                if (streq(gate_kind_table[i], s))
                        return (GateKind) i;
        return _GATE_KIND_INVALID;
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

typedef struct GateGlob {
        char *pattern;
        bool plain;                     /* no wildcard, no escape: strcmp() */
        char *literal;                  /* for a pattern starting with a wildcard: a run every match contains */
        size_t prefix_len;              /* the pattern's first prefix_len bytes begin every match */
        size_t suffix_len;              /* its last suffix_len bytes end every match */
} GateGlob;

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
        size_t within_len;
        Decision decision;
        char *message;
        char id[GATE_RULE_ID_MAX];
} GateCommandRule;

typedef struct GateFileRule {
        GateGlob *paths;
        size_t n_paths;
        unsigned operations;            /* 0: any */
        Decision decision;
        char *message;
        char id[GATE_RULE_ID_MAX];
} GateFileRule;

struct GatePolicy {
        Decision default_decision;
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
                        free(f->paths[j].pattern);
                        free(f->paths[j].literal);
                }
                free(f->paths);
                free(f->message);
        }
        free(p->file_rules);
        return mfree(p);
}

static void verdict_set(GateVerdict *v, Decision d, const char *id, const char *message) {
        v->decision = d;
        (void) snprintf(v->rule_id, sizeof v->rule_id, "%s", id);
        v->message = message;
}

static void verdict_error(GateVerdict *v) {
        verdict_set(v, DECISION_DENY, GATE_RULE_ID_ERROR, "the gate could not judge this request");
}

static void verdict_default(const GatePolicy *p, GateVerdict *v) {
        verdict_set(v, p->default_decision, "default", NULL);
}

/* ---- paths ---- */

/* Appends the components of s to buf[0..*n), resolving "." and ".." lexically ("/.." stays "/"). buf
 * must have room for *n + strlen(s) + 1 bytes. */
static void path_push(char *buf, size_t *n, const char *s) {
        while (*s) {
                size_t l;

                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                l = strcspn(s, "/");
                if (l == 1 && s[0] == '.')
                        ;
                else if (l == 2 && s[0] == '.' && s[1] == '.') {
                        while (*n > 0 && buf[*n - 1] != '/')
                                (*n)--;
                        if (*n > 0)
                                (*n)--;
                } else {
                        buf[(*n)++] = '/';
                        memcpy(buf + *n, s, l);
                        *n += l;
                }
                s += l;
        }
}

static void path_finish(char *buf, size_t n) {
        if (n == 0)
                buf[n++] = '/';
        buf[n] = 0;
}

char *gate_path_clean(const char *path) {
        char *buf;
        size_t n = 0;

        if (!path || path[0] != '/') {
                errno = EINVAL;
                return NULL;
        }
        buf = malloc(strlen(path) + 2);
        if (!buf)
                return NULL;
        path_push(buf, &n, path);
        path_finish(buf, n);
        return buf;
}

/* Cleans path (made absolute against base when relative) into *buf, which is stack (of stack_size
 * bytes) unless the result may not fit; then *ret_heap owns a new buffer. -EINVAL when path is relative
 * and base is not absolute. */
static int path_resolve(const char *base, const char *path, char *stack, size_t stack_size,
                        char **ret_buf, char **ret_heap) {
        bool relative = path[0] != '/';
        size_t need = strlen(path) + 2 + (relative ? strlen(base ?: "") + 1 : 0), n = 0;
        char *buf = stack;

        if (relative && (!base || base[0] != '/'))
                return -EINVAL;
        *ret_heap = NULL;
        if (need > stack_size) {
                buf = *ret_heap = malloc(need);
                if (!buf)
                        return -ENOMEM;
        }
        if (relative)
                path_push(buf, &n, base);
        path_push(buf, &n, path);
        path_finish(buf, n);
        *ret_buf = buf;
        return 0;
}

static const char *path_basename(const char *s) {
        const char *b = strrchr(s, '/');
        return b ? b + 1 : s;
}

/* ---- globs ---- */

/* Parses the bracket expression at p ('['), reports whether c is in it; returns the pointer after the
 * closing ']', or NULL when it is not closed. */
static const char *glob_bracket(const char *p, char c, bool *ret_match) {
        bool negate = false, match = false, first = true;

        p++;
        if (*p == '!' || *p == '^') {
                negate = true;
                p++;
        }
        for (;; first = false) {
                unsigned char lo, hi;

                if (!*p)
                        return NULL;
                if (*p == ']' && !first)
                        break;
                if (p[0] == '[' && p[1] == ':') {
                        static const struct {
                                const char *name;
                                int (*is)(int);
                        } classes[] = {
                                { "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
                                { "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
                                { "lower", islower }, { "print", isprint }, { "punct", ispunct },
                                { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
                        };
                        const char *e = strstr(p + 2, ":]");
                        size_t l;
                        bool known = false;

                        if (!e)
                                return NULL;
                        l = (size_t) (e - (p + 2));
                        for (size_t i = 0; i < ELEMENTSOF(classes); i++)
                                if (strlen(classes[i].name) == l && strncmp(classes[i].name, p + 2, l) == 0) {
                                        known = true;
                                        if (classes[i].is((unsigned char) c))
                                                match = true;
                                }
                        if (!known)
                                return NULL;
                        p = e + 2;
                        continue;
                }
                if (*p == '\\' && p[1])
                        p++;
                lo = hi = (unsigned char) *p++;
                if (p[0] == '-' && p[1] && p[1] != ']') {
                        p++;
                        if (*p == '\\' && p[1])
                                p++;
                        hi = (unsigned char) *p++;
                }
                if ((unsigned char) c >= lo && (unsigned char) c <= hi)
                        match = true;
        }
        *ret_match = match != negate;
        return p + 1;
}

/* NULL when pattern is a valid glob, else why not. */
static const char *glob_check(const char *pattern) {
        if (isempty(pattern))
                return "empty pattern";
        for (const char *p = pattern; *p; p++) {
                bool m;

                if (*p == '\\') {
                        if (!p[1])
                                return "invalid glob (trailing '\\')";
                        p++;
                } else if (*p == '[') {
                        const char *e = glob_bracket(p, 'a', &m);
                        if (!e)
                                return "invalid glob (unclosed '[')";
                        p = e - 1;
                }
        }
        return NULL;
}

enum {
        GLOB_MATCH,
        GLOB_NOMATCH,
        GLOB_ABORT_ALL,                 /* the text ran out under a star: no outer star can do better */
        GLOB_ABORT_TO_STARSTAR,         /* a "*" met a '/': only an outer "**" can still help */
};

/* The wildmatch idea (as in rsync and git): a star that has tried every position up to the end of the
 * text tells the stars around it to stop, which keeps matching polynomial. */
static int glob_match_at(const char *p, const char *t) {
        for (;; p++, t++) {
                switch (*p) {
                case 0:
                        return *t ? GLOB_NOMATCH : GLOB_MATCH;

                case '/':
                        /* A "**" component after this '/' may stand for no component at all. */
                        if (p[1] == '*' && p[2] == '*' && (p[3] == '/' || p[3] == 0) &&
                            glob_match_at(p + 3, t) == GLOB_MATCH)
                                return GLOB_MATCH;
                        if (*t != '/')
                                return GLOB_NOMATCH;
                        break;

                case '?':
                        if (!*t || *t == '/')
                                return GLOB_NOMATCH;
                        break;

                case '[': {
                        bool m = false;
                        const char *e = glob_bracket(p, *t, &m);
                        if (!e) {               /* not a class: a literal '[' (compile refuses these) */
                                if (*t != '[')
                                        return GLOB_NOMATCH;
                                break;
                        }
                        if (!*t || *t == '/' || !m)
                                return GLOB_NOMATCH;
                        p = e - 1;
                        break;
                }

                case '*': {
                        bool cross = p[1] == '*';

                        while (*p == '*')
                                p++;
                        if (!*p)
                                return cross || !strchr(t, '/') ? GLOB_MATCH : GLOB_NOMATCH;
                        for (;;) {
                                int r = glob_match_at(p, t);
                                if (r != GLOB_NOMATCH && (!cross || r != GLOB_ABORT_TO_STARSTAR))
                                        return r;
                                if (!*t)
                                        return GLOB_ABORT_ALL;
                                if (!cross && *t == '/')
                                        return GLOB_ABORT_TO_STARSTAR;
                                t++;
                        }
                }

                case '\\':
                        if (p[1])
                                p++;
                        __attribute__((fallthrough));
                default:
                        if (*t != *p)
                                return GLOB_NOMATCH;
                        break;
                }
        }
}

bool gate_glob_match(const char *pattern, const char *path) {
        if (!pattern || !path)
                return false;
        return glob_match_at(pattern, path) == GLOB_MATCH;
}

/* The longest run of plain characters of pattern; a '/' that may stand for nothing (before "**") ends
 * a run. *ret is NULL when there is none worth a strstr(). */
static int glob_literal(const char *pattern, char **ret) {
        const char *best = NULL, *run = NULL;
        size_t best_len = 0;

        for (const char *p = pattern;; p++) {
                bool plain = *p && !strchr("*?[\\", *p) && !(p[0] == '/' && p[1] == '*' && p[2] == '*');

                if (plain && !run)
                        run = p;
                if (!plain && run) {
                        if ((size_t) (p - run) > best_len) {
                                best = run;
                                best_len = (size_t) (p - run);
                        }
                        run = NULL;
                }
                if (!*p)
                        break;
                if (*p == '\\' && p[1])
                        p++;
                else if (*p == '[') {
                        bool m;
                        const char *e = glob_bracket(p, 'a', &m);
                        if (e)
                                p = e - 1;
                }
        }
        *ret = NULL;
        if (best_len < 2)
                return 0;
        *ret = strndup(best, best_len);
        return *ret ? 0 : -ENOMEM;
}

/* The plain characters a pattern starts and ends with, which every path it matches starts and ends with:
 * most rules are then refused by two comparisons. The prefix ends at the first wildcard, and before a '/'
 * that a star follows (a "**" after "/etc/" may stand for nothing: it matches "/etc" too); the suffix
 * starts after the last wildcard (a star, a '?' or a bracket expression). A pattern with escapes gets
 * neither. */
static void glob_ends(const char *pattern, size_t *ret_prefix, size_t *ret_suffix) {
        size_t n = strlen(pattern), prefix = n, wild_end = 0;

        *ret_prefix = *ret_suffix = 0;
        if (strchr(pattern, '\\'))
                return;
        for (size_t i = 0; i < n; i++) {
                bool m;

                if (pattern[i] == '*' || pattern[i] == '?' || (pattern[i] == '/' && pattern[i + 1] == '*'))
                        prefix = MIN(prefix, i);
                if (pattern[i] == '*' || pattern[i] == '?')
                        wild_end = i + 1;
                else if (pattern[i] == '[') {
                        const char *e = glob_bracket(pattern + i, 'a', &m);

                        prefix = MIN(prefix, i);
                        if (e) {
                                wild_end = (size_t) (e - pattern);
                                i = wild_end - 1;
                        }
                }
        }
        *ret_prefix = prefix;
        *ret_suffix = n - wild_end;
}

static int glob_compile(const char *pattern, GateGlob *ret) {
        _cleanup_free_ char *copy = strdup(pattern), *literal = NULL;
        size_t prefix, suffix;

        if (!copy)
                return -ENOMEM;
        /* Only a leading wildcard needs the hint: otherwise the first characters already decide. */
        if (strchr("*?[", pattern[0]) && glob_literal(pattern, &literal) < 0)
                return -ENOMEM;
        glob_ends(pattern, &prefix, &suffix);
        *ret = (GateGlob) {
                .plain = !strpbrk(pattern, "*?[\\"),
                .pattern = TAKE_PTR(copy),
                .literal = TAKE_PTR(literal),
                .prefix_len = prefix,
                .suffix_len = suffix,
        };
        return 0;
}

static bool glob_matches(const GateGlob *g, const char *path, size_t path_len) {
        if (g->plain)
                return streq(g->pattern, path);
        if (g->prefix_len > 0 && strncmp(path, g->pattern, g->prefix_len) != 0)
                return false;
        if (g->suffix_len > 0 &&
            (path_len < g->suffix_len ||
             memcmp(path + path_len - g->suffix_len, g->pattern + strlen(g->pattern) - g->suffix_len, g->suffix_len) != 0))
                return false;
        if (g->literal && !strstr(path, g->literal))
                return false;
        return glob_match_at(g->pattern, path) == GLOB_MATCH;
}

/* ---- compiling ---- */

/* A value quoted for a one-line reason: control characters escaped, long values cut. */
static const char *quote(const char *s, char *buf, size_t size) {
        size_t n = 0, i = 0;

        buf[n++] = '"';
        for (; s[i] && n + 8 < size; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        buf[n++] = '\\';
                        buf[n++] = (char) c;
                } else if (c < 0x20 || c == 0x7f)
                        n += (size_t) snprintf(buf + n, size - n, "\\x%02x", c);
                else
                        buf[n++] = (char) c;
        }
        if (s[i]) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n++] = '"';
        buf[n] = 0;
        return buf;
}

#define QUOTE(s) quote((s), (char[96]) {}, 96)

typedef struct Compiler {
        char *error;
} Compiler;

_printf_(2, 3)
static int compile_fail(Compiler *c, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&c->error, format, ap);
        va_end(ap);
        if (r < 0) {
                c->error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

static const char *json_type_name_of(json_object *o) {
        return json_type_to_name(json_object_get_type(o));
}

static int compile_keys(Compiler *c, json_object *o, const char *where, const char * const *known) {
        json_object_object_foreach(o, key, val) {
                bool found = false;
                (void) val;
                for (const char * const *k = known; *k; k++)
                        if (streq(*k, key))
                                found = true;
                if (!found)
                        return compile_fail(c, "%s: unknown key %s", where, QUOTE(key));
        }
        return 0;
}

static int compile_decision(Compiler *c, json_object *o, const char *where, Decision *ret) {
        json_object *v;
        Decision d;

        if (!json_object_object_get_ex(o, "decision", &v))
                return compile_fail(c, "%s.decision: missing", where);
        if (!json_object_is_type(v, json_type_string))
                return compile_fail(c, "%s.decision: must be a string, not %s", where, json_type_name_of(v));
        d = decision_from_string(json_object_get_string(v));
        if (d < 0)
                return compile_fail(c, "%s.decision: unknown decision %s (allow, deny or approve)", where,
                                    QUOTE(json_object_get_string(v)));
        *ret = d;
        return 0;
}

static int compile_message(Compiler *c, json_object *o, const char *where, char **ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, "message", &v) || json_object_is_type(v, json_type_null)) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return compile_fail(c, "%s.message: must be a string, not %s", where, json_type_name_of(v));
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

/* The array of strings at key (absent: empty); *ret_array is NULL when empty. */
static int compile_strings(Compiler *c, json_object *o, const char *where, const char *key,
                           json_object **ret_array, size_t *ret_n) {
        json_object *v;
        size_t n;

        *ret_array = NULL;
        *ret_n = 0;
        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return compile_fail(c, "%s.%s: must be an array of strings, not %s", where, key,
                                    json_type_name_of(v));
        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!json_object_is_type(e, json_type_string))
                        return compile_fail(c, "%s.%s[%zu]: must be a string, not %s", where, key, i,
                                            json_type_name_of(e));
        }
        *ret_array = n > 0 ? v : NULL;
        *ret_n = n;
        return 0;
}

static int compile_rules_array(Compiler *c, json_object *doc, const char *key, json_object **ret, size_t *ret_n) {
        json_object *v;
        size_t n;

        *ret = NULL;
        *ret_n = 0;
        if (!json_object_object_get_ex(doc, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return compile_fail(c, "%s: must be an array, not %s", key, json_type_name_of(v));
        n = json_object_array_length(v);
        if (n > GATE_POLICY_RULES_MAX)
                return compile_fail(c, "%s: %zu rules, more than the %u allowed", key, n, GATE_POLICY_RULES_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!json_object_is_type(e, json_type_object))
                        return compile_fail(c, "%s[%zu]: must be an object, not %s", key, i, json_type_name_of(e));
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int compile_path_rule(Compiler *c, json_object *o, size_t i, GatePathRule *rule) {
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
                return compile_fail(c, "%s.pattern: missing", where);
        if (!json_object_is_type(v, json_type_string))
                return compile_fail(c, "%s.pattern: must be a string, not %s", where, json_type_name_of(v));
        s = json_object_get_string(v);
        if (isempty(s))
                return compile_fail(c, "%s.pattern: empty pattern", where);
        if (s[0] != '/' && s[0] != '@')
                return compile_fail(c, "%s.pattern: %s is neither an absolute socket path nor @name", where,
                                    QUOTE(s));
        rule->pattern = s[0] == '/' ? gate_path_clean(s) : strdup(s);
        if (!rule->pattern)
                return -ENOMEM;
        if ((r = compile_decision(c, o, where, &rule->decision)) < 0 ||
            (r = compile_message(c, o, where, &rule->message)) < 0)
                return r;
        return 0;
}

static int compile_command_rule(Compiler *c, json_object *o, size_t i, GateCommandRule *rule) {
        static const char * const keys[] = { "commands", "args_patterns", "args_within", "decision", "message", NULL };
        json_object *commands, *patterns, *v;
        size_t n_commands, n_patterns;
        char where[64];
        int r;

        (void) snprintf(where, sizeof where, "command_rules[%zu]", i);
        (void) snprintf(rule->id, sizeof rule->id, "cmd[%zu]", i);
        if ((r = compile_keys(c, o, where, keys)) < 0 ||
            (r = compile_strings(c, o, where, "commands", &commands, &n_commands)) < 0 ||
            (r = compile_strings(c, o, where, "args_patterns", &patterns, &n_patterns)) < 0)
                return r;

        if (n_commands > 0) {
                rule->commands = calloc(n_commands + 1, sizeof(char *));
                if (!rule->commands)
                        return -ENOMEM;
        }
        for (size_t j = 0; j < n_commands; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(commands, j));
                const char *why = glob_check(s);
                if (why)
                        return compile_fail(c, "%s.commands[%zu]: %s %s", where, j, why, QUOTE(s));
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
                        return compile_fail(c, "%s.args_patterns[%zu]: empty pattern", where, j);
                r = regcomp(&rule->regexes[j], s, REG_EXTENDED | REG_NOSUB);
                if (r == REG_ESPACE)
                        return -ENOMEM;
                if (r != 0) {
                        (void) regerror(r, &rule->regexes[j], msg, sizeof msg);
                        return compile_fail(c, "%s.args_patterns[%zu]: invalid regular expression %s: %s",
                                            where, j, QUOTE(s), msg);
                }
                rule->n_regexes++;
        }

        if (json_object_object_get_ex(o, "args_within", &v)) {
                const char *s;

                if (!json_object_is_type(v, json_type_string))
                        return compile_fail(c, "%s.args_within: must be a string, not %s", where,
                                            json_type_name_of(v));
                s = json_object_get_string(v);
                if (isempty(s))
                        return compile_fail(c, "%s.args_within: empty directory", where);
                if (s[0] != '/')
                        return compile_fail(c, "%s.args_within: %s is not an absolute directory", where, QUOTE(s));
                rule->within = gate_path_clean(s);
                if (!rule->within)
                        return -ENOMEM;
                if (streq(rule->within, "/"))
                        return compile_fail(c, "%s.args_within: the root directory would contain everything", where);
                rule->within_len = strlen(rule->within);
        }

        if ((r = compile_decision(c, o, where, &rule->decision)) < 0 ||
            (r = compile_message(c, o, where, &rule->message)) < 0)
                return r;
        return 0;
}

static int compile_file_rule(Compiler *c, json_object *o, size_t i, GateFileRule *rule) {
        static const char * const keys[] = { "paths", "operations", "decision", "message", NULL };
        json_object *paths, *ops;
        size_t n_paths, n_ops;
        char where[64];
        int r;

        (void) snprintf(where, sizeof where, "file_rules[%zu]", i);
        (void) snprintf(rule->id, sizeof rule->id, "file[%zu]", i);
        if ((r = compile_keys(c, o, where, keys)) < 0 ||
            (r = compile_strings(c, o, where, "paths", &paths, &n_paths)) < 0 ||
            (r = compile_strings(c, o, where, "operations", &ops, &n_ops)) < 0)
                return r;
        /* An empty list would match every path: a rule that means that must say "/" "**". */
        if (n_paths == 0)
                return compile_fail(c, "%s.paths: must list at least one glob", where);

        rule->paths = calloc(n_paths, sizeof(GateGlob));
        if (!rule->paths)
                return -ENOMEM;
        for (size_t j = 0; j < n_paths; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(paths, j));
                const char *why = glob_check(s);
                if (why)
                        return compile_fail(c, "%s.paths[%zu]: %s %s", where, j, why, QUOTE(s));
                r = glob_compile(s, &rule->paths[j]);
                if (r < 0)
                        return r;
                rule->n_paths++;
        }
        for (size_t j = 0; j < n_ops; j++) {
                const char *s = json_object_get_string(json_object_array_get_idx(ops, j));
                FileOp op = file_op_from_string(s);
                if (op < 0)
                        return compile_fail(c, "%s.operations[%zu]: unknown operation %s", where, j, QUOTE(s));
                rule->operations |= 1U << op;
        }
        if ((r = compile_decision(c, o, where, &rule->decision)) < 0 ||
            (r = compile_message(c, o, where, &rule->message)) < 0)
                return r;
        return 0;
}

int gate_policy_compile(json_object *doc, GatePolicy **ret, char **ret_error) {
        static const char * const keys[] = { "default_decision", "path_rules", "command_rules", "file_rules", NULL };
        _cleanup_(gate_policy_freep) GatePolicy *p = NULL;
        json_object *v, *path_rules, *command_rules, *file_rules;
        size_t n_path, n_command, n_file;
        Compiler c = {};
        int r;

        assert(ret);

        if (!doc || !json_object_is_type(doc, json_type_object)) {
                r = compile_fail(&c, "policy: must be a JSON object, not %s", doc ? json_type_name_of(doc) : "null");
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
                        r = compile_fail(&c, "default_decision: must be a string, not %s", json_type_name_of(v));
                        goto finish;
                }
                p->default_decision = decision_from_string(json_object_get_string(v));
                if (p->default_decision < 0) {
                        r = compile_fail(&c, "default_decision: unknown decision %s (allow, deny or approve)",
                                         QUOTE(json_object_get_string(v)));
                        goto finish;
                }
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
                if (path_resolve(NULL, socket_path, stack, sizeof stack, &buf, &heap) < 0)
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

void gate_policy_check_file(const GatePolicy *p, FileOp op, const char *path, GateVerdict *ret) {
        char stack[GATE_STACK_BUF], *clean;
        size_t clean_len;
        _cleanup_free_ char *heap = NULL;

        assert(p);
        assert(ret);

        if (op < 0 || op >= _FILE_OP_MAX || !path || path[0] != '/')
                { verdict_error(ret); return; }
        /* The supervisor cleans already; doing it again costs one pass and closes "/etc/./shadow". */
        if (path_resolve(NULL, path, stack, sizeof stack, &clean, &heap) < 0)
                { verdict_error(ret); return; }

        clean_len = strlen(clean);
        for (size_t i = 0; i < p->n_file_rules; i++) {
                const GateFileRule *f = &p->file_rules[i];
                if (f->operations != 0 && !(f->operations & (1U << op)))
                        continue;
                for (size_t j = 0; j < f->n_paths; j++)
                        if (glob_matches(&f->paths[j], clean, clean_len))
                                { verdict_set(ret, f->decision, f->id, f->message); return; }
        }
        verdict_default(p, ret);
}

/* ---- exec: unwrapping ---- */

typedef enum WrapperKind {
        WRAPPER_GETOPT,                 /* options first (getopt with "+"), then operands, then the command */
        WRAPPER_SCRIPT,                 /* no command operand: the command is the -c string */
        WRAPPER_LOADER,                 /* ld.so: exact long options; anything else is the program */
} WrapperKind;

typedef struct Wrapper {
        const char *name;
        bool prefix;                    /* name is a prefix (ld-linux*) */
        WrapperKind kind;
        const char *short_value;        /* short options that take a value */
        const char *short_flag;         /* short options that do not */
        const char * const *long_value;
        const char * const *long_flag;  /* including those whose value is optional (only "=VALUE") */
        unsigned positionals;           /* operands before the command: a duration, a mask, a priority */
        bool numeric_positional;        /* chrt: the priority is there only when it is a number */
        bool assignments;               /* NAME=VALUE operands before the command */
        bool dash_is_flag;              /* env: a lone "-" means -i */
        bool numeric_flags;             /* nice: -5, --5 */
        char split_short;               /* env -S: the value is split into words and read as arguments */
        const char *split_long;
        char command_short;             /* script -c: the value is a shell command */
        const char *command_long;
} Wrapper;

#define STRV(...) ((const char * const[]) { __VA_ARGS__, NULL })
#define HELP_VERSION "help", "version"

static const Wrapper wrappers[] = {
        { .name = "env", .short_value = "CSua", .short_flag = "iv0",
          .long_value = STRV("chdir", "split-string", "unset", "argv0"),
          .long_flag = STRV("ignore-environment", "null", "debug", "default-signal", "ignore-signal",
                            "block-signal", "list-signal-handling", HELP_VERSION),
          .assignments = true, .dash_is_flag = true, .split_short = 'S', .split_long = "split-string" },
        /* -h is --help, or --host with an attached value: left out of both lists, it is read both ways. */
        { .name = "sudo", .short_value = "aCcDgpRrTtUu", .short_flag = "AbBEeHiKklNnPSsVv",
          .long_value = STRV("auth-type", "close-from", "login-class", "chdir", "group", "host", "prompt",
                             "chroot", "role", "type", "command-timeout", "other-user", "user"),
          .long_flag = STRV("askpass", "background", "bell", "preserve-env", "edit", "set-home", "login",
                            "remove-timestamp", "reset-timestamp", "list", "non-interactive",
                            "preserve-groups", "stdin", "shell", "validate", HELP_VERSION),
          .assignments = true },
        { .name = "nice", .short_value = "n", .short_flag = "",
          .long_value = STRV("adjustment"), .long_flag = STRV(HELP_VERSION), .numeric_flags = true },
        { .name = "ionice", .short_value = "cnpPu", .short_flag = "thV",
          .long_value = STRV("class", "classdata", "pid", "pgid", "uid"), .long_flag = STRV("ignore", HELP_VERSION) },
        { .name = "chrt", .short_value = "DPT", .short_flag = "abdefhimoprRvV",
          .long_value = STRV("sched-runtime", "sched-period", "sched-deadline"),
          .long_flag = STRV("all-tasks", "batch", "deadline", "ext", "fifo", "idle", "max", "other", "pid", "rr",
                            "reset-on-fork", "verbose", HELP_VERSION),
          .positionals = 1, .numeric_positional = true },
        { .name = "timeout", .short_value = "ks", .short_flag = "fpv",
          .long_value = STRV("kill-after", "signal"),
          .long_flag = STRV("foreground", "preserve-status", "verbose", HELP_VERSION), .positionals = 1 },
        { .name = "nohup", .short_value = "", .short_flag = "",
          .long_value = STRV(NULL), .long_flag = STRV(HELP_VERSION) },
        { .name = "unshare", .short_value = "GRSw", .short_flag = "CcfhimnprTUuV",
          .long_value = STRV("propagation", "setgroups", "setuid", "setgid", "root", "wd", "monotonic",
                             "boottime", "map-user", "map-group", "map-users", "map-groups", "load-interp"),
          .long_flag = STRV("mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "fork", "kill-child",
                            "mount-proc", "mount-binfmt", "map-root-user", "map-current-user", "map-auto",
                            "keep-caps", HELP_VERSION) },
        { .name = "setsid", .short_value = "", .short_flag = "cfhVw",
          .long_value = STRV(NULL), .long_flag = STRV("ctty", "fork", "wait", HELP_VERSION) },
        { .name = "taskset", .short_value = "", .short_flag = "achpV",
          .long_value = STRV(NULL), .long_flag = STRV("all-tasks", "cpu-list", "pid", HELP_VERSION),
          .positionals = 1 },
        { .name = "stdbuf", .short_value = "eio", .short_flag = "",
          .long_value = STRV("input", "output", "error"), .long_flag = STRV(HELP_VERSION) },
        { .name = "script", .kind = WRAPPER_SCRIPT, .short_value = "BcEIOmoT", .short_flag = "aefhqtV",
          .long_value = STRV("command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format",
                             "output-limit"),
          .long_flag = STRV("append", "return", "flush", "force", "quiet", "timing", HELP_VERSION),
          .command_short = 'c', .command_long = "command" },
        { .name = "ld-linux", .prefix = true, .kind = WRAPPER_LOADER,
          .long_value = STRV("library-path", "inhibit-rpath", "audit", "preload", "argv0",
                             "glibc-hwcaps-prefix", "glibc-hwcaps-mask"),
          .long_flag = STRV("list", "verify", "inhibit-cache", "list-tunables", "list-diagnostics", HELP_VERSION) },
        { .name = "ld-musl-", .prefix = true, .kind = WRAPPER_LOADER,
          .long_value = STRV("library-path", "preload", "argv0"), .long_flag = STRV("list") },
};

static const Wrapper *wrapper_find(const char *arg) {
        const char *base = path_basename(arg);

        for (size_t i = 0; i < ELEMENTSOF(wrappers); i++)
                if (wrappers[i].prefix ? !!startswith(base, wrappers[i].name) : streq(base, wrappers[i].name))
                        return &wrappers[i];
        return NULL;
}

typedef enum OptionShape {
        OPTION_FLAG,
        OPTION_VALUE,
        OPTION_UNKNOWN,
} OptionShape;

/* What getopt_long() would make of --NAME (name_len bytes): an exact match, else a unique prefix
 * (prefixes that agree on the shape count as unique, as getopt itself only refuses real ambiguity). */
static OptionShape long_option_shape(const Wrapper *w, const char *name, size_t len, const char **ret_option) {
        const char *value = NULL, *flag = NULL;
        unsigned n_value = 0, n_flag = 0;

        *ret_option = NULL;
        if (len == 0)
                return OPTION_UNKNOWN;
        for (const char * const *o = w->long_value; *o; o++)
                if (strncmp(*o, name, len) == 0) {
                        if ((*o)[len] == 0) {
                                *ret_option = *o;
                                return OPTION_VALUE;
                        }
                        value = *o;
                        n_value++;
                }
        for (const char * const *o = w->long_flag; *o; o++)
                if (strncmp(*o, name, len) == 0) {
                        if ((*o)[len] == 0) {
                                *ret_option = *o;
                                return OPTION_FLAG;
                        }
                        flag = *o;
                        n_flag++;
                }
        if (w->kind == WRAPPER_LOADER)          /* ld.so knows no abbreviations */
                return OPTION_UNKNOWN;
        if (n_value > 0 && n_flag == 0) {
                *ret_option = n_value == 1 ? value : NULL;
                return OPTION_VALUE;
        }
        if (n_flag > 0 && n_value == 0) {
                *ret_option = n_flag == 1 ? flag : NULL;
                return OPTION_FLAG;
        }
        return OPTION_UNKNOWN;
}

typedef struct Candidate {
        char * const *argv;
        size_t index;
} Candidate;

typedef struct Unwrap {
        bool primary;                   /* only the most likely reading, no splitting (gate_unwrap_argv()) */
        Candidate items[GATE_UNWRAP_CANDIDATES_MAX];
        size_t n;
        unsigned steps;
        void *allocs[2 * GATE_UNWRAP_STEPS_MAX];
        size_t n_allocs;
        int error;
} Unwrap;

static void unwrap_done(Unwrap *u) {
        for (size_t i = 0; i < u->n_allocs; i++)
                free(u->allocs[i]);
        u->n_allocs = 0;
}

static void *unwrap_keep(Unwrap *u, void *p) {
        if (!p) {
                u->error = -ENOMEM;
                return NULL;
        }
        if (u->n_allocs >= ELEMENTSOF(u->allocs)) {
                free(p);
                u->error = -E2BIG;
                return NULL;
        }
        return u->allocs[u->n_allocs++] = p;
}

static bool unwrap_step(Unwrap *u) {
        if (u->error < 0)
                return false;
        if (++u->steps > GATE_UNWRAP_STEPS_MAX) {
                u->error = -E2BIG;
                return false;
        }
        return true;
}

static void unwrap_add(Unwrap *u, char * const *argv, size_t index) {
        if (u->error < 0)
                return;
        for (size_t i = 0; i < u->n; i++)
                if (u->items[i].argv == argv && u->items[i].index == index)
                        return;
        if (u->n >= ELEMENTSOF(u->items)) {
                u->error = -E2BIG;
                return;
        }
        u->items[u->n++] = (Candidate) { argv, index };
}

static void unwrap_chain(Unwrap *u, char * const *argv, size_t i, size_t wrapper, unsigned depth);
static void unwrap_options(Unwrap *u, const Wrapper *w, char * const *argv, size_t wi, size_t j,
                           bool options_done, unsigned positionals, unsigned depth);

/* Splits a command string into words: whitespace separates, quotes and backslashes as in sh, '#' at the
 * start of a word ends it all. With shell, the separators of sh (; & | ( ) ` and newline) also end a
 * command; the result is then a list of NULL-terminated word lists, one per command, ended by an empty
 * one. Returns the number of entries written (both passes count the same), buf and words NULL to count. */
static size_t split_words(const char *s, bool shell, char *buf, char **words, size_t *ret_chars) {
        size_t n = 0, chars = 0;
        bool in_word = false, segment_empty = true;

#define WORD_START() do {                                                       \
                if (!in_word) {                                                 \
                        if (words)                                              \
                                words[n] = buf + chars;                         \
                        n++;                                                    \
                        in_word = true;                                         \
                        segment_empty = false;                                  \
                }                                                               \
        } while (0)
#define WORD_PUT(ch) do {                                                       \
                WORD_START();                                                   \
                if (buf)                                                        \
                        buf[chars] = (ch);                                      \
                chars++;                                                        \
        } while (0)
#define WORD_END() do {                                                         \
                if (in_word) {                                                  \
                        if (buf)                                                \
                                buf[chars] = 0;                                 \
                        chars++;                                                \
                        in_word = false;                                        \
                }                                                               \
        } while (0)
#define SEGMENT_END() do {                                                      \
                if (!segment_empty) {                                           \
                        if (words)                                              \
                                words[n] = NULL;                                \
                        n++;                                                    \
                        segment_empty = true;                                   \
                }                                                               \
        } while (0)

        for (const char *p = s; *p; p++) {
                if (*p == ' ' || *p == '\t' || (*p == '\n' && !shell))
                        WORD_END();
                else if (shell && strchr(";&|()`\n", *p)) {
                        WORD_END();
                        SEGMENT_END();
                } else if (*p == '#' && !in_word)
                        break;
                else if (*p == '\'') {
                        WORD_START();           /* '' is an empty word */
                        for (p++; *p && *p != '\''; p++)
                                WORD_PUT(*p);
                        if (!*p)
                                break;
                } else if (*p == '"') {
                        WORD_START();
                        for (p++; *p && *p != '"'; p++) {
                                if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                                        p++;
                                WORD_PUT(*p);
                        }
                        if (!*p)
                                break;
                } else if (*p == '\\' && p[1]) {
                        p++;
                        WORD_PUT(*p);
                } else
                        WORD_PUT(*p);
        }
        WORD_END();
        SEGMENT_END();
        if (words)
                words[n] = NULL;        /* the empty list that ends them */
        n++;
        *ret_chars = chars;
        return n;
#undef WORD_START
#undef WORD_PUT
#undef WORD_END
#undef SEGMENT_END
}

/* One allocation holding the word pointers and the characters. */
static char **split_words_new(Unwrap *u, const char *s, bool shell, size_t *ret_n) {
        size_t chars, n = split_words(s, shell, NULL, NULL, &chars);
        char **words = unwrap_keep(u, malloc(n * sizeof(char *) + chars + 1));

        if (!words)
                return NULL;
        (void) split_words(s, shell, (char *) (words + n), words, &chars);
        *ret_n = n;
        return words;
}

static bool is_assignment(const char *s) {
        if (!(isalpha((unsigned char) s[0]) || s[0] == '_'))
                return false;
        for (s++; *s != '='; s++)
                if (!(isalnum((unsigned char) *s) || *s == '_'))
                        return false;
        return true;
}

/* script -c CMD: every simple command of CMD is a candidate. The shell the command runs in execs each
 * of them again under the same filter, so this is about the verdict for script itself. */
static void unwrap_shell_command(Unwrap *u, const char *command, unsigned depth) {
        static const char * const keywords[] = {
                "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "exec", "command",
                "builtin", "time", "eval", NULL,
        };
        size_t n;
        char **words;

        if (depth + 1 > GATE_UNWRAP_DEPTH_MAX) {
                u->error = -ELOOP;
                return;
        }
        words = split_words_new(u, command, true, &n);
        if (!words)
                return;
        for (size_t s = 0; s < n && words[s]; ) {
                size_t k = s;
                for (; words[k]; k++) {
                        bool keyword = false;
                        for (const char * const *kw = keywords; *kw; kw++)
                                if (streq(*kw, words[k]))
                                        keyword = true;
                        if (!keyword && !(strchr(words[k], '=') && is_assignment(words[k])))
                                break;
                }
                if (words[k])
                        unwrap_chain(u, words, k, SIZE_MAX, depth + 1);
                while (words[k])
                        k++;
                s = k + 1;
        }
}

static void unwrap_script(Unwrap *u, const Wrapper *w, char * const *argv, size_t wi, unsigned depth) {
        bool found = false;
        size_t j = wi + 1;

        /* script's getopt permutes: a -c may come anywhere before "--". Every -c counts, even one that
         * another option might have swallowed as its value: more candidates only make the check stricter. */
        for (; argv[j]; j++) {
                const char *a = argv[j], *value = NULL;
                size_t value_index = j;

                if (streq(a, "--"))
                        break;
                if (a[0] != '-' || !a[1])
                        continue;
                if (a[1] == '-') {
                        const char *name = a + 2, *eq = strchr(name, '='), *option;
                        size_t len = eq ? (size_t) (eq - name) : strlen(name);
                        if (long_option_shape(w, name, len, &option) != OPTION_VALUE || !streq_ptr(option, w->command_long))
                                continue;
                        value = eq ? eq + 1 : argv[j + 1];
                        value_index = eq ? j : j + 1;
                } else
                        for (const char *c = a + 1; *c; c++) {
                                if (*c == w->command_short) {
                                        value = c[1] ? c + 1 : argv[j + 1];
                                        value_index = c[1] ? j : j + 1;
                                        break;
                                }
                                if (strchr(w->short_value, *c))
                                        break;
                        }
                if (!value)
                        continue;
                found = true;
                if (u->primary)
                        { unwrap_add(u, argv, value_index); return; }
                unwrap_shell_command(u, value, depth);
        }
        if (!found)             /* script runs a shell: script itself is what is executed */
                unwrap_add(u, argv, u->primary ? j + strv_length((char **) argv + j) : wi);
}

/* env -S STRING: the words of STRING take the place of the option, followed by the rest of argv. */
static void unwrap_split(Unwrap *u, const Wrapper *w, char * const *argv, size_t wi, const char *value,
                         size_t rest, unsigned depth) {
        size_t n_words, n_rest = 0, k = 0;
        char **words, **v;

        if (depth + 1 > GATE_UNWRAP_DEPTH_MAX) {
                u->error = -ELOOP;
                return;
        }
        words = split_words_new(u, value, false, &n_words);
        if (!words)
                return;
        while (argv[rest + n_rest])
                n_rest++;
        v = unwrap_keep(u, malloc((1 + n_words + n_rest + 1) * sizeof(char *)));
        if (!v)
                return;
        v[k++] = argv[wi];
        for (size_t i = 0; words[i]; i++)
                v[k++] = words[i];
        for (size_t i = 0; i < n_rest; i++)
                v[k++] = argv[rest + i];
        v[k] = NULL;

        /* Counts as one level, like script -c, so that "-S" inside the string cannot recurse forever. */
        unwrap_options(u, w, v, 0, 1, false, 0, depth + 1);
}

static bool is_number(const char *s) {
        if (*s == '+' || *s == '-')
                s++;
        if (!*s)
                return false;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return false;
        return true;
}

/* Walks the arguments of wrapper argv[wi] from j on, until its command. An option whose shape is not
 * known is read both ways (a flag; an option taking the next word) and both readings are followed. */
static void unwrap_options(Unwrap *u, const Wrapper *w, char * const *argv, size_t wi, size_t j,
                           bool options_done, unsigned positionals, unsigned depth) {
        if (!unwrap_step(u))
                return;

        for (;;) {
                const char *a = argv[j];

                if (!a) {
                        /* Nothing left to run: the wrapper itself is the command ("env" prints, "nohup"
                         * complains), and gate_unwrap_argv() says "nothing" with the count. */
                        unwrap_add(u, argv, u->primary ? j : wi);
                        return;
                }

                if (!options_done && streq(a, "--")) {
                        options_done = true;
                        j++;
                        continue;
                }
                if (!options_done && w->dash_is_flag && streq(a, "-")) {
                        j++;
                        continue;
                }

                if (!options_done && a[0] == '-' && a[1]) {
                        if (w->kind == WRAPPER_LOADER && a[1] != '-')
                                break;          /* ld.so runs "-x" as the program */

                        if (a[1] == '-') {
                                const char *name = a + 2, *eq = strchr(name, '='), *option;
                                size_t len = eq ? (size_t) (eq - name) : strlen(name);
                                OptionShape shape;

                                if (w->numeric_flags && is_number(name)) {
                                        j++;
                                        continue;
                                }
                                shape = long_option_shape(w, name, len, &option);
                                if (shape == OPTION_VALUE && w->split_long && streq_ptr(option, w->split_long) &&
                                    (eq || argv[j + 1])) {
                                        if (u->primary)
                                                { unwrap_add(u, argv, eq ? j : j + 1); return; }
                                        { unwrap_split(u, w, argv, wi, eq ? eq + 1 : argv[j + 1],
                                                            eq ? j + 1 : j + 2, depth); return; }
                                }
                                if (shape == OPTION_UNKNOWN && w->kind == WRAPPER_LOADER)
                                        break;
                                if (eq || shape == OPTION_FLAG) {
                                        j++;
                                        continue;
                                }
                                if (shape == OPTION_VALUE) {
                                        j += argv[j + 1] ? 2 : 1;
                                        continue;
                                }
                                /* Unknown: maybe it takes the next word... */
                                if (!u->primary && argv[j + 1])
                                        unwrap_options(u, w, argv, wi, j + 2, false, positionals, depth);
                                /* ...and maybe not. */
                                j++;
                                continue;
                        }

                        for (const char *c = a + 1; *c; c++) {
                                if (w->numeric_flags && isdigit((unsigned char) *c))
                                        continue;
                                if (strchr(w->short_value, *c)) {
                                        if (w->split_short && *c == w->split_short && (c[1] || argv[j + 1])) {
                                                if (u->primary)
                                                        { unwrap_add(u, argv, c[1] ? j : j + 1); return; }
                                                { unwrap_split(u, w, argv, wi, c[1] ? c + 1 : argv[j + 1],
                                                                    c[1] ? j + 1 : j + 2, depth); return; }
                                        }
                                        if (!c[1] && argv[j + 1])
                                                j++;    /* the value is the next word */
                                        break;
                                }
                                if (strchr(w->short_flag, *c))
                                        continue;
                                /* Unknown: maybe the rest of the word, or the next word, is its value... */
                                if (!u->primary)
                                        unwrap_options(u, w, argv, wi, c[1] || !argv[j + 1] ? j + 1 : j + 2,
                                                       false, positionals, depth);
                                /* ...and maybe it is a flag. */
                        }
                        j++;
                        continue;
                }

                if (w->assignments && strchr(a, '=')) {
                        options_done = true;
                        j++;
                        continue;
                }
                if (positionals > 0) {
                        positionals--;
                        if (!(w->numeric_positional && !is_number(a))) {
                                options_done = true;
                                j++;
                                continue;
                        }
                }
                break;
        }
        unwrap_chain(u, argv, j, wi, depth);
}

/* argv[i] is a command; when it is a wrapper, what it runs is. wrapper: the index of the wrapper that
 * runs argv[i], SIZE_MAX for none. */
static void unwrap_chain(Unwrap *u, char * const *argv, size_t i, size_t wrapper, unsigned depth) {
        const Wrapper *w;

        if (u->error < 0)
                return;
        if (!argv[i]) {
                if (u->primary || wrapper != SIZE_MAX)
                        unwrap_add(u, argv, u->primary ? i : wrapper);
                return;
        }
        w = wrapper_find(argv[i]);
        if (!w)
                { unwrap_add(u, argv, i); return; }
        if (w->kind == WRAPPER_SCRIPT) {
                if (unwrap_step(u))
                        unwrap_script(u, w, argv, i, depth);
                return;
        }
        unwrap_options(u, w, argv, i, i + 1, false, w->positionals, depth);
}

/* Fills u with every reading of argv; u->error < 0 when there are too many to check. */
static void unwrap_all(Unwrap *u, char * const *argv, bool primary) {
        static char * const empty[] = { (char *) "", NULL };

        *u = (Unwrap) { .primary = primary };
        if (!argv || !argv[0])
                argv = empty;
        unwrap_chain(u, argv, 0, SIZE_MAX, 0);
        if (u->error >= 0 && u->n == 0)         /* e.g. script -c "" */
                unwrap_add(u, argv, 0);
}

size_t gate_unwrap_argv(char * const *argv) {
        Unwrap u;
        size_t r;

        if (!argv || !argv[0])
                return 0;
        unwrap_all(&u, argv, true);
        /* The primary reading never branches or splits: one candidate, on argv itself. */
        r = u.error >= 0 && u.n > 0 && u.items[0].argv == argv ? u.items[0].index : strv_length((char **) argv);
        unwrap_done(&u);
        return r;
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
                r = path_resolve(cwd, *a, stack, sizeof stack, &path, &heap);
                if (r == -EINVAL)
                        return cwd ? 0 : -EAGAIN;       /* relative, no cwd: cannot be shown to be inside */
                if (r < 0)
                        return r;
                if (strncmp(path, rule->within, rule->within_len) != 0 || path[rule->within_len] != '/')
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
                        if (r == -EAGAIN) {
                                ret->needs_cwd = true;
                                r = 0;
                        }
                        if (r < 0)
                                { verdict_error(ret); return; }
                        if (r == 0)
                                continue;
                }
                { verdict_set(ret, c->decision, c->id, c->message); return; }
        }
        verdict_default(p, ret);
}

/* The strictest verdict over every reading of argv; on a tie the earlier reading's rule. */
static void check_exec_all(const GatePolicy *p, char * const *argv, const char *cwd, GateVerdict *ret) {
        bool needs_cwd = false;
        Unwrap u;

        ret->needs_cwd = false;
        unwrap_all(&u, argv, false);
        if (u.error < 0) {
                unwrap_done(&u);
                { verdict_error(ret); return; }
        }
        for (size_t i = 0; i < u.n; i++) {
                GateVerdict v;
                check_exec_candidate(p, u.items[i].argv, u.items[i].index, cwd, &v);
                needs_cwd = needs_cwd || v.needs_cwd;
                if (i == 0 || decision_rank(v.decision) > decision_rank(ret->decision))
                        *ret = v;
                if (streq(ret->rule_id, GATE_RULE_ID_ERROR))
                        break;
        }
        ret->needs_cwd = needs_cwd;
        unwrap_done(&u);
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
        bool needs_cwd;
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
        if (decision_rank(v.decision) > decision_rank(ret->decision))
                *ret = v;
        ret->needs_cwd = needs_cwd;
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

/* A recursive rm (-r, -R, --recursive or an abbreviation, in any word) together with a word starting
 * with '/' or "..", in either order; and --no-preserve-root at all. The rm allows for the workspace and
 * /tmp come first and compare resolved paths, so this only sees what is outside them. */
#define RM_RECURSIVE "(-[a-zA-Z]*[rR][a-zA-Z]*|--r[a-z]*)"
#define RM_OUTSIDE "(/|\\.\\.)"
static const char * const rm_deny_patterns[] = {
        "(^| )" RM_RECURSIVE " (.* )?" RM_OUTSIDE,
        "(^| )" RM_OUTSIDE ".* " RM_RECURSIVE "( |$)",
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

/* dir with glob characters escaped, followed by suffix. */
static char *glob_escape_join(const char *dir, const char *suffix) {
        size_t n = 0;
        char *s = malloc(strlen(dir) * 2 + strlen(suffix) + 1);

        if (!s)
                return NULL;
        for (const char *p = dir; *p; p++) {
                if (strchr("*?[]\\", *p))
                        s[n++] = '\\';
                s[n++] = *p;
        }
        strcpy(s + n, suffix);
        return s;
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
                wd = gate_path_clean(work_dir);
                if (!wd)
                        return -ENOMEM;
                if (streq(wd, "/"))
                        return -EINVAL;
                wd_glob = glob_escape_join(wd, "/**");
                loop_config = glob_escape_join(wd, "/.loop/config.json");
                loop_dir = glob_escape_join(wd, "/.loop/**");
                if (!wd_glob || !loop_config || !loop_dir)
                        return -ENOMEM;
        }
        if (home) {
                if (home[0] != '/')
                        return -EINVAL;
                hd = gate_path_clean(home);
                if (!hd)
                        return -ENOMEM;
                /* HOME=/ (a passwd entry without a home): allowing "/" "**" would allow everything. */
                if (streq(hd, "/"))
                        hd = mfree(hd);
                else if (!(hd_glob = glob_escape_join(hd, "/**")) || !(hd_escaped = glob_escape_join(hd, "")))
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
                        if (!(secrets[n] = glob_escape_join(wd, work_dir_secret_files[n]))) {
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
                if (!(patterns[n++] = glob_escape_join(*p, "")) || !(patterns[n++] = glob_escape_join(*p, "/**")))
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
