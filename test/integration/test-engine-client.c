/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The engine client against real engines, driven by test-engine.sh, which starts them. One mode per run:
 *
 *   parse                              stream parsing and error mapping against a local socket that
 *                                      answers byte by byte (boundaries no real engine produces on demand)
 *   client SOCK KIND IMAGE BUSYBOX_TAR the whole API on one engine (podman or docker)
 *   follow-killed SOCK IMAGE PID       follow a container's output, SIGKILL the engine (PID) mid-stream
 *   connect-missing                    no socket answers, no podman: -EHOSTDOWN and what was tried
 *   connect-fallback SOCK              a configured socket that does not answer, then a working one
 *   connect-private                    nothing answers, podman on PATH: a private service, then cleanup
 *
 * Output is TAP; the script prefixes each point with the engine's name. */

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "dirent-util.h"
#include "engine-discover.h"
#include "engine.h"
#include "io-util.h"
#include "json-util.h"
#include "strv.h"
#include "tap.h"
#include "tar.h"

#define OUTPUT_MAX (32U * 1024U * 1024U)

static const char *kind_name = "engine";
static char run_id[32];

#define STRV_MAKE(...) ((char **) ((const char *[]) { __VA_ARGS__, NULL }))

static char *strf(const char *fmt, ...) _printf_(1, 2);
static char *strf(const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                abort();
        va_end(ap);
        return s;
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void diagf(const char *fmt, ...) _printf_(1, 2);
static void diagf(const char *fmt, ...) {
        char buf[4096];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        diag(buf);
}

/* ---- collecting output ---- */

typedef struct Output {
        char *out, *err;
        size_t out_len, err_len;
        unsigned calls;
        int (*on_data)(struct Output *o);       /* called after each piece, may abort */
        void *userdata;
} Output;

static void output_done(Output *o) {
        free(o->out);
        free(o->err);
        *o = (Output) {};
}

static int append(char **buf, size_t *len, const char *data, size_t size) {
        if (*len + size > OUTPUT_MAX)
                return -EFBIG;
        char *b = realloc(*buf, *len + size + 1);
        if (!b)
                return -ENOMEM;
        memcpy(b + *len, data, size);
        *len += size;
        b[*len] = 0;
        *buf = b;
        return 0;
}

static int collect(int stream, const char *data, size_t size, void *userdata) {
        Output *o = userdata;
        int r;

        o->calls++;
        if (stream == 1)
                r = append(&o->out, &o->out_len, data, size);
        else if (stream == 2)
                r = append(&o->err, &o->err_len, data, size);
        else
                return -EBADMSG;
        if (r < 0)
                return r;
        return o->on_data ? o->on_data(o) : 0;
}

static json_object *json_parse_fmt(const char *fmt, ...) _printf_(1, 2);
static json_object *json_parse_fmt(const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        return s ? json_tokener_parse(s) : NULL;
}

static const char *jpath(json_object *o, const char *a, const char *b) {
        json_object *x, *y;
        if (!json_object_object_get_ex(o, a, &x))
                return NULL;
        if (!b)
                return json_object_get_string(x);
        if (!json_object_object_get_ex(x, b, &y))
                return NULL;
        return json_object_get_string(y);
}

/* Creates and starts a container; returns its id or NULL (with a diag). */
static char *container_run(Engine *e, const char *name, json_object *body, bool start) {
        char *id = NULL;
        int r;

        if (!body) {
                diag("bad JSON body in the test");
                return NULL;
        }
        r = engine_container_create(e, name, body, &id);
        json_object_put(body);
        if (r < 0) {
                diagf("create %s: %s", strna(name), engine_last_error(e));
                return NULL;
        }
        if (start && engine_container_start(e, id) < 0) {
                diagf("start %s: %s", strna(name), engine_last_error(e));
                (void) engine_container_remove(e, id, true);
                return mfree(id);
        }
        return id;
}

static int exec_run(Engine *e, const char *id, char **argv, char **env, const char *user, Output *o, int *ret_code) {
        _cleanup_free_ char *exec_id = NULL;
        int r;

        r = engine_exec_create(e, id, argv, env, user, &exec_id);
        if (r < 0) {
                diagf("exec create: %s", engine_last_error(e));
                return r;
        }
        r = engine_exec_start(e, exec_id, collect, o, ret_code);
        if (r < 0)
                diagf("exec start: %s", engine_last_error(e));
        return r;
}

/* ---- a local socket that answers slowly, for the parsers ---- */

typedef struct Fake {
        char path[108];
        pid_t pid;
} Fake;

/* Serves one connection: reads the request (headers and a Content-Length body), then writes response in
 * pieces of `piece` bytes, pausing between them so each arrives as a read of its own, then closes. With
 * hang, never answers. */
static int fake_start(Fake *f, const char *response, size_t len, size_t piece, bool hang) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        snprintf(f->path, sizeof f->path, "/tmp/loop-fake-%d-%u.sock", (int) getpid(), (unsigned) rand());
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 4) < 0)
                return -errno;
        f->pid = fork();
        if (f->pid < 0)
                return -errno;
        if (f->pid == 0) {
                char req[65536];
                size_t got = 0;
                int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0)
                        _exit(1);
                /* Read until the headers end, then the body its Content-Length announces. */
                for (;;) {
                        ssize_t k = read(c, req + got, sizeof req - 1 - got);
                        if (k <= 0)
                                break;
                        got += (size_t) k;
                        req[got] = 0;
                        char *end = strstr(req, "\r\n\r\n");
                        if (!end)
                                continue;
                        char *cl = strcasestr(req, "Content-Length:");
                        size_t want = (size_t) (end + 4 - req) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
                        if (got >= want || got >= sizeof req - 1)
                                break;
                }
                if (hang)
                        pause();
                for (size_t off = 0; off < len; off += piece) {
                        if (loop_write(c, response + off, MIN(piece, len - off)) < 0)
                                _exit(1);
                        if (piece < 64)
                                usleep(1000);
                }
                close(c);
                _exit(0);
        }
        close(fd);
        return 0;
}

static void fake_stop(Fake *f) {
        if (f->pid > 0) {
                kill(f->pid, SIGKILL);
                waitpid(f->pid, NULL, 0);
        }
        unlink(f->path);
}

/* An HTTP response: header lines, then body; with length=false the body ends with the connection. */
static char *http_response(const char *status, const char *ctype, const void *body, size_t body_len, bool length,
                           size_t *ret_len) {
        char head[512];
        int h = snprintf(head, sizeof head, "HTTP/1.1 %s\r\nContent-Type: %s\r\n", status, ctype);
        if (length)
                h += snprintf(head + h, sizeof head - h, "Content-Length: %zu\r\n", body_len);
        else
                h += snprintf(head + h, sizeof head - h, "Connection: close\r\n");
        h += snprintf(head + h, sizeof head - h, "\r\n");
        char *r = malloc((size_t) h + body_len);
        memcpy(r, head, (size_t) h);
        memcpy(r + h, body, body_len);
        *ret_len = (size_t) h + body_len;
        return r;
}

