/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include "audit.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "registry.h"
#include "state-dir.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

static const char * const status_table[_CONTAINER_STATUS_MAX] = {
        [CONTAINER_STATUS_RUNNING] = "running",
        [CONTAINER_STATUS_STOPPED] = "stopped",
        [CONTAINER_STATUS_PENDING_REMOVAL] = "pending-removal",
};

const char *container_status_to_string(ContainerStatus s) {
        return s >= 0 && s < _CONTAINER_STATUS_MAX ? status_table[s] : NULL;
}

ContainerStatus container_status_from_string(const char *s) {
        return (ContainerStatus) string_table_lookup(status_table, _CONTAINER_STATUS_MAX, s);
}

static void entry_done(RegistryEntry *e) {
        free(e->id);
        free(e->name);
        free(e->owner);
        free(e->scope);
        *e = (RegistryEntry) {};
}

Registry *registry_free(Registry *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                entry_done(&r->entries[i]);
        free(r->entries);
        free(r->channel);
        free(r->path);
        safe_close(r->lock_fd);         /* releases the flock */
        free(r);
        return NULL;
}

/* --- the audit events ------------------------------------------------------------------------------ */

static void emit(AuditEvent ev, int priority, const Registry *r, const RegistryEntry *e, const char *status,
                 const char *old_status, const char *reason, pid_t pid, const char *format, ...) _printf_(9, 10);

static void emit(AuditEvent ev, int priority, const Registry *r, const RegistryEntry *e, const char *status,
                 const char *old_status, const char *reason, pid_t pid, const char *format, ...) {
        _cleanup_free_ char *msg = NULL, *f_status = NULL, *f_old = NULL, *f_reason = NULL, *f_remove = NULL,
                            *f_pid = NULL;
        char *extra[6] = {};
        size_t n = 0;
        va_list ap;

        va_start(ap, format);
        (void) strprintf_va(&msg, format, ap);
        va_end(ap);
        if (!msg)
                return (void) log_oom();

        if (status && asprintf(&f_status, "LOOP_STATUS=%s", status) >= 0)
                extra[n++] = f_status;
        if (old_status && asprintf(&f_old, "LOOP_OLD_STATUS=%s", old_status) >= 0)
                extra[n++] = f_old;
        if (reason && asprintf(&f_reason, "LOOP_REASON=%s", reason) >= 0)
                extra[n++] = f_reason;
        if (e->status == CONTAINER_STATUS_PENDING_REMOVAL &&
            asprintf(&f_remove, "LOOP_REMOVE_AT_USEC=%" PRIu64, e->remove_at_usec) >= 0)
                extra[n++] = f_remove;
        if (pid > 0 && asprintf(&f_pid, "LOOP_PID=%d", (int) pid) >= 0)
                extra[n++] = f_pid;

        AuditFields f = {
                .channel = r->channel,
                .container = e->id,
                .container_name = e->name,
                .container_type = container_type_to_string(e->type),
                .scope = e->scope,
                .extra = extra,
        };
        (void) audit_log(ev, priority, &f, "%s", msg);
}

/* --- the file ---------------------------------------------------------------------------------------- */

static int entry_from_json(json_object *o, RegistryEntry *ret) {
        json_object *v;
        RegistryEntry e = {};

        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
#define STR_FIELD(key, dst, required)                                                           \
        do {                                                                                    \
                if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)) { \
                        if (!(dst = strdup(json_object_get_string(v))))                          \
                                goto oom;                                                       \
                } else if (required)                                                            \
                        goto invalid;                                                           \
        } while (0)
        STR_FIELD("id", e.id, true);
        STR_FIELD("name", e.name, true);
        STR_FIELD("owner", e.owner, false);
        STR_FIELD("scope", e.scope, false);
#undef STR_FIELD
        if (!json_object_object_get_ex(o, "type", &v) ||
            (e.type = container_type_from_string(json_object_get_string(v))) < 0)
                goto invalid;
        if (!json_object_object_get_ex(o, "status", &v) ||
            (e.status = container_status_from_string(json_object_get_string(v))) < 0)
                goto invalid;
        if (json_object_object_get_ex(o, "registered_usec", &v))
                e.registered_usec = (uint64_t) json_object_get_uint64(v);
        if (json_object_object_get_ex(o, "remove_at_usec", &v))
                e.remove_at_usec = (uint64_t) json_object_get_uint64(v);
        *ret = e;
        return 0;
