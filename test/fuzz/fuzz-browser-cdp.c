/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the CDP client's message reader (cdp.c), which reads what Chrome writes. The input
 * is the stream; it is fed whole, then again in chunks whose sizes the first bytes choose, and both must
 * give the same events: the NUL framing does not depend on how reads cut the stream. */

#include <stdint.h>
#include <stdio.h>

#include "cdp.h"

#define FUZZ_EVENTS_LOG_MAX (4U * 1024U * 1024U)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Log {
        char *buf;
        size_t len;
        FILE *f;
} Log;

static void record(const char *session_id, const char *method, json_object *params, void *userdata) {
        Log *l = userdata;

        if (!method || !params || !json_object_is_type(params, json_type_object))
                abort();
        if (strlen(method) > CDP_METHOD_MAX || (session_id && strlen(session_id) > CDP_SESSION_ID_MAX))
                abort();
        if (ftell(l->f) < (long) FUZZ_EVENTS_LOG_MAX)
                fprintf(l->f, "%s|%s|%s\n", session_id ?: "-", method,
                        json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN));
}

static int run(const uint8_t *data, size_t size, const uint8_t *sizes, size_t n_sizes, Log *ret) {
        _cleanup_(cdp_freep) Cdp *c = NULL;
        size_t off = 0;
        int r;

        *ret = (Log) {};
        ret->f = open_memstream(&ret->buf, &ret->len);
        if (!ret->f)
                return -ENOMEM;
        r = cdp_new(0, 1, &c);     /* the fds are not used: bytes come by cdp_feed() */
        if (r < 0)
                return r;
        cdp_set_event_handler(c, record, ret);
        for (size_t i = 0; off < size; i++) {
                size_t k = n_sizes > 0 && sizes[i % n_sizes] ? MIN((size_t) sizes[i % n_sizes], size - off) : size - off;
                r = cdp_feed(c, data + off, k);
                if (r < 0)
                        return r;
                off += k;
        }
        fprintf(ret->f, "dropped %llu\n", (unsigned long long) cdp_messages_dropped(c));
        return fflush(ret->f) == 0 ? 0 : -ENOMEM;
}

static void log_done(Log *l) {
        if (l->f)
                fclose(l->f);
        free(l->buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t n_sizes = size > 0 ? MIN((size_t) (data[0] & 7), size - 1) : 0;
        Log whole, chunked;
        int a, b;

        if (size == 0)
                return 0;
        a = run(data + 1 + n_sizes, size - 1 - n_sizes, NULL, 0, &whole);
        b = run(data + 1 + n_sizes, size - 1 - n_sizes, data + 1, n_sizes, &chunked);
        if (a >= 0 && b >= 0 && (whole.len != chunked.len || memcmp(whole.buf, chunked.buf, whole.len) != 0))
                abort();
        if ((a < 0 && a != -ENOMEM) || (b < 0 && b != -ENOMEM))
                abort();
        log_done(&whole);
        log_done(&chunked);
        return 0;
}
