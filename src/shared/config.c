/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>

#include "audit.h"
#include "config-build.h"
#include "config-schema.h"
#include "container-spec.h"
#include "dirent-util.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "protected-paths.h"
#include "string-util.h"
#include "strv.h"
#include "unit-file.h"

static const char * const decision_table[_DECISION_MAX] = {
        [DECISION_ALLOW] = "allow",
        [DECISION_DENY] = "deny",
        [DECISION_APPROVE] = "approve",
};

static const char * const file_op_table[_FILE_OP_MAX] = {
        [FILE_OP_READ] = "read",
        [FILE_OP_WRITE] = "write",
        [FILE_OP_CREATE] = "create",
        [FILE_OP_DELETE] = "delete",
        [FILE_OP_STAT] = "stat",
        [FILE_OP_LIST] = "list",
        [FILE_OP_CHMOD] = "chmod",
        [FILE_OP_CHOWN] = "chown",
        [FILE_OP_LINK] = "link",
};

static const char * const json_check_op_table[_JSON_CHECK_MAX] = {
        [JSON_CHECK_PRESENT] = "present",
        [JSON_CHECK_EMPTY_ARRAY] = "empty_array",
        [JSON_CHECK_EQUALS] = "equals",
        [JSON_CHECK_CONTAINS_ANY] = "contains_any",
        [JSON_CHECK_STARTS_WITH_ANY] = "starts_with_any",
        [JSON_CHECK_NOT_IN] = "not_in",
        [JSON_CHECK_CAPABILITY_NOT_IN] = "capability_not_in",
        [JSON_CHECK_SOURCE_PATH_IN] = "source_path_in",
        [JSON_CHECK_SOURCE_PATH_NOT_IN] = "source_path_not_in",
};

const char *decision_to_string(Decision d) {
        return d >= 0 && d < _DECISION_MAX ? decision_table[d] : NULL;
}
Decision decision_from_string(const char *s) {
        return (Decision) string_table_lookup(decision_table, _DECISION_MAX, s);
}
const char *file_op_to_string(FileOp op) {
        return op >= 0 && op < _FILE_OP_MAX ? file_op_table[op] : NULL;
}
FileOp file_op_from_string(const char *s) {
        return (FileOp) string_table_lookup(file_op_table, _FILE_OP_MAX, s);
}
const char *json_check_op_to_string(JsonCheckOp op) {
        return op >= 0 && op < _JSON_CHECK_MAX ? json_check_op_table[op] : NULL;
}
JsonCheckOp json_check_op_from_string(const char *s) {
        return (JsonCheckOp) string_table_lookup(json_check_op_table, _JSON_CHECK_MAX, s);
}

/* ---- problems ---- */

/* Messages quote values from config files; a newline in one must not forge a second log line. */
static char *escape_controls(const char *s) {
        char *r = malloc(strlen(s) * 4 + 1), *t = r;

        if (!r)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '\n')
                        t = stpcpy(t, "\\n");
                else if (*p == '\t')
                        t = stpcpy(t, "\\t");
                else if (*p < 0x20 || *p == 0x7f)
                        t += sprintf(t, "\\x%02x", *p);
                else
                        *t++ = (char) *p;
        }
        *t = 0;
        return r;
}

int config_problem_add(ConfigProblems *p, bool error, const char *file, const char *key, const char *format, ...) {
        ConfigProblem *items, *n;
        va_list ap;
        int r;

        items = reallocarray(p->items, p->n + 1, sizeof(ConfigProblem));
        if (!items)
                return -ENOMEM;
        p->items = items;
        n = &items[p->n];
        *n = (ConfigProblem) { .error = error };
        _cleanup_free_ char *raw = NULL;
        va_start(ap, format);
        r = strprintf_va(&raw, format, ap);
        va_end(ap);
        if (r < 0)
                return r;
        n->message = escape_controls(raw);
        n->file = file ? escape_controls(file) : NULL;
        n->key = key ? escape_controls(key) : NULL;
        if (!n->message || (file && !n->file) || (key && !n->key)) {
                free(n->file);
                free(n->key);
                free(n->message);
                return -ENOMEM;
        }
        p->n++;
        return 0;
}