static size_t frame(char *buf, int stream, const char *data, size_t len) {
        buf[0] = (char) stream;
        buf[1] = buf[2] = buf[3] = 0;
        buf[4] = (char) (len >> 24);
        buf[5] = (char) (len >> 16);
        buf[6] = (char) (len >> 8);
        buf[7] = (char) len;
        memcpy(buf + 8, data, len);
        return 8 + len;
}

/* Serves body through a fake socket and runs the logs call on it. */
static int fake_logs(const char *status, const void *body, size_t len, size_t piece, bool length, Output *o,
                     char **ret_error) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_free_ char *resp = NULL;
        size_t rlen;
        Fake f = {};
        int r;

        resp = http_response(status, "application/vnd.docker.raw-stream", body, len, length, &rlen);
        if (fake_start(&f, resp, rlen, piece, false) < 0 || engine_new(f.path, &e) < 0)
                return -EIO;
        r = engine_container_logs(e, "fake", false, collect, o);
        if (ret_error)
                *ret_error = strdup(engine_last_error(e));
        fake_stop(&f);
        return r;
}

typedef struct JsonSeen {
        unsigned count;
        char text[4096];
        int stop_after;
} JsonSeen;

static int json_seen(json_object *m, void *userdata) {
        JsonSeen *s = userdata;
        size_t l = strlen(s->text);
        s->count++;
        snprintf(s->text + l, sizeof s->text - l, "%s;", json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return s->stop_after > 0 && (int) s->count >= s->stop_after ? 1 : 0;
}

static int mode_parse(void) {
        char body[200000];
        size_t n = 0;
        Output o = {};
        int r;

        /* Frames cut at every byte, headers included. */
        n += frame(body + n, 1, "hello ", 6);
        n += frame(body + n, 2, "warn\n", 5);
        n += frame(body + n, 1, "world\n", 6);
        n += frame(body + n, 1, "", 0);
        n += frame(body + n, 2, "second warning\n", 15);
        r = fake_logs("200 OK", body, n, 1, true, &o, NULL);
        is_int(r, 0, "a multiplexed stream delivered one byte at a time is read");
        is_str(o.out, "hello world\n", "stdout frames are joined in order");
        is_str(o.err, "warn\nsecond warning\n", "stderr frames are kept apart");
        output_done(&o);

        /* A frame far larger than any read, in odd-sized pieces. */
        static char big[150001];
        memset(big, 'x', 150000);
        n = frame(body, 1, big, 150000);
        n += frame(body + n, 2, "tail\n", 5);
        r = fake_logs("200 OK", body, n, 7919, true, &o, NULL);
        ok(r == 0 && o.out_len == 150000 && o.err && streq(o.err, "tail\n"),
           "a 150000-byte frame arriving in 7919-byte pieces survives whole");
        output_done(&o);

        /* Tty=true: raw output, whatever it looks like. */
        r = fake_logs("200 OK", "tty line\r\nmore\r\n", 16, 1, true, &o, NULL);
        ok(r == 0 && o.out && streq(o.out, "tty line\r\nmore\r\n") && !o.err, "a raw (Tty) stream is passed as stdout");
        output_done(&o);
        r = fake_logs("200 OK", "ab", 2, 1, true, &o, NULL);
        ok(r == 0 && o.out && streq(o.out, "ab"), "a raw stream shorter than a frame header is passed as stdout");
        output_done(&o);
        r = fake_logs("200 OK", "", 0, 1, true, &o, NULL);
        ok(r == 0 && o.calls == 0, "an empty stream gives no output and no error");
        output_done(&o);

        /* Broken streams. */
        _cleanup_free_ char *err = NULL;
        n = frame(body, 1, "ok\n", 3);
        memcpy(body + n, "\x09\0\0\0\0\0\0\x01Z", 9);
        r = fake_logs("200 OK", body, n + 9, 1, true, &o, &err);
        is_int(r, -EBADMSG, "a frame header with stream 9 is a malformed stream");
        ok(err && strstr(err, "malformed output stream"), "its message says so: %s", strna(err));
        output_done(&o);
        err = mfree(err);
        n = frame(body, 1, "partial frame\n", 14);
        r = fake_logs("200 OK", body, n - 5, 3, false, &o, &err);
        is_int(r, -ECONNRESET, "a stream that ends in the middle of a frame is an error");
        ok(err && strstr(err, "middle of a frame"), "its message says so: %s", strna(err));
        output_done(&o);
        err = mfree(err);

        /* Error statuses: the engine's message, or the start of a body that is not JSON. */
        r = fake_logs("404 Not Found", "{\"message\":\"No such container: fake\"}", 37, 5, true, &o, &err);
        is_int(r, -ENOENT, "404 is -ENOENT");
        is_str(err, "GET /containers/fake/logs: 404 No such container: fake",
               "the error is one line: method, path without version and query, status, message");
        err = mfree(err);
        r = fake_logs("500 Internal Server Error", "plain\ntext oops", 15, 5, true, &o, &err);
        is_int(r, -EIO, "500 is -EIO");
        is_str(err, "GET /containers/fake/logs: 500 plain text oops", "a non-JSON error body is shown on one line");
        err = mfree(err);
        output_done(&o);

        /* JSON streams: objects split anywhere, with and without newlines between them. */
        {
                static const char seq[] = "{\"stream\":\"Step 1/2\\n\"}\r\n{\"aux\":{\"ID\":\"sha256:1\"}}{\"stream\":"
                                          "\"}{ inside a string\"}\n\n";
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_free_ char *resp = NULL;
                JsonSeen s = {};
                size_t rlen;
                Fake f = {};

                resp = http_response("200 OK", "application/json", seq, sizeof seq - 1, false, &rlen);
                if (fake_start(&f, resp, rlen, 1, false) >= 0 && engine_new(f.path, &e) >= 0) {
                        r = engine_events(e, NULL, json_seen, &s);
                        is_int(r, 0, "a JSON stream delivered byte by byte is read to its end");
                        is_int(s.count, 3, "three objects: newline-separated, concatenated, braces in strings");
                        is_str(s.text, "{\"stream\":\"Step 1/2\\n\"};{\"aux\":{\"ID\":\"sha256:1\"}};"
                               "{\"stream\":\"}{ inside a string\"};", "each object comes out whole");
                }
                fake_stop(&f);
        }
        {
                static const char seq[] = "{\"stream\":\"Step 1/1 : RUN false\\n\"}\n"
                                          "{\"errorDetail\":{\"code\":1,\"message\":\"The command returned a non-zero code: 1\"},"
                                          "\"error\":\"The command returned a non-zero code: 1\"}\n";
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_free_ char *resp = NULL;
                JsonSeen s = {};
                size_t rlen;
                Fake f = {};

                resp = http_response("200 OK", "application/json", seq, sizeof seq - 1, false, &rlen);
                if (fake_start(&f, resp, rlen, 17, false) >= 0 && engine_new(f.path, &e) >= 0) {
                        r = engine_image_build(e, "x:y", "", 0, "Containerfile", NULL, json_seen, &s);
                        is_int(r, -EIO, "an errorDetail object in a build stream fails the build");
                        is_str(engine_last_error(e), "POST /build: The command returned a non-zero code: 1",
                               "the build error names the call and the engine's message");
                        is_int(s.count, 2, "the progress callback saw the error object too");
                }
                fake_stop(&f);
        }
        {
                static const char seq[] = "{\"status\":\"a\"}\n{\"status\":\"b\"";
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_free_ char *resp = NULL;
                JsonSeen s = {};
                size_t rlen;
                Fake f = {};

                resp = http_response("200 OK", "application/json", seq, sizeof seq - 1, false, &rlen);
                if (fake_start(&f, resp, rlen, 4, false) >= 0 && engine_new(f.path, &e) >= 0) {
                        r = engine_events(e, NULL, json_seen, &s);
                        is_int(r, -ECONNRESET, "a JSON stream cut in the middle of an object is an error");
                }
                fake_stop(&f);
        }
        {
                static const char seq[] = "{\"n\":1}{\"n\":2}{\"n\":3}";
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_free_ char *resp = NULL;
                JsonSeen s = { .stop_after = 2 };
                size_t rlen;
                Fake f = {};

                resp = http_response("200 OK", "application/json", seq, sizeof seq - 1, false, &rlen);
                if (fake_start(&f, resp, rlen, 1, false) >= 0 && engine_new(f.path, &e) >= 0) {
                        r = engine_events(e, NULL, json_seen, &s);
                        ok(r == 0 && s.count == 2, "a callback returning > 0 ends the stream cleanly");
                }
                fake_stop(&f);
        }

        /* A socket that accepts and never answers: the call's timeout. */
        {
                _cleanup_(engine_freep) Engine *e = NULL;
                Fake f = {};
                if (fake_start(&f, "", 0, 1, true) >= 0 && engine_new(f.path, &e) >= 0) {
                        engine_set_timeout(e, 1);
                        double t0 = now();
                        r = engine_ping(e);
                        double dt = now() - t0;
                        is_int(r, -ETIMEDOUT, "an engine that never answers times out");
                        ok(dt < 10, "after the configured timeout, not the default 30 s (%.1f s)", dt);
                        ok(strstr(engine_last_error(e), "no answer from") != NULL, "message: %s", engine_last_error(e));
                }
                fake_stop(&f);
        }

        /* Batch logs from an engine that accepts and then sends nothing: given up after the timeout. */
        {
                _cleanup_(engine_freep) Engine *e = NULL;
                Fake f = {};
                if (fake_start(&f, "", 0, 1, true) >= 0 && engine_new(f.path, &e) >= 0) {
                        engine_set_timeout(e, 1);
                        double t0 = now();
                        r = engine_container_logs(e, "fake", false, collect, &o);
                        ok(r == -ETIMEDOUT && now() - t0 < 4, "batch logs from a silent engine time out (%.1f s): %s",
                           now() - t0, engine_last_error(e));
                }
                fake_stop(&f);
                output_done(&o);
        }

        /* Missing and refusing sockets. */
        {
                _cleanup_(engine_freep) Engine *e = NULL;
                (void) engine_new("/nonexistent/loop-test.sock", &e);
                is_int(engine_ping(e), -EHOSTDOWN, "a missing socket is -EHOSTDOWN");
                is_str(engine_last_error(e),
                       "GET /_ping: cannot connect to /nonexistent/loop-test.sock: No such file or directory",
                       "and says which socket and why");
        }
        {
                _cleanup_(engine_freep) Engine *e = NULL;
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/loop-refuse-%d.sock", (int) getpid());
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                (void) bind(fd, (struct sockaddr *) &sa, sizeof sa);     /* bound, never listening */
                (void) engine_new(sa.sun_path, &e);
                is_int(engine_ping(e), -ECONNREFUSED, "a socket nobody listens on is -ECONNREFUSED");
                ok(strstr(engine_last_error(e), "Connection refused") != NULL, "message: %s", engine_last_error(e));
                close(fd);
                unlink(sa.sun_path);
        }

        /* Input that never reaches a URL. */
        {
                _cleanup_(engine_freep) Engine *e = NULL;
                (void) engine_new("/nonexistent/loop-test.sock", &e);
                is_int(engine_container_inspect(e, "../../images/x", NULL), -EINVAL, "a container name with / is refused");
                is_int(engine_image_inspect(e, "a/../../containers/x", NULL), -EINVAL, "an image name with .. is refused");
                is_int(engine_container_kill(e, "abc", "KILL; rm"), -EINVAL, "a signal name with odd characters is refused");
                is_int(engine_new("relative.sock", &(Engine *) { NULL }), -EINVAL, "a relative socket path is refused");
        }
        return 0;
}

/* ---- one real engine ---- */

static void wait_code(Engine *e, const char *id, int want, const char *what) {
        int code = -1, r = engine_container_wait(e, id, &code);
        if (r < 0)
                diagf("wait: %s", engine_last_error(e));
        ok(r == 0 && code == want, "%s: wait returns exit code %d (got %d)", what, want, code);
}

static void test_images(Engine *e, const char *image, const char *busybox_tar) {
        _cleanup_(json_object_putp) json_object *j = NULL, *list = NULL, *v = NULL;
        _cleanup_free_ char *tag = NULL, *tag2 = NULL;
        char *changes[] = { (char *) "CMD [\"/bin/sh\", \"-c\", \"echo imported\"]", (char *) "ENV PATH=/bin", (char *) "ENV MARK=imported", NULL };
        int r, fd;

        is_int(engine_ping(e), 0, "ping");
        ok(engine_version(e, &v) == 0 && jpath(v, "ApiVersion", NULL), "version (API %s, engine %s)",
           strna(jpath(v, "ApiVersion", NULL)), strna(jpath(v, "Version", NULL)));
        is_str(engine_kind_to_string(engine_kind(e)), kind_name, "the engine's kind is recognised");

        ok(engine_image_inspect(e, image, &j) == 0 && jpath(j, "Id", NULL), "image inspect of %s", image);
        ok(engine_image_list(e, &list) == 0 && json_object_is_type(list, json_type_array) &&
           json_object_array_length(list) >= 1, "image list");

        tag = strf("loop-test-imported-%s:file", run_id);
        fd = open(busybox_tar, O_RDONLY | O_CLOEXEC);
        r = engine_image_import(e, fd, tag, changes);
        close(fd);
        if (r < 0)
                diagf("import: %s", engine_last_error(e));
        is_int(r, 0, "import a rootfs tarball from a file (known length)");
        json_object_put(j);
        j = NULL;
        r = engine_image_inspect(e, tag, &j);
        json_object *env = NULL, *cfg = NULL;
        bool has_env = false;
        if (r == 0 && json_object_object_get_ex(j, "Config", &cfg) && json_object_object_get_ex(cfg, "Env", &env))
                for (size_t i = 0; i < json_object_array_length(env); i++)
                        has_env = has_env || streq(json_object_get_string(json_object_array_get_idx(env, i)), "MARK=imported");
        ok(has_env, "the imported image carries the changes (ENV MARK=imported)");

        /* From a pipe: chunked upload of unknown length. */
        int p[2];
        tag2 = strf("loop-test-imported-%s:pipe", run_id);
        if (pipe2(p, O_CLOEXEC) == 0) {
                pid_t pid = fork();
                if (pid == 0) {
                        _cleanup_free_ char *data = NULL;
                        size_t size;
                        close(p[0]);
                        if (read_full_file_at(AT_FDCWD, busybox_tar, 64 * 1024 * 1024, false, &data, &size) < 0)
                                _exit(1);
                        _exit(loop_write(p[1], data, size) < 0);
                }
                close(p[1]);
                r = engine_image_import(e, p[0], tag2, NULL);
                close(p[0]);
                waitpid(pid, NULL, 0);
                if (r < 0)
                        diagf("import from pipe: %s", engine_last_error(e));
                is_int(r, 0, "import a rootfs tarball from a pipe (chunked)");
        }

        /* An import of garbage fails with the engine's message. */
        {
                char path[] = "/tmp/loop-garbage.XXXXXX";
                fd = mkstemp(path);
                (void) loop_write(fd, "this is not a tar archive at all, not even close\n", 49);
                lseek(fd, 0, SEEK_SET);
                _cleanup_free_ char *bad = NULL;
                bad = strf("loop-test-garbage-%s:x", run_id);
                r = engine_image_import(e, fd, bad, NULL);
                close(fd);
                unlink(path);
                ok(r < 0, "an import of garbage fails: %s", engine_last_error(e));
                if (r >= 0)
                        (void) engine_image_remove(e, bad, true);
        }

        is_int(engine_image_remove(e, tag, false), 0, "image remove");
        is_int(engine_image_remove(e, tag2, true), 0, "image remove (force)");
        r = engine_image_inspect(e, tag, NULL);
        is_int(r, -ENOENT, "a removed image is -ENOENT");
        ok(startswith(engine_last_error(e), "GET /images/") && strstr(engine_last_error(e), ": 404 "),
                 "message: %s", engine_last_error(e));
        is_int(engine_image_remove(e, tag, false), -ENOENT, "removing it again is -ENOENT");
}

static void test_lifecycle(Engine *e, const char *image) {
        _cleanup_(json_object_putp) json_object *j = NULL, *list = NULL;
        _cleanup_free_ char *id = NULL, *id2 = NULL, *name = NULL, *label = NULL, *hostdir = NULL, *p = NULL;
        char dir[] = "/tmp/loop-bind.XXXXXX";
        Output o = {};
        int r;

        if (!mkdtemp(dir))
                return;
        p = strf("%s/in.txt", dir);
        (void) write_file_atomic(p, "hostfile\n", 9, 0644);
        name = strf("loop-test-%s-basic", run_id);
        label = strf("loop-test-run=%s", run_id);

        id = container_run(e, name, json_parse_fmt(
                "{\"Image\":\"%s\",\"Cmd\":[\"sh\",\"-c\",\"echo out-$FOO; echo err >&2; cat /data/in.txt; "
                "echo written > /data/out.txt; cat /sys/fs/cgroup/memory/memory.limit_in_bytes; "
                "cat /sys/fs/cgroup/pids/pids.max; exit 3\"],"
                "\"Env\":[\"FOO=bar\"],\"Labels\":{\"loop-test-run\":\"%s\",\"loop-test-kind\":\"basic\"},"
                "\"HostConfig\":{\"Binds\":[\"%s:/data:rw\"],\"Memory\":67108864,\"NanoCpus\":500000000,"
                "\"PidsLimit\":64}}", image, run_id, dir), true);
        ok(id != NULL, "create with labels, env, a bind and limits, then start");
        if (!id)
                return;
        wait_code(e, id, 3, "a container that exits 3");
        wait_code(e, id, 3, "waiting again on the exited container");

        r = engine_container_logs(e, id, false, collect, &o);
        is_int(r, 0, "logs (batch)");
        is_str(o.out, "out-bar\nhostfile\n67108864\n64\n", "stdout: env, the bind's file, the memory and pids limits");
        is_str(o.err, "err\n", "stderr apart from stdout");
        output_done(&o);
        _cleanup_free_ char *back = NULL;
        free(p);
        p = strf("%s/out.txt", dir);
        (void) read_full_file_at(AT_FDCWD, p, 1024, true, &back, NULL);
        is_str(back, "written\n", "the container wrote through the bind mount");

        r = engine_container_inspect(e, id, &j);
        ok(r == 0 && streq(strempty(jpath(j, "State", "ExitCode")), "3") &&
           streq(strempty(jpath(j, "HostConfig", "Memory")), "67108864"), "inspect: exit code 3, memory limit");
        json_object *labels = json_object_object_get(json_object_object_get(j, "Config"), "Labels");
        is_str(jpath(labels, "loop-test-run", NULL), run_id, "inspect shows the labels");

        r = engine_container_list(e, label, true, &list);
        ok(r == 0 && json_object_array_length(list) == 1 &&
           streq(strempty(jpath(json_object_array_get_idx(list, 0), "Id", NULL)), id),
           "list by label key=value finds exactly this container");
        json_object_put(list);
        list = NULL;
        r = engine_container_list(e, label, false, &list);
        ok(r == 0 && json_object_array_length(list) == 0, "without all=1 the exited container is not listed");
        json_object_put(list);
        list = NULL;
        r = engine_container_list(e, "loop-test-run=no-such-run", true, &list);
        ok(r == 0 && json_object_array_length(list) == 0, "a label value nobody has lists nothing");
        json_object_put(list);
        list = NULL;
        r = engine_container_list(e, "loop-test-kind", true, &list);
        ok(r == 0 && json_object_array_length(list) >= 1, "a label key alone lists containers that have it");

        /* The name is taken. */
        r = engine_container_create(e, name, json_parse_fmt("{\"Image\":\"%s\"}", image), &id2);
        is_int(r, -EEXIST, "a second container with the same name is -EEXIST");
        ok(startswith(engine_last_error(e), "POST /containers/create: ") && strstr(engine_last_error(e), "already in use"),
           "message: %s", engine_last_error(e));

        is_int(engine_container_remove(e, id, false), 0, "remove an exited container without force");
        is_int(engine_container_inspect(e, id, NULL), -ENOENT, "inspect after remove is -ENOENT");
        _cleanup_free_ char *want = NULL;
        want = strf("GET /containers/%s/json: 404 ", id);
        ok(startswith(engine_last_error(e), want) != NULL, "message: %s", engine_last_error(e));
        int code;
        is_int(engine_container_wait(e, id, &code), -ENOENT, "wait on a removed container is -ENOENT");

        /* A missing image. */
        r = engine_container_create(e, NULL, json_parse_fmt("{\"Image\":\"loop-test-no-such-image-%s:latest\"}", run_id), &id2);
        is_int(r, -ENOENT, "create from a missing image is -ENOENT");
        ok(startswith(engine_last_error(e), "POST /containers/create: 404 ") && strstr(engine_last_error(e), "no-such-image"),
           "message: %s", engine_last_error(e));

        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        (void) !system(cmd);
}

static int tick_count;
static int count_ticks(Output *o) {
        tick_count++;
        return 0;
}

static void test_logs(Engine *e, const char *image) {
        _cleanup_free_ char *id = NULL, *tty = NULL;
        Output o = {}, b = {};
        char want[100100];
        int r;

        /* A 100000-byte line, stderr in between, and a line written in five pieces a moment apart. */
        id = container_run(e, NULL, json_parse_fmt(
                "{\"Image\":\"%s\",\"Cmd\":[\"sh\",\"-c\",\"head -c 100000 /dev/zero | tr '\\\\0' a; echo; echo E >&2; "
                "for i in 0 1 2 3 4; do printf part$i-; sleep 0.1; done; echo end\"]}", image), true);
        ok(id != NULL, "a container with a long line and a slowly written one");
        if (!id)
                return;
        o.on_data = count_ticks;
        double t0 = now();
        r = engine_container_logs(e, id, true, collect, &o);
        if (r < 0)
                diagf("logs follow: %s", engine_last_error(e));
        is_int(r, 0, "logs follow returns when the container exits");
        memset(want, 'a', 100000);
        strcpy(want + 100000, "\npart0-part1-part2-part3-part4-end\n");
        ok(o.out && streq(o.out, want), "follow: the 100000-byte line and the pieced line arrive whole (%zu bytes)", o.out_len);
        is_str(o.err, "E\n", "follow: stderr kept apart");
        ok(o.calls > 2, "follow: the output came in %u pieces", o.calls);
        diagf("follow took %.2f s", now() - t0);
        wait_code(e, id, 0, "after follow");

        r = engine_container_logs(e, id, false, collect, &b);
        ok(r == 0 && b.out && streq(b.out, want) && b.err && streq(b.err, "E\n"), "batch logs give the same output");
        output_done(&o);
        output_done(&b);
        (void) engine_container_remove(e, id, true);

        /* Tty=true: no framing; both streams come as stdout. */
        tty = container_run(e, NULL, json_parse_fmt(
                "{\"Image\":\"%s\",\"Tty\":true,\"Cmd\":[\"sh\",\"-c\",\"echo tty-out; echo tty-err >&2\"]}", image), true);
        if (tty) {
                wait_code(e, tty, 0, "a Tty container");
                r = engine_container_logs(e, tty, false, collect, &o);
                ok(r == 0 && o.out && streq(o.out, "tty-out\r\ntty-err\r\n") && !o.err,
                   "Tty logs are raw, passed as stdout");
                output_done(&o);
                (void) engine_container_remove(e, tty, true);
        }
}

static void test_stop_kill(Engine *e, const char *image) {
        _cleanup_free_ char *id = NULL;
        _cleanup_(json_object_putp) json_object *j = NULL;
        int r;

        id = container_run(e, NULL, json_parse_fmt("{\"Image\":\"%s\",\"Cmd\":[\"sleep\",\"1000\"]}", image), true);
        ok(id != NULL, "a sleeping container");
        if (!id)
                return;
        double t0 = now();
        r = engine_container_stop(e, id, 1);
        is_int(r, 0, "stop with a 1 s grace period");
        diagf("stop took %.2f s", now() - t0);
        r = engine_container_inspect(e, id, &j);
        ok(r == 0 && streq(strempty(jpath(j, "State", "Running")), "false"), "it is not running after stop");
        is_int(engine_container_stop(e, id, 1), 0, "stopping a stopped container is fine (304)");

        is_int(engine_container_start(e, id), 0, "start it again");
        is_int(engine_container_kill(e, id, "KILL"), 0, "kill with SIGKILL");
        wait_code(e, id, 137, "a killed container");
        r = engine_container_kill(e, id, "KILL");
        ok(r < 0, "killing a stopped container is an error (%s): %s", strerror(-r), engine_last_error(e));

        is_int(engine_container_start(e, id), 0, "start it once more");
        r = engine_container_remove(e, id, false);
        ok(r < 0, "removing a running container without force fails (%s): %s", strerror(-r), engine_last_error(e));
        is_int(engine_container_remove(e, id, true), 0, "remove with force");
}

static void test_exec_archive(Engine *e, const char *image) {
        _cleanup_free_ char *id = NULL;
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        char longname[160];
        const void *tar;
        size_t size;
        Output o = {};
        int code = -1, r;

        id = container_run(e, NULL, json_parse_fmt("{\"Image\":\"%s\",\"Cmd\":[\"sleep\",\"1000\"]}", image), true);
        if (!id) {
                ok(0, "a container for exec");
                return;
        }
        r = exec_run(e, id, STRV_MAKE("sh", "-c", "echo ex-out $EXV; echo ex-err >&2; exit 5"), STRV_MAKE("EXV=envval"),
                     NULL, &o, &code);
        is_int(r, 0, "exec create and start");
        is_int(code, 5, "the exec's exit code from exec inspect");
        is_str(o.out, "ex-out envval\n", "exec stdout, with its environment");
        is_str(o.err, "ex-err\n", "exec stderr apart");
        output_done(&o);

        r = exec_run(e, id, STRV_MAKE("id", "-u"), NULL, "nobody", &o, &code);
        ok(r == 0 && code == 0 && o.out && streq(o.out, "65534\n"), "exec as user nobody");
        output_done(&o);

        r = exec_run(e, id, STRV_MAKE("sh", "-c", "head -c 300000 /dev/zero | tr '\\0' b"), NULL, NULL, &o, &code);
        ok(r == 0 && code == 0 && o.out_len == 300000, "300000 bytes of exec output arrive (%zu)", o.out_len);
        output_done(&o);

        r = exec_run(e, id, STRV_MAKE("/no/such/binary"), NULL, NULL, &o, &code);
        ok(r < 0 || code != 0, "exec of a missing binary fails (r=%d, exit %d)", r, code);
        output_done(&o);

        /* Archive PUT, read back through exec. */
        memset(longname, 'L', sizeof longname - 1);
        longname[sizeof longname - 1] = 0;
        memcpy(longname, "deep/", 5);
        (void) tar_writer_new(&t);
        (void) tar_add_file(t, "hello.txt", 0640, 0, 0, "archived\n", 9);
        (void) tar_add_directory(t, "deep", 0755, 0, 0);
        (void) tar_add_file(t, longname, 0600, 65534, 65534, "long\n", 5);
        (void) tar_add_symlink(t, "link", "hello.txt");
        (void) tar_finish(t, &tar, &size);
        r = engine_container_archive_put(e, id, "/tmp", tar, size);
        if (r < 0)
                diagf("archive put: %s", engine_last_error(e));
        is_int(r, 0, "archive PUT into /tmp of a running container");
        _cleanup_free_ char *script = NULL;
        script = strf("cat /tmp/hello.txt; stat -c '%%a %%u' /tmp/hello.txt; cat /tmp/%s; stat -c %%u /tmp/%s; "
                 "readlink /tmp/link", longname, longname);
        r = exec_run(e, id, STRV_MAKE("sh", "-c", script), NULL, NULL, &o, &code);
        is_str(o.out, "archived\n640 0\nlong\n65534\nhello.txt\n",
               "read back: contents, mode, owner, the PAX long name, the symlink");
        output_done(&o);

        r = engine_container_archive_put(e, id, "/no/such/dir", tar, size);
        if (streq(kind_name, "podman"))
                ok(r == 0, "podman creates a missing archive destination directory");
        else
                ok(r == -ENOENT, "docker refuses a missing archive destination directory: %s", engine_last_error(e));
        r = engine_container_archive_put(e, "loop-test-no-such-container", "/tmp", tar, size);
        is_int(r, -ENOENT, "archive PUT into a missing container is -ENOENT");

        (void) engine_container_remove(e, id, true);
}

typedef struct BuildSeen {
        unsigned objects;
        char text[65536];
        bool error;
} BuildSeen;

static int build_progress(json_object *m, void *userdata) {
        BuildSeen *s = userdata;
        const char *st = jpath(m, "stream", NULL);
        s->objects++;
        if (st) {
                size_t l = strlen(s->text);
                snprintf(s->text + l, sizeof s->text - l, "%s", st);
        }
        if (json_object_object_get_ex(m, "error", NULL) || json_object_object_get_ex(m, "errorDetail", NULL))
                s->error = true;
        return 0;
}

static void test_build(Engine *e, const char *image) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL, *t2 = NULL;
        _cleanup_free_ char *containerfile = NULL, *tag = NULL, *id = NULL;
        const void *tar;
        size_t size;
        BuildSeen s = {};
        Output o = {};
        int r;

        containerfile = strf("FROM %s\nARG GREETING\nCOPY hello.txt /hello.txt\n"
                 "RUN echo built-marker && echo built > /built.txt && echo \"$GREETING\" > /greeting.txt\n", image);
        tag = strf("loop-test-built-%s:latest", run_id);
        (void) tar_writer_new(&t);
        (void) tar_add_file(t, "Containerfile", 0644, 0, 0, containerfile, strlen(containerfile));
        (void) tar_add_file(t, "hello.txt", 0644, 0, 0, "hello\n", 6);
        (void) tar_finish(t, &tar, &size);

        double t0 = now();
        r = engine_image_build(e, tag, tar, size, "Containerfile", STRV_MAKE("GREETING=hi there"), build_progress, &s);
        if (r < 0)
                diagf("build: %s", engine_last_error(e));
        is_int(r, 0, "build an image from a tar context (FROM the imported busybox, COPY, RUN, ARG)");
        diagf("build took %.2f s, %u progress messages", now() - t0, s.objects);
        ok(s.objects > 0 && strstr(s.text, "built-marker"), "progress messages show the RUN step's output");
        if (r < 0)
                diagf("progress: %.2000s", s.text);

        id = container_run(e, NULL, json_parse_fmt("{\"Image\":\"%s\",\"Cmd\":[\"cat\",\"/built.txt\",\"/greeting.txt\",\"/hello.txt\"]}", tag), true);
        if (id) {
                wait_code(e, id, 0, "a container of the built image");
                (void) engine_container_logs(e, id, false, collect, &o);
                is_str(o.out, "built\nhi there\nhello\n", "the built image has the RUN result, the build arg and the copied file");
                output_done(&o);
                (void) engine_container_remove(e, id, true);
        } else
                ok(0, "a container of the built image");

        /* A failing RUN. */
        s = (BuildSeen) {};
        (void) tar_writer_new(&t2);
        free(containerfile);
        containerfile = strf("FROM %s\nRUN echo failing-step && exit 7\n", image);
        (void) tar_add_file(t2, "Containerfile", 0644, 0, 0, containerfile, strlen(containerfile));
        (void) tar_finish(t2, &tar, &size);
        r = engine_image_build(e, "loop-test-build-fails:latest", tar, size, "Containerfile", NULL, build_progress, &s);
        ok(r < 0, "a build whose RUN exits 7 fails: %s", engine_last_error(e));
        ok(startswith(engine_last_error(e), "POST /build: ") != NULL, "the failure names the call");

        /* FROM an image that does not exist (nothing may be pulled: the failure must be quick). */
        tar_writer_free(t2);
        t2 = NULL;
        (void) tar_writer_new(&t2);
        static const char missing[] = "FROM loop-test-no-such-base-image:none\nRUN true\n";
        (void) tar_add_file(t2, "Containerfile", 0644, 0, 0, missing, sizeof missing - 1);
        (void) tar_finish(t2, &tar, &size);
        t0 = now();
        r = engine_image_build(e, "loop-test-build-fails:latest", tar, size, "Containerfile", NULL, NULL, NULL);
        ok(r < 0, "a build FROM a missing image fails (%.1f s): %s", now() - t0, engine_last_error(e));

        /* Image load: save the built image with the API, remove it, load it back. */
        {
                char path[] = "/tmp/loop-image-save.XXXXXX";
                _cleanup_free_ char *cmd = NULL;
                int fd = mkstemp(path);
                close(fd);
                cmd = strf("curl -sSf --unix-socket %s -o %s 'http://d/v1.41/images/%s/get'",
                         engine_socket_path(e), path, tag);
                if (system(cmd) == 0) {
                        (void) engine_image_remove(e, tag, true);
                        fd = open(path, O_RDONLY | O_CLOEXEC);
                        r = engine_image_load(e, fd);
                        close(fd);
                        if (r < 0)
                                diagf("load: %s", engine_last_error(e));
                        is_int(r, 0, "image load of a saved image archive");
                        is_int(engine_image_inspect(e, tag, NULL), 0, "the loaded image is there again");
                } else
                        ok(0, "saving the built image for the load test");
                unlink(path);
                char garbage[] = "/tmp/loop-image-garbage.XXXXXX";
                fd = mkstemp(garbage);
                (void) loop_write(fd, "not an image archive\n", 21);
                lseek(fd, 0, SEEK_SET);
                r = engine_image_load(e, fd);
                close(fd);
                unlink(garbage);
                ok(r < 0, "image load of garbage fails: %s", engine_last_error(e));
        }
        (void) engine_image_remove(e, tag, true);
}

