/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* One curl easy handle per call: calls share nothing but the Engine's last error and kind, so an Engine is
 * not thread-safe (one thread at a time) and needs no locking; engine_interrupt() is the only function that
 * may run concurrently (from a signal handler). A Unix socket connect costs microseconds, so connection
 * reuse is not worth the state it would carry across calls (a hijacked exec stream closes its connection). */

#include <assert.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "engine-frames.h"
#include "engine.h"
#include "http-server.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "socket-util.h"
#include "string-util.h"
#include "strv.h"

#ifndef CURL_WRITEFUNC_ERROR
#define CURL_WRITEFUNC_ERROR 0          /* libcurl < 7.87: any short count is an error */
#endif

#define ENGINE_ERROR_BODY_MAX (64U * 1024U)     /* what we keep of an error response */
#define ENGINE_ERROR_SHOWN_MAX 400U             /* what of a non-JSON error body reaches the message */
#define ENGINE_NAME_MAX 512U
#define ENGINE_EXEC_SETTLE_TRIES 100U           /* exec inspect polls after the output ended, 50 ms apart */

struct Engine {
        char *socket_path;
        char *last_error;
        EngineKind kind;
        unsigned timeout_sec;
        volatile sig_atomic_t interrupted;
};

typedef enum Sink {
        SINK_BUFFER,            /* the whole body, capped at ENGINE_RESPONSE_MAX */
        SINK_FRAMES,            /* container output, demultiplexed to an EngineStreamFn */
        SINK_JSON_SEQ,          /* a stream of JSON objects to an EngineJsonFn */
} Sink;

typedef struct Request {
        /* Set by the caller. */
        const char *method;
        const char *path;               /* with query, without the version prefix */
        bool stream;                    /* no total timeout; engine_interrupt() ends it */
        unsigned extra_timeout_sec;     /* on top of the Engine's timeout, e.g. a stop's grace period */
        bool idle_timeout;              /* a stream that may be long but never silent: give up after the
                                         * Engine's timeout without a byte */
        int conflict_errno;             /* what 409 means for this call (default -EBUSY) */
        const char *content_type;
        const void *body;
        size_t body_size;
        bool body_from_fd;              /* instead of body: upload read from body_fd */
        int body_fd;
        Sink sink;
        EngineStreamFn stream_fn;
        EngineJsonFn json_fn;
        void *userdata;

        /* Filled while it runs. */
        Engine *engine;
        CURL *curl;
        long status;
        bool error_body;                /* status >= 300: the body is the engine's error message */
        char *buf;
        size_t buf_size, buf_allocated;
        int failure;                    /* our own or a callback's error that aborted the transfer */
        bool stopped;                   /* a callback asked to end cleanly */
        EngineKind kind_seen;           /* from the response headers */

        EngineFrames frames;

        json_tokener *tok;
        bool tok_pending;               /* the tokener holds part of an object */
        size_t tok_bytes;               /* bytes of the object being parsed */
        char *stream_error;             /* {"error": ...} seen in a JSON stream */
} Request;

static void request_done(Request *r) {
        free(r->buf);
        free(r->stream_error);
        if (r->tok)
                json_tokener_free(r->tok);
        if (r->curl)
                curl_easy_cleanup(r->curl);
}

int engine_new(const char *socket_path, Engine **ret) {
        Engine *e;

        assert(ret);

        if (isempty(socket_path) || socket_path[0] != '/')
                return -EINVAL;
        /* The default flags; after the first call this only counts references. */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return -EIO;
        e = calloc(1, sizeof *e);
        if (!e)
                return -ENOMEM;
        e->socket_path = strdup(socket_path);
        if (!e->socket_path) {
                free(e);
                return -ENOMEM;
        }
        e->timeout_sec = ENGINE_TIMEOUT_SEC;
        *ret = e;
        return 0;
}

Engine *engine_free(Engine *e) {
        if (!e)
                return NULL;
        free(e->socket_path);
        free(e->last_error);
        free(e);
        curl_global_cleanup();
        return NULL;
}

const char *engine_socket_path(const Engine *e) {
        return e ? e->socket_path : NULL;
}

const char *engine_last_error(const Engine *e) {
        return e && e->last_error ? e->last_error : "no error";
}

EngineKind engine_kind(const Engine *e) {
        return e ? e->kind : ENGINE_UNKNOWN;
}

const char *engine_kind_to_string(EngineKind k) {
        switch (k) {
        case ENGINE_PODMAN:
                return "podman";
        case ENGINE_DOCKER:
                return "docker";
        default:
                return "unknown";
        }
}

void engine_interrupt(Engine *e) {
        if (e)
                e->interrupted = 1;
}

void engine_set_timeout(Engine *e, unsigned timeout_sec) {
        assert(e);
        e->timeout_sec = timeout_sec > 0 ? timeout_sec : ENGINE_TIMEOUT_SEC;
}

_printf_(2, 3)
static void engine_set_error(Engine *e, const char *format, ...) {
        char *s = NULL;
        va_list ap;

        va_start(ap, format);
        (void) strprintf_va(&s, format, ap);
        va_end(ap);
        free(e->last_error);
        e->last_error = s;
        if (!s)
                return;
        /* One line: the engine's messages may carry newlines or other control characters. */
        for (char *p = s; *p; p++)
                if ((unsigned char) *p < ' ' || *p == 0x7f)
                        *p = ' ';
        size_t l = strlen(s);
        while (l > 0 && s[l - 1] == ' ')
                s[--l] = 0;
}

/* The path as the user sees it in messages: no query (it may hold build arguments). */
static const char *request_shown_path(const Request *r, char *buf, size_t size) {
        size_t l = strcspn(r->path, "?");
        snprintf(buf, size, "%.*s", (int) MIN(l, size - 1), r->path);
        return buf;
}

/* ---- names and queries ---- */