void config_problems_done(ConfigProblems *p) {
        for (size_t i = 0; i < p->n; i++) {
                free(p->items[i].file);
                free(p->items[i].key);
                free(p->items[i].message);
        }
        p->items = mfree(p->items);
        p->n = 0;
}

char *config_problem_to_string(const ConfigProblem *p) {
        char *s;
        if (asprintf(&s, "%s%s%s%s%s", strempty(p->file), p->file ? ": " : "",
                     strempty(p->key), p->key ? ": " : "", p->message) < 0)
                return NULL;
        return s;
}

/* ---- config structs ---- */

static void permission_set_done(PermissionSet *p) {
        p->users = strv_free(p->users);
        p->roles = strv_free(p->roles);
}

void loop_config_done(LoopConfig *c) {
        free(c->claude_code_oauth_token);
        free(c->anthropic_api_key);
        free(c->claude_bin_path);
        free(c->claude_model);
        free(c->container_image);
        free(c->api_addr);
        strv_free(c->mounts);
        strv_free(c->copy_files);
        strv_free(c->extra_dirs);
        strv_free(c->envs);
        strv_free(c->protect_paths);
        free(c->connect_tcp);
        strv_free(c->mask_paths);
        strv_free(c->unmask_paths);
        for (size_t i = 0; i < c->n_mcp_servers; i++) {
                free(c->mcp_servers[i].name);
                free(c->mcp_servers[i].command);
                strv_free(c->mcp_servers[i].args);
                strv_free(c->mcp_servers[i].env);
        }
        free(c->mcp_servers);
        free(c->browser.chrome_image);

        free(c->gates.webhook_url);
        AgentGateConfig *g = &c->gates.agentgate;
        for (size_t i = 0; i < g->n_path_rules; i++) {
                free(g->path_rules[i].pattern);
                free(g->path_rules[i].message);
        }
        free(g->path_rules);
        for (size_t i = 0; i < g->n_command_rules; i++) {
                strv_free(g->command_rules[i].commands);
                strv_free(g->command_rules[i].args_patterns);
                free(g->command_rules[i].message);
        }
        free(g->command_rules);
        for (size_t i = 0; i < g->n_file_rules; i++) {
                strv_free(g->file_rules[i].paths);
                free(g->file_rules[i].message);
        }
        free(g->file_rules);

        DockerProxyConfig *d = &c->gates.docker_proxy;
        for (size_t i = 0; i < d->n_http_rules; i++) {
                strv_free(d->http_rules[i].methods);
                strv_free(d->http_rules[i].paths);
                free(d->http_rules[i].message);
        }
        free(d->http_rules);
        for (size_t i = 0; i < d->n_body_rules; i++) {
                BodyRule *b = &d->body_rules[i];
                free(b->applies_to);
                strv_free(b->content_types);
                free(b->message);
                for (size_t j = 0; j < b->n_json_checks; j++) {
                        free(b->json_checks[j].path);
                        strv_free(b->json_checks[j].values);
                        strv_free(b->json_checks[j].except);
                }
                free(b->json_checks);
        }
        free(d->body_rules);

        permission_set_done(&c->permissions.owners);
        permission_set_done(&c->permissions.members);
        free(c->engine.socket);
        free(c->description);
        free(c->work_dir);
        free(c->parent_dir);
        free(c->user);
        json_object_put(c->json);
        *c = (LoopConfig) {};
}

int loop_config_defaults(LoopConfig *ret) {
        _cleanup_(json_object_putp) json_object *empty = json_object_new_object();
        if (!empty)
                return -ENOMEM;
        return loop_config_from_json(empty, NULL, ret);
}

/* ---- names and files ---- */

const char *config_dir(void) {
        const char *e = getenv("LOOP_CONFIG_DIR");
        return isempty(e) ? LOOP_CONFIG_DIR_DEFAULT : e;
}