typedef struct EventWatch {
        const char *name;
        bool seen_start;
} EventWatch;

static int on_event(json_object *m, void *userdata) {
        EventWatch *w = userdata;
        const char *action = jpath(m, "Action", NULL) ?: jpath(m, "status", NULL);
        json_object *actor = json_object_object_get(m, "Actor");
        const char *name = jpath(json_object_object_get(actor, "Attributes"), "name", NULL);
        if (action && streq(action, "start") && name && streq(name, w->name)) {
                w->seen_start = true;
                return 1;
        }
        return 0;
}

static Engine *alarm_engine;
static void on_alarm(int sig) {
        engine_interrupt(alarm_engine);
}

static void test_events(Engine *e, const char *image, const char *sock) {
        _cleanup_(json_object_putp) json_object *filters = NULL;
        _cleanup_free_ char *name = NULL;
        EventWatch w = {};
        pid_t pid;
        int r;

        name = strf("loop-test-%s-events", run_id);
        w.name = name;
        filters = json_parse_fmt("{\"type\":[\"container\"],\"event\":[\"start\"],\"label\":[\"loop-test-run=%s\"]}", run_id);

        /* Someone else starts a container while we listen. The stream sees only what happens after the
         * engine took the request, which a loaded machine may take longer to do than any fixed wait: the
         * other party starts the container again every 2 s (up to a minute) until the stream saw a start,
         * and the listener gives up after 90 s (SIGALRM interrupts it). */
        pid = fork();
        if (pid == 0) {
                _cleanup_(engine_freep) Engine *e2 = NULL;
                if (engine_new(sock, &e2) < 0)
                        _exit(1);
                for (int i = 0; i < 30; i++) {
                        usleep(i == 0 ? 700 * 1000 : 2000 * 1000);
                        (void) engine_container_remove(e2, name, true);
                        _cleanup_free_ char *id = container_run(e2, name, json_parse_fmt(
                                        "{\"Image\":\"%s\",\"Cmd\":[\"true\"],\"Labels\":{\"loop-test-run\":\"%s\"}}",
                                        image, run_id), true);
                        if (!id)
                                _exit(1);
                }
                _exit(0);
        }
        alarm_engine = e;
        signal(SIGALRM, on_alarm);
        alarm(90);
        double t0 = now();
        r = engine_events(e, filters, on_event, &w);
        alarm(0);
        signal(SIGALRM, SIG_DFL);
        (void) kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        if (r < 0)
                diagf("events: %s", engine_last_error(e));
        ok(r == 0 && w.seen_start, "events: a container's start is seen (%.2f s)", now() - t0);
        (void) engine_container_remove(e, name, true);

        /* engine_interrupt() from a signal handler ends a stream with nothing in it. */
        _cleanup_(engine_freep) Engine *ei = NULL;
        _cleanup_(json_object_putp) json_object *none = json_parse_fmt("{\"label\":[\"loop-test-nothing=%s\"]}", run_id);
        (void) engine_new(sock, &ei);
        alarm_engine = ei;
        signal(SIGALRM, on_alarm);
        alarm(1);
        t0 = now();
        r = engine_events(ei, none, on_event, &w);
        double dt = now() - t0;
        is_int(r, -EINTR, "engine_interrupt() from a signal handler ends an idle event stream with -EINTR");
        ok(dt < 10, "promptly (%.2f s after the signal at 1 s; a stream has no timeout of its own)", dt);
        r = engine_ping(ei);
        is_int(r, 0, "calls that are not streams still work after an interrupt");
        r = engine_container_logs(ei, "whatever", true, collect, &(Output) {});
        is_int(r, -EINTR, "streams after an interrupt end at once");
        signal(SIGALRM, SIG_DFL);
}