invalid:
        entry_done(&e);
        return -EINVAL;
oom:
        entry_done(&e);
        return -ENOMEM;
}

static int registry_load(Registry *r) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_free_ char *text = NULL;
        json_object *list;
        size_t n;
        int k;

        k = read_full_file_at(AT_FDCWD, r->path, REGISTRY_FILE_MAX, true, &text, NULL);
        if (k == -ENOENT)
                return 0;
        if (k < 0) {
                log_warning_errno(k, "Cannot read %s, restoring the registry from the engine: %m", r->path);
                return 0;
        }
        r->existed = true;
        j = json_tokener_parse(text);
        if (!j || !json_object_object_get_ex(j, "containers", &list) || !json_object_is_type(list, json_type_array)) {
                log_warning("%s is damaged, restoring the registry from the engine.", r->path);
                r->existed = false;
                return 0;
        }
        n = MIN(json_object_array_length(list), (size_t) REGISTRY_ENTRIES_MAX);
        r->entries = calloc(n ?: 1, sizeof *r->entries);
        if (!r->entries)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                RegistryEntry e;
                k = entry_from_json(json_object_array_get_idx(list, i), &e);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        log_warning("%s: entry %zu is invalid, ignoring it.", r->path, i);
                        continue;
                }
                if (registry_find(r, e.id)) {
                        entry_done(&e);
                        continue;
                }
                r->entries[r->n++] = e;
        }
        return 0;
}

/* An empty registry of channel, its paths set, nothing opened. */
static int registry_new(const char *channel, char **ret_dir, Registry **ret) {
        _cleanup_(registry_freep) Registry *r = NULL;
        _cleanup_free_ char *dir = NULL;
        const char *reason;
        int k;

        if (channel_name_check(channel, &reason) < 0)
                return -EINVAL;
        k = channel_state_dir(channel, &dir);
        if (k < 0)
                return k;
        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->lock_fd = -EBADF;
        if (!(r->channel = strdup(channel)) || asprintf(&r->path, "%s/registry.json", dir) < 0)
                return -ENOMEM;
        *ret_dir = TAKE_PTR(dir);
        *ret = TAKE_PTR(r);
        return 0;
}

