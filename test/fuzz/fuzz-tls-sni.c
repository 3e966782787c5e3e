/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the ClientHello server-name reader that checks tunnels against their CONNECT
 * target. */

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls-sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *buf = malloc(size ?: 1);
        char *sni = NULL;
        int q;

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        q = tls_client_hello_sni(buf, size, &sni);
        assert(q == 1 ? sni && strlen(sni) <= 255 : !sni);
        assert(q == 1 || q == 0 || q == -EAGAIN || q == -EBADMSG || q == -ENOMEM);
        free(sni);
        free(buf);
        return 0;
}
