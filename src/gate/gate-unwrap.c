/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Exec-wrapper unwrapping (see gate-unwrap.h): every reading of an argv that runs its command through
 * env, sudo, nice, timeout, script -c, ld.so and the like. The argv comes from inside the container. */

#include <ctype.h>

#include "gate-unwrap.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"

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

void gate_unwrap_done(GateUnwrap *u) {
        for (size_t i = 0; i < u->n_allocs; i++)
                free(u->allocs[i]);
        u->n_allocs = 0;
}

static void *unwrap_keep(GateUnwrap *u, void *p) {
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

static bool unwrap_step(GateUnwrap *u) {
        if (u->error < 0)
                return false;
        if (++u->steps > GATE_UNWRAP_STEPS_MAX) {
                u->error = -E2BIG;
                return false;
        }
        return true;
}

static void unwrap_add(GateUnwrap *u, char * const *argv, size_t index) {
        if (u->error < 0)
                return;
        for (size_t i = 0; i < u->n; i++)
                if (u->items[i].argv == argv && u->items[i].index == index)
                        return;
        if (u->n >= ELEMENTSOF(u->items)) {
                u->error = -E2BIG;
                return;
        }
        u->items[u->n++] = (GateUnwrapCandidate) { argv, index };
}

static void unwrap_chain(GateUnwrap *u, char * const *argv, size_t i, size_t wrapper, unsigned depth);
static void unwrap_options(GateUnwrap *u, const Wrapper *w, char * const *argv, size_t wi, size_t j,
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
static char **split_words_new(GateUnwrap *u, const char *s, bool shell, size_t *ret_n) {
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
static void unwrap_shell_command(GateUnwrap *u, const char *command, unsigned depth) {
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

static void unwrap_script(GateUnwrap *u, const Wrapper *w, char * const *argv, size_t wi, unsigned depth) {
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
static void unwrap_split(GateUnwrap *u, const Wrapper *w, char * const *argv, size_t wi, const char *value,
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
static void unwrap_options(GateUnwrap *u, const Wrapper *w, char * const *argv, size_t wi, size_t j,
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
static void unwrap_chain(GateUnwrap *u, char * const *argv, size_t i, size_t wrapper, unsigned depth) {
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
void gate_unwrap_all(GateUnwrap *u, char * const *argv, bool primary) {
        static char * const empty[] = { (char *) "", NULL };

        *u = (GateUnwrap) { .primary = primary };
        if (!argv || !argv[0])
                argv = empty;
        unwrap_chain(u, argv, 0, SIZE_MAX, 0);
        if (u->error >= 0 && u->n == 0)         /* e.g. script -c "" */
                unwrap_add(u, argv, 0);
}

size_t gate_unwrap_argv(char * const *argv) {
        GateUnwrap u;
        size_t r;

        if (!argv || !argv[0])
                return 0;
        gate_unwrap_all(&u, argv, true);
        /* The primary reading never branches or splits: one candidate, on argv itself. */
        r = u.error >= 0 && u.n > 0 && u.items[0].argv == argv ? u.items[0].index : strv_length((char **) argv);
        gate_unwrap_done(&u);
        return r;
}