int registry_open(const char *channel, Registry **ret) {
        _cleanup_(registry_freep) Registry *r = NULL;
        _cleanup_free_ char *dir = NULL, *lock = NULL;
        int k;

        k = registry_new(channel, &dir, &r);
        if (k < 0)
                return k;
        k = mkdir_owned(dir, 0751, 0, 0);
        if (k < 0)
                return k;
        if (asprintf(&lock, "%s/registry.lock", dir) < 0)
                return -ENOMEM;
        r->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (r->lock_fd < 0)
                return -errno;
        while (flock(r->lock_fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return -errno;

        k = registry_load(r);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int registry_read(const char *channel, Registry **ret) {
        _cleanup_(registry_freep) Registry *r = NULL;
        _cleanup_free_ char *dir = NULL;
        int k;

        k = registry_new(channel, &dir, &r);
        if (k < 0)
                return k;
        k = registry_load(r);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

static json_object *entry_to_json(const RegistryEntry *e) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o ||
            json_add(o, "id", json_object_new_string(e->id)) < 0 ||
            json_add(o, "name", json_object_new_string(e->name)) < 0 ||
            json_add(o, "type", json_object_new_string(container_type_to_string(e->type))) < 0 ||
            json_add(o, "status", json_object_new_string(container_status_to_string(e->status))) < 0 ||
            (e->owner && json_add(o, "owner", json_object_new_string(e->owner)) < 0) ||
            (e->scope && json_add(o, "scope", json_object_new_string(e->scope)) < 0) ||
            json_add(o, "registered_usec", json_object_new_uint64(e->registered_usec)) < 0 ||
            (e->status == CONTAINER_STATUS_PENDING_REMOVAL &&
             json_add(o, "remove_at_usec", json_object_new_uint64(e->remove_at_usec)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

int registry_save(Registry *r) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        json_object *list;
        const char *text;
        int k;

        /* every entry or no file: a container missing from the registry would never be removed */
        j = json_object_new_object();
        if (!j || json_add(j, "containers", list = json_object_new_array()) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < r->n; i++)
                if (json_push(list, entry_to_json(&r->entries[i])) < 0)
                        return -ENOMEM;
        text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        k = write_file_atomic(r->path, text, strlen(text), 0644);
        if (k < 0)
                log_warning_errno(k, "Failed to write %s: %m", r->path);
        return k;
}

int registry_close(Registry *r) {
        int k;

        if (!r)
                return 0;
        k = registry_save(r);
        registry_free(r);
        return k;
}

/* --- lookups and changes ------------------------------------------------------------------------------ */

RegistryEntry *registry_find(Registry *r, const char *id) {
        for (size_t i = 0; id && i < r->n; i++)
                if (streq(r->entries[i].id, id))
                        return &r->entries[i];
        return NULL;
}

RegistryEntry *registry_find_type(Registry *r, ContainerType type) {
        for (size_t i = 0; i < r->n; i++)
                if (r->entries[i].type == type)
                        return &r->entries[i];
        return NULL;
}

static int registry_append(Registry *r, const char *id, const char *name, ContainerType type, const char *owner,
                           const char *scope, ContainerStatus status, uint64_t now, RegistryEntry **ret) {
        RegistryEntry *grown, e = { .type = type, .status = status, .registered_usec = now };

        if (r->n >= REGISTRY_ENTRIES_MAX)
                return -E2BIG;
        if (!(e.id = strdup(id)) || !(e.name = strdup(name)) || (owner && !(e.owner = strdup(owner))) ||
            (scope && !(e.scope = strdup(scope)))) {
                entry_done(&e);
                return -ENOMEM;
        }
        grown = reallocarray(r->entries, r->n + 1, sizeof *r->entries);
        if (!grown) {
                entry_done(&e);
                return -ENOMEM;
        }
        r->entries = grown;
        r->entries[r->n] = e;
        *ret = &r->entries[r->n++];
        return 0;
}

static void registry_drop(Registry *r, RegistryEntry *e) {
        size_t i = (size_t) (e - r->entries);

        entry_done(e);
        memmove(&r->entries[i], &r->entries[i + 1], (r->n - i - 1) * sizeof *r->entries);
        r->n--;
}

static void set_status(Registry *r, RegistryEntry *e, ContainerStatus s, const char *reason) {
        ContainerStatus old = e->status;

        if (old == s)
                return;
        e->status = s;
        if (s != CONTAINER_STATUS_PENDING_REMOVAL)
                e->remove_at_usec = 0;
        if (s == CONTAINER_STATUS_PENDING_REMOVAL)
                emit(AUDIT_CONTAINER_STATUS, LOG_INFO, r, e, container_status_to_string(s),
                     container_status_to_string(old), reason, 0,
                     "Container %s stopped; removal scheduled in %" PRIu64 " s.", e->name,
                     (e->remove_at_usec - MIN(e->remove_at_usec, clock_usec(CLOCK_REALTIME)) + 999999) / 1000000);
        else
                emit(AUDIT_CONTAINER_STATUS, LOG_INFO, r, e, container_status_to_string(s),
                     container_status_to_string(old), reason, 0, "Container %s is %s (was %s).", e->name,
                     container_status_to_string(s), container_status_to_string(old));
}

int registry_register(Registry *r, const char *id, const char *name, ContainerType type, const char *owner,
                      const char *scope, pid_t pid) {
        RegistryEntry *e = registry_find(r, id);
        int k;

        if (e) {
                if (scope && !streq_ptr(scope, e->scope) && free_and_strdup(&e->scope, scope) < 0)
                        return -ENOMEM;
                /* Running again: whatever removal was scheduled is off. */
                set_status(r, e, CONTAINER_STATUS_RUNNING, e->status == CONTAINER_STATUS_PENDING_REMOVAL ?
                           "removal-cancelled" : NULL);
                return 0;
        }
        k = registry_append(r, id, name, type, owner, scope, CONTAINER_STATUS_RUNNING, clock_usec(CLOCK_REALTIME), &e);
        if (k < 0)
                return k;
        emit(AUDIT_CONTAINER_REGISTERED, LOG_INFO, r, e, "running", NULL, NULL, pid,
             "Container %s (%s) registered for channel %s.", name, container_type_to_string(type), r->channel);
        return 0;
}

static bool engine_error_is_gone(Engine *e) {
        const char *m = engine_last_error(e);
        return m && (strstr(m, ": 404 ") || strstr(m, "no such container") || strstr(m, "No such container"));
}

int registry_remove(Registry *r, Engine *e, const char *id, const char *reason) {
        RegistryEntry *entry = registry_find(r, id);
        int k;

        k = engine_container_remove(e, id, true);
        if (k < 0 && k != -ENOENT && !engine_error_is_gone(e))
                return log_warning_errno(k, "Failed to remove container %.12s: %s", id, engine_last_error(e));
        if (entry) {
                emit(AUDIT_CONTAINER_REMOVED, LOG_INFO, r, entry, "removed", container_status_to_string(entry->status),
                     reason, 0, "Container %s removed (%s).", entry->name, reason);
                registry_drop(r, entry);
        }
        return 0;
}

int registry_schedule_remove(Registry *r, Engine *e, const char *id, uint64_t now_usec, uint64_t keep_alive_sec) {
        RegistryEntry *entry = registry_find(r, id);

        if (keep_alive_sec == 0 || !entry)
                return registry_remove(r, e, id, "finished");
        if (entry->status == CONTAINER_STATUS_PENDING_REMOVAL) {
                /* A reconcile pass that saw it exit first gave it the grace of a run still reading its
                 * output; the run is over now: its keep-alive counts from here, if that is sooner. */
                entry->remove_at_usec = MIN(entry->remove_at_usec, now_usec + keep_alive_sec * 1000000ULL);
                return 0;
        }
        entry->remove_at_usec = now_usec + keep_alive_sec * 1000000ULL;
        set_status(r, entry, CONTAINER_STATUS_PENDING_REMOVAL, "stopped");
        return 0;
}

/* --- reconcile ---------------------------------------------------------------------------------------- */

static const EngineContainerState *observed_find(const EngineContainerState *o, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(o[i].id, id))
                        return &o[i];
        return NULL;
}

int registry_reconcile(Registry *r, const EngineContainerState *observed, size_t n_observed, uint64_t now_usec,
                       uint64_t keep_alive_sec, char ***ret_remove) {
        _cleanup_strv_free_ char **remove = NULL;
        size_t restored = 0;
        int k;

        /* Stale: gone from the engine behind loop's back (or removed by someone else). */
        for (size_t i = 0; i < r->n;) {
                RegistryEntry *e = &r->entries[i];
                if (observed_find(observed, n_observed, e->id)) {
                        i++;
                        continue;
                }
                emit(AUDIT_CONTAINER_REMOVED, LOG_NOTICE, r, e, "removed", container_status_to_string(e->status),
                     "vanished", 0, "Container %s is gone from the engine; dropped from the registry.", e->name);
                registry_drop(r, e);
        }

        for (size_t i = 0; i < n_observed; i++) {
                const EngineContainerState *o = &observed[i];
                RegistryEntry *e = registry_find(r, o->id);

                if (!e) {
                        k = registry_append(r, o->id, o->name, o->type, o->owner, NULL,
                                            o->running ? CONTAINER_STATUS_RUNNING : CONTAINER_STATUS_STOPPED, now_usec, &e);
                        if (k == -E2BIG) {
                                log_warning("The registry of channel %s is full (%u entries); not recording %.12s.",
                                            r->channel, REGISTRY_ENTRIES_MAX, o->id);
                                continue;
                        }
                        if (k < 0)
                                return k;
                        if (r->existed)
                                emit(AUDIT_CONTAINER_REGISTERED, LOG_INFO, r, e, container_status_to_string(e->status),
                                     NULL, "found", 0, "Container %s (%s) found in the engine and registered.",
                                     e->name, container_type_to_string(e->type));
                        else
                                restored++;
                }

                if (o->running)
                        set_status(r, e, CONTAINER_STATUS_RUNNING,
                                   e->status == CONTAINER_STATUS_PENDING_REMOVAL ? "removal-cancelled" : NULL);
                else if (e->status == CONTAINER_STATUS_RUNNING || e->status == CONTAINER_STATUS_STOPPED) {
                        uint64_t keep = keep_alive_sec;

                        if (e->status == CONTAINER_STATUS_RUNNING) {
                                set_status(r, e, CONTAINER_STATUS_STOPPED, "exited");
                                /* Its run may still be about to wait for it and read its output. */
                                keep = MAX(keep, (uint64_t) REGISTRY_EXIT_GRACE_SEC);
                        }
                        e->remove_at_usec = now_usec + keep * 1000000ULL;
                        set_status(r, e, CONTAINER_STATUS_PENDING_REMOVAL, "stopped");
                }

                if (e->status == CONTAINER_STATUS_PENDING_REMOVAL && e->remove_at_usec <= now_usec &&
                    (k = strv_extend(&remove, e->id)) < 0)
                        return k;
        }

        if (restored > 0)
                log_info("Registry of channel %s restored from the engine: %zu container%s.", r->channel, restored,
                         restored == 1 ? "" : "s");
        r->existed = true;
        if (ret_remove)
                *ret_remove = TAKE_PTR(remove);
        return 0;
}

static bool state_is_running(const char *state) {
        return state && (streq(state, "running") || streq(state, "paused") || streq(state, "restarting"));
}

int engine_containers_of_channel(json_object *list, const char *channel, EngineContainerState **ret) {
        _cleanup_free_ EngineContainerState *states = NULL;
        size_t n = 0, total = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;

        states = calloc(total ?: 1, sizeof *states);
        if (!states)
                return -ENOMEM;
        for (size_t i = 0; i < total; i++) {
                json_object *c = json_object_array_get_idx(list, i), *v, *names;
                EngineContainerState s = {};
                const char *name = NULL;

                if (!streq_ptr(engine_container_label(c, "app"), "loop-agent") ||
                    !streq_ptr(engine_container_label(c, "loop-channel"), channel))
                        continue;
                if (!json_object_object_get_ex(c, "Id", &v) || !json_object_is_type(v, json_type_string))
                        continue;
                s.id = json_object_get_string(v);
                s.type = container_type_from_string(engine_container_label(c, "loop-type"));
                if (s.type < 0)
                        continue;       /* not a kind loop makes: leave it alone */
                s.owner = engine_container_label(c, "loop-owner");
                if (json_object_object_get_ex(c, "Names", &names) && json_object_is_type(names, json_type_array) &&
                    json_object_array_length(names) > 0)
                        name = json_object_get_string(json_object_array_get_idx(names, 0));
                if (name && name[0] == '/')
                        name++;
                s.name = isempty(name) ? s.id : name;
                s.running = json_object_object_get_ex(c, "State", &v) && state_is_running(json_object_get_string(v));
                states[n++] = s;
        }
        *ret = TAKE_PTR(states);
        return (int) n;
}

int registry_sync(Registry *r, Engine *e, uint64_t keep_alive_sec) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ EngineContainerState *states = NULL;
        _cleanup_strv_free_ char **remove = NULL;
        _cleanup_free_ char *label = NULL;
        int n, k;

        if (asprintf(&label, "loop-channel=%s", r->channel) < 0)
                return -ENOMEM;
        k = engine_container_list(e, label, true, &list);
        if (k < 0)
                return log_warning_errno(k, "Cannot list the containers of channel %s: %s", r->channel, engine_last_error(e));
        n = engine_containers_of_channel(list, r->channel, &states);
        if (n < 0)
                return n;
        k = registry_reconcile(r, states, (size_t) n, clock_usec(CLOCK_REALTIME), keep_alive_sec, &remove);
        if (k < 0)
                return k;
        STRV_FOREACH(id, remove)
                (void) registry_remove(r, e, *id, "keep-alive-expired");
        return 0;
}
