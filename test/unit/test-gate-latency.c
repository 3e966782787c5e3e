/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The supervisor's latency histograms (the summary line `loop syscallwrap` logs): percentiles without a
 * ceiling, within 0.4% of the exact value whatever the latency. */

#include <stdlib.h>

#include "gate-supervisor.h"
#include "tap.h"

static uint64_t *histogram(void) {
        uint64_t *h = calloc(GATE_LATENCY_BUCKETS, sizeof(uint64_t));

        if (!h)
                abort();
        return h;
}

static void add(uint64_t *h, uint64_t ns, uint64_t count) {
        h[gate_latency_bucket(ns)] += count;
}

static bool close_to(uint64_t got, uint64_t want) {
        uint64_t d = got > want ? got - want : want - got;

        return d * 256 <= want;         /* 1/256: half of a bucket's 1/128 */
}

static void test_buckets(void) {
        bool monotonic = true, within = true, in_range = true;
        size_t prev = 0;

        for (uint64_t ns = 1; ns < (UINT64_C(1) << 40); ns += ns / 97 + 1) {
                size_t b = gate_latency_bucket(ns);

                if (b < prev)
                        monotonic = false;
                if (b >= GATE_LATENCY_BUCKETS)
                        in_range = false;
                else if (!close_to(gate_latency_bucket_ns(b), ns))
                        within = false;
                prev = b;
        }
        ok(monotonic, "a longer latency never falls in an earlier bucket");
        ok(within, "a bucket's value is within 0.4%% of every latency it holds, from 1 ns to 18 minutes");
        ok(in_range && gate_latency_bucket(UINT64_MAX) == GATE_LATENCY_BUCKETS - 1,
           "the largest latency has a bucket of its own, the last: there is no ceiling to saturate");
        ok(gate_latency_bucket_ns(gate_latency_bucket(255)) == 255, "below 256 ns every nanosecond has a bucket");
}

static void test_percentiles(void) {
        uint64_t *h = histogram();

        is_int((int) gate_stats_permille_ns(h, 500), 0, "an empty histogram says 0");

        /* The run that printed "median 200.0 us" for execs taking about 326 us. */
        add(h, 326000, 900);
        add(h, 412000, 100);
        ok(close_to(gate_stats_permille_ns(h, 500), 326000), "a median of 326 us is reported as such, not cut at 200 us");
        ok(close_to(gate_stats_permille_ns(h, 900), 326000), "the 90th percentile is the 900th of 1000 calls");
        ok(close_to(gate_stats_permille_ns(h, 901), 412000), "and the 901st per mille is the slower kind");
        free(h);

        h = histogram();
        add(h, 8500, 9);
        add(h, UINT64_C(3000000000), 1);
        ok(close_to(gate_stats_permille_ns(h, 900), 8500), "nine fast calls and a slow one: the 90th percentile is fast");
        ok(close_to(gate_stats_permille_ns(h, 1000), UINT64_C(3000000000)), "and the slowest, 3 s, is reported as 3 s");
        free(h);
}

int main(void) {
        test_buckets();
        test_percentiles();
        return done_testing();
}
