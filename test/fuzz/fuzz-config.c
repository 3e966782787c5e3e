/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the operator's config files as every reader takes them (the generator at early boot,
 * `loop config check`, the runner, the helpers): config_load() over a config dir holding the input once as
 * a channel file (beside a valid loop.json) and once as loop.json (beside a valid channel), and in memory
 * the parse, the validation for both scopes, the channel-over-global merge and the typed load. Every input
 * must end in a clean error or a valid config: a crash, a leak (ASan) or an invalid config marked valid is
 * a finding. A broken channel file must never take the other channel with it. */

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-schema.h"
#include "config.h"
#include "io-util.h"
#include "json-util.h"
#include "macro.h"
#include "string-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char good_global[] =
        "{\"container_image\": \"op:1\", \"gates\": {\"agentgate\": {\"file_rules\": "
        "[{\"paths\": [\"/etc/**\"], \"decision\": \"deny\"}]}}}";
static const char good_channel[] = "{\"description\": \"the other channel\", \"work_dir\": \"/srv/other\"}";

static char dir[] = "/tmp/loop-fuzz-config-XXXXXX";
static char channels[sizeof dir + 16], global_path[sizeof dir + 16];

static void put(const char *path, const void *text, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || loop_write(fd, text, size) < 0)
                abort();
}

static void cleanup(void) {
        char p[sizeof dir + 64];

        (void) snprintf(p, sizeof p, "%s/fuzz.json", channels);
        (void) unlink(p);
        (void) snprintf(p, sizeof p, "%s/other.json", channels);
        (void) unlink(p);
        (void) rmdir(channels);
        (void) unlink(global_path);
        (void) rmdir(dir);
}

static void setup(void) {
        static bool done;

        if (done)
                return;
        done = true;
        if (!mkdtemp(dir))
                abort();
        (void) snprintf(channels, sizeof channels, "%s/channels.d", dir);
        (void) snprintf(global_path, sizeof global_path, "%s/loop.json", dir);
        if (mkdir(channels, 0700) < 0)
                abort();
        atexit(cleanup);
}

/* Whatever the set says is valid must hold a config, and the other channel stays valid when only the
 * fuzzed channel file is broken. */
static void check_set(const ConfigSet *s, bool global_fuzzed) {
        const Channel *other = config_set_find_channel(s, "other");

        for (size_t i = 0; i < s->n_channels; i++)
                if (s->channels[i].valid && !s->channels[i].config.json)
                        abort();
                else if (!s->channels[i].valid && isempty(s->channels[i].reason))
                        abort();        /* an invalid channel says why */
        if (!other)
                abort();
        if (!global_fuzzed && (!s->global_valid || !other->valid))
                abort();        /* a broken channel file costs that channel only */
        if (global_fuzzed && !s->global_valid && config_set_count_valid(s) != 0)
                abort();        /* an invalid loop.json fails closed */
        for (size_t i = 0; i < s->n_channels; i++)
                if (s->channels[i].valid) {
                        _cleanup_(json_object_putp) json_object *shown =
                                loop_config_to_json_redacted(&s->channels[i].config);
                        (void) shown;
                }
}

static void load_dir(bool global_fuzzed) {
        _cleanup_(config_set_freep) ConfigSet *s = NULL;

        if (config_load(dir, &s) < 0)
                return;         /* ENOMEM */
        check_set(s, global_fuzzed);
}

static void in_memory(const uint8_t *data, size_t size) {
        static const unsigned scopes[] = { SCOPE_GLOBAL, SCOPE_CHANNEL };
        _cleanup_(json_object_putp) json_object *o = NULL, *global = NULL;
        _cleanup_free_ char *reason = NULL;
        int r;

        r = config_parse_text((const char *) data, size, &o, &reason);
        if (r < 0) {
                if (r != -ENOMEM && isempty(reason))
                        abort();        /* a refused file says why */
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(scopes); i++) {
                _cleanup_(loop_config_done) LoopConfig c = {};
                _cleanup_(json_object_putp) json_object *merged = NULL;
                ConfigProblems p = {};

                r = schema_validate(&config_schema_root, o, scopes[i], "fuzz.json", &p);
                if (r > 0) {
                        bool error = false;
                        for (size_t j = 0; j < p.n; j++)
                                error = error || p.items[j].error;
                        if (!error)
                                abort();        /* an error count without an error recorded */
                }
                config_problems_done(&p);
                if (r != 0)
                        continue;
                if (!global) {
                        _cleanup_free_ char *why = NULL;
                        if (config_parse_text(good_global, strlen(good_global), &global, &why) < 0)
                                abort();
                }
                merged = schema_merge(&config_schema_root, global, o);
                if (!merged)
                        continue;       /* ENOMEM */
                (void) loop_config_from_json(merged, scopes[i] == SCOPE_CHANNEL ? "fuzz" : NULL, &c);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char p[sizeof dir + 64];

        if (size > CONFIG_FILE_MAX + 1)
                return 0;
        setup();
        in_memory(data, size);

        /* As a channel file beside a valid loop.json and another channel. */
        put(global_path, good_global, strlen(good_global));
        (void) snprintf(p, sizeof p, "%s/other.json", channels);
        put(p, good_channel, strlen(good_channel));
        (void) snprintf(p, sizeof p, "%s/fuzz.json", channels);
        put(p, data, size);
        load_dir(false);

        /* As loop.json, the channel files valid. */
        put(p, good_channel, strlen(good_channel));
        put(global_path, data, size);
        load_dir(true);
        return 0;
}
