/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the gateway's upstream URLs (egress.api_upstream, the host's proxy, which may come
 * from the service's environment), parsed through libcurl's CURLU. A URL taken has a normalised host, a
 * port, a base path without a trailing slash and, with userinfo, a Basic credential. */

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress-upstream.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        EgressUpstream u = {};
        char *url;

        if (size > 4096)
                return 0;
        url = strndup((const char *) data, size);
        if (!url)
                return 0;
        if (egress_upstream_parse(url, &u) >= 0) {
                size_t l = strlen(u.base_path);

                assert(u.host && u.host[0] && u.port > 0);
                assert(l == 0 || u.base_path[0] == '/');
                assert(!u.authorization || startswith(u.authorization, "Basic "));
                assert(!strchr(u.host, '[') && !strchr(u.host, '@') && !strchr(u.host, '/'));
                egress_upstream_done(&u);
        } else
                assert(!u.host && !u.base_path && !u.authorization);
        free(url);
        return 0;
}