/* Container ids and names as Docker accepts them; anything else never reaches a URL. */
static bool container_ref_valid(const char *s) {
        if (isempty(s) || strlen(s) > ENGINE_NAME_MAX)
                return false;
        for (const char *p = s; *p; p++) {
                bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
                if (!alnum && (p == s || !strchr("_.-", *p)))
                        return false;
        }
        return true;
}

/* Image references (repo[:tag][@digest], ids, sha256:...): the characters of a reference, no empty or ".."
 * path component, so the name cannot walk out of /images/NAME/. */
static bool image_ref_valid(const char *s) {
        if (isempty(s) || strlen(s) > ENGINE_NAME_MAX || s[0] == '/' || endswith(s, "/"))
                return false;
        if (strstr(s, "//") || strstr(s, ".."))
                return false;
        for (const char *p = s; *p; p++) {
                bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
                if (!alnum && !strchr("_.-:/@", *p))
                        return false;
        }
        return true;
}

static int check_container(Engine *e, const char *id) {
        if (container_ref_valid(id))
                return 0;
        engine_set_error(e, "invalid container name or id \"%s\"", strempty(id));
        return -EINVAL;
}

static int check_image(Engine *e, const char *name) {
        if (image_ref_valid(name))
                return 0;
        engine_set_error(e, "invalid image name \"%s\"", strempty(name));
        return -EINVAL;
}

/* Appends "&key=value" (or "?key=value" for the first), the value percent-encoded. */
static int query_add(char **q, const char *key, const char *value) {
        char *esc, *n;

        esc = curl_easy_escape(NULL, value, (int) strlen(value));
        if (!esc)
                return -ENOMEM;
        int k = asprintf(&n, "%s%s%s=%s", strempty(*q), strchr(strempty(*q), '?') ? "&" : "?", key, esc);
        curl_free(esc);
        if (k < 0)
                return -ENOMEM;
        free(*q);
        *q = n;
        return 0;
}

/* ---- response sinks ---- */

static int buffer_append(Request *r, const char *data, size_t size, size_t max) {
        if (size > max || r->buf_size > max - size)
                return -EFBIG;
        if (r->buf_size + size + 1 > r->buf_allocated) {
                size_t want = MAX(r->buf_allocated * 2, r->buf_size + size + 1);
                want = MAX(want, (size_t) 4096);
                char *b = realloc(r->buf, want);
                if (!b)
                        return -ENOMEM;
                r->buf = b;
                r->buf_allocated = want;
        }
        memcpy(r->buf + r->buf_size, data, size);
        r->buf_size += size;
        r->buf[r->buf_size] = 0;
        return 0;
}

/* The message of an {"error": ...} or {"errorDetail": {"message": ...}} object, or NULL. */
static const char *json_stream_error(json_object *o) {
        json_object *v, *m;

        if (!json_object_is_type(o, json_type_object))
                return NULL;
        if (json_object_object_get_ex(o, "errorDetail", &v) && json_object_object_get_ex(v, "message", &m) &&
            json_object_is_type(m, json_type_string) && !isempty(json_object_get_string(m)))
                return json_object_get_string(m);
        if (json_object_object_get_ex(o, "error", &v) && !json_object_is_type(v, json_type_null)) {
                const char *s = json_object_get_string(v);
                return isempty(s) ? "unknown error" : s;
        }
        if (json_object_object_get_ex(o, "errorDetail", &v) && !json_object_is_type(v, json_type_null))
                return "unknown error";
        return NULL;
}

static int json_seq_object(Request *r, json_object *o) {
        const char *err = json_stream_error(o);
        int k = 0;

        if (err && !r->stream_error) {
                r->stream_error = strdup(err);
                if (!r->stream_error)
                        return -ENOMEM;
        }
        if (r->json_fn) {
                k = r->json_fn(o, r->userdata);
                if (k > 0) {
                        r->stopped = true;
                        return 1;
                }
        }
        return k < 0 ? k : 0;
}

static bool all_space(const char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\r\n", p[i]))
                        return false;
        return true;
}

/* Objects may be split across chunks, separated by newlines or nothing at all. */
static int json_seq_feed(Request *r, const char *data, size_t size) {
        int k;

        if (!r->tok) {
                r->tok = json_tokener_new();
                if (!r->tok)
                        return -ENOMEM;
        }
        while (size > 0) {
                if (!r->tok_pending) {
                        /* Whitespace between objects is not part of any object. */
                        size_t ws = 0;
                        while (ws < size && strchr(" \t\r\n", data[ws]))
                                ws++;
                        data += ws;
                        size -= ws;
                        if (size == 0)
                                break;
                }
                size_t chunk = MIN(size, (size_t) INT32_MAX);
                if (r->tok_bytes > ENGINE_RESPONSE_MAX - MIN(chunk, (size_t) ENGINE_RESPONSE_MAX))
                        return -EFBIG;
                _cleanup_(json_object_putp) json_object *o = json_tokener_parse_ex(r->tok, data, (int) chunk);
                enum json_tokener_error jerr = json_tokener_get_error(r->tok);
                if (jerr == json_tokener_continue) {
                        r->tok_pending = r->tok_pending || !all_space(data, chunk);
                        r->tok_bytes += chunk;
                        data += chunk;
                        size -= chunk;
                        continue;
                }
                if (jerr != json_tokener_success)
                        return -EBADMSG;
                size_t used = json_tokener_get_parse_end(r->tok);
                json_tokener_reset(r->tok);
                r->tok_pending = false;
                r->tok_bytes = 0;
                data += used;
                size -= used;
                k = json_seq_object(r, o);
                if (k != 0)
                        return k;
        }
        return 0;
}

static size_t on_write(char *data, size_t one, size_t n, void *userdata) {
        Request *r = userdata;
        size_t size = one * n;
        int k;

        if (r->status == 0) {
                (void) curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->status);
                r->error_body = r->status >= 300;
        }

        if (r->error_body || r->sink == SINK_BUFFER) {
                k = buffer_append(r, data, size, r->error_body ? ENGINE_ERROR_BODY_MAX : ENGINE_RESPONSE_MAX);
                /* A long error body is cut, not fatal: its start is what we show. */
                if (k == -EFBIG && r->error_body)
                        return size;
        } else if (r->sink == SINK_FRAMES)
                k = engine_frames_feed(&r->frames, data, size);
        else
                k = json_seq_feed(r, data, size);

        if (k == 0)
                return size;
        if (k < 0)
                r->failure = k;
        return CURL_WRITEFUNC_ERROR;
}

