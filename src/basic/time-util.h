/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC UINT64_C(1000000)

/* The time of clock in microseconds (CLOCK_MONOTONIC for durations and deadlines, CLOCK_REALTIME for
 * timestamps). */
uint64_t clock_usec(clockid_t clock);
