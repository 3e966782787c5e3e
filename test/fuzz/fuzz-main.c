/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A driver for the fuzz targets when the compiler has no libFuzzer (gcc): runs the target over every
 * file of the seed corpus given as arguments, then over FUZZ_MAIN_RUNS deterministic mutations of
 * them (byte flips, truncations, duplications), so that CI exercises the targets in a bounded time.
 * With clang and -Dfuzz=true the real libFuzzer main is linked instead. */

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dirent-util.h"
#include "io-util.h"
#include "macro.h"

#define FUZZ_MAIN_RUNS 20000U
#define FUZZ_INPUT_MAX (256U * 1024U)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t state = 0x9e3779b97f4a7c15ULL;
static uint64_t next_random(void) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
}

int main(int argc, char *argv[]) {
        char **inputs = NULL;
        size_t *sizes = NULL, n = 0;

        for (int i = 1; i < argc; i++) {
                _cleanup_closedir_ DIR *d = opendir(argv[i]);
                struct dirent *de;

                if (!d) {
                        fprintf(stderr, "Cannot open %s\n", argv[i]);
                        return EXIT_FAILURE;
                }
                while ((de = readdir(d))) {
                        _cleanup_free_ char *path = NULL;
                        char *text;
                        size_t size;

                        if (de->d_name[0] == '.' || asprintf(&path, "%s/%s", argv[i], de->d_name) < 0)
                                continue;
                        if (read_full_file_at(AT_FDCWD, path, FUZZ_INPUT_MAX, false, &text, &size) < 0)
                                continue;
                        inputs = realloc(inputs, (n + 1) * sizeof(char *));
                        sizes = realloc(sizes, (n + 1) * sizeof(size_t));
                        if (!inputs || !sizes)
                                return EXIT_FAILURE;
                        inputs[n] = text;
                        sizes[n++] = size;
                        LLVMFuzzerTestOneInput((const uint8_t *) text, size);
                }
        }
        if (n == 0) {
                fprintf(stderr, "No seed inputs.\n");
                return EXIT_FAILURE;
        }

        /* A target whose every input costs much (fuzz-config loads a config directory twice) runs fewer. */
        unsigned runs = FUZZ_MAIN_RUNS;
        const char *e = getenv("LOOP_FUZZ_RUNS");
        if (e) {
                char *end = NULL;
                unsigned long v = strtoul(e, &end, 10);
                if (*e >= '0' && *e <= '9' && end && *end == '\0' && v > 0 && v <= FUZZ_MAIN_RUNS)
                        runs = (unsigned) v;
        }
        for (unsigned run = 0; run < runs; run++) {
                size_t k = next_random() % n, size = sizes[k];
                uint8_t *buf = malloc(2 * size + 128);

                if (!buf)
                        return EXIT_FAILURE;
                memcpy(buf, inputs[k], size);
                for (unsigned m = 0, muts = 1 + next_random() % 4; m < muts && size > 0; m++)
                        switch (next_random() % 4) {
                        case 0:
                                buf[next_random() % size] = (uint8_t) next_random();
                                break;
                        case 1:
                                size = next_random() % size;
                                break;
                        case 2: {
                                size_t at = next_random() % size, len = MIN(size - at, (size_t) (next_random() % 16));
                                memmove(buf + at + len, buf + at, size - at);
                                size += len;
                                break;
                        }
                        default:
                                buf[next_random() % size] = "\r\n:\"{}[],0\\%/"[next_random() % 13];
                        }
                LLVMFuzzerTestOneInput(buf, size);
                free(buf);
        }
        printf("%zu seeds and %u mutations ran.\n", n, runs);
        for (size_t i = 0; i < n; i++)
                free(inputs[i]);
        free(inputs);
        free(sizes);            /* so that an ASan build (-Db_sanitize=address) reports the targets' leaks only */
        return EXIT_SUCCESS;
}
