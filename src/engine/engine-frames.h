/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The output of a container or an exec as the engines send it: with Tty=false multiplexed in frames of
 * [stream, 0, 0, 0, u32 big-endian length] and the payload; with Tty=true raw. Fed in pieces cut anywhere,
 * headers included. Stream 0 (stdin echo) counts as stdout, 3 (the engine's own error text, newer
 * engines) as stderr. In ENGINE_FRAMES_UNKNOWN mode the first 8 bytes tell which it is: a raw stream
 * would have to start with 0-3 and three NULs to be taken for a frame header. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

typedef enum EngineFrameMode {
        ENGINE_FRAMES_UNKNOWN,
        ENGINE_FRAMES_MULTIPLEXED,
        ENGINE_FRAMES_RAW,
} EngineFrameMode;

typedef struct EngineFrames {
        EngineFrameMode mode;
        EngineStreamFn fn;              /* gets the payload, stream 1 or 2 */
        void *userdata;
        uint8_t head[8];
        size_t head_len;
        uint32_t left;                  /* payload bytes of the current frame still to come */
        int stream;
} EngineFrames;

/* 0, fn's error (< 0), or -EBADMSG for a frame header that is not one. */
int engine_frames_feed(EngineFrames *f, const char *data, size_t size);
/* At the end of the stream: whether it ended inside a multiplexed frame (the engine stopped?). */
bool engine_frames_truncated(const EngineFrames *f);
/* At the end of the stream: delivers what is held back (fewer than 8 bytes in all: a raw stream); 0 or
 * fn's error. */
int engine_frames_finish(EngineFrames *f);
