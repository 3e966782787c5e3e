/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The engines' output streams, multiplexed or raw, fed in pieces cut at every place. */

#include "engine-frames.h"
#include "macro.h"
#include "tap.h"

typedef struct Out {
        char text[2][256];
        size_t size[2];
        int fail;
} Out;

static int collect(int stream, const char *data, size_t size, void *userdata) {
        Out *o = userdata;
        int i = stream == 2;

        if (o->fail)
                return o->fail;
        if (stream != 1 && stream != 2)
                return -EINVAL;
        if (o->size[i] + size >= sizeof o->text[i])
                return -E2BIG;
        memcpy(o->text[i] + o->size[i], data, size);
        o->size[i] += size;
        return 0;
}

/* Feeds s[0..n) cut at cut; returns the first error, else finish()'s. */
static int feed_cut(EngineFrameMode mode, const char *s, size_t n, size_t cut, Out *o, bool *ret_truncated) {
        EngineFrames f = { .mode = mode, .fn = collect, .userdata = o };
        int k;

        *o = (Out) {};
        k = engine_frames_feed(&f, s, cut);
        if (k >= 0)
                k = engine_frames_feed(&f, s + cut, n - cut);
        *ret_truncated = engine_frames_truncated(&f);
        if (k >= 0)
                k = engine_frames_finish(&f);
        return k;
}

#define FRAMES "\1\0\0\0\0\0\0\5hello\2\0\0\0\0\0\0\4oops\0\0\0\0\0\0\0\1!\3\0\0\0\0\0\0\3err\1\0\0\0\0\0\0\0"

int main(void) {
        const size_t n = sizeof(FRAMES) - 1;
        bool all = true, truncated;
        Out o;

        for (size_t cut = 0; cut <= n; cut++) {
                int k = feed_cut(ENGINE_FRAMES_UNKNOWN, FRAMES, n, cut, &o, &truncated);
                all = all && k == 0 && !truncated && o.size[0] == 6 && memcmp(o.text[0], "hello!", 6) == 0 &&
                        o.size[1] == 7 && memcmp(o.text[1], "oopserr", 7) == 0;
        }
        ok(all, "a multiplexed stream cut anywhere is told apart and split: 1 and 0 to stdout, 2 and 3 to stderr");

        all = true;
        for (size_t cut = 0; cut <= n; cut++) {
                int k = feed_cut(ENGINE_FRAMES_MULTIPLEXED, FRAMES, n, cut, &o, &truncated);
                all = all && k == 0 && o.size[0] == 6 && o.size[1] == 7;
        }
        ok(all, "the same when the caller knows it is multiplexed");

        all = true;
        for (size_t cut = 0; cut <= 11; cut++) {
                int k = feed_cut(ENGINE_FRAMES_UNKNOWN, "hello world", 11, cut, &o, &truncated);
                all = all && k == 0 && o.size[0] == 11 && memcmp(o.text[0], "hello world", 11) == 0 && o.size[1] == 0;
        }
        ok(all, "a raw stream (a TTY's) goes to stdout as it is, cut anywhere");

        ok(feed_cut(ENGINE_FRAMES_UNKNOWN, "abc", 3, 1, &o, &truncated) == 0 && o.size[0] == 3 &&
           memcmp(o.text[0], "abc", 3) == 0, "fewer than 8 bytes in all are a raw stream, delivered at the end");
        ok(feed_cut(ENGINE_FRAMES_UNKNOWN, "\1\0\0\0\0\0\0\5hel", 11, 4, &o, &truncated) == 0 && truncated,
           "a stream that ends inside a frame is known as truncated");
        ok(feed_cut(ENGINE_FRAMES_MULTIPLEXED, "\1\0\0\0\0\0\0\5hel", 6, 4, &o, &truncated) == 0 && truncated,
           "as is a multiplexed one that ends inside a frame header");
        is_int(feed_cut(ENGINE_FRAMES_MULTIPLEXED, "\1\0\0\0\0\0\0\1x\7\0\0\0\0\0\0\1y", 18, 3, &o, &truncated), -EBADMSG,
               "a frame header with stream 7 is refused");
        is_int(feed_cut(ENGINE_FRAMES_MULTIPLEXED, "\1\0\1\0\0\0\0\1x", 9, 3, &o, &truncated), -EBADMSG,
               "a frame header whose padding is not zero is refused");
        {
                Out f = { .fail = -ECANCELED };
                EngineFrames fr = { .mode = ENGINE_FRAMES_UNKNOWN, .fn = collect, .userdata = &f };
                is_int(engine_frames_feed(&fr, FRAMES, n), -ECANCELED, "the callback's error ends the feed");
        }
        return done_testing();
}
