/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "engine-frames.h"
#include "macro.h"

static int deliver(EngineFrames *f, int stream, const char *data, size_t size) {
        int k;

        if (size == 0)
                return 0;
        k = f->fn(stream, data, size, f->userdata);
        return k < 0 ? k : 0;
}

static bool head_is_frame_header(const uint8_t head[static 8]) {
        return head[0] <= 3 && head[1] == 0 && head[2] == 0 && head[3] == 0;
}

/* Takes bytes of a header; true once it is whole. */
static bool head_fill(EngineFrames *f, const char **data, size_t *size) {
        size_t take = MIN(*size, sizeof f->head - f->head_len);

        memcpy(f->head + f->head_len, *data, take);
        f->head_len += take;
        *data += take;
        *size -= take;
        return f->head_len == sizeof f->head;
}

int engine_frames_feed(EngineFrames *f, const char *data, size_t size) {
        int k;

        if (f->mode == ENGINE_FRAMES_UNKNOWN) {
                if (!head_fill(f, &data, &size))
                        return 0;
                if (!head_is_frame_header(f->head)) {
                        f->mode = ENGINE_FRAMES_RAW;
                        f->head_len = 0;
                        k = deliver(f, 1, (const char *) f->head, sizeof f->head);
                        if (k < 0)
                                return k;
                } else
                        f->mode = ENGINE_FRAMES_MULTIPLEXED;    /* the header is taken below */
        }

        if (f->mode == ENGINE_FRAMES_RAW)
                return deliver(f, 1, data, size);

        for (;;) {
                if (f->left > 0) {
                        size_t n = MIN(size, (size_t) f->left);
                        k = deliver(f, f->stream, data, n);
                        if (k < 0)
                                return k;
                        data += n;
                        size -= n;
                        f->left -= (uint32_t) n;
                        if (size == 0)
                                return 0;
                        continue;
                }
                if (f->head_len < sizeof f->head && !head_fill(f, &data, &size))
                        return 0;
                f->head_len = 0;
                if (!head_is_frame_header(f->head))
                        return -EBADMSG;
                f->stream = f->head[0] == 2 || f->head[0] == 3 ? 2 : 1;
                f->left = (uint32_t) f->head[4] << 24 | (uint32_t) f->head[5] << 16 |
                          (uint32_t) f->head[6] << 8 | (uint32_t) f->head[7];
                if (size == 0)
                        return 0;
        }
}

bool engine_frames_truncated(const EngineFrames *f) {
        return f->mode == ENGINE_FRAMES_MULTIPLEXED && (f->head_len > 0 || f->left > 0);
}

int engine_frames_finish(EngineFrames *f) {
        int k = 0;

        if (f->mode == ENGINE_FRAMES_UNKNOWN && f->head_len > 0)
                k = deliver(f, 1, (const char *) f->head, f->head_len);
        f->head_len = 0;
        return k;
}
