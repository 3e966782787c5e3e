/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop config check` and `loop channels`. */

#include <getopt.h>

#include "config.h"
#include "dirent-util.h"
#include "egress-ca.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "strv.h"
#include "text-escape.h"
#include "unit-name.h"

int loop_connect_engine(ConfigSet **ret_set, EngineConnection **ret_conn) {
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        EngineConnection *conn = NULL;
        int r;

        r = config_load(config_dir(), &set);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir());
        if (!set->global_valid)
                return log_error_errno(EINVAL, "%s is invalid; see 'loop config check'.", set->global_path);
        r = engine_connect(set->global.engine.socket, &conn);
        if (r < 0)
                return r;       /* engine_connect() said what it tried */
        *ret_set = TAKE_PTR(set);
        *ret_conn = conn;
        return 0;
}

static json_object *problems_to_json(const ConfigProblems *p, const char *file) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < p->n; i++) {
                const ConfigProblem *q = &p->items[i];
                json_object *o;

                if (!streq_ptr(q->file, file))
                        continue;
                o = json_object_new_object();
                if (!o)
                        break;
                json_object_object_add(o, "severity", json_object_new_string(q->error ? "error" : "warning"));
                json_object_object_add(o, "file", q->file ? json_object_new_string(q->file) : NULL);
                json_object_object_add(o, "key", q->key ? json_object_new_string(q->key) : NULL);
                json_object_object_add(o, "message", json_object_new_string(q->message));
                json_object_array_add(a, o);
        }
        return a;
}

static void print_problems(const ConfigProblems *p, const char *file) {
        for (size_t i = 0; i < p->n; i++) {
                const ConfigProblem *q = &p->items[i];
                if (!streq_ptr(q->file, file))
                        continue;
                printf("    %s: %s%s%s\n", q->error ? "error" : "warning",
                       strempty(q->key), q->key ? ": " : "", q->message);
        }
}

static bool file_is_known(const ConfigSet *s, const char *file) {
        if (streq_ptr(file, s->global_path))
                return true;
        for (size_t i = 0; i < s->n_channels; i++)
                if (streq_ptr(file, s->channels[i].path))
                        return true;
        return false;
}

static bool name_selected(char **names, const char *name) {
        return strv_length(names) == 0 || strv_contains(names, name);
}

static size_t count_warnings(const ConfigProblems *p) {
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++)
                n += !p->items[i].error;
        return n;
}

static int config_check(int argc, char *argv[]) {
        enum { ARG_JSON = 0x100, ARG_STRICT };
        static const struct option options[] = {
                { "help",   no_argument, NULL, 'h' },
                { "json",   no_argument, NULL, ARG_JSON },
                { "strict", no_argument, NULL, ARG_STRICT },
                {}
        };
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        bool json = false, strict = false, ok;
        char **names;
        size_t n_valid = 0, n_shown = 0, n_errors_other = 0;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("loop config check [--json] [--strict] [NAME...]\n\n"
                               "Validate %s/loop.json and every channel file (or the named channels).\n"
                               "Exit status 1 when anything is invalid (with --strict: also on warnings).\n",
                               config_dir());
                        return EXIT_SUCCESS;
                case ARG_JSON:
                        json = true;
                        break;
                case ARG_STRICT:
                        strict = true;
                        break;
                default:
                        return EXIT_FAILURE;
                }
        names = argv + optind;

        STRV_FOREACH(n, names) {
                if (!loop_check_channel_name(*n))
                        return EXIT_FAILURE;
        }

        r = config_load(config_dir(), &s);
        if (r < 0) {
                log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir());
                return EXIT_FAILURE;
        }

        STRV_FOREACH(n, names)
                if (!config_set_find_channel(s, *n)) {
                        log_error("No channel \"%s\" in %s/channels.d/.", *n, s->dir);
                        return EXIT_FAILURE;
                }

        for (size_t i = 0; i < s->problems.n; i++)
                if (s->problems.items[i].error && !file_is_known(s, s->problems.items[i].file))
                        n_errors_other++;

        ok = s->global_valid && n_errors_other == 0;
        /* Files the configuration names must be there and load as their users load them: a CA file that
         * is not makes every request of the channel's agent fail, an hour of retries later. */
        for (size_t i = 0; i < s->n_channels; i++) {
                Channel *ch = &s->channels[i];
                _cleanup_free_ char *ca = NULL, *why = NULL;

                if (!ch->valid || !name_selected(names, ch->name) || !loop_config_egress_ca_file(&ch->config))
                        continue;
                ca = strdup(loop_config_egress_ca_file(&ch->config));
                if (!ca)
                        return log_oom(), EXIT_FAILURE;
                if (egress_ca_file_check(ca, &why) >= 0)
                        continue;
                if (config_problem_add(&s->problems, true, ch->path, "egress.ca_file", "%s cannot be loaded: %s", ca,
                                       strna(why)) < 0 ||
                    channel_invalidate(ch, "egress.ca_file %s cannot be loaded: %s", ca, strna(why)) < 0)
                        return log_oom(), EXIT_FAILURE;
        }

        for (size_t i = 0; i < s->n_channels; i++)
                if (name_selected(names, s->channels[i].name)) {
                        n_shown++;
                        n_valid += s->channels[i].valid;
                        ok = ok && s->channels[i].valid;
                }
        if (strict && count_warnings(&s->problems) > 0)
                ok = false;

        if (json) {
                _cleanup_(json_object_putp) json_object *root = json_object_new_object(), *chs = json_object_new_array();
                json_object *g = json_object_new_object(), *other = json_object_new_array();

                if (!root || !chs || !g || !other)
                        return log_oom(), EXIT_FAILURE;
                json_object_object_add(root, "config_dir", json_object_new_string(s->dir));
                json_object_object_add(g, "path", json_object_new_string(s->global_path));
                json_object_object_add(g, "present", json_object_new_boolean(s->global_present));
                json_object_object_add(g, "valid", json_object_new_boolean(s->global_valid));
                json_object_object_add(g, "problems", problems_to_json(&s->problems, s->global_path));
                json_object_object_add(root, "global", g);
                for (size_t i = 0; i < s->n_channels; i++) {
                        const Channel *ch = &s->channels[i];
                        json_object *o;
                        if (!name_selected(names, ch->name))
                                continue;
                        o = json_object_new_object();
                        if (!o)
                                return log_oom(), EXIT_FAILURE;
                        json_object_object_add(o, "name", json_object_new_string(ch->name));
                        json_object_object_add(o, "path", json_object_new_string(ch->path));
                        json_object_object_add(o, "valid", json_object_new_boolean(ch->valid));
                        json_object_object_add(o, "reason", ch->reason ? json_object_new_string(ch->reason) : NULL);
                        json_object_object_add(o, "problems", problems_to_json(&s->problems, ch->path));
                        json_object_array_add(chs, o);
                }
                json_object_object_add(root, "channels", TAKE_PTR(chs));
                for (size_t i = 0; i < s->problems.n; i++)
                        if (!file_is_known(s, s->problems.items[i].file)) {
                                _cleanup_(json_object_putp) json_object *one = problems_to_json(&s->problems, s->problems.items[i].file);
                                for (size_t j = 0; one && j < json_object_array_length(one); j++)
                                        json_object_array_add(other, json_object_get(json_object_array_get_idx(one, j)));
                        }
                json_object_object_add(root, "other_problems", other);
                json_object_object_add(root, "valid", json_object_new_boolean(ok));
                return json_print(stdout, root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) >= 0 && ok ? EXIT_SUCCESS : EXIT_FAILURE;
        }

        if (!s->global_present)
                printf("%s: not present, using defaults\n", s->global_path);
        else
                printf("%s: %s\n", s->global_path, s->global_valid ? "ok" : "INVALID");
        print_problems(&s->problems, s->global_path);

        for (size_t i = 0; i < s->n_channels; i++) {
                const Channel *ch = &s->channels[i];
                if (!name_selected(names, ch->name))
                        continue;
                printf("channel %s (%s): %s\n", ch->name, ch->path, ch->valid ? "ok" : "INVALID");
                if (!ch->valid)
                        printf("    skipped: %s\n", strna(ch->reason));
                print_problems(&s->problems, ch->path);
        }
        for (size_t i = 0; i < s->problems.n; i++) {
                const ConfigProblem *q = &s->problems.items[i];
                if (!file_is_known(s, q->file))
                        printf("%s: %s: %s\n", strempty(q->file), q->error ? "error" : "warning", q->message);
        }

        printf("%zu channel%s, %zu valid, %zu invalid\n", n_shown, n_shown == 1 ? "" : "s", n_valid, n_shown - n_valid);
        return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

int verb_config(int argc, char *argv[]) {
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                printf("loop config check [--json] [--strict] [NAME...]\n");
                return argc < 2 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (streq(argv[1], "check"))
                return config_check(argc - 1, argv + 1);
        log_error("Unknown config command \"%s\"; known: check.", argv[1]);
        return EXIT_FAILURE;
}

/* Characters, not bytes, of UTF-8 text (what a terminal shows of escaped text, one column each). */
static size_t utf8_display_width(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += ((unsigned char) *s & 0xc0) != 0x80;
        return n;
}

static void print_cell(const char *s, size_t width) {
        fputs(s, stdout);
        for (size_t n = utf8_display_width(s); n < width; n++)
                putchar(' ');
}

static void channels_help(void) {
        printf("loop channels [--json]\n\nList the channels in %s/channels.d/.\n", config_dir());
}

int verb_channels(int argc, char *argv[]) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        _cleanup_(json_object_putp) json_object *arr = NULL;
        bool json;
        int r;

        r = loop_parse_json_options(argc, argv, channels_help, &json);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (optind < argc) {
                log_error("loop channels takes no arguments.");
                return EXIT_FAILURE;
        }

        r = config_load(config_dir(), &s);
        if (r < 0) {
                log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir());
                return EXIT_FAILURE;
        }

        arr = json_object_new_array();
        if (!arr)
                return log_oom(), EXIT_FAILURE;
        if (json) {
                for (size_t i = 0; i < s->n_channels; i++) {
                        const Channel *ch = &s->channels[i];
                        _cleanup_free_ char *slice = channel_slice_name(ch->name);
                        json_object *o = json_object_new_object();

                        if (!slice || !o)
                                return log_oom(), EXIT_FAILURE;
                        json_object_object_add(o, "name", json_object_new_string(ch->name));
                        json_object_object_add(o, "path", json_object_new_string(ch->path));
                        json_object_object_add(o, "valid", json_object_new_boolean(ch->valid));
                        json_object_object_add(o, "enabled", ch->valid ? json_object_new_boolean(ch->config.enabled) : NULL);
                        json_object_object_add(o, "slice", json_object_new_string(slice));
                        json_object_object_add(o, "work_dir", ch->valid ? json_object_new_string(ch->config.work_dir) : NULL);
                        json_object_object_add(o, "description",
                                               ch->valid && ch->config.description ? json_object_new_string(ch->config.description) : NULL);
                        json_object_array_add(arr, o);
                }
        } else if (s->n_channels > 0) {
                /* A table whose columns fit what is in them: names (an invalid one may be anything a file
                 * name can be, shown escaped) are measured in characters, not bytes. */
                _cleanup_strv_free_ char **cells = NULL;
                size_t w_name = strlen("CHANNEL"), w_slice = strlen("SLICE");

                for (size_t i = 0; i < s->n_channels; i++) {
                        char *name = text_escape_display(s->channels[i].name, 0), *slice = channel_slice_name(s->channels[i].name);
                        if (!name || !slice || strv_consume(&cells, name) < 0 || strv_consume(&cells, slice) < 0)
                                return log_oom(), EXIT_FAILURE;
                        w_name = MAX(w_name, utf8_display_width(name));
                        w_slice = MAX(w_slice, utf8_display_width(slice));
                }
                print_cell("CHANNEL", w_name);
                printf(" %-8s %-9s ", "STATE", "ENABLED");
                print_cell("SLICE", w_slice);
                printf(" %s\n", "WORK DIR");
                for (size_t i = 0; i < s->n_channels; i++) {
                        const Channel *ch = &s->channels[i];

                        print_cell(cells[2 * i], w_name);
                        printf(" %-8s %-9s ", ch->valid ? "valid" : "invalid",
                               ch->valid ? (ch->config.enabled ? "yes" : "no") : "-");
                        print_cell(cells[2 * i + 1], w_slice);
                        printf(" %s\n", ch->valid ? ch->config.work_dir : "-");
                }
        }
        if (json)
                return json_print(stdout, arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (s->n_channels == 0)
                printf("No channels in %s/channels.d/.\n", s->dir);
        return EXIT_SUCCESS;
}
