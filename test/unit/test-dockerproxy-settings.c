/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The Docker API proxy's settings from its unit's environment (src/dockerproxy/dockerproxy-settings.h):
 * the defaults, and every bad value refused rather than guessed at. */

#include <stdlib.h>
#include <string.h>

#include "dockerproxy-settings.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static const char * const variables[] = {
        "LOOP_DOCKERPROXY_ENGINE_SOCKET", "LOOP_DOCKERPROXY_POLICY", "LOOP_DOCKERPROXY_WORK_DIR",
        "LOOP_DOCKERPROXY_CONTAINERS_MAX", "LOOP_DOCKERPROXY_NETWORK", "LOOP_DOCKERPROXY_MASKED_PATHS",
        "LOOP_DOCKERPROXY_BUILD", "LOOP_DOCKERPROXY_PROTECTED_IMAGES", "LOOP_DOCKERPROXY_IDLE_SEC",
        "LOOP_DOCKERPROXY_EGRESS", "CREDENTIALS_DIRECTORY", "RUNTIME_DIRECTORY",
};

/* proxy_settings() with name=value set (name NULL: the defaults) and everything else unset. */
static int settings(const char *name, const char *value, DockerProxy *ret) {
        for (size_t i = 0; i < ELEMENTSOF(variables); i++)
                unsetenv(variables[i]);
        setenv("LOOP_RUNTIME_DIR", "/run/loop-test-settings", 1);
        if (name)
                setenv(name, value, 1);
        *ret = (DockerProxy) { .channel = strdup("demo") };
        return proxy_settings(ret);
}

static void test_defaults(void) {
        DockerProxy p;

        ok(settings(NULL, NULL, &p) == 0, "no settings at all are fine");
        ok(p.containers_max == 16 && p.idle_usec == 60 * 1000000ULL, "16 containers, 60 s idle by default");
        ok(!p.build && !p.network_none && !p.masked_paths && !p.protected_images && !p.work_dir && !p.egress,
           "no builds, the engine's networks, nothing masked, protected or allowed beyond the built-in");
        ok(p.engine_socket && (streq(p.engine_socket, "/run/podman/podman.sock") || streq(p.engine_socket, "/var/run/docker.sock")),
           "the engine is Podman's rootful socket, else Docker's");
        is_str(p.gate_socket, "/run/loop-test-settings/demo/gate.sock", "the gate is the channel's");
        is_str(p.state_dir, "/run/loop-test-settings/demo/dockerproxy", "the state is under the runtime dir without RUNTIME_DIRECTORY");
        ok(p.policy != NULL, "the built-in policy is compiled");
        proxy_done(&p);

        ok(settings("RUNTIME_DIRECTORY", "/run/loop-test-settings/x", &p) == 0 && streq(p.state_dir, "/run/loop-test-settings/x"),
           "RUNTIME_DIRECTORY is the state dir");
        proxy_done(&p);
        ok(settings("RUNTIME_DIRECTORY", "/a:/b", &p) == 0 && streq(p.state_dir, "/run/loop-test-settings/demo/dockerproxy"),
           "a RUNTIME_DIRECTORY of several is not taken");
        proxy_done(&p);
}

static void test_values(void) {
        DockerProxy p;

        ok(settings("LOOP_DOCKERPROXY_NETWORK", "none", &p) == 0 && p.network_none, "NETWORK=none: no network for nested containers");
        proxy_done(&p);
        ok(settings("LOOP_DOCKERPROXY_BUILD", "1", &p) == 0 && p.build, "BUILD=1 serves builds");
        proxy_done(&p);
        ok(settings("LOOP_DOCKERPROXY_MASKED_PATHS", "/proc/kcore:/sys/firmware", &p) == 0 &&
           strv_length(p.masked_paths) == 2 && streq(p.masked_paths[1], "/sys/firmware"), "masked paths are read, ':'-separated");
        proxy_done(&p);
        ok(settings("LOOP_DOCKERPROXY_PROTECTED_IMAGES", "loop-agent:latest  quay.io/x/y:1", &p) == 0 &&
           strv_length(p.protected_images) == 2, "protected images are read, ' '-separated");
        proxy_done(&p);
        ok(settings("LOOP_DOCKERPROXY_CONTAINERS_MAX", "3", &p) == 0 && p.containers_max == 3, "the container count is read");
        proxy_done(&p);
        ok(settings("LOOP_DOCKERPROXY_IDLE_SEC", "0", &p) == 0 && p.idle_usec == 1000000ULL, "an idle time of 0 is 1 s");
        proxy_done(&p);
}

static void test_refused(void) {
        static const struct {
                const char *name, *value;
        } bad[] = {
                { "LOOP_DOCKERPROXY_BUILD", "yes" },
                { "LOOP_DOCKERPROXY_NETWORK", "host" },
                { "LOOP_DOCKERPROXY_MASKED_PATHS", "/etc/passwd" },
                { "LOOP_DOCKERPROXY_MASKED_PATHS", "/proc/../etc" },
                { "LOOP_DOCKERPROXY_MASKED_PATHS", "/sys/.." },
                { "LOOP_DOCKERPROXY_ENGINE_SOCKET", "run/docker.sock" },
                { "LOOP_DOCKERPROXY_WORK_DIR", "/" },
                { "LOOP_DOCKERPROXY_WORK_DIR", "home/agent" },
                { "LOOP_DOCKERPROXY_PROTECTED_IMAGES", "UPPER:case!" },
                { "LOOP_DOCKERPROXY_CONTAINERS_MAX", "-1" },
                { "LOOP_DOCKERPROXY_CONTAINERS_MAX", "10001" },
                { "LOOP_DOCKERPROXY_IDLE_SEC", "1m" },
                { "LOOP_DOCKERPROXY_POLICY", "/nonexistent/loop-test/policy.json" },
                { "LOOP_DOCKERPROXY_EGRESS", "/nonexistent/loop-test/egress.json" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                DockerProxy p;
                ok(settings(bad[i].name, bad[i].value, &p) < 0, "%s=%s is refused", bad[i].name, bad[i].value);
                proxy_done(&p);
        }
}

int main(void) {
        test_defaults();
        test_values();
        test_refused();
        return done_testing();
}