static size_t on_header(char *data, size_t one, size_t n, void *userdata) {
        Request *r = userdata;
        size_t size = one * n;

        /* Podman announces itself in every response; Docker names itself in Server:. */
        if (size >= 19 && strncasecmp(data, "Libpod-Api-Version:", 19) == 0)
                r->kind_seen = ENGINE_PODMAN;
        else if (size >= 14 && strncasecmp(data, "Server: Libpod", 14) == 0)
                r->kind_seen = ENGINE_PODMAN;
        else if (size >= 14 && strncasecmp(data, "Server: Docker", 14) == 0 && r->kind_seen == ENGINE_UNKNOWN)
                r->kind_seen = ENGINE_DOCKER;
        return size;
}

static size_t on_read(char *buf, size_t one, size_t n, void *userdata) {
        Request *r = userdata;

        for (;;) {
                ssize_t k = read(r->body_fd, buf, one * n);
                if (k >= 0)
                        return (size_t) k;
                if (errno == EINTR)
                        continue;
                r->failure = -errno;
                return CURL_READFUNC_ABORT;
        }
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        Request *r = userdata;

        /* Called at least once a second even when nothing moves, so an interrupt is seen promptly. */
        if (r->stream && r->engine->interrupted) {
                r->failure = -EINTR;
                return 1;
        }
        return 0;
}

/* ---- performing a call ---- */

static int status_to_errno(const Request *r, const char *message) {
        switch (r->status) {
        case 400:
                return -EINVAL;
        case 401:
                return -EACCES;
        case 403:
                return -EPERM;
        case 404:
                return -ENOENT;
        case 409:
                return r->conflict_errno ?: -EBUSY;
        case 500:
                /* Podman 4.3 answers a name conflict on create with 500, not 409. */
                if (r->conflict_errno == -EEXIST && message && strstr(message, "already in use"))
                        return -EEXIST;
                return -EIO;
        case 501:
                return -EOPNOTSUPP;
        default:
                return -EIO;
        }
}

static int request_http_error(Request *r) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        const char *message = NULL;
        char shown[256], raw[ENGINE_ERROR_SHOWN_MAX + 1] = "";
        int k;

        if (r->buf_size > 0) {
                json_object *m;
                j = json_tokener_parse(r->buf);
                if (j && json_object_object_get_ex(j, "message", &m) && json_object_is_type(m, json_type_string))
                        message = json_object_get_string(m);
                else {
                        snprintf(raw, sizeof raw, "%s", r->buf);
                        message = raw;
                }
        }
        k = status_to_errno(r, message);
        engine_set_error(r->engine, "%s %s: %ld %s", r->method, request_shown_path(r, shown, sizeof shown),
                         r->status, isempty(message) ? "(no message from the engine)" : message);
        return k;
}

static int request_curl_error(Request *r, CURLcode code, const char *errbuf) {
        Engine *e = r->engine;
        char shown[256];
        const char *p = request_shown_path(r, shown, sizeof shown), *why = !isempty(errbuf) ? errbuf : curl_easy_strerror(code);
        long os_errno = 0;

        (void) curl_easy_getinfo(r->curl, CURLINFO_OS_ERRNO, &os_errno);

        switch (code) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
                if (os_errno > 0) {
                        engine_set_error(e, "%s %s: cannot connect to %s: %s", r->method, p, e->socket_path,
                                         strerror((int) os_errno));
                        if (os_errno == ECONNREFUSED || os_errno == EACCES)
                                return (int) -os_errno;
                } else
                        engine_set_error(e, "%s %s: cannot connect to %s: %s", r->method, p, e->socket_path, why);
                return -EHOSTDOWN;
        case CURLE_OPERATION_TIMEDOUT: {
                double connect_time = 0;
                (void) curl_easy_getinfo(r->curl, CURLINFO_CONNECT_TIME, &connect_time);
                if (connect_time <= 0)
                        engine_set_error(e, "%s %s: cannot connect to %s: timed out", r->method, p, e->socket_path);
                else if (r->stream)
                        engine_set_error(e, "%s %s: %s sent nothing for %u s", r->method, p, e->socket_path,
                                         e->timeout_sec);
                else
                        engine_set_error(e, "%s %s: no answer from %s within %u s", r->method, p, e->socket_path,
                                         e->timeout_sec + r->extra_timeout_sec);
                return -ETIMEDOUT;
        }
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
                engine_set_error(e, "%s %s: connection to %s lost (did the engine stop?): %s", r->method, p,
                                 e->socket_path, why);
                return -ECONNRESET;
        default:
                engine_set_error(e, "%s %s: %s (%s)", r->method, p, why, e->socket_path);
                return -EIO;
        }
}

static bool fd_is_regular(int fd) {
        struct stat st;
        return fstat(fd, &st) >= 0 && S_ISREG(st.st_mode);
}

/* Runs the request. On success (2xx or 304) returns 0 with the body in r->buf for SINK_BUFFER; on failure a
 * negative errno with the engine's last error set. */
