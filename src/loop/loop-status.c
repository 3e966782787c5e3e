/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop status [NAME] [--json]`: per channel its configuration state, runner service, queue, session and
 * containers (with their scopes); `loop cleanup [NAME]`: remove loop's containers. */

#include <getopt.h>
#include <inttypes.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "config.h"
#include "engine-discover.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "queue.h"
#include "registry.h"
#include "scope.h"
#include "state-dir.h"
#include "strv.h"
#include "time-util.h"
#include "unit-state.h"
#include "unit-name.h"

static const char *string_of(json_object *o, const char *key) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static char *unit_property(sd_bus *bus, const char *unit, const char *interface, const char *property) {
        char *value = NULL;
        return unit_get_string(bus, unit, interface, property, &value) < 0 ? NULL : value;
}

static char *unit_active_state(sd_bus *bus, const char *unit) {
        return unit_property(bus, unit, UNIT_INTERFACE, "ActiveState");
}

static json_object *queue_status(const char *channel) {
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_free_ char *dir = NULL, *session = NULL;
        json_object *o = json_object_new_object();
        size_t depth = 0;

        if (!o)
                return NULL;
        if (channel_queue_dir(channel, &dir) < 0 || queue_open(dir, false, &q) < 0) {
                json_object_object_add(o, "present", json_object_new_boolean(false));
                return o;
        }
        json_object_object_add(o, "present", json_object_new_boolean(true));
        if (queue_depth(q, &depth) >= 0)
                json_object_object_add(o, "queued", json_object_new_int64((int64_t) depth));
        for (const char * const *box = (const char * const[]) { "outbox", "failed", NULL }; *box; box++) {
                _cleanup_(json_object_putp) json_object *list = NULL;
                if (queue_list(q, *box, 0, &list) >= 0)
                        json_object_object_add(o, streq(*box, "outbox") ? "done" : "failed",
                                               json_object_new_int64((int64_t) json_object_array_length(list)));
        }
        if (queue_session_get(q, &session) >= 0)
                json_object_object_add(o, "session", json_object_new_string(session));
        return o;
}

/* The containers of a channel (or all of loop's with channel NULL) with their state and scope. */
static json_object *containers_status(Engine *e, const char *channel) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_(registry_freep) Registry *reg = NULL;
        _cleanup_free_ char *label = NULL;
        json_object *a = json_object_new_array();

        if (channel && registry_read(channel, &reg) < 0)
                reg = NULL;

        if (!a || !e)
                return a;
        if (channel ? asprintf(&label, "loop-channel=%s", channel) < 0 : !(label = strdup("app=loop-agent")))
                return a;
        if (engine_container_list(e, label, true, &list) < 0)
                return a;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i), *o = json_object_new_object(), *names;
                _cleanup_(json_object_putp) json_object *inspect = NULL;
                const char *id = string_of(c, "Id");
                _cleanup_free_ char *scope = NULL;

                if (!o)
                        break;
                json_object_object_add(o, "id", id ? json_object_new_string(id) : NULL);
                if (json_object_object_get_ex(c, "Names", &names) && json_object_array_length(names) > 0) {
                        const char *n = json_object_get_string(json_object_array_get_idx(names, 0));
                        json_object_object_add(o, "name", json_object_new_string(n[0] == '/' ? n + 1 : n));
                }
                json_object_object_add(o, "channel", engine_container_label(c, "loop-channel") ? json_object_new_string(engine_container_label(c, "loop-channel")) : NULL);
                json_object_object_add(o, "type", engine_container_label(c, "loop-type") ? json_object_new_string(engine_container_label(c, "loop-type")) : NULL);
                json_object_object_add(o, "state", string_of(c, "State") ? json_object_new_string(string_of(c, "State")) : NULL);
                /* The registry's view: running, stopped, pending-removal (with the time), or not registered. */
                {
                        RegistryEntry *entry = reg ? registry_find(reg, id) : NULL;
                        json_object_object_add(o, "status", entry ? json_object_new_string(container_status_to_string(entry->status)) : NULL);
                        if (entry && entry->status == CONTAINER_STATUS_PENDING_REMOVAL)
                                json_object_object_add(o, "remove_at_usec", json_object_new_uint64(entry->remove_at_usec));
                }
                if (id && engine_container_inspect(e, id, &inspect) >= 0) {
                        json_object *state, *pid;
                        if (json_object_object_get_ex(inspect, "State", &state) &&
                            json_object_object_get_ex(state, "Pid", &pid) && json_object_get_int64(pid) > 0 &&
                            scope_of_pid((pid_t) json_object_get_int64(pid), &scope) >= 0)
                                json_object_object_add(o, "scope", json_object_new_string(scope));
                }
                json_object_array_add(a, o);
        }
        return a;
}

static void status_help(void) {
        printf("loop status [NAME] [--json]\n\nChannels, their runner service, queue, session, "
               "containers and scopes.\n");
}

int verb_status(int argc, char *argv[]) {
        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(json_object_putp) json_object *out = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *only = NULL;
        bool json;
        int r;

        r = loop_parse_json_options(argc, argv, status_help, &json);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (optind < argc)
                only = argv[optind++];
        if (optind < argc) {
                log_error("loop status takes at most one channel name.");
                return EXIT_FAILURE;
        }

        r = config_load(config_dir(), &set);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration: %m"), EXIT_FAILURE;
        if (only && !config_set_find_channel(set, only)) {
                log_error("No channel \"%s\" in %s/channels.d/.", only, set->dir);
                return EXIT_FAILURE;
        }
        if (unit_bus_open(&bus) < 0)
                bus = NULL;
        /* Status works without an engine (it says so), but never asks one an invalid loop.json names. */
        if (!set->global_valid || engine_connect(set->global.engine.socket, &conn) < 0)
                conn = NULL;

        out = json_object_new_array();
        if (!out)
                return log_oom(), EXIT_FAILURE;
        for (size_t i = 0; i < set->n_channels; i++) {
                const Channel *ch = &set->channels[i];
                _cleanup_free_ char *unit = NULL, *path_unit = NULL, *slice = channel_slice_name(ch->name), *svc = NULL,
                        *svc_status = NULL, *armed = NULL;
                json_object *o;

                if (only && !streq(ch->name, only))
                        continue;
                o = json_object_new_object();
                if (!o || !slice || asprintf(&unit, "loop-agent@%s.service", ch->name) < 0 ||
                    asprintf(&path_unit, "loop-agent@%s.path", ch->name) < 0)
                        return log_oom(), EXIT_FAILURE;
                svc = unit_active_state(bus, unit);
                /* What the runner says it does (STATUS=): "Waiting for the container engine at ...". */
                if (svc && !streq(svc, "inactive"))
                        svc_status = unit_property(bus, unit, UNIT_SERVICE_INTERFACE, "StatusText");
                armed = unit_active_state(bus, path_unit);
                json_object_object_add(o, "name", json_object_new_string(ch->name));
                json_object_object_add(o, "valid", json_object_new_boolean(ch->valid));
                json_object_object_add(o, "reason", ch->reason ? json_object_new_string(ch->reason) : NULL);
                json_object_object_add(o, "enabled", ch->valid ? json_object_new_boolean(ch->config.enabled) : NULL);
                json_object_object_add(o, "slice", json_object_new_string(slice));
                json_object_object_add(o, "service", svc ? json_object_new_string(svc) : NULL);
                json_object_object_add(o, "service_status", !isempty(svc_status) ? json_object_new_string(svc_status) : NULL);
                json_object_object_add(o, "inbox_watch", armed ? json_object_new_string(armed) : NULL);
                json_object_object_add(o, "queue", queue_status(ch->name));
                json_object_object_add(o, "containers", containers_status(conn ? conn->engine : NULL, ch->name));
                json_object_array_add(out, o);
        }

        if (json) {
                return json_print(stdout, out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (!conn)
                printf("(no container engine answers: containers are not shown)\n");
        for (size_t i = 0; i < json_object_array_length(out); i++) {
                json_object *o = json_object_array_get_idx(out, i), *q, *cs, *v;

                if (json_object_get_boolean(json_object_object_get(o, "valid")))
                        printf("%s\n", string_of(o, "name"));
                else
                        printf("%s INVALID: %s\n", string_of(o, "name"), strna(string_of(o, "reason")));
                printf("    slice %s, runner %s%s%s\n", string_of(o, "slice"), strna(string_of(o, "service")),
                       string_of(o, "service_status") ? ": " : "", strempty(string_of(o, "service_status")));
                /* A valid, enabled channel whose inbox nobody watches runs nothing that is queued. */
                if (string_of(o, "inbox_watch") && !streq(string_of(o, "inbox_watch"), "active") &&
                    json_object_get_boolean(json_object_object_get(o, "valid")))
                        printf("    inbox watch %s: queued messages wait (systemctl start loop-agent@%s.path)\n",
                               string_of(o, "inbox_watch"), string_of(o, "name"));
                q = json_object_object_get(o, "queue");
                if (json_object_get_boolean(json_object_object_get(q, "present")))
                        printf("    queue: %" PRId64 " queued, %" PRId64 " done, %" PRId64 " failed; session %s\n",
                               json_object_object_get_ex(q, "queued", &v) ? json_object_get_int64(v) : 0,
                               json_object_object_get_ex(q, "done", &v) ? json_object_get_int64(v) : 0,
                               json_object_object_get_ex(q, "failed", &v) ? json_object_get_int64(v) : 0,
                               strna(string_of(q, "session")));
                else
                        printf("    queue: none yet\n");
                cs = json_object_object_get(o, "containers");
                for (size_t j = 0; j < json_object_array_length(cs); j++) {
                        json_object *ct = json_object_array_get_idx(cs, j), *at;
                        char when[64] = "";
                        if (json_object_object_get_ex(ct, "remove_at_usec", &at)) {
                                uint64_t t = json_object_get_uint64(at), now = clock_usec(CLOCK_REALTIME);
                                snprintf(when, sizeof when, ", removed in %" PRIu64 " s", t > now ? (t - now + 999999) / 1000000 : 0);
                        }
                        printf("    container %s (%s) %s, %s%s%s%s\n", strna(string_of(ct, "name")), strna(string_of(ct, "type")),
                               strna(string_of(ct, "state")), string_of(ct, "status") ?: "not registered", when,
                               string_of(ct, "scope") ? " in " : "", strempty(string_of(ct, "scope")));
                }
        }
        if (json_object_array_length(out) == 0)
                printf("No channels in %s/channels.d/.\n", set->dir);
        return EXIT_SUCCESS;
}

int verb_cleanup(int argc, char *argv[]) {
        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ char *label = NULL;
        const char *only = argc > 1 ? argv[1] : NULL;
        size_t removed = 0;
        int r, ret = EXIT_SUCCESS;

        if (argc > 2 || (only && (streq(only, "--help") || streq(only, "-h")))) {
                printf("loop cleanup [NAME]\n\nStop and remove every container loop made (of channel NAME).\n");
                return argc > 2 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (only && !loop_check_channel_name(only))
                return EXIT_FAILURE;
        if (loop_connect_engine(&set, &conn) < 0)
                return EXIT_FAILURE;
        if (only ? asprintf(&label, "loop-channel=%s", only) < 0 : !(label = strdup("app=loop-agent")))
                return log_oom(), EXIT_FAILURE;
        r = engine_container_list(conn->engine, label, true, &list);
        if (r < 0)
                return log_error_errno(r, "Failed to list containers: %s", engine_last_error(conn->engine)), EXIT_FAILURE;
        /* A channel that is gone from the config may still have containers to clean up; one that never
         * existed is most likely a typo, which "0 containers removed" would hide. */
        if (only && !config_set_find_channel(set, only) && json_object_array_length(list) == 0) {
                log_error("No channel \"%s\" in %s/channels.d/ and no container of that name: nothing to clean up.",
                          only, set->dir);
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i);
                const char *id = string_of(c, "Id");

                /* Both labels: loop-channel alone could be set by anyone's container. */
                if (!id || !streq_ptr(engine_container_label(c, "app"), "loop-agent"))
                        continue;
                (void) engine_container_stop(conn->engine, id, 5);
                /* Through the channel's registry, so the removal is journaled and the entry dropped. */
                {
                        _cleanup_(registry_freep) Registry *reg = NULL;
                        const char *ch = engine_container_label(c, "loop-channel");
                        if (ch && registry_open(ch, &reg) >= 0) {
                                r = registry_remove(reg, conn->engine, id, "cleanup");
                                (void) registry_close(TAKE_PTR(reg));
                        } else if ((r = engine_container_remove(conn->engine, id, true)) < 0)
                                log_error("Failed to remove %.12s: %s", id, engine_last_error(conn->engine));
                }
                if (r < 0) {
                        ret = EXIT_FAILURE;
                        continue;
                }
                printf("removed %.12s (%s, %s)\n", id, strna(engine_container_label(c, "loop-channel")), strna(engine_container_label(c, "loop-type")));
                removed++;
        }
        printf("%zu container%s removed\n", removed, removed == 1 ? "" : "s");
        return ret;
}