int channel_name_check(const char *name, const char **ret_reason) {
        const char *reason = NULL;
        size_t n = strlen(name);

        if (n == 0)
                reason = "the name is empty";
        else if (n > CHANNEL_NAME_MAX)
                reason = "the name is longer than 64 characters";
        else if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
                   (name[0] >= '0' && name[0] <= '9')))
                reason = "the name must start with a letter or a digit";
        else
                for (const char *p = name; *p; p++)
                        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                              *p == '_' || *p == '.' || *p == '-')) {
                                reason = "the name may only contain letters, digits, '_', '.' and '-'";
                                break;
                        }
        if (reason) {
                if (ret_reason)
                        *ret_reason = reason;
                return -EINVAL;
        }
        return 0;
}

static bool config_has_secrets(json_object *o) {
        json_object *v;
        return (json_object_object_get_ex(o, "claude_code_oauth_token", &v) && json_object_get_string_len(v) > 0) ||
               (json_object_object_get_ex(o, "anthropic_api_key", &v) && json_object_get_string_len(v) > 0);
}

/* Reads and validates one config file. Errors and warnings go to problems; returns 0 with *ret set when
 * the file is usable, 0 with *ret NULL when it is not, -ENOMEM otherwise. */
static int config_read_file(int dir_fd, const char *name, const char *path, unsigned scope,
                            ConfigProblems *problems, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *text = NULL, *reason = NULL;
        size_t size;
        struct stat st;
        int r;

        *ret = NULL;
        r = read_full_file_at(dir_fd, name, CONFIG_FILE_MAX, false, &text, &size);
        if (r == -ENOENT)
                return config_problem_add(problems, true, path, NULL, "dangling symbolic link") < 0 ? -ENOMEM : 0;
        if (r == -EISDIR || r == -EBADFD)
                return config_problem_add(problems, true, path, NULL, "not a regular file") < 0 ? -ENOMEM : 0;
        if (r == -EFBIG)
                return config_problem_add(problems, true, path, NULL, "larger than %u bytes",
                                          CONFIG_FILE_MAX) < 0 ? -ENOMEM : 0;
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_problem_add(problems, true, path, NULL, "cannot be read: %s",
                                          strerror(-r)) < 0 ? -ENOMEM : 0;

        r = config_parse_text(text, size, &o, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_problem_add(problems, true, path, NULL, "%s", reason) < 0 ? -ENOMEM : 0;

        r = schema_validate(&config_schema_root, o, scope, path, problems);
        if (r < 0)
                return r;
        if (r > 0)
                return 0;

        /* Anyone who can write a config file can change the security policy of every run. */
        if (fstatat(dir_fd, name, &st, 0) >= 0) {
                if (st.st_mode & S_IWOTH)
                        return config_problem_add(problems, true, path, NULL,
                                                  "is writable by everyone; refusing to use it") < 0 ? -ENOMEM : 0;
                if ((st.st_mode & S_IROTH) && config_has_secrets(o) &&
                    config_problem_add(problems, false, path, NULL,
                                       "holds credentials but is readable by everyone (chmod o-r)") < 0)
                        return -ENOMEM;
        }

        *ret = TAKE_PTR(o);
        return 0;
}

/* With strict_config, the unknown keys of FILE recorded since index FIRST become errors. Returns the
 * first such key, NULL when there is none. */
static const char *problems_refuse_unknown_keys(ConfigProblems *p, size_t first, const char *file) {
        const char *key = NULL;

        for (size_t i = first; i < p->n; i++) {
                ConfigProblem *q = &p->items[i];
                char *m;

                if (!q->unknown_key || !streq_ptr(q->file, file) || q->error)
                        continue;
                q->error = true;
                if (asprintf(&m, "unknown key (strict_config is on)") >= 0) {
                        free(q->message);
                        q->message = m;
                }
                key = key ?: q->key;
        }
        return key;
}

void config_set_log_warnings(const ConfigSet *s, const char *file) {
        for (size_t i = 0; s && i < s->problems.n; i++) {
                const ConfigProblem *q = &s->problems.items[i];
                _cleanup_free_ char *line = NULL;

                if (q->error || !(streq_ptr(q->file, file) || streq_ptr(q->file, s->global_path)))
                        continue;
                line = config_problem_to_string(q);
                log_warning("%s", line ?: q->message);
        }
}

static void channel_done(Channel *c) {
        free(c->name);
        free(c->path);
        free(c->reason);
        loop_config_done(&c->config);
}

ConfigSet *config_set_free(ConfigSet *s) {
        if (!s)
                return NULL;
        free(s->dir);
        free(s->global_path);
        loop_config_done(&s->global);
        for (size_t i = 0; i < s->n_channels; i++)
                channel_done(&s->channels[i]);
        free(s->channels);
        config_problems_done(&s->problems);
        free(s);
        return NULL;
}

int channel_invalidate(Channel *c, const char *format, ...) {
        va_list ap;
        int r;

        c->valid = false;
        loop_config_done(&c->config);
        if (c->reason)
                return 0;
        va_start(ap, format);
        r = strprintf_va(&c->reason, format, ap);
        va_end(ap);
        return r;
}

/* The first error recorded for a file since index first, as the one-line reason a channel is skipped.
 * Looking only at the problems of this file keeps loading linear in the number of channels. */
static int channel_reason_from_problems(Channel *c, const ConfigProblems *p, size_t first) {
        for (size_t i = first; i < p->n; i++)
                if (p->items[i].error) {
                        size_t more = 0;
                        for (size_t j = i + 1; j < p->n; j++)
                                more += p->items[j].error;
                        if (p->items[i].key)
                                return channel_invalidate(c, "%s: %s%s", p->items[i].key, p->items[i].message,
                                                          more > 0 ? " (and more)" : "");
                        return channel_invalidate(c, "%s%s", p->items[i].message, more > 0 ? " (and more)" : "");
                }
        return channel_invalidate(c, "invalid");
}

static int cmp_channel(const void *a, const void *b) {
        return strcmp(((const Channel *) a)->name, ((const Channel *) b)->name);
}

static int cmp_channel_ptr_case(const void *a, const void *b) {
        const Channel *x = *(Channel * const *) a, *y = *(Channel * const *) b;
        int r = strcasecmp(x->name, y->name);
        return r != 0 ? r : strcmp(x->name, y->name);
}

/* The channels of s, sorted by name ignoring case (then by byte), as pointers into s->channels. */
static int channels_sorted_case(ConfigSet *s, Channel ***ret) {
        Channel **v = calloc(s->n_channels, sizeof(Channel *));

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_channels; i++)
                v[i] = &s->channels[i];
        qsort(v, s->n_channels, sizeof(Channel *), cmp_channel_ptr_case);
        *ret = v;
        return 0;
}

