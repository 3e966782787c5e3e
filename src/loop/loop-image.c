/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop image build|list|rm`: the agent image and the Chrome image, built on the engine from image/ with
 * no registry. When the
 * Debian base image is missing, image/bootstrap makes one from Debian's packages (debootstrap) and it is
 * imported through the engine API first. */

#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "config-build.h"
#include "config.h"
#include "dirent-util.h"
#include "engine-discover.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "string-util.h"
#include "strv.h"
#include "tar.h"

#define IMAGE_BASE_DEFAULT "loop-base:bookworm"
#define LOCAL_CA_DIR "/usr/local/share/ca-certificates"
#define LOCAL_CA_MAX (1024U * 1024U)
#define LOOP_BINARY_MAX (64U * 1024U * 1024U)

/* image/ of the source tree when this loop runs from its build dir, else the installed copy. */
static char *image_dir(void) {
        _cleanup_free_ char *exe = realpath("/proc/self/exe", NULL);
        const char *e = getenv("LOOP_IMAGE_DIR");
        char *r;

        if (!isempty(e))
                return strdup(e);
        if (exe && startswith(exe, LOOP_BUILD_DIR "/"))
                return asprintf(&r, "%s/image", LOOP_SOURCE_DIR) < 0 ? NULL : r;
        return asprintf(&r, "%s/image", LOOP_PKGDATADIR) < 0 ? NULL : r;
}

/* The certificates the host's admin added to the system trust store (update-ca-certificates reads them
 * from here), concatenated: the image trusts them too, e.g. a TLS-intercepting proxy to the npm registry. */
static int local_ca_certs(char **ret) {
        _cleanup_closedir_ DIR *d = opendir(LOCAL_CA_DIR);
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *all = NULL;
        size_t n = 0;
        struct dirent *de;
        int r;

        *ret = NULL;
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d)))
                if (endswith(de->d_name, ".crt") && de->d_name[0] != '.' && (r = strv_extend(&names, de->d_name)) < 0)
                        return r;
        strv_sort(names);
        STRV_FOREACH(name, names) {
                _cleanup_free_ char *pem = NULL;
                size_t size;
                char *na;

                r = read_full_file_at(dirfd(d), *name, LOCAL_CA_MAX, false, &pem, &size);
                if (r < 0) {
                        log_warning_errno(r, "Skipping %s/%s: %m", LOCAL_CA_DIR, *name);
                        continue;
                }
                if (!strstr(pem, "-----BEGIN CERTIFICATE-----") || n + size + 2 > LOCAL_CA_MAX)
                        continue;
                na = realloc(all, n + size + 2);
                if (!na)
                        return -ENOMEM;
                all = na;
                memcpy(all + n, pem, size);
                n += size;
                if (size > 0 && all[n - 1] != '\n')
                        all[n++] = '\n';
                all[n] = 0;
                log_info("The image will trust %s/%s, like this host.", LOCAL_CA_DIR, *name);
        }
        *ret = TAKE_PTR(all);
        return 0;
}

static int on_progress(json_object *m, void *userdata) {
        json_object *v;

        (void) userdata;
        if (json_object_object_get_ex(m, "stream", &v) && json_object_is_type(v, json_type_string))
                fputs(json_object_get_string(v), stderr);
        else if (json_object_object_get_ex(m, "status", &v) && json_object_is_type(v, json_type_string))
                fprintf(stderr, "%s\n", json_object_get_string(v));
        fflush(stderr);
        return 0;
}

/* Runs image/bootstrap to make a Debian rootfs tarball and imports it as tag. */
static int image_bootstrap_base(Engine *e, const char *dir, const char *tag) {
        _cleanup_free_ char *script = NULL, *tmpdir = NULL, *tarball = NULL;
        _cleanup_close_ int fd = -EBADF;
        int status, r;
        pid_t pid;

        if (asprintf(&script, "%s/bootstrap", dir) < 0 || !(tmpdir = strdup("/var/tmp/loop-bootstrap-XXXXXX")))
                return log_oom();
        if (access(script, X_OK) < 0)
                return log_error_errno(errno, "Cannot run %s: %m", script);
        if (!mkdtemp(tmpdir))
                return log_error_errno(errno, "Failed to make a temporary directory: %m");
        if (asprintf(&tarball, "%s/rootfs.tar", tmpdir) < 0)
                return log_oom();

        log_info("The base image %s is missing; building it from Debian's packages with %s (takes a few minutes).",
                 tag, script);
        pid = fork();
        if (pid < 0)
                return log_error_errno(errno, "Failed to fork: %m");
        if (pid == 0) {
                execl(script, script, "--output", tarball, (char *) NULL);
                log_error_errno(errno, "Failed to run %s: %m", script);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return log_error_errno(errno, "Failed to wait for %s: %m", script);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                r = log_error_errno(EIO, "%s failed (status %d); see its output above.", script,
                                    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                goto finish;
        }

        fd = open(tarball, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = log_error_errno(errno, "%s made no %s: %m", script, tarball);
                goto finish;
        }
        log_info("Importing the base image as %s.", tag);
        {
                char *changes[] = { (char *) "CMD [\"/bin/bash\"]", NULL };
                r = engine_image_import(e, fd, tag, changes);
        }
        if (r < 0)
                log_error_errno(r, "Failed to import the base image: %s", engine_last_error(e));
finish:
        (void) unlink(tarball);
        (void) rmdir(tmpdir);
        return r;
}

/* Builds tag from image/<what> of dir plus this very loop binary (so the image runs the same version). */
static int image_build_one(Engine *e, const char *dir, const char *what, const char *tag, char **buildargs) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        _cleanup_free_ char *src = NULL, *exe = NULL;
        _cleanup_close_ int fd = -EBADF;
        const void *context;
        size_t size, exe_size;
        int r;

        if (asprintf(&src, "%s/%s", dir, what) < 0)
                return log_oom();
        fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open the image sources %s: %m", src);
        r = read_full_file_at(AT_FDCWD, "/proc/self/exe", LOOP_BINARY_MAX, false, &exe, &exe_size);
        if (r < 0)
                return log_error_errno(r, "Failed to read the loop binary: %m");
        if ((r = tar_writer_new(&t)) < 0 ||
            (r = tar_add_tree(t, fd, "")) < 0 ||
            (r = tar_add_file(t, "loop", 0755, 0, 0, exe, exe_size)) < 0 ||
            (r = tar_finish(t, &context, &size)) < 0)
                return log_error_errno(r, "Failed to pack the build context %s: %m", src);

        log_info("Building %s from %s on %s.", tag, src, engine_socket_path(e));
        r = engine_image_build(e, tag, context, size, "Containerfile", buildargs, on_progress, NULL);
        if (r < 0)
                return log_error_errno(r, "Building %s failed: %s", tag, engine_last_error(e));
        log_info("Built %s.", tag);
        return 0;
}

static int image_build(int argc, char *argv[]) {
        enum { ARG_TAG = 0x100, ARG_CHROME_TAG, ARG_NO_CHROME, ARG_BASE, ARG_REBUILD_BASE };
        static const struct option options[] = {
                { "help",         no_argument,       NULL, 'h' },
                { "tag",          required_argument, NULL, ARG_TAG },
                { "chrome-tag",   required_argument, NULL, ARG_CHROME_TAG },
                { "no-chrome",    no_argument,       NULL, ARG_NO_CHROME },
                { "base",         required_argument, NULL, ARG_BASE },
                { "rebuild-base", no_argument,       NULL, ARG_REBUILD_BASE },
                {}
        };
        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_free_ char *dir = NULL, *buildarg = NULL, *cas = NULL, *ca_arg = NULL;
        const char *tag = NULL, *chrome_tag = NULL, *base = IMAGE_BASE_DEFAULT;
        bool rebuild_base = false, chrome = true;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("loop image build [--tag IMAGE] [--chrome-tag IMAGE] [--no-chrome] [--base IMAGE] [--rebuild-base]\n\n"
                               "Build the agent image (default: container_image of loop.json) from image/agent and the\n"
                               "Chrome image (default: browser.chrome_image) from image/chrome on the engine. When the\n"
                               "base image (default %s) is missing, build it from Debian's packages with debootstrap\n"
                               "first.\n", IMAGE_BASE_DEFAULT);
                        return EXIT_SUCCESS;
                case ARG_TAG:
                        tag = optarg;
                        break;
                case ARG_CHROME_TAG:
                        chrome_tag = optarg;
                        break;
                case ARG_NO_CHROME:
                        chrome = false;
                        break;
                case ARG_BASE:
                        base = optarg;
                        break;
                case ARG_REBUILD_BASE:
                        rebuild_base = true;
                        break;
                default:
                        return EXIT_FAILURE;
                }

        if (loop_connect_engine(&set, &conn) < 0)
                return EXIT_FAILURE;
        if (!tag)
                tag = set->global.container_image;
        if (!chrome_tag)
                chrome_tag = set->global.browser.chrome_image;

        dir = image_dir();
        if (!dir)
                return log_oom(), EXIT_FAILURE;

        r = engine_image_inspect(conn->engine, base, NULL);
        if (r < 0 && r != -ENOENT)
                return log_error_errno(r, "Failed to look up %s: %s", base, engine_last_error(conn->engine)), EXIT_FAILURE;
        if (r == -ENOENT || rebuild_base) {
                r = image_bootstrap_base(conn->engine, dir, base);
                if (r < 0)
                        return EXIT_FAILURE;
        }

        if (asprintf(&buildarg, "BASE=%s", base) < 0)
                return log_oom(), EXIT_FAILURE;
        r = local_ca_certs(&cas);
        if (r < 0)
                log_warning_errno(r, "Cannot read %s, ignoring: %m", LOCAL_CA_DIR);
        if (cas && asprintf(&ca_arg, "EXTRA_CA_CERTS=%s", cas) < 0)
                return log_oom(), EXIT_FAILURE;
        {
                char *buildargs[] = { buildarg, ca_arg, NULL };
                if (image_build_one(conn->engine, dir, "agent", tag, buildargs) < 0)
                        return EXIT_FAILURE;
                if (chrome && image_build_one(conn->engine, dir, "chrome", chrome_tag, buildargs) < 0)
                        return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

static int image_list(void) {
        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(json_object_putp) json_object *images = NULL;
        int r;

        if (loop_connect_engine(&set, &conn) < 0)
                return EXIT_FAILURE;
        r = engine_image_list(conn->engine, &images);
        if (r < 0)
                return log_error_errno(r, "Failed to list images: %s", engine_last_error(conn->engine)), EXIT_FAILURE;
        printf("%-40s %-14s %s\n", "IMAGE", "ID", "SIZE");
        for (size_t i = 0; i < json_object_array_length(images); i++) {
                json_object *img = json_object_array_get_idx(images, i), *tags = NULL, *id = NULL, *sz = NULL;
                const char *ids;

                (void) json_object_object_get_ex(img, "RepoTags", &tags);
                (void) json_object_object_get_ex(img, "Id", &id);
                (void) json_object_object_get_ex(img, "Size", &sz);
                ids = id ? json_object_get_string(id) : "";
                if (startswith(ids, "sha256:"))
                        ids += 7;
                for (size_t j = 0; j < (json_object_is_type(tags, json_type_array) ? json_object_array_length(tags) : 1); j++) {
                        json_object *tg = json_object_is_type(tags, json_type_array) ? json_object_array_get_idx(tags, j) : NULL;
                        printf("%-40s %-14.12s %.1f MB\n", tg ? json_object_get_string(tg) : "<none>", ids,
                               sz ? (double) json_object_get_int64(sz) / 1e6 : 0.0);
                }
        }
        return EXIT_SUCCESS;
}

static int image_remove(char **names) {
        _cleanup_(engine_connection_freep) EngineConnection *conn = NULL;
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        int r, ret = EXIT_SUCCESS;

        if (strv_length(names) == 0) {
                log_error("Usage: loop image rm IMAGE...");
                return EXIT_FAILURE;
        }
        if (loop_connect_engine(&set, &conn) < 0)
                return EXIT_FAILURE;
        STRV_FOREACH(n, names) {
                r = engine_image_remove(conn->engine, *n, false);
                if (r < 0) {
                        log_error("Failed to remove %s: %s", *n, engine_last_error(conn->engine));
                        ret = EXIT_FAILURE;
                } else
                        printf("removed %s\n", *n);
        }
        return ret;
}

int verb_image(int argc, char *argv[]) {
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                printf("loop image build [--tag IMAGE] [--chrome-tag IMAGE] [--no-chrome] [--base IMAGE] [--rebuild-base]\n"
                       "loop image list\n"
                       "loop image rm IMAGE...\n");
                return argc < 2 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (streq(argv[1], "build"))
                return image_build(argc - 1, argv + 1);
        if (streq(argv[1], "list") || streq(argv[1], "ls"))
                return image_list();
        if (streq(argv[1], "rm") || streq(argv[1], "remove"))
                return image_remove(argv + 2);
        log_error("Unknown image command \"%s\"; known: build, list, rm.", argv[1]);
        return EXIT_FAILURE;
}