static void test_wait_semantics(Engine *e, const char *image, const char *sock) {
        _cleanup_free_ char *id = NULL;
        _cleanup_(engine_freep) Engine *ew = NULL;
        int code = -1, r;

        /* Not an assertion of one behaviour: the two engines differ, the runner must know how. */
        id = container_run(e, NULL, json_parse_fmt("{\"Image\":\"%s\",\"Cmd\":[\"true\"]}", image), false);
        if (!id)
                return;
        (void) engine_new(sock, &ew);
        alarm_engine = ew;
        signal(SIGALRM, on_alarm);
        alarm(2);
        double t0 = now();
        r = engine_container_wait(ew, id, &code);
        alarm(0);
        signal(SIGALRM, SIG_DFL);
        diagf("wait on a created, never started container: r=%d (%s) exit=%d after %.2f s", r,
              r < 0 ? engine_last_error(ew) : "ok", code, now() - t0);
        ok(r == 0 || r == -EINTR, "wait on a created container returns or is interruptible");
        (void) engine_container_remove(e, id, true);
}

static int mode_client(const char *sock, const char *image, const char *busybox_tar) {
        _cleanup_(engine_freep) Engine *e = NULL;

        if (engine_new(sock, &e) < 0)
                return 1;
        test_images(e, image, busybox_tar);
        test_lifecycle(e, image);
        test_logs(e, image);
        test_stop_kill(e, image);
        test_exec_archive(e, image);
        test_build(e, image);
        test_events(e, image, sock);
        test_wait_semantics(e, image, sock);
        return 0;
}