/* Names that differ only in case would share container names and confuse people; the first one in byte
 * order keeps the name. */
static int channels_refuse_case_duplicates(ConfigSet *s) {
        _cleanup_free_ Channel **v = NULL;
        int r;

        if (s->n_channels < 2)
                return 0;
        r = channels_sorted_case(s, &v);
        if (r < 0)
                return r;
        for (size_t i = 1; i < s->n_channels; i++) {
                size_t first = i - 1;
                while (first > 0 && strcasecmp(v[first - 1]->name, v[i]->name) == 0)
                        first--;
                if (strcasecmp(v[first]->name, v[i]->name) != 0)
                        continue;
                if (config_problem_add(&s->problems, true, v[i]->path, NULL,
                                       "channel name \"%s\" duplicates \"%s\" (%s); names must differ in more than case",
                                       v[i]->name, v[first]->name, v[first]->path) < 0)
                        return -ENOMEM;
                if (channel_invalidate(v[i], "duplicates channel \"%s\" (%s): names must differ in more than case",
                                       v[first]->name, v[first]->path) < 0)
                        return -ENOMEM;
        }
        return 0;
}

typedef struct EngineNamed {
        char *base;
        Channel *channel;
} EngineNamed;

static int cmp_engine_named(const void *a, const void *b) {
        const EngineNamed *x = a, *y = b;
        int r = strcmp(x->base, y->base);
        return r != 0 ? r : strcmp(x->channel->name, y->channel->name);
}