static int request_perform(Engine *e, Request *r) {
        _cleanup_free_ char *url = NULL;
        struct curl_slist *headers = NULL;
        char errbuf[CURL_ERROR_SIZE] = "", shown[256];
        CURLcode code;
        int k;

        r->engine = e;
        r->frames = (EngineFrames) { .fn = r->stream_fn, .userdata = r->userdata };
        if (r->stream && e->interrupted) {
                engine_set_error(e, "%s %s: interrupted", r->method, request_shown_path(r, shown, sizeof shown));
                return -EINTR;
        }

        if (asprintf(&url, "http://d/" ENGINE_API_VERSION "%s", r->path) < 0)
                return -ENOMEM;
        r->curl = curl_easy_init();
        if (!r->curl)
                return -ENOMEM;

        _cleanup_free_ char *ctype = NULL;
        /* An empty "Content-Type:" drops libcurl's form-urlencoded default for an empty POST. */
        if (asprintf(&ctype, "Content-Type:%s%s", r->content_type ? " " : "", strempty(r->content_type)) < 0)
                return -ENOMEM;
        const char *lines[] = {
                ctype,
                "Expect:",      /* no 100-continue round trip before large bodies */
                r->body_from_fd && !fd_is_regular(r->body_fd) ? "Transfer-Encoding: chunked" : NULL,
        };
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                if (!lines[i])
                        continue;
                struct curl_slist *l = curl_slist_append(headers, lines[i]);
                if (!l) {
                        curl_slist_free_all(headers);
                        return -ENOMEM;
                }
                headers = l;
        }

        (void) curl_easy_setopt(r->curl, CURLOPT_URL, url);
        (void) curl_easy_setopt(r->curl, CURLOPT_UNIX_SOCKET_PATH, e->socket_path);
        (void) curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
        (void) curl_easy_setopt(r->curl, CURLOPT_ERRORBUFFER, errbuf);
        (void) curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, headers);
        (void) curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT, (long) ENGINE_CONNECT_TIMEOUT_SEC);
        if (!r->stream)
                (void) curl_easy_setopt(r->curl, CURLOPT_TIMEOUT, (long) (e->timeout_sec + r->extra_timeout_sec));
        else if (r->idle_timeout) {
                (void) curl_easy_setopt(r->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
                (void) curl_easy_setopt(r->curl, CURLOPT_LOW_SPEED_TIME, (long) e->timeout_sec);
        }
        (void) curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, on_write);
        (void) curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, r);
        (void) curl_easy_setopt(r->curl, CURLOPT_HEADERFUNCTION, on_header);
        (void) curl_easy_setopt(r->curl, CURLOPT_HEADERDATA, r);
        (void) curl_easy_setopt(r->curl, CURLOPT_NOPROGRESS, 0L);
        (void) curl_easy_setopt(r->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        (void) curl_easy_setopt(r->curl, CURLOPT_XFERINFODATA, r);

        if (r->body_from_fd) {
                struct stat st;
                (void) curl_easy_setopt(r->curl, CURLOPT_POST, 1L);
                (void) curl_easy_setopt(r->curl, CURLOPT_READFUNCTION, on_read);
                (void) curl_easy_setopt(r->curl, CURLOPT_READDATA, r);
                if (fd_is_regular(r->body_fd) && fstat(r->body_fd, &st) >= 0) {
                        off_t pos = lseek(r->body_fd, 0, SEEK_CUR);
                        curl_off_t left = (curl_off_t) st.st_size - (pos > 0 ? (curl_off_t) pos : 0);
                        (void) curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, MAX(left, (curl_off_t) 0));
                }
        } else if (r->body || streq(r->method, "POST") || streq(r->method, "PUT")) {
                (void) curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) r->body_size);
                (void) curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, r->body ?: "");
        }
        if (!streq(r->method, "GET") && !streq(r->method, "POST"))
                (void) curl_easy_setopt(r->curl, CURLOPT_CUSTOMREQUEST, r->method);

        code = curl_easy_perform(r->curl);
        curl_slist_free_all(headers);

        if (r->kind_seen != ENGINE_UNKNOWN)
                e->kind = r->kind_seen;
        if (r->status == 0)
                (void) curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->status);

        request_shown_path(r, shown, sizeof shown);
        if (r->failure == -EINTR) {
                engine_set_error(e, "%s %s: interrupted", r->method, shown);
                return -EINTR;
        }
        if (r->failure == -EFBIG && !r->error_body) {
                engine_set_error(e, "%s %s: response larger than %u bytes, refused", r->method, shown,
                                 ENGINE_RESPONSE_MAX);
                return -EFBIG;
        }
        if (r->failure == -EBADMSG) {
                engine_set_error(e, "%s %s: malformed %s from the engine", r->method, shown,
                                 r->sink == SINK_FRAMES ? "output stream" : "JSON stream");
                return -EBADMSG;
        }
        if (r->failure < 0) {
                /* A callback of the caller, or reading the upload, gave up. */
                engine_set_error(e, "%s %s: aborted: %s", r->method, shown, strerror(-r->failure));
                return r->failure;
        }
        if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && r->stopped))
                return request_curl_error(r, code, errbuf);

        if (r->status >= 300 && r->status != 304)
                return request_http_error(r);
        if (r->status < 200 && r->status != 0) {
                engine_set_error(e, "%s %s: unexpected status %ld", r->method, shown, r->status);
                return -EIO;
        }

        if (!r->stopped && r->sink == SINK_FRAMES) {
                if (engine_frames_truncated(&r->frames)) {
                        engine_set_error(e, "%s %s: output ended in the middle of a frame (did the engine stop?)",
                                         r->method, shown);
                        return -ECONNRESET;
                }
                /* fewer than 8 bytes in all: a raw stream */
                k = engine_frames_finish(&r->frames);
                if (k < 0) {
                        engine_set_error(e, "%s %s: aborted: %s", r->method, shown, strerror(-k));
                        return k;
                }
        }
        if (!r->stopped && r->sink == SINK_JSON_SEQ && r->tok_pending) {
                engine_set_error(e, "%s %s: the engine's JSON stream ended in the middle of an object", r->method,
                                 shown);
                return -ECONNRESET;
        }
        if (r->stream_error) {
                engine_set_error(e, "%s %s: %s", r->method, shown, r->stream_error);
                return -EIO;
        }
        return 0;
}

#define REQUEST(m, p, ...) ((Request) { .method = (m), .path = (p), __VA_ARGS__ })

