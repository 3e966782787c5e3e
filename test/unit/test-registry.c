/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The container registry: the file round trip under its lock, registration, scheduled removal, and the
 * reconcile logic (stale entries, status sync, scheduling, expiry, cancellation, restore) fed with
 * observations as the engine would report them. The engine itself is exercised by test-run. */

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "io-util.h"
#include "registry.h"
#include "strv.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-registry-XXXXXX";

static const char *ID_A = "aaaa000000000000000000000000000000000000000000000000000000000001";
static const char *ID_B = "bbbb000000000000000000000000000000000000000000000000000000000002";
static const char *ID_S = "5555000000000000000000000000000000000000000000000000000000000003";

#define SEC 1000000ULL

static Registry *reopen(Registry *r, const char *channel) {
        Registry *n = NULL;

        if (r)
                (void) registry_close(r);
        if (registry_open(channel, &n) < 0)
                return NULL;
        return n;
}

static void test_file_round_trip(void) {
        Registry *r = reopen(NULL, "demo");
        RegistryEntry *e;

        ok(r && r->n == 0 && !r->existed, "a new channel has an empty registry and no file");
        ok(registry_register(r, ID_A, "loop-demo-aaaaaa", CONTAINER_AGENT, "service", "libpod-a.scope", 42) == 0,
           "registering an agent container succeeds");
        ok(registry_register(r, ID_S, "loop-shell-demo", CONTAINER_SHELL, "shell", NULL, 0) == 0,
           "registering a shell container succeeds");
        ok(registry_register(r, ID_A, "loop-demo-aaaaaa", CONTAINER_AGENT, "service", NULL, 0) == 0 && r->n == 2,
           "registering the same id again does not add an entry");
        r = reopen(r, "demo");
        ok(r && r->existed && r->n == 2, "the registry survives close and open");
        e = r ? registry_find(r, ID_A) : NULL;
        ok(e && e->type == CONTAINER_AGENT && e->status == CONTAINER_STATUS_RUNNING && streq_ptr(e->owner, "service") &&
           streq_ptr(e->scope, "libpod-a.scope") && streq_ptr(e->name, "loop-demo-aaaaaa"),
           "an entry keeps its type, status, owner, scope and name");
        ok(r && registry_find_type(r, CONTAINER_SHELL) && streq(registry_find_type(r, CONTAINER_SHELL)->id, ID_S),
           "the shell singleton is found by its type");
        ok(r && !registry_find_type(r, CONTAINER_CHROME), "no chrome container is found when there is none");
        (void) registry_close(r);
}

static void test_lock(void) {
        char path[4096];
        Registry *r = NULL;
        int fd;

        ok(registry_open("demo", &r) == 0, "the registry opens");
        snprintf(path, sizeof path, "%s/demo/registry.lock", tmpdir);
        fd = open(path, O_RDWR | O_CLOEXEC);
        ok(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK,
           "an open registry holds the channel's lock");
        registry_free(r);
        ok(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "freeing the registry releases the lock");
        safe_close(fd);
}

