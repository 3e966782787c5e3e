/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the agent's stdout (stream-json.c), which the container writes. The input is the
 * stream; it is fed whole, then again in chunks whose sizes the first bytes choose, and both must give
 * the same events and the same result ("whatever the chunking, the same lines give the same events"). */

#include <stdint.h>
#include <stdio.h>

#include "stream-json.h"

#define FUZZ_EVENTS_LOG_MAX (4U * 1024U * 1024U)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Log {
        char *buf;
        size_t len;
        FILE *f;
} Log;

static int record(const StreamEvent *ev, void *userdata) {
        Log *l = userdata;

        if ((int) ev->type < 0 || ev->type >= _STREAM_EVENT_TYPE_MAX)
                abort();
        if (ev->tool_summary && strlen(ev->tool_summary) > STREAM_TOOL_SUMMARY_MAX)
                abort();
        if (ev->type == STREAM_EVENT_TOOL_RESULT && ev->text && strlen(ev->text) > STREAM_TOOL_RESULT_MAX)
                abort();
        if (ftell(l->f) < (long) FUZZ_EVENTS_LOG_MAX)
                fprintf(l->f, "%d|%s|%s|%s|%s|%s|%d|%llu|%llu\n", (int) ev->type, strna(ev->text),
                        strna(ev->tool_name), strna(ev->tool_summary), strna(ev->subtype), strna(ev->session_id),
                        ev->is_error, (unsigned long long) ev->duration_ms, (unsigned long long) ev->num_turns);
        return 0;
}

/* Feeds data in chunks of the sizes in sizes[] (cycled; 0 means whole), records events and the result. */
static int run(const uint8_t *data, size_t size, const uint8_t *sizes, size_t n_sizes, Log *ret) {
        _cleanup_(stream_parser_freep) StreamParser *p = NULL;
        const AgentResult *res;
        size_t off = 0;
        int r;

        *ret = (Log) {};
        ret->f = open_memstream(&ret->buf, &ret->len);
        if (!ret->f)
                return -ENOMEM;
        r = stream_parser_new(record, ret, &p);
        if (r < 0)
                return r;
        for (size_t i = 0; off < size; i++) {
                size_t k = n_sizes > 0 && sizes[i % n_sizes] ? MIN((size_t) sizes[i % n_sizes], size - off) : size - off;
                r = stream_parser_feed(p, (const char *) data + off, k);
                if (r < 0)
                        return r;
                off += k;
        }
        r = stream_parser_finish(p);
        if (r < 0)
                return r;
        res = stream_parser_result(p);
        if (res->session_id && (strlen(res->session_id) == 0 || res->session_id[0] == '-'))
                abort();
        fprintf(ret->f, "result %d|%s|%s|%d|%llu|%llu|%llu\n", res->have_result, strna(res->result),
                strna(res->session_id), res->is_error, (unsigned long long) res->duration_ms,
                (unsigned long long) res->num_turns, (unsigned long long) res->lines_skipped);
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
