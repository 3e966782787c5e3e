/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The generator as a module: what it does when a step below it fails. (What it writes is specified by the
 * Quadlet-style cases in test/generator.) protected_paths_list() is wrapped at link time (-Wl,--wrap) so
 * that it can be made to fail with an error it could return. */

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "generator.h"
#include "io-util.h"
#include "log.h"
#include "protected-paths.h"
#include "tap.h"

static int protected_paths_error;

int __real_protected_paths_list(const LoopConfig *c, ProtectedKind kind, char ***ret);
int __wrap_protected_paths_list(const LoopConfig *c, ProtectedKind kind, char ***ret);
int __wrap_protected_paths_list(const LoopConfig *c, ProtectedKind kind, char ***ret) {
        if (protected_paths_error < 0)
                return protected_paths_error;
        return __real_protected_paths_list(c, kind, ret);
}

static void write_text(const char *path, const char *text) {
        if (write_file_atomic(path, text, strlen(text), 0644) < 0)
                abort();
}

/* Runs the generator over config into a new output dir below tmp; its log in *ret_log. */
static int run(const char *tmp, const char *config, const char *name, char **ret_log) {
        _cleanup_free_ char *out = NULL, *log_path = NULL;
        int saved, fd, r;
        size_t size;

        if (asprintf(&out, "%s/%s", tmp, name) < 0 || asprintf(&log_path, "%s/%s.log", tmp, name) < 0 ||
            mkdir(out, 0755) < 0)
                abort();
        fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        saved = dup(STDERR_FILENO);
        if (fd < 0 || saved < 0 || dup2(fd, STDERR_FILENO) < 0)
                abort();
        r = generator_run(config, out);
        fflush(stderr);
        if (dup2(saved, STDERR_FILENO) < 0)
                abort();
        close(saved);
        close(fd);
        if (read_full_file_at(AT_FDCWD, log_path, 1024 * 1024, true, ret_log, &size) < 0)
                abort();
        return r;
}

static bool exists(const char *tmp, const char *name, const char *path) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s/%s", tmp, name, path) < 0)
                abort();
        return access(p, F_OK) == 0;
}

int main(void) {
        char tmp[] = "/tmp/test-generator-XXXXXX";
        _cleanup_free_ char *config = NULL, *channels = NULL, *chan = NULL, *log_ok = NULL, *log_fail = NULL,
                *cleanup = NULL, *want = NULL;
        int r;

        log_set_target(LOG_TARGET_CONSOLE);
        log_set_max_level(LOG_DEBUG);
        if (!mkdtemp(tmp) || asprintf(&config, "%s/etc-loop", tmp) < 0 ||
            asprintf(&channels, "%s/channels.d", config) < 0 || asprintf(&chan, "%s/proj.json", channels) < 0 ||
            mkdir(config, 0755) < 0 || mkdir(channels, 0755) < 0)
                abort();
        write_text(chan, "{ \"work_dir\": \"/srv/proj\" }");

        r = run(tmp, config, "out-ok", &log_ok);
        ok(r == 0 && exists(tmp, "out-ok", "loop-dockerproxy@proj.service.d/50-channel.conf"),
           "a channel gets its Docker API proxy drop-in");

        protected_paths_error = -EBADMSG;
        r = run(tmp, config, "out-fail", &log_fail);
        if (asprintf(&want, "%s: cannot list the kernel paths to mask: %s", chan, strerror(EBADMSG)) < 0)
                abort();
        ok(r == -EBADMSG, "a failure to list the protected paths fails the run with its own error (%d)", r);
        if (!ok(strstr(log_fail, want) && !strstr(log_fail, "Out of memory"),
                "the failure is reported with its real error, not as out of memory"))
                printf("#   log: %s\n", log_fail);
        ok(!exists(tmp, "out-fail", "loop-dockerproxy@proj.service.d") &&
           !exists(tmp, "out-fail", "loop-channel@proj.target") &&
           !exists(tmp, "out-fail", "loop.target.d/50-channels.conf"),
           "and the channel gets no Docker API proxy: neither its target (which would want the socket) nor "
           "loop.target's Upholds= of it is written");

        if (asprintf(&cleanup, "rm -rf '%s'", tmp) < 0 || system(cleanup) != 0)
                abort();
        return done_testing();
}