static void test_reconcile(void) {
        Registry *r = reopen(NULL, "demo");
        char **remove = NULL;
        RegistryEntry *e;
        uint64_t now = 1000 * SEC;

        /* A is running, S stopped, B unknown to the registry and running. */
        EngineContainerState seen[] = {
                { .id = ID_A, .name = "loop-demo-aaaaaa", .type = CONTAINER_AGENT, .running = true },
                { .id = ID_S, .name = "loop-shell-demo", .type = CONTAINER_SHELL, .running = false },
                { .id = ID_B, .name = "loop-demo-bbbbbb", .type = CONTAINER_AGENT, .owner = "cli", .running = true },
        };
        ok(r && registry_reconcile(r, seen, 3, now, 300, &remove) == 0, "reconcile succeeds");
        ok(r && r->n == 3 && registry_find(r, ID_B), "a labelled container the registry did not know is added");
        e = r ? registry_find(r, ID_S) : NULL;
        ok(e && e->status == CONTAINER_STATUS_PENDING_REMOVAL && e->remove_at_usec == now + 300 * SEC,
           "a stopped container is scheduled for removal after container_keep_alive_sec");
        ok(strv_length(remove) == 0, "nothing is removed before its time");
        remove = strv_free(remove);

        /* 299 s later nothing is due, 300 s later S is. */
        ok(registry_reconcile(r, seen, 3, now + 299 * SEC, 300, &remove) == 0 && strv_length(remove) == 0,
           "a pending container is kept until its time");
        remove = strv_free(remove);
        ok(registry_reconcile(r, seen, 3, now + 300 * SEC, 300, &remove) == 0 && strv_length(remove) == 1 &&
           streq(remove[0], ID_S), "a pending container is due once its keep-alive is over");
        remove = strv_free(remove);
        ok(registry_find(r, ID_S)->remove_at_usec == now + 300 * SEC,
           "a later reconcile does not push the removal time back");

        /* S runs again: the removal is cancelled. */
        seen[1].running = true;
        ok(registry_reconcile(r, seen, 3, now + 400 * SEC, 300, &remove) == 0 && strv_length(remove) == 0 &&
           registry_find(r, ID_S)->status == CONTAINER_STATUS_RUNNING && registry_find(r, ID_S)->remove_at_usec == 0,
           "a pending container that runs again is taken off the schedule");
        remove = strv_free(remove);

        /* A is gone from the engine. */
        ok(registry_reconcile(r, &seen[1], 2, now + 500 * SEC, 300, NULL) == 0 && !registry_find(r, ID_A) && r->n == 2,
           "a container gone from the engine is dropped from the registry");

        /* B stops: running -> pending-removal in one pass, but not under the run that waits for it. */
        seen[2].running = false;
        ok(registry_reconcile(r, &seen[1], 2, now + 600 * SEC, 0, &remove) == 0 && strv_length(remove) == 0 &&
           registry_find(r, ID_B)->status == CONTAINER_STATUS_PENDING_REMOVAL,
           "with container_keep_alive_sec 0 a container seen exiting is left to its run for a grace period");
        remove = strv_free(remove);
        ok(registry_reconcile(r, &seen[1], 2, now + 600 * SEC + REGISTRY_EXIT_GRACE_SEC * SEC, 0, &remove) == 0 &&
           strv_length(remove) == 1 && streq(remove[0], ID_B), "  ... and is due once the grace period is over");
        remove = strv_free(remove);
        /* S, found stopped and pending at once, is due at once with keep-alive 0 (no run waits for it). */
        (void) registry_close(r);
}

/* The reconcile timer sees a run's container exit before the run itself says it is over (the runner being
 * stopped): the grace it gives ends at the run's own schedule, keep-alive counted from the run's end. */
static void test_run_end_shortens_grace(void) {
        Registry *r = reopen(NULL, "grace");
        EngineContainerState seen[] = {
                { .id = ID_A, .name = "loop-grace-a", .type = CONTAINER_AGENT, .owner = "service", .running = false },
        };
        uint64_t now = 2000 * SEC;
        RegistryEntry *e;

        ok(r && registry_register(r, ID_A, "loop-grace-a", CONTAINER_AGENT, "service", NULL, 0) == 0, "register a run's container");
        ok(r && registry_reconcile(r, seen, 1, now, 4, NULL) == 0 && (e = registry_find(r, ID_A)) &&
           e->status == CONTAINER_STATUS_PENDING_REMOVAL && e->remove_at_usec == now + REGISTRY_EXIT_GRACE_SEC * SEC,
           "a reconcile pass that sees it exit first gives the run its grace");
        ok(r && registry_schedule_remove(r, NULL, ID_A, now + 2 * SEC, 4) == 0 && (e = registry_find(r, ID_A)) &&
           e->remove_at_usec == now + 6 * SEC, "the run's end schedules it container_keep_alive_sec from then");
        ok(r && registry_schedule_remove(r, NULL, ID_A, now + 3 * SEC, 4) == 0 && (e = registry_find(r, ID_A)) &&
           e->remove_at_usec == now + 6 * SEC, "  ... and a later schedule does not push it back");
        if (r)
                (void) registry_close(r);
}

static void test_register_cancels(void) {
        Registry *r = reopen(NULL, "cancel");
        RegistryEntry *e;

        ok(r && registry_register(r, ID_A, "loop-cancel-a", CONTAINER_SHELL, "shell", NULL, 0) == 0, "register");
        e = registry_find(r, ID_A);
        e->status = CONTAINER_STATUS_PENDING_REMOVAL;
        e->remove_at_usec = 123;
        ok(registry_register(r, ID_A, "loop-cancel-a", CONTAINER_SHELL, "shell", NULL, 0) == 0 &&
           e->status == CONTAINER_STATUS_RUNNING && e->remove_at_usec == 0,
           "registering a pending container again cancels its removal");
        (void) registry_close(r);
}

