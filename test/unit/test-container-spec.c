/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>

int main(void) {
        printf("1..0 # SKIP being written\n");
        return 0;
}
