/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The pure parts of freezing a channel's containers: which cgroup /proc/PID/cgroup names, which of its
 * ancestors is the container's own, what cgroup.events says, and the record a dead proxy leaves. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cgroup-freeze.h"
#include "macro.h"
#include "tap.h"

#define ID "61b142a599008fb372c64cbc93b2b83d970b96142900375850a830382e412823"

static void test_proc_cgroup(void) {
        _cleanup_free_ char *p = NULL;
        int r;

        r = cgroup_proc_unified_path("12:cpuset:/libpod_parent/libpod-" ID "\n"
                                     "1:name=systemd:/libpod_parent/libpod-" ID "\n"
                                     "0::/libpod_parent/libpod-" ID "\n", &p);
        ok(r == 0 && streq_ptr(p, "/libpod_parent/libpod-" ID), "the 0:: line of a hybrid layout is the unified path");
        p = mfree(p);
        r = cgroup_proc_unified_path("0::/system.slice/docker-" ID ".scope", &p);
        ok(r == 0 && streq_ptr(p, "/system.slice/docker-" ID ".scope"), "a last line without a newline is read");
        p = mfree(p);
        ok(cgroup_proc_unified_path("4:pids:/docker/" ID "\n1:name=systemd:/docker/" ID "\n", &p) == -ENOMEDIUM,
           "a legacy layout without a 0:: line has no unified path");
        ok(cgroup_proc_unified_path("0::/a/../b\n", &p) == -EBADMSG, "a path with .. is refused");
        ok(cgroup_proc_unified_path("0::relative/x\n", &p) == -EBADMSG, "a relative path is refused");
        ok(cgroup_proc_unified_path("0::/a//b\n", &p) == -EBADMSG, "an empty component is refused");
        ok(cgroup_proc_unified_path("0::/a/./b\n", &p) == -EBADMSG, "a . component is refused");
        ok(cgroup_proc_unified_path("10::/x\n", &p) == -ENOMEDIUM, "a hierarchy 10 line is not the 0:: line");
        ok(cgroup_proc_unified_path("", &p) == -ENOMEDIUM, "an empty file has no unified path");
}

static void test_container_cgroup(void) {
        _cleanup_free_ char *p = NULL;

        ok(cgroup_path_of_container("/loop.slice/loop-x.slice/libpod-" ID ".scope/container", ID, &p) == 0 &&
           streq_ptr(p, "/loop.slice/loop-x.slice/libpod-" ID ".scope"),
           "Podman's sub-cgroup \"container\" is frozen through the scope named after the container");
        p = mfree(p);
        ok(cgroup_path_of_container("/docker/" ID, ID, &p) == 0 && streq_ptr(p, "/docker/" ID),
           "cgroupfs Docker's /docker/ID is the container's cgroup");
        p = mfree(p);
        ok(cgroup_path_of_container("/user.slice/user-0.slice/session-1.scope", ID, &p) == -ESRCH,
           "a cgroup that does not name the container is not frozen in its stead");
        ok(cgroup_path_of_container("/", ID, &p) == -ESRCH, "the root is never the container's");
        ok(cgroup_path_of_container("/docker/" ID, "abc", &p) == -EINVAL, "a short id is refused");
}

static void test_events(void) {
        ok(cgroup_events_frozen("populated 1\nfrozen 1\n") == 1, "cgroup.events with frozen 1 is frozen");
        ok(cgroup_events_frozen("populated 1\nfrozen 0\n") == 0, "cgroup.events with frozen 0 is not");
        ok(cgroup_events_frozen("frozen 1") == 1, "the key is read without a trailing newline");
        ok(cgroup_events_frozen("populated 1\n") == -EBADMSG, "cgroup.events without the key is malformed");
        ok(cgroup_events_frozen("frozen 2\nfrozen 11\n") == -EBADMSG, "a value other than 0 or 1 is malformed");
        ok(cgroup_events_frozen("unfrozen 1\n") == -EBADMSG, "only the key itself counts");
}

static void test_record(void) {
        char dir[] = "/tmp/test-cgroup-freeze.XXXXXX", path[sizeof(dir) + 32];
        char *paths[] = { (char *) "/docker/" ID, (char *) "/machine.slice/libpod-" ID ".scope", NULL };
        char line[256];
        FILE *f;

        if (!mkdtemp(dir)) {
                ok(0, "a temporary directory");
                return;
        }
        snprintf(path, sizeof(path), "%s/" CGROUP_FREEZE_RECORD, dir);
        ok(cgroup_freeze_record_write(dir, paths) == 0, "the record of a freeze is written");
        f = fopen(path, "re");
        ok(f && fgets(line, sizeof(line), f) && streq(line, "/docker/" ID "\n"), "...one cgroup a line");
        if (f)
                fclose(f);
        ok(cgroup_freeze_record_remove(dir) == 0 && access(path, F_OK) < 0, "the record is removed after the thaw");
        ok(cgroup_freeze_record_remove(dir) == 0, "removing a record that is not there is fine");
        ok(cgroup_freeze_record_thaw(dir) == 0, "no record: nothing to thaw");
        (void) rmdir(dir);
}

int main(void) {
        test_proc_cgroup();
        test_container_cgroup();
        test_events();
        test_record();
        ok(cgroup_path_is_valid("/a/b") && !cgroup_path_is_valid("/a/b/") && !cgroup_path_is_valid("/a\nb"),
           "a record's line is a path only when it is one the kernel would name");
        return done_testing();
}
