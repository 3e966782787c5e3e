/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "secret-buffer.h"
#include "tap.h"

int main(void) {
        SecretBuffer b = {};
        char big[1000];

        is_int(secret_buffer_append_str(&b, "GET / HTTP/1.1\r\n"), 0, "secret_buffer_append_str() into an empty buffer");
        ok(b.size == 16 && memcmp(b.data, "GET / HTTP/1.1\r\n", 16) == 0, "holds the bytes, counted");
        is_int(secret_buffer_append(&b, "", 0), 0, "appending nothing");
        is_int((int) b.size, 16, "changes nothing");
        memset(big, 'x', sizeof big);
        is_int(secret_buffer_append(&b, big, sizeof big), 0, "an append past the allocation grows the buffer");
        ok(b.size == 1016 && b.allocated >= 1016 && memcmp(b.data, "GET / HTTP/1.1\r\n", 16) == 0 &&
           memcmp(b.data + 16, big, sizeof big) == 0, "keeping what it held, in order");
        is_int(secret_buffer_append(&b, "", 1), 0, "a NUL can be appended");
        is_int((int) strlen(b.data), 1016, "and terminates the text");
        is_int(secret_buffer_append(&b, big, (size_t) -1), -ENOMEM, "a size that would overflow is -ENOMEM");
        is_int((int) b.size, 1017, "and leaves the buffer as it was");
        secret_buffer_wipe(&b);
        ok(!b.data && b.size == 0 && b.allocated == 0, "secret_buffer_wipe() empties the buffer");
        secret_buffer_wipe(&b);
        ok(!b.data, "and may be called again");
        return done_testing();
}