/* The engine sees a channel's name only as container_name_sanitize() makes it: lower case, every run of
 * '.', '_' and '-' one '-', at most CONTAINER_NAME_BASE_MAX characters. Two channels with one such form
 * ("a.b" and "a_b", "A-b", two names equal in their first 40 characters) would share the Chrome
 * container loop-chrome-FORM and the shell loop-shell-FORM: one channel's stops the other's from starting.
 * Decided on that form; the first name in byte order keeps it. */
static int channels_refuse_engine_name_duplicates(ConfigSet *s) {
        _cleanup_free_ EngineNamed *v = NULL;
        _cleanup_strv_free_ char **bases = NULL;        /* owns v[].base */
        size_t n = 0;

        if (s->n_channels < 2)
                return 0;
        v = calloc(s->n_channels, sizeof(EngineNamed));
        bases = calloc(s->n_channels + 1, sizeof(char *));
        if (!v || !bases)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_channels; i++) {
                if (!s->channels[i].valid)
                        continue;
                bases[n] = container_name_sanitize(s->channels[i].name);
                if (!bases[n])
                        return -ENOMEM;
                v[n] = (EngineNamed) { .base = bases[n], .channel = &s->channels[i] };
                n++;
        }
        qsort(v, n, sizeof(EngineNamed), cmp_engine_named);
        for (size_t i = 1, first = 0; i < n; i++) {
                Channel *c = v[i].channel, *owner = v[first].channel;

                if (!streq(v[i].base, v[first].base)) {
                        first = i;
                        continue;
                }
                if (config_problem_add(&s->problems, true, c->path, NULL,
                                       "channel name \"%s\" gives the same container names as \"%s\" (%s): "
                                       "loop-chrome-%s, loop-shell-%s; names must differ in more than case, "
                                       "'.', '_' or '-', and within their first %u characters",
                                       c->name, owner->name, owner->path, v[i].base, v[i].base,
                                       CONTAINER_NAME_BASE_MAX) < 0 ||
                    channel_invalidate(c, "its container names (loop-chrome-%s) are those of channel \"%s\" (%s)",
                                       v[i].base, owner->name, owner->path) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The channel in v (sorted by cmp_channel_ptr_case) whose name is name[0..len), ignoring case; NULL if none. */
static Channel *channel_find_prefix_case(Channel **v, size_t n, const char *name, size_t len) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int r = strncasecmp(v[mid]->name, name, len);

                if (r == 0)
                        r = v[mid]->name[len] != 0;     /* a longer name sorts after its prefix */
                if (r == 0)
                        return v[mid];
                if (r < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The Docker API proxy takes a volume, network or image name beginning with a channel's name and "-" or
 * "_" for that channel's own (proxy_name_is_channels()). Of two channels "web" and "web-api", "web" would
 * own every name of "web-api" too: make its volumes and networks first, tag an image "web-api-app" that
 * the other then runs. A name that is another's with "-" or "_" and more after it is refused (the shorter,
 * first in byte order, keeps its name, as with names equal ignoring case); case is ignored as there. */
static int channels_refuse_name_prefixes(ConfigSet *s) {
        _cleanup_free_ Channel **v = NULL;
        int r;

        if (s->n_channels < 2)
                return 0;
        r = channels_sorted_case(s, &v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_channels; i++) {
                Channel *c = v[i], *owner = NULL;

                if (!c->valid)
                        continue;
                for (size_t k = 1; c->name[k] && !owner; k++)
                        if (c->name[k] == '-' || c->name[k] == '_')
                                owner = channel_find_prefix_case(v, s->n_channels, c->name, k);
                if (!owner)
                        continue;
                if (config_problem_add(&s->problems, true, c->path, NULL,
                                       "channel name \"%s\" begins with channel \"%s\" (%s) and a \"-\" or \"_\": "
                                       "the names of that channel's volumes, networks and images would be this one's too",
                                       c->name, owner->name, owner->path) < 0)
                        return -ENOMEM;
                if (channel_invalidate(c, "its name begins with channel \"%s\" (%s) and a \"-\" or \"_\", which would "
                                       "own the names of its volumes, networks and images", owner->name, owner->path) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int config_load_channels(ConfigSet *s, json_object *global) {
        _cleanup_free_ char *cdir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        size_t allocated = 0;
        struct dirent *de;
        int r;

        if (asprintf(&cdir, "%s/channels.d", s->dir) < 0)
                return -ENOMEM;
        d = opendir(cdir);
        if (!d) {
                if (errno == ENOENT)
                        return 0;
                return config_problem_add(&s->problems, true, cdir, NULL, "cannot be opened: %m") < 0 ? -ENOMEM : 0;
        }

        while ((errno = 0, de = readdir(d))) {
                const char *suffix, *reason;
                Channel *c;

                if (de->d_name[0] == '.')
                        continue;
                suffix = endswith(de->d_name, ".json");
                if (!suffix)
                        continue;       /* editor backups, READMEs, *.json.disabled, ... */

                if (s->n_channels >= CONFIG_CHANNELS_MAX) {
                        if (config_problem_add(&s->problems, true, cdir, NULL,
                                               "more than %u channel files, ignoring the rest", CONFIG_CHANNELS_MAX) < 0)
                                return -ENOMEM;
                        break;
                }
                if (s->n_channels >= allocated) {
                        size_t na = MAX(allocated * 2, 16U);
                        Channel *nc = reallocarray(s->channels, na, sizeof(Channel));
                        if (!nc)
                                return -ENOMEM;
                        s->channels = nc;
                        allocated = na;
                }
                c = &s->channels[s->n_channels++];
                *c = (Channel) {};
                c->name = strndup(de->d_name, (size_t) (suffix - de->d_name));
                if (!c->name || asprintf(&c->path, "%s/%s", cdir, de->d_name) < 0)
                        return -ENOMEM;

                if (channel_name_check(c->name, &reason) < 0) {
                        if (config_problem_add(&s->problems, true, c->path, NULL, "invalid channel name \"%s\": %s",
                                               c->name, reason) < 0 ||
                            channel_invalidate(c, "invalid channel name: %s", reason) < 0)
                                return -ENOMEM;
                }
        }
        if (errno != 0)
                return config_problem_add(&s->problems, true, cdir, NULL, "cannot be read: %m") < 0 ? -ENOMEM : 0;

        if (s->n_channels > 0)
                qsort(s->channels, s->n_channels, sizeof(Channel), cmp_channel);

        for (size_t i = 0; i < s->n_channels; i++) {
                Channel *c = &s->channels[i];
                _cleanup_(json_object_putp) json_object *o = NULL, *merged = NULL;

                size_t first = s->problems.n;

                if (c->reason)
                        continue;       /* bad name */

                r = config_read_file(dirfd(d), strrchr(c->path, '/') + 1, c->path, SCOPE_CHANNEL, &s->problems, &o);
                if (r < 0)
                        return r;
                if (!o) {
                        if (channel_reason_from_problems(c, &s->problems, first) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (s->global.strict_config) {
                        const char *unknown = problems_refuse_unknown_keys(&s->problems, first, c->path);
                        if (unknown) {
                                if (channel_invalidate(c, "unknown key \"%s\" (strict_config is on)", unknown) < 0)
                                        return -ENOMEM;
                                continue;
                        }
                }
                if (!s->global_valid) {
                        if (channel_invalidate(c, "the global configuration %s is invalid", s->global_path) < 0)
                                return -ENOMEM;
                        continue;
                }

                merged = schema_merge(&config_schema_root, global, o);
                if (!merged)
                        return -ENOMEM;
                r = loop_config_from_json(merged, c->name, &c->config);
                if (r < 0)
                        return r;
                {
                        _cleanup_free_ char *reason = NULL;

                        r = protected_paths_check_config(&c->config, &reason);
                        if (r < 0)
                                return r;
                        if (reason) {
                                if (config_problem_add(&s->problems, true, c->path, "protect_paths", "%s", reason) < 0 ||
                                    channel_invalidate(c, "protect_paths: %s", reason) < 0)
                                        return -ENOMEM;
                                continue;
                        }
                }
                c->valid = true;
        }

        r = channels_refuse_case_duplicates(s);
        if (r < 0)
                return r;
        r = channels_refuse_name_prefixes(s);
        if (r < 0)
                return r;
        return channels_refuse_engine_name_duplicates(s);
}

/* The secrets loop.json may hold, as systemd credentials: the credential loop.KEY stands for KEY when
 * loop.json does not set it. Looked up as systemd's LoadCredential=ID does (a service's
 * $CREDENTIALS_DIRECTORY first, then the credential stores /etc/credstore and /run/credstore, 0700 root):
 * readers that may not read them (a member of group loop running `loop send`) simply do without. The
 * generator then hands them to the egress gateway as it does any key of loop.json. */
static const char * const credential_keys[] = { "anthropic_api_key", "claude_code_oauth_token" };

static int config_import_credentials(json_object *global, const char *global_path, ConfigProblems *problems) {
        const char *dirs[] = { getenv("CREDENTIALS_DIRECTORY"), "/etc/credstore", "/run/credstore" };

        for (size_t k = 0; k < ELEMENTSOF(credential_keys); k++) {
                const char *key = credential_keys[k];
                _cleanup_free_ char *name = NULL;
                json_object *v;

                if (json_object_object_get_ex(global, key, &v) && json_object_get_string_len(v) > 0)
                        continue;       /* loop.json wins */
                if (asprintf(&name, "loop.%s", key) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                        _cleanup_free_ char *path = NULL, *secret = NULL;
                        size_t size;
                        int r;

                        if (isempty(dirs[i]))
                                continue;
                        if (asprintf(&path, "%s/%s", dirs[i], name) < 0)
                                return -ENOMEM;
                        r = read_full_file_at(AT_FDCWD, path, CONFIG_CREDENTIAL_MAX, true, &secret, &size);
                        if (r == -ENOENT || r == -EACCES || r == -ENOTDIR)
                                continue;
                        if (r >= 0) {
                                while (size > 0 && (secret[size - 1] == '\n' || secret[size - 1] == '\r'))
                                        secret[--size] = 0;
                                if (size == 0 || string_has_control(secret))
                                        r = -EINVAL;
                        }
                        if (r < 0) {
                                if (secret)
                                        explicit_bzero(secret, strlen(secret));
                                return config_problem_add(problems, true, path, NULL,
                                                          "the credential for %s of %s cannot be used: %s", key, global_path,
                                                          r == -EINVAL ? "empty or with control characters" : strerror(-r)) < 0
                                        ? -ENOMEM : 0;
                        }
                        v = json_object_new_string_len(secret, (int) size);
                        explicit_bzero(secret, size);
                        if (!v || json_object_object_add(global, key, v) < 0) {
                                json_object_put(v);
                                return -ENOMEM;
                        }
                        break;
                }
        }
        return 0;
}

int config_load(const char *dir, ConfigSet **ret) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;
        _cleanup_(json_object_putp) json_object *global = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        s = calloc(1, sizeof(ConfigSet));
        if (!s)
                return -ENOMEM;
        s->dir = strdup(dir);
        if (!s->dir || asprintf(&s->global_path, "%s/loop.json", dir) < 0)
                return -ENOMEM;

        s->global_valid = true;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd >= 0 && faccessat(dir_fd, "loop.json", F_OK, AT_SYMLINK_NOFOLLOW) >= 0) {
                s->global_present = true;
                r = config_read_file(dir_fd, "loop.json", s->global_path, SCOPE_GLOBAL, &s->problems, &global);
                if (r < 0)
                        return r;
                if (global && json_object_get_boolean(json_object_object_get(global, "strict_config")) &&
                    problems_refuse_unknown_keys(&s->problems, 0, s->global_path)) {
                        json_object_put(global);
                        global = NULL;
                }
                s->global_valid = !!global;
        }
        if (!global) {
                global = json_object_new_object();
                if (!global)
                        return -ENOMEM;
        }
        if (s->global_valid) {
                r = config_import_credentials(global, s->global_path, &s->problems);
                if (r < 0)
                        return r;
        }
        r = loop_config_from_json(global, NULL, &s->global);
        if (r < 0)
                return r;

        r = config_load_channels(s, s->global_valid ? global : NULL);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

const Channel *config_set_find_channel(const ConfigSet *s, const char *name) {
        Channel key = { .name = (char *) name };
        if (s->n_channels == 0)
                return NULL;
        return bsearch(&key, s->channels, s->n_channels, sizeof(Channel), cmp_channel);
}

size_t config_set_count_valid(const ConfigSet *s) {
        size_t n = 0;
        for (size_t i = 0; i < s->n_channels; i++)
                n += s->channels[i].valid;
        return n;
}

/* ---- display ---- */

static bool key_is_secret(const char *key) {
        static const char * const words[] = { "token", "key", "secret", "password", "passwd", "authorization", "credential", "webhook" };
        _cleanup_free_ char *lower = strdup(key);

        if (!lower)
                return true;
        for (char *p = lower; *p; p++)
                *p = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (strstr(lower, words[i]))
                        return true;
        return false;
}

static void redact(json_object *o, bool all_values) {
        if (json_object_get_type(o) != json_type_object)
                return;
        json_object_object_foreach(o, key, val) {
                json_type t = json_object_get_type(val);
                if (t == json_type_object)
                        /* Values of env maps are secrets more often than not. */
                        redact(val, streq(key, "env") || streq(key, "envs"));
                else if (t == json_type_array) {
                        for (size_t i = 0; i < json_object_array_length(val); i++)
                                redact(json_object_array_get_idx(val, i), false);
                } else if ((all_values || key_is_secret(key)) && t == json_type_string &&
                           json_object_get_string_len(val) > 0)
                        json_object_object_add(o, key, json_object_new_string("[REDACTED]"));
                else if (all_values && t != json_type_null)
                        json_object_object_add(o, key, json_object_new_string("[REDACTED]"));
        }
}

static int register_secrets(json_object *o) {
        int r = 0, q;

        if (json_object_get_type(o) == json_type_array) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if ((q = register_secrets(json_object_array_get_idx(o, i))) < 0)
                                r = q;
                return r;
        }
        if (json_object_get_type(o) != json_type_object)
                return 0;
        json_object_object_foreach(o, key, val) {
                json_type t = json_object_get_type(val);
                if (t == json_type_object || t == json_type_array)
                        q = register_secrets(val);
                else if (t == json_type_string && key_is_secret(key))
                        q = audit_add_secret(json_object_get_string(val));
                else if (t == json_type_string && streq(key, "upstream_proxy")) {
                        /* http://USER:PASSWORD@HOST:PORT: the userinfo, and the password alone */
                        const char *v = json_object_get_string(val), *rest = strstr(v, "://"), *at;
                        _cleanup_free_ char *userinfo = NULL;
                        q = 0;
                        if (rest && (at = strrchr(rest + 3, '@')) && (userinfo = strndup(rest + 3, (size_t) (at - rest - 3)))) {
                                const char *colon = strchr(userinfo, ':');
                                q = audit_add_secret(userinfo);
                                if (colon && q >= 0)
                                        q = audit_add_secret(colon + 1);
                                explicit_bzero(userinfo, strlen(userinfo));
                        }
                } else
                        q = 0;
                if (q < 0)
                        r = q;
        }
        return r;
}

const char *loop_config_egress_ca_file(const LoopConfig *c) {
        json_object *egress, *v;

        if (!c || !json_object_object_get_ex(c->json, "egress", &egress) ||
            !json_object_object_get_ex(egress, "ca_file", &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return isempty(json_object_get_string(v)) ? NULL : json_object_get_string(v);
}

int loop_config_register_secrets(const LoopConfig *c) {
        int r = 0, q;

        if (c->anthropic_api_key && (q = audit_add_secret(c->anthropic_api_key)) < 0)
                r = q;
        if (c->claude_code_oauth_token && (q = audit_add_secret(c->claude_code_oauth_token)) < 0)
                r = q;
        if ((q = register_secrets(c->json)) < 0)
                r = q;
        return r;
}

json_object *loop_config_to_json_redacted(const LoopConfig *c) {
        json_object *copy = NULL;

        if (!c->json || json_object_deep_copy(c->json, &copy, NULL) < 0)
                return NULL;
        redact(copy, false);
        return copy;
}