/* ---- the engine goes away ---- */

static pid_t victim;
static int kill_engine_once(Output *o) {
        if (victim > 0 && o->out_len > 0) {
                diagf("got output, killing the engine (pid %d)", (int) victim);
                kill(victim, SIGKILL);
                victim = 0;
        }
        return 0;
}

static int mode_follow_killed(const char *sock, const char *image, pid_t engine_pid) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_free_ char *id = NULL;
        Output o = { .on_data = kill_engine_once };
        int r;

        if (engine_new(sock, &e) < 0)
                return 1;
        id = container_run(e, NULL, json_parse_fmt("{\"Image\":\"%s\",\"Cmd\":[\"sh\",\"-c\","
                                                   "\"while :; do echo tick; sleep 0.2; done\"]}", image), true);
        ok(id != NULL, "a container that prints forever");
        if (!id)
                return 0;
        victim = engine_pid;
        /* If the call hung, SIGALRM would kill us and the test fails. */
        alarm(30);
        double t0 = now();
        r = engine_container_logs(e, id, true, collect, &o);
        double dt = now() - t0;
        alarm(0);
        ok(r < 0, "following logs returns an error when the engine is killed (%s)", strerror(-r));
        ok(dt < 15, "within %.2f s, no hang", dt);
        ok(strstr(engine_last_error(e), "GET /containers/") != NULL, "message: %s", engine_last_error(e));
        t0 = now();
        r = engine_container_wait(e, id, NULL);
        ok(r == -EHOSTDOWN || r == -ECONNREFUSED || r == -ECONNRESET, "the next call fails at once (%.2f s): %s", now() - t0,
           engine_last_error(e));
        output_done(&o);
        return 0;
}

