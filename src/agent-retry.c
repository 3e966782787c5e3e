/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Being written: see the header. */

#include "macro.h"
