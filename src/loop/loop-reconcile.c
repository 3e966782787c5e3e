/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop reconcile [NAME...]`: the registry's reconcile pass (loop-reconcile.service, started every 30 s by
 * loop-reconcile.timer). For every channel that is configured or has containers in the engine: drop the
 * entries of containers that are gone, sync statuses, schedule the removal of containers that stopped and
 * remove those whose keep-alive time is over. Never starts an engine: with none running there is nothing
 * to reconcile. */

#include <getopt.h>

#include "config.h"
#include "engine-discover.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "registry.h"
#include "strv.h"

#define RECONCILE_ENGINES_MAX 16U       /* distinct engine sockets reconciled in one pass */

typedef struct EngineSlot {
        char *socket;                   /* as configured; NULL: the default discovery */
        EngineConnection *conn;         /* NULL: did not answer */
        bool tried;
} EngineSlot;

static Engine *engine_for(EngineSlot *slots, size_t *n, const char *socket) {
        size_t i;

        for (i = 0; i < *n; i++)
                if (streq_ptr(slots[i].socket, socket))
                        break;
        if (i == *n) {
                if (*n >= RECONCILE_ENGINES_MAX)
                        return NULL;
                slots[i] = (EngineSlot) {};
                if (socket && !(slots[i].socket = strdup(socket)))
                        return NULL;
                (*n)++;
        }
        if (!slots[i].tried) {
                slots[i].tried = true;
                if (engine_connect_full(socket, false, &slots[i].conn) < 0)
                        slots[i].conn = NULL;
        }
        return slots[i].conn ? slots[i].conn->engine : NULL;
}

static int reconcile_channel(Engine *e, const char *channel, uint64_t keep_alive_sec) {
        _cleanup_(registry_freep) Registry *reg = NULL;
        int r;

        r = registry_open(channel, &reg);
        if (r < 0)
                return log_warning_errno(r, "Cannot open the registry of channel %s: %m", channel);
        r = registry_sync(reg, e, keep_alive_sec);
        if (r < 0) {
                (void) registry_close(TAKE_PTR(reg));
                return r;
        }
        return registry_close(TAKE_PTR(reg));
}

int verb_reconcile(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_strv_free_ char **channels = NULL;
        EngineSlot slots[RECONCILE_ENGINES_MAX];
        size_t n_slots = 0;
        int c, r, ret = EXIT_SUCCESS;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("loop reconcile [NAME...]\n\nSync the container registry of every channel (or the "
                               "named ones) with the engine:\ndrop containers that are gone, schedule the removal "
                               "of stopped ones and remove those\nwhose container_keep_alive_sec is over.\n");
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }

        r = config_load(config_dir(), &set);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration: %m"), EXIT_FAILURE;
        if (!set->global_valid) {
                log_error("%s is invalid; not reconciling (loop config check says why).", set->global_path);
                return EXIT_FAILURE;
        }

        for (int i = optind; i < argc; i++) {
                if (!loop_check_channel_name(argv[i]))
                        return EXIT_FAILURE;
                if (strv_extend(&channels, argv[i]) < 0)
                        return log_oom(), EXIT_FAILURE;
        }
        if (!channels) {
                /* Every configured channel, and channels that only the engine still knows (a channel file
                 * removed while its containers lived on): those are reconciled with the global settings. */
                Engine *e = engine_for(slots, &n_slots, set->global.engine.socket);
                _cleanup_(json_object_putp) json_object *list = NULL;

                for (size_t i = 0; i < set->n_channels; i++)
                        if (strv_extend(&channels, set->channels[i].name) < 0)
                                return log_oom(), EXIT_FAILURE;
                if (e && engine_container_list(e, "app=loop-agent", true, &list) >= 0)
                        for (size_t i = 0; i < json_object_array_length(list); i++) {
                                const char *ch = engine_container_label(json_object_array_get_idx(list, i), "loop-channel");
                                if (ch && channel_name_check(ch, NULL) >= 0 && !strv_contains(channels, ch) &&
                                    strv_extend(&channels, ch) < 0)
                                        return log_oom(), EXIT_FAILURE;
                        }
        }

        STRV_FOREACH(name, channels) {
                const Channel *ch = config_set_find_channel(set, *name);
                const LoopConfig *cfg = ch && ch->valid ? &ch->config : &set->global;
                Engine *e = engine_for(slots, &n_slots, cfg->engine.socket);

                if (!e) {
                        log_debug("No engine answers for channel %s; nothing to reconcile.", *name);
                        continue;
                }
                if (reconcile_channel(e, *name, cfg->container_keep_alive_sec) < 0)
                        ret = EXIT_FAILURE;
        }

        for (size_t i = 0; i < n_slots; i++) {
                engine_connection_free(slots[i].conn);
                free(slots[i].socket);
        }
        return ret;
}