/* ---- discovery ---- */

/* Runs engine_connect() with stderr captured. */
static int connect_captured(const char *configured, EngineConnection **ret, char **ret_stderr) {
        char path[] = "/tmp/loop-connect-stderr.XXXXXX";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO), r;

        fflush(stderr);
        dup2(fd, STDERR_FILENO);
        r = engine_connect(configured, ret);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        close(fd);
        (void) read_full_file_at(AT_FDCWD, path, 1024 * 1024, true, ret_stderr, NULL);
        unlink(path);
        return r;
}

static int mode_connect_missing(void) {
        _cleanup_(engine_connection_freep) EngineConnection *c = NULL, *c2 = NULL;
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        int r;

        setenv("LOOP_ENGINE_CANDIDATES", "/nonexistent/a.sock:/nonexistent/b.sock", 1);
        unsetenv("LOOP_ENGINE_SOCKET");
        setenv("PATH", "/nonexistent-bin", 1);      /* no podman to fall back on */
        r = connect_captured(NULL, &c, &err);
        is_int(r, -EHOSTDOWN, "no engine and no podman: -EHOSTDOWN");
        ok(c == NULL, "no connection is returned");
        ok(err && strstr(err, "/nonexistent/a.sock") && strstr(err, "/nonexistent/b.sock"),
           "the message lists every socket tried");
        ok(err && strstr(err, "No such file or directory"), "with why each failed");
        ok(err && strstr(err, "podman is not installed"), "and why no private podman service was started");
        ok(err && strstr(err, "systemctl start podman.socket") && strstr(err, "LOOP_ENGINE_SOCKET"),
           "and what to do about it");
        if (err)
                diagf("%s", err);

        r = connect_captured("/nonexistent/configured.sock", &c2, &err2);
        is_int(r, -EHOSTDOWN, "a configured socket that does not answer is an error");
        ok(err2 && strstr(err2, "/nonexistent/configured.sock (engine.socket)") && strstr(err2, "engine.socket"),
           "the message names the configured socket and the setting");
        ok(err2 && !strstr(err2, "/nonexistent/a.sock"), "no other socket is tried");
        return 0;
}