/* A call whose answer is a JSON document (or nothing). ret may be NULL. */
static int call_json(Engine *e, Request *r, json_object **ret) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        int k;

        k = request_perform(e, r);
        if (k >= 0 && ret) {
                json_tokener *tok = json_tokener_new();
                if (!tok)
                        k = -ENOMEM;
                else {
                        j = r->buf_size > 0 && r->buf_size <= INT32_MAX
                                ? json_tokener_parse_ex(tok, r->buf, (int) r->buf_size) : NULL;
                        bool complete = j && json_tokener_get_error(tok) == json_tokener_success &&
                                all_space(r->buf + json_tokener_get_parse_end(tok),
                                          r->buf_size - json_tokener_get_parse_end(tok));
                        json_tokener_free(tok);
                        if (!complete) {
                                char shown[256];
                                engine_set_error(e, "%s %s: the engine's answer is not valid JSON", r->method,
                                                 request_shown_path(r, shown, sizeof shown));
                                k = -EBADMSG;
                        }
                }
        }
        request_done(r);
        if (k < 0)
                return k;
        if (ret)
                *ret = TAKE_PTR(j);
        return 0;
}

static int call(Engine *e, Request *r) {
        return call_json(e, r, NULL);
}

/* GET PATH, the answer parsed into *ret. */
static int call_get(Engine *e, const char *path, json_object **ret) {
        Request r = REQUEST("GET", path);

        assert(e);
        return call_json(e, &r, ret);
}

/* METHOD /COLLECTION/REF REST, REF checked first (as an image name in "images", as a container, volume,
 * network or exec name or id elsewhere), the answer parsed into *ret unless ret is NULL. */
static int call_on(Engine *e, const char *method, const char *collection, const char *ref, const char *rest,
                   unsigned extra_timeout_sec, json_object **ret) {
        _cleanup_free_ char *p = NULL;
        int k;

        assert(e);
        k = streq(collection, "images") || streq(collection, "libpod/images") ? check_image(e, ref) : check_container(e, ref);
        if (k < 0)
                return k;
        if (strprintf(&p, "/%s/%s%s", collection, ref, rest) < 0)
                return -ENOMEM;
        Request r = REQUEST(method, p, .extra_timeout_sec = extra_timeout_sec);
        return call_json(e, &r, ret);
}

static const char *json_get_string(json_object *o, const char *key) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* A POST that creates something (a container, an exec instance) and answers with its "Id": the id, checked as
 * any container reference is before it reaches a URL, goes to *ret_id (unless NULL). */
static int call_for_id(Engine *e, Request *r, char **ret_id) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        char shown[ENGINE_NAME_MAX + 64];
        const char *id;
        int k;

        k = call_json(e, r, &j);
        if (k < 0)
                return k;
        id = json_get_string(j, "Id");
        if (!id || !container_ref_valid(id)) {
                engine_set_error(e, "%s %s: the engine's answer has no valid \"Id\"", r->method,
                                 request_shown_path(r, shown, sizeof shown));
                return -EBADMSG;
        }
        if (ret_id) {
                char *c = strdup(id);
                if (!c)
                        return -ENOMEM;
                *ret_id = c;
        }
        return 0;
}

/* ---- the API ---- */

int engine_ping(Engine *e) {
        Request r = REQUEST("GET", "/_ping");
        int k;

        assert(e);
        k = request_perform(e, &r);
        if (k >= 0 && !(r.buf && startswith(r.buf, "OK"))) {
                engine_set_error(e, "GET /_ping: unexpected answer from %s", e->socket_path);
                k = -EPROTO;
        }
        request_done(&r);
        return k;
}

int engine_version(Engine *e, json_object **ret) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        Request r = REQUEST("GET", "/version");
        json_object *components;
        int k;

        assert(e);
        k = call_json(e, &r, &j);
        if (k < 0)
                return k;
        e->kind = ENGINE_DOCKER;
        if (json_object_object_get_ex(j, "Components", &components) &&
            json_object_is_type(components, json_type_array))
                for (size_t i = 0; i < json_object_array_length(components); i++) {
                        const char *name = json_get_string(json_object_array_get_idx(components, i), "Name");
                        if (name && streq(name, "Podman Engine"))
                                e->kind = ENGINE_PODMAN;
                }
        if (ret)
                *ret = TAKE_PTR(j);
        return 0;
}