static void test_restore_and_damage(void) {
        char path[4096];
        Registry *r;

        snprintf(path, sizeof path, "%s/broken/registry.json", tmpdir);
        r = reopen(NULL, "broken");
        (void) registry_close(r);
        ok(write_file_atomic(path, "{ not json", 10, 0644) == 0, "a damaged registry file is written");
        r = reopen(NULL, "broken");
        ok(r && r->n == 0 && !r->existed, "a damaged file is treated as missing (restore from the engine)");
        EngineContainerState seen[] = { { .id = ID_A, .name = "x", .type = CONTAINER_AGENT, .running = true } };
        ok(r && registry_reconcile(r, seen, 1, 10 * SEC, 300, NULL) == 0 && r->n == 1 && r->existed,
           "restore fills the registry from the engine");
        (void) registry_close(r);

        snprintf(path, sizeof path, "%s/partial/registry.json", tmpdir);
        r = reopen(NULL, "partial");
        (void) registry_close(r);
        const char *text = "{\"containers\":[{\"id\":\"x1\",\"name\":\"a\",\"type\":\"agent\",\"status\":\"running\"},"
                           "{\"id\":\"x2\",\"name\":\"b\",\"type\":\"bogus\",\"status\":\"running\"},"
                           "{\"name\":\"c\"}, 7]}";
        ok(write_file_atomic(path, text, strlen(text), 0644) == 0, "a registry with bad entries is written");
        r = reopen(NULL, "partial");
        ok(r && r->n == 1 && registry_find(r, "x1"), "invalid entries are skipped, valid ones kept");
        registry_free(r);

        ok(registry_open("../evil", &r) == -EINVAL, "a channel name with a path is refused");
}

static void test_engine_list(void) {
        const char *json =
                "[{\"Id\":\"c1\",\"Names\":[\"/loop-demo-1\"],\"State\":\"running\","
                "  \"Labels\":{\"app\":\"loop-agent\",\"loop-channel\":\"demo\",\"loop-type\":\"agent\",\"loop-owner\":\"cli\"}},"
                " {\"Id\":\"c2\",\"Names\":[\"loop-demo-2\"],\"State\":\"exited\","
                "  \"Labels\":{\"app\":\"loop-agent\",\"loop-channel\":\"demo\",\"loop-type\":\"shell\"}},"
                " {\"Id\":\"c3\",\"State\":\"running\",\"Labels\":{\"loop-channel\":\"demo\",\"loop-type\":\"agent\"}},"
                " {\"Id\":\"c4\",\"State\":\"running\",\"Labels\":{\"app\":\"loop-agent\",\"loop-channel\":\"other\",\"loop-type\":\"agent\"}},"
                " {\"Id\":\"c5\",\"State\":\"running\",\"Labels\":{\"app\":\"loop-agent\",\"loop-channel\":\"demo\",\"loop-type\":\"weird\"}},"
                " {\"Id\":\"c6\",\"State\":\"paused\",\"Labels\":{\"app\":\"loop-agent\",\"loop-channel\":\"demo\",\"loop-type\":\"chrome\"}},"
                " 17, {\"Labels\":{\"app\":\"loop-agent\",\"loop-channel\":\"demo\",\"loop-type\":\"agent\"}}]";
        json_object *list = json_tokener_parse(json);
        EngineContainerState *s = NULL;
        int n = engine_containers_of_channel(list, "demo", &s);

        ok(n == 3, "only containers with app=loop-agent, the channel's label, a known type and an id count (%d)", n);
        ok(n == 3 && streq(s[0].id, "c1") && streq(s[0].name, "loop-demo-1") && s[0].running &&
           streq_ptr(s[0].owner, "cli"), "the name loses its leading slash; state and owner are read");
        ok(n == 3 && streq(s[1].id, "c2") && !s[1].running && s[1].type == CONTAINER_SHELL,
           "an exited container is not running");
        ok(n == 3 && streq(s[2].id, "c6") && s[2].running && s[2].type == CONTAINER_CHROME,
           "a paused container counts as running");
        free(s);
        json_object_put(list);
}

int main(void) {
        if (!mkdtemp(tmpdir))
                return 1;
        setenv("LOOP_STATE_DIR", tmpdir, 1);

        test_file_round_trip();
        test_lock();
        test_reconcile();
        test_run_end_shortens_grace();
        test_register_cancels();
        test_restore_and_damage();
        test_engine_list();
        ok(container_status_from_string("pending-removal") == CONTAINER_STATUS_PENDING_REMOVAL &&
           container_status_from_string("gone") < 0, "statuses parse by name");

        {
                char cmd[4200];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
                if (system(cmd) != 0)
                        diag("could not remove the temp dir");
        }
        return done_testing();
}