static int mode_connect_fallback(const char *good) {
        _cleanup_(engine_connection_freep) EngineConnection *c = NULL, *c2 = NULL, *c3 = NULL;
        _cleanup_free_ char *err = NULL, *err2 = NULL, *err3 = NULL;
        int r;

        setenv("LOOP_ENGINE_CANDIDATES", "/nonexistent/default.sock", 1);
        setenv("LOOP_ENGINE_SOCKET", good, 1);
        r = connect_captured(NULL, &c, &err);
        is_int(r, 0, "$LOOP_ENGINE_SOCKET answers: connected");
        ok(c && streq(engine_socket_path(c->engine), good), "to $LOOP_ENGINE_SOCKET");
        ok(c && c->private_service == 0, "no private service");
        ok(c && engine_kind(c->engine) != ENGINE_UNKNOWN, "the engine's kind is known (%s)",
           c ? engine_kind_to_string(engine_kind(c->engine)) : "-");

        r = connect_captured("/nonexistent/configured.sock", &c2, &err2);
        is_int(r, -EHOSTDOWN, "engine.socket wins over $LOOP_ENGINE_SOCKET, even when it does not answer");
        ok(c2 == NULL, "no fallback to $LOOP_ENGINE_SOCKET");

        /* No explicit socket: the defaults, in order; a socket file nobody listens on is passed over. */
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/loop-dead-%d.sock", (int) getpid());
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        (void) bind(fd, (struct sockaddr *) &sa, sizeof sa);
        unsetenv("LOOP_ENGINE_SOCKET");
        {
                char list[256];
                snprintf(list, sizeof list, "%s:%s", sa.sun_path, good);
                setenv("LOOP_ENGINE_CANDIDATES", list, 1);
        }
        r = connect_captured(NULL, &c3, &err3);
        ok(r == 0 && c3 && streq(engine_socket_path(c3->engine), good),
           "a default socket that refuses connections is passed over for the next one");
        close(fd);
        unlink(sa.sun_path);
        return 0;
}