const char *engine_container_label(json_object *container, const char *key) {
        json_object *labels, *v;

        if (!json_object_object_get_ex(container, "Labels", &labels) || !json_object_object_get_ex(labels, key, &v) ||
            !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int engine_info(Engine *e, json_object **ret) {
        return call_get(e, "/info", ret);
}

int engine_image_inspect(Engine *e, const char *name, json_object **ret) {
        return call_on(e, "GET", "images", name, "/json", 0, ret);
}

int engine_image_inspect_libpod(Engine *e, const char *name, json_object **ret) {
        return call_on(e, "GET", "libpod/images", name, "/json", 0, ret);
}

int engine_image_list(Engine *e, json_object **ret) {
        return call_get(e, "/images/json", ret);
}

int engine_image_remove(Engine *e, const char *name, bool force) {
        return call_on(e, "DELETE", "images", name, force ? "?force=1" : "?force=0", 0, NULL);
}

int engine_image_build(Engine *e, const char *tag, const void *context_tar, size_t size, const char *dockerfile,
                       char * const *buildargs, EngineJsonFn progress, void *userdata) {
        _cleanup_(json_object_putp) json_object *args = NULL;
        _cleanup_free_ char *q = NULL;
        int k;

        assert(e);
        assert(context_tar || size == 0);
        k = check_image(e, tag);
        if (k < 0)
                return k;

        args = json_object_new_object();
        if (!args)
                return -ENOMEM;
        STRV_FOREACH(a, buildargs) {
                const char *eq = strchr(*a, '=');
                if (!eq || eq == *a) {
                        engine_set_error(e, "invalid build argument \"%s\": expected KEY=VALUE", *a);
                        return -EINVAL;
                }
                _cleanup_free_ char *key = strndup(*a, (size_t) (eq - *a));
                if (!key || json_add(args, key, json_object_new_string(eq + 1)) < 0)
                        return -ENOMEM;
        }

        if (strprintf(&q, "/build") < 0)
                return -ENOMEM;
        if ((k = query_add(&q, "t", tag)) < 0 ||
            (k = query_add(&q, "dockerfile", isempty(dockerfile) ? "Dockerfile" : dockerfile)) < 0 ||
            (k = query_add(&q, "buildargs", json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN))) < 0 ||
            (k = query_add(&q, "rm", "1")) < 0 ||
            (k = query_add(&q, "forcerm", "1")) < 0)
                return k;

        Request r = REQUEST("POST", q,
                            .stream = true,
                            .content_type = "application/x-tar",
                            .body = context_tar ?: "",
                            .body_size = size,
                            .sink = SINK_JSON_SEQ,
                            .json_fn = progress,
                            .userdata = userdata);
        return call(e, &r);
}

int engine_image_import(Engine *e, int tar_fd, const char *repo_tag, char * const *changes) {
        _cleanup_free_ char *q = NULL;
        int k;

        assert(e);
        assert(tar_fd >= 0);
        k = check_image(e, repo_tag);
        if (k < 0)
                return k;
        if (strchr(repo_tag, '@')) {
                engine_set_error(e, "cannot import as \"%s\": a digest is not a tag", repo_tag);
                return -EINVAL;
        }
        if (strprintf(&q, "/images/create") < 0)
                return -ENOMEM;
        /* The whole reference goes in repo=: Podman 4.3 ignores tag= (and names the image :latest), Docker
         * parses a tagged repo= the same way. */
        if ((k = query_add(&q, "fromSrc", "-")) < 0 ||
            (k = query_add(&q, "repo", repo_tag)) < 0)
                return k;
        STRV_FOREACH(c, changes)
                if ((k = query_add(&q, "changes", *c)) < 0)
                        return k;

        Request r = REQUEST("POST", q,
                            .stream = true,
                            .content_type = "application/x-tar",
                            .body_from_fd = true,
                            .body_fd = tar_fd,
                            .sink = SINK_JSON_SEQ);
        return call(e, &r);
}

int engine_image_load(Engine *e, int tar_fd) {
        assert(e);
        assert(tar_fd >= 0);

        Request r = REQUEST("POST", "/images/load?quiet=1",
                            .stream = true,
                            .content_type = "application/x-tar",
                            .body_from_fd = true,
                            .body_fd = tar_fd,
                            .sink = SINK_JSON_SEQ);
        return call(e, &r);
}

int engine_container_create(Engine *e, const char *name, json_object *body, char **ret_id) {
        _cleanup_free_ char *q = NULL;
        const char *s;
        int k;

        assert(e);
        assert(body);

        if (strprintf(&q, "/containers/create") < 0)
                return -ENOMEM;
        if (name) {
                k = check_container(e, name);
                if (k < 0)
                        return k;
                k = query_add(&q, "name", name);
                if (k < 0)
                        return k;
        }
        s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
        if (!s)
                return -ENOMEM;

        Request r = REQUEST("POST", q,
                            .content_type = "application/json",
                            .body = s,
                            .body_size = strlen(s),
                            .conflict_errno = -EEXIST);
        return call_for_id(e, &r, ret_id);
}

/* The engine answers 304 to a start of a started and a stop of a stopped container: success. */
int engine_container_start(Engine *e, const char *id) {
        return call_on(e, "POST", "containers", id, "/start", 0, NULL);
}

int engine_container_wait(Engine *e, const char *id, int *ret_exit_code) {
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_free_ char *p = NULL;
        json_object *v, *err;
        int k;

        assert(e);
        k = check_container(e, id);
        if (k < 0)
                return k;
        if (strprintf(&p, "/containers/%s/wait", id) < 0)
                return -ENOMEM;

        Request r = REQUEST("POST", p, .stream = true);
        k = call_json(e, &r, &j);
        if (k < 0)
                return k;
        if (json_object_object_get_ex(j, "Error", &err) && json_object_is_type(err, json_type_object)) {
                const char *m = json_get_string(err, "Message");
                if (!isempty(m)) {
                        engine_set_error(e, "POST /containers/%s/wait: %s", id, m);
                        return -EIO;
                }
        }
        if (!json_object_object_get_ex(j, "StatusCode", &v) || !json_object_is_type(v, json_type_int)) {
                engine_set_error(e, "POST /containers/%s/wait: the engine's answer has no \"StatusCode\"", id);
                return -EBADMSG;
        }
        if (ret_exit_code)
                *ret_exit_code = json_object_get_int(v);
        return 0;
}

int engine_container_logs(Engine *e, const char *id, bool follow, EngineStreamFn fn, void *userdata) {
        _cleanup_free_ char *p = NULL;
        int k;

        assert(e);
        assert(fn);
        k = check_container(e, id);
        if (k < 0)
                return k;
        if (strprintf(&p, "/containers/%s/logs?stdout=1&stderr=1&follow=%d", id, follow) < 0)
                return -ENOMEM;

        /* Even without follow the output may be large: no total timeout, interruptible; without follow the
         * engine has everything at hand, so silence means it hangs. */
        Request r = REQUEST("GET", p, .stream = true, .idle_timeout = !follow, .sink = SINK_FRAMES, .stream_fn = fn,
                            .userdata = userdata);
        return call(e, &r);
}

int engine_container_inspect(Engine *e, const char *id, json_object **ret) {
        return call_on(e, "GET", "containers", id, "/json", 0, ret);
}

int engine_volume_inspect(Engine *e, const char *name, json_object **ret) {
        return call_on(e, "GET", "volumes", name, "", 0, ret);
}

int engine_volume_create(Engine *e, json_object *body, json_object **ret) {
        _cleanup_free_ char *p = NULL;
        const char *s;

        assert(e);
        assert(body);
        if (strprintf(&p, "/volumes/create") < 0)
                return -ENOMEM;
        s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
        if (!s)
                return -ENOMEM;
        Request r = REQUEST("POST", p, .content_type = "application/json", .body = s, .body_size = strlen(s),
                            .conflict_errno = -EEXIST);
        return call_json(e, &r, ret);
}

int engine_network_inspect(Engine *e, const char *id, json_object **ret) {
        return call_on(e, "GET", "networks", id, "", 0, ret);
}

int engine_network_list(Engine *e, json_object **ret) {
        return call_get(e, "/networks", ret);
}

int engine_container_list(Engine *e, const char *label, bool all, json_object **ret) {
        _cleanup_free_ char *q = NULL;
        int k;

        assert(e);
        if (strprintf(&q, "/containers/json") < 0)
                return -ENOMEM;
        if (all && (k = query_add(&q, "all", "1")) < 0)
                return k;
        if (label) {
                _cleanup_(json_object_putp) json_object *f = json_object_new_object();
                json_object *l = json_object_new_array();
                if (!f || !l || json_object_object_add(f, "label", l) < 0) {
                        json_object_put(l);
                        return -ENOMEM;
                }
                if (json_object_array_add(l, json_object_new_string(label)) < 0)
                        return -ENOMEM;
                k = query_add(&q, "filters", json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN));
                if (k < 0)
                        return k;
        }
        Request r = REQUEST("GET", q);
        return call_json(e, &r, ret);
}

