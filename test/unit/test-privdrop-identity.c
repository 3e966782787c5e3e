/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The identity `loop privdrop` and `loop syscallwrap` drop to, as their --uid, --gid and --groups options
 * give it (privdrop_identity_set()). Dropping itself needs root and runs in test-privdrop.sh. */

#include <errno.h>

#include "macro.h"
#include "privdrop.h"
#include "tap.h"

int main(void) {
        _cleanup_(privdrop_identity_done) PrivdropIdentity id = {};

        ok(!id.have_uid && !id.have_gid && id.n_groups == 0, "a new identity has nothing set");
        is_int(privdrop_identity_set(&id, "uid", "1000"), 0, "--uid 1000 is taken");
        ok(id.have_uid && id.uid == 1000 && !id.have_gid, "as the uid, and only it");
        is_int(privdrop_identity_set(&id, "gid", "0"), 0, "--gid 0 is taken (refusing root is the verb's choice)");
        ok(id.have_gid && id.gid == 0, "as the gid");
        is_int(privdrop_identity_set(&id, "uid", "4294967295"), -EINVAL, "(uid_t) -1, \"unchanged\" to setuid(), is refused");
        is_int(privdrop_identity_set(&id, "uid", "+5"), -EINVAL, "a signed id is refused");
        is_int(privdrop_identity_set(&id, "gid", ""), -EINVAL, "an empty id is refused");
        is_int(privdrop_identity_set(&id, "uid", "12x"), -EINVAL, "trailing garbage is refused");
        ok(id.uid == 1000 && id.gid == 0, "a refused value leaves the earlier one");

        is_int(privdrop_identity_set(&id, "groups", "5,27"), 0, "--groups 5,27 is taken");
        ok(id.n_groups == 2 && id.groups[0] == 5 && id.groups[1] == 27, "as two groups in order");
        is_int(privdrop_identity_set(&id, "groups", "44"), 0, "a later --groups");
        ok(id.n_groups == 1 && id.groups[0] == 44, "replaces the earlier one");
        is_int(privdrop_identity_set(&id, "groups", ""), 0, "--groups \"\" is no groups");
        ok(id.n_groups == 0, "and has none");
        is_int(privdrop_identity_set(&id, "groups", "1,,2"), -EINVAL, "an empty field is a typo, refused");
        is_int(privdrop_identity_set(&id, "groups", "1,"), -EINVAL, "a trailing comma is refused");
        is_int(privdrop_identity_set(&id, "groups", "1,x"), -EINVAL, "a group that is no number is refused");
        {
                _cleanup_(privdrop_identity_done) PrivdropIdentity r = {};
                ok(!privdrop_identity_root(&r), "an empty identity keeps no root");
                (void) privdrop_identity_set(&r, "uid", "1000");
                (void) privdrop_identity_set(&r, "gid", "1000");
                (void) privdrop_identity_set(&r, "groups", "5,27");
                ok(!privdrop_identity_root(&r), "uid, gid and groups other than 0 keep no root");
                (void) privdrop_identity_set(&r, "groups", "5,0");
                is_str(privdrop_identity_root(&r), "group", "a supplementary group 0 is root");
                (void) privdrop_identity_set(&r, "gid", "0");
                is_str(privdrop_identity_root(&r), "gid", "gid 0 is root");
                (void) privdrop_identity_set(&r, "uid", "0");
                is_str(privdrop_identity_root(&r), "uid", "uid 0 is root, named first");
        }
        return done_testing();
}