static bool process_mentions(const char *needle) {
        _cleanup_closedir_ DIR *d = opendir("/proc");
        for (struct dirent *de; d && (de = readdir(d));) {
                char path[300], buf[4096];
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                if (n <= 0)
                        continue;
                for (ssize_t i = 0; i < n; i++)
                        if (buf[i] == 0)
                                buf[i] = ' ';
                buf[n] = 0;
                if (strstr(buf, needle))
                        return true;
        }
        return false;
}

static int mode_connect_private(void) {
        _cleanup_(engine_connection_freep) EngineConnection *c = NULL;
        _cleanup_free_ char *err = NULL, *dir = NULL;
        _cleanup_(json_object_putp) json_object *v = NULL;
        pid_t pid;
        int r;

        setenv("LOOP_ENGINE_CANDIDATES", "/nonexistent/a.sock:/nonexistent/b.sock", 1);
        unsetenv("LOOP_ENGINE_SOCKET");
        unsetenv("CONTAINERS_CONF");
        double t0 = now();
        r = connect_captured(NULL, &c, &err);
        if (r < 0)
                diagf("%s", strna(err));
        is_int(r, 0, "no socket answers, podman is installed: connected to a private service (%.2f s)", now() - t0);
        if (r < 0)
                return 0;
        ok(c->private_service > 0 && kill(c->private_service, 0) == 0, "the service runs (pid %d)", (int) c->private_service);
        ok(c->private_dir && startswith(engine_socket_path(c->engine), c->private_dir),
           "its socket is in its private directory (%s)", engine_socket_path(c->engine));
        struct stat st;
        ok(c->private_dir && stat(c->private_dir, &st) == 0 && (st.st_mode & 0777) == 0700,
           "the private directory is mode 0700");
        is_str(err, "loop: started a private podman service for this command (no engine socket answered)\n",
               "one line on stderr says so");
        is_int(engine_kind(c->engine), ENGINE_PODMAN, "it is podman");
        ok(engine_version(c->engine, &v) == 0, "it answers API calls (version %s)", strna(jpath(v, "Version", NULL)));
        _cleanup_free_ char *conf = NULL;
        conf = strf("%s/containers.conf", c->private_dir);
        ok(access(conf, F_OK) == 0, "systemd is not PID 1 here: a containers.conf was written for it");

        pid = c->private_service;
        dir = strdup(c->private_dir);
        t0 = now();
        c = engine_connection_free(c);
        diagf("stopping took %.2f s", now() - t0);
        ok(kill(pid, 0) < 0 && errno == ESRCH, "engine_connection_free() stopped the service");
        ok(access(dir, F_OK) < 0, "and removed its directory");
        ok(!process_mentions(dir), "no process is left that mentions the directory");
        return 0;
}

int main(int argc, char *argv[]) {
        snprintf(run_id, sizeof run_id, "%d", (int) getpid());
        srand((unsigned) getpid());
        /* Whatever happens, no run of this driver outlives its test. */
        alarm(300);
        setvbuf(stdout, NULL, _IOLBF, 0);

        if (argc >= 2 && streq(argv[1], "parse"))
                mode_parse();
        else if (argc >= 6 && streq(argv[1], "client")) {
                kind_name = argv[3];
                mode_client(argv[2], argv[4], argv[5]);
        } else if (argc >= 5 && streq(argv[1], "follow-killed"))
                mode_follow_killed(argv[2], argv[3], (pid_t) atoi(argv[4]));
        else if (argc >= 2 && streq(argv[1], "connect-missing"))
                mode_connect_missing();
        else if (argc >= 3 && streq(argv[1], "connect-fallback"))
                mode_connect_fallback(argv[2]);
        else if (argc >= 2 && streq(argv[1], "connect-private"))
                mode_connect_private();
        else {
                fprintf(stderr, "usage: see the top of %s\n", __FILE__);
                return 2;
        }
        return done_testing();
}