int engine_container_stop(Engine *e, const char *id, unsigned timeout_sec) {
        char rest[32];

        snprintf(rest, sizeof rest, "/stop?t=%u", timeout_sec);
        /* The engine waits timeout_sec before it kills. */
        return call_on(e, "POST", "containers", id, rest, timeout_sec, NULL);
}

int engine_container_kill(Engine *e, const char *id, const char *signal) {
        char rest[64];

        assert(e);
        if (signal) {
                for (const char *s = signal; *s; s++)
                        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '+')) {
                                engine_set_error(e, "invalid signal \"%s\"", signal);
                                return -EINVAL;
                        }
                if (snprintf(rest, sizeof rest, "/kill?signal=%s", signal) >= (int) sizeof rest) {
                        engine_set_error(e, "invalid signal \"%s\"", signal);
                        return -EINVAL;
                }
        } else
                strcpy(rest, "/kill");
        return call_on(e, "POST", "containers", id, rest, 0, NULL);
}

int engine_container_remove(Engine *e, const char *id, bool force) {
        /* v=1: anonymous volumes go with the container instead of piling up. */
        return call_on(e, "DELETE", "containers", id, force ? "?force=1&v=1" : "?force=0&v=1", 0, NULL);
}

int engine_container_archive_put(Engine *e, const char *id, const char *dir, const void *tar, size_t size) {
        _cleanup_free_ char *q = NULL;
        int k;

        assert(e);
        assert(tar || size == 0);
        k = check_container(e, id);
        if (k < 0)
                return k;
        if (isempty(dir) || dir[0] != '/') {
                engine_set_error(e, "archive destination \"%s\" is not an absolute path", strempty(dir));
                return -EINVAL;
        }
        if (strprintf(&q, "/containers/%s/archive", id) < 0)
                return -ENOMEM;
        k = query_add(&q, "path", dir);
        if (k < 0)
                return k;
        /* A second per 8 MiB on top of the usual timeout: large copies are slow but not hung. */
        Request r = REQUEST("PUT", q,
                            .content_type = "application/x-tar",
                            .body = tar ?: "",
                            .body_size = size,
                            .extra_timeout_sec = (unsigned) (size >> 23));
        return call(e, &r);
}

int engine_exec_create(Engine *e, const char *id, char * const *argv, char * const *env, const char *user,
                       char **ret_exec_id) {
        EngineExecSpec spec = { .argv = argv, .env = env, .user = user };
        return engine_exec_create_spec(e, id, &spec, ret_exec_id);
}

int engine_exec_create_spec(Engine *e, const char *id, const EngineExecSpec *spec, char **ret_exec_id) {
        char * const *argv = spec->argv, * const *env = spec->env;
        const char *user = spec->user;
        _cleanup_(json_object_putp) json_object *body = NULL;
        _cleanup_free_ char *p = NULL;
        const char *s;
        int k;

        assert(e);
        k = check_container(e, id);
        if (k < 0)
                return k;
        if (strv_length(argv) == 0) {
                engine_set_error(e, "exec in %s: no command given", id);
                return -EINVAL;
        }

        body = json_object_new_object();
        if (!body ||
            json_add(body, "AttachStdin", json_object_new_boolean(spec->attach_stdin)) < 0 ||
            json_add(body, "AttachStdout", json_object_new_boolean(true)) < 0 ||
            json_add(body, "AttachStderr", json_object_new_boolean(true)) < 0 ||
            json_add(body, "Tty", json_object_new_boolean(spec->tty)) < 0)
                return -ENOMEM;
        if (spec->workdir && json_add(body, "WorkingDir", json_object_new_string(spec->workdir)) < 0)
                return -ENOMEM;
        if ((k = json_add(body, "Cmd", json_strings_new((const char * const *) argv, SIZE_MAX))) < 0)
                return k;
        if (env && (k = json_add(body, "Env", json_strings_new((const char * const *) env, SIZE_MAX))) < 0)
                return k;
        if (user && json_add(body, "User", json_object_new_string(user)) < 0)
                return -ENOMEM;
        s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
        if (!s)
                return -ENOMEM;
        if (strprintf(&p, "/containers/%s/exec", id) < 0)
                return -ENOMEM;

        Request r = REQUEST("POST", p, .content_type = "application/json", .body = s, .body_size = strlen(s));
        return call_for_id(e, &r, ret_exec_id);
}

int engine_exec_start(Engine *e, const char *exec_id, EngineStreamFn fn, void *userdata, int *ret_exit_code) {
        static const char body[] = "{\"Detach\":false,\"Tty\":false}";
        _cleanup_free_ char *p = NULL, *pi = NULL;
        int k;

        assert(e);
        assert(fn);
        k = check_container(e, exec_id);
        if (k < 0)
                return k;
        if (strprintf(&p, "/exec/%s/start", exec_id) < 0 || strprintf(&pi, "/exec/%s/json", exec_id) < 0)
                return -ENOMEM;

        /* Docker hijacks the connection: a 200 with a raw body that ends when the connection closes. libcurl
         * reads it like any body without a length. Podman answers the same way. */
        Request r = REQUEST("POST", p,
                            .stream = true,
                            .content_type = "application/json",
                            .body = body,
                            .body_size = strlen(body),
                            .sink = SINK_FRAMES,
                            .stream_fn = fn,
                            .userdata = userdata);
        k = call(e, &r);
        if (k < 0)
                return k;

        /* The output can end a moment before the engine has recorded the exit. */
        for (unsigned i = 0;; i++) {
                _cleanup_(json_object_putp) json_object *j = NULL;
                json_object *running, *code;

                Request ri = REQUEST("GET", pi);
                k = call_json(e, &ri, &j);
                if (k < 0)
                        return k;
                if (json_object_object_get_ex(j, "Running", &running) && json_object_get_boolean(running)) {
                        if (i >= ENGINE_EXEC_SETTLE_TRIES) {
                                engine_set_error(e, "GET /exec/%s/json: still running after its output ended",
                                                 exec_id);
                                return -ETIMEDOUT;
                        }
                        (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
                        continue;
                }
                if (!json_object_object_get_ex(j, "ExitCode", &code) || !json_object_is_type(code, json_type_int)) {
                        engine_set_error(e, "GET /exec/%s/json: the engine's answer has no \"ExitCode\"", exec_id);
                        return -EBADMSG;
                }
                if (ret_exit_code)
                        *ret_exit_code = json_object_get_int(code);
                return 0;
        }
}

int engine_events(Engine *e, json_object *filters, EngineJsonFn fn, void *userdata) {
        _cleanup_free_ char *q = NULL;
        int k;

        assert(e);
        assert(fn);
        if (strprintf(&q, "/events") < 0)
                return -ENOMEM;
        if (filters) {
                k = query_add(&q, "filters", json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN));
                if (k < 0)
                        return k;
        }
        Request r = REQUEST("GET", q, .stream = true, .sink = SINK_JSON_SEQ, .json_fn = fn, .userdata = userdata);
        return call(e, &r);
}

int engine_exec_inspect(Engine *e, const char *exec_id, json_object **ret) {
        return call_on(e, "GET", "exec", exec_id, "/json", 0, ret);
}

int engine_exec_resize(Engine *e, const char *exec_id, unsigned rows, unsigned cols) {
        char rest[64];

        snprintf(rest, sizeof rest, "/resize?h=%u&w=%u", rows, cols);
        return call_on(e, "POST", "exec", exec_id, rest, 0, NULL);
}

/* The one place loop speaks HTTP by hand: an attached exec turns the connection into a raw two-way stream
 * (Docker answers 101 Switching Protocols to "Upgrade: tcp", Podman 200), which libcurl cannot hand over.
 * So: our own AF_UNIX connection, one request, the response head read up to its blank line. */
int engine_exec_attach(Engine *e, const char *exec_id, bool tty, int *ret_fd, char **ret_pending,
                       size_t *ret_pending_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *req = NULL, *head = NULL;
        size_t n = 0;
        const char *body = tty ? "{\"Detach\":false,\"Tty\":true}" : "{\"Detach\":false,\"Tty\":false}";
        HttpResponseHead h;
        int k;

        assert(e);
        k = check_container(e, exec_id);
        if (k < 0)
                return k;
        fd = unix_connect(e->socket_path, 0, 0);
        if (fd < 0) {
                k = fd;
                engine_set_error(e, "%s: %s", e->socket_path, strerror(-k));
                return k;
        }
        if (asprintf(&req, "POST /%s/exec/%s/start HTTP/1.1\r\nHost: localhost\r\nUser-Agent: loop\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: Upgrade\r\n"
                     "Upgrade: tcp\r\n\r\n%s", ENGINE_API_VERSION, exec_id, strlen(body), body) < 0)
                return -ENOMEM;
        k = loop_write(fd, req, strlen(req));
        if (k < 0) {
                engine_set_error(e, "POST /exec/%s/start: %s", exec_id, strerror(-k));
                return k;
        }

        head = malloc(ENGINE_HIJACK_HEAD_MAX + 1);
        if (!head)
                return -ENOMEM;
        for (;;) {
                ssize_t got = read(fd, head + n, ENGINE_HIJACK_HEAD_MAX - n);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0) {
                        /* before engine_set_error(), whose allocations may change errno */
                        k = got < 0 ? -errno : -ECONNRESET;
                        engine_set_error(e, "POST /exec/%s/start: the engine closed the connection", exec_id);
                        return k;
                }
                n += (size_t) got;
                k = http_response_head_parse(head, n, ENGINE_HIJACK_HEAD_MAX, &h);
                if (k == -E2BIG) {
                        engine_set_error(e, "POST /exec/%s/start: response head too long", exec_id);
                        return -EBADMSG;
                }
                if (k < 0) {
                        engine_set_error(e, "POST /exec/%s/start: not an HTTP response", exec_id);
                        return -EBADMSG;
                }
                if (k > 0)
                        break;
        }
        if (h.status != 101 && h.status != 200) {
                engine_set_error(e, "POST /exec/%s/start: %.*s", exec_id,
                                 (int) (http_find_crlf(head, h.head_size) - head), head);
                return h.status == 404 ? -ENOENT : -EIO;
        }

        if (ret_pending) {
                size_t rest = n - h.head_size;
                char *p = malloc(rest + 1);
                if (!p)
                        return -ENOMEM;
                memcpy(p, head + h.head_size, rest);
                *ret_pending = p;
                *ret_pending_size = rest;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}
