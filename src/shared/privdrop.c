/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Becoming an unprivileged user for good, shared by `loop privdrop` and the child of `loop syscallwrap`. */

#include <assert.h>
#include <grp.h>
#include <limits.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "log.h"
#include "privdrop.h"

static void cap_freep(cap_t *c) {
        if (*c)
                (void) cap_free(*c);
}
#define _cleanup_cap_free_ _cleanup_(cap_freep)

int privdrop_parse_id(const char *s, uint32_t *ret) {
        unsigned long long v;
        char *end;

        if (isempty(s) || !strchr("0123456789", s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0' || v >= UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

int privdrop_parse_groups(const char *s, gid_t **ret, size_t *ret_n) {
        _cleanup_free_ gid_t *groups = NULL;
        _cleanup_free_ char *copy = NULL;
        size_t n = 0;
        char *state = NULL;

        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, ",", &state); w; w = strtok_r(NULL, ",", &state)) {
                gid_t *a;
                uint32_t g;

                if (privdrop_parse_id(w, &g) < 0)
                        return -EINVAL;
                if (n >= PRIVDROP_GROUPS_MAX)
                        return -E2BIG;
                a = reallocarray(groups, n + 1, sizeof(gid_t));
                if (!a)
                        return -ENOMEM;
                groups = a;
                groups[n++] = g;
        }
        /* strtok_r() skips empty fields: "1,,2" and ",1" are typos, not "no group". */
        if (strstr(s, ",,") || s[0] == ',' || (s[0] && s[strlen(s) - 1] == ','))
                return -EINVAL;

        *ret = TAKE_PTR(groups);
        *ret_n = n;
        return 0;
}

void privdrop_identity_done(PrivdropIdentity *id) {
        id->groups = mfree(id->groups);
        id->n_groups = 0;
}

int privdrop_identity_set(PrivdropIdentity *id, const char *option, const char *value) {
        int r;

        if (streq(option, "uid") || streq(option, "gid")) {
                bool is_uid = streq(option, "uid");

                if (privdrop_parse_id(value, is_uid ? &id->uid : &id->gid) < 0)
                        return log_error_errno(EINVAL, "Invalid --%s \"%s\": expected a number below %u.",
                                               option, value, UINT32_MAX);
                *(is_uid ? &id->have_uid : &id->have_gid) = true;
                return 0;
        }
        assert(streq(option, "groups"));
        privdrop_identity_done(id);
        r = privdrop_parse_groups(value, &id->groups, &id->n_groups);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(EINVAL,
                                       "Invalid --groups \"%s\": expected numeric gids separated by commas%s.",
                                       value, r == -E2BIG ? ", at most 65536" : "");
        return 0;
}

const char *privdrop_identity_root(const PrivdropIdentity *id) {
        if (id->have_uid && id->uid == 0)
                return "uid";
        if (id->have_gid && id->gid == 0)
                return "gid";
        for (size_t i = 0; i < id->n_groups; i++)
                if (id->groups[i] == 0)
                        return "group";
        return NULL;
}

/* "CAP_X what, refusing to go on: <error>"; cap_to_name() allocates. */
static int log_cap_error(int error, cap_value_t cap, const char *what) {
        char *name = cap_to_name(cap);
        int r = log_error_errno(error, "%s %s, refusing to go on: %m", strna(name), what);

        (void) cap_free(name);
        return r;
}

static bool have_effective_cap(cap_value_t cap) {
        _cleanup_cap_free_ cap_t caps = cap_get_proc();
        cap_flag_value_t v = CAP_CLEAR;

        return caps && cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

/* Empties the bounding set, which only CAP_SETPCAP may change. Without CAP_SETPCAP (a container given just
 * the capabilities its entrypoint needs) the set is left as it is and *ret_kept says so: what remains in it
 * can only be gained back by an exec of a setuid or file-capability binary, which no_new_privs disables. */
static int drop_bounding_set(bool *ret_kept) {
        cap_value_t max = cap_max_bits();
        bool can = have_effective_cap(CAP_SETPCAP);
        bool kept = false;

        for (cap_value_t c = 0; c < max; c++) {
                int r = cap_get_bound(c);

                if (r < 0)              /* not known to this kernel */
                        continue;
                if (r == 0)
                        continue;
                if (!can) {
                        kept = true;
                        continue;
                }
                if (cap_drop_bound(c) < 0)
                        return log_cap_error(errno, c, "could not be dropped from the bounding set");
        }
        *ret_kept = kept;
        return 0;
}

static int verify_ids(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups) {
        uid_t ru, eu, su;
        gid_t rg, eg, sg;
        int n;

        if (getresuid(&ru, &eu, &su) < 0)
                return log_error_errno(errno, "Failed to read back the uids: %m");
        if (ru != uid || eu != uid || su != uid)
                return log_error_errno(EPERM, "uids are %u/%u/%u after setresuid(%u), refusing to go on",
                                       ru, eu, su, uid);
        if (getresgid(&rg, &eg, &sg) < 0)
                return log_error_errno(errno, "Failed to read back the gids: %m");
        if (rg != gid || eg != gid || sg != gid)
                return log_error_errno(EPERM, "gids are %u/%u/%u after setresgid(%u), refusing to go on",
                                       rg, eg, sg, gid);

        n = getgroups(0, NULL);
        if (n < 0)
                return log_error_errno(errno, "Failed to read back the supplementary groups: %m");
        if ((size_t) n != n_groups)
                return log_error_errno(EPERM, "%d supplementary groups after setgroups() of %zu, refusing to go on",
                                       n, n_groups);
        if (n > 0) {
                _cleanup_free_ gid_t *now = calloc(n, sizeof(gid_t));

                if (!now)
                        return log_oom();
                if (getgroups(n, now) != n)
                        return log_error_errno(errno, "Failed to read back the supplementary groups: %m");
                for (int i = 0; i < n; i++)
                        if (now[i] != groups[i])
                                return log_error_errno(EPERM, "Supplementary group %u is not the requested %u, refusing to go on",
                                                       now[i], groups[i]);
        }

        /* The uid change must be permanent: an unprivileged process cannot become root again. */
        if (uid != 0 && (setuid(0) == 0 || errno != EPERM))
                return log_error_errno(EPERM, "Could regain uid 0 after dropping privileges, refusing to go on");
        return 0;
}

static int verify_caps(bool bounding_kept) {
        _cleanup_cap_free_ cap_t now = cap_get_proc(), empty = cap_init();
        cap_value_t max = cap_max_bits();

        if (!now || !empty)
                return log_error_errno(errno, "Failed to read back the capabilities: %m");
        if (cap_compare(now, empty) != 0) {
                char *text = cap_to_text(now, NULL);

                log_error("Capabilities are \"%s\" after clearing them, refusing to go on", strna(text));
                (void) cap_free(text);
                return -EPERM;
        }
        for (cap_value_t c = 0; c < max; c++) {
                if (cap_get_ambient(c) > 0)
                        return log_cap_error(EPERM, c, "is still in the ambient set");
                if (!bounding_kept && cap_get_bound(c) > 0)
                        return log_cap_error(EPERM, c, "is still in the bounding set");
        }
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                return log_error_errno(EPERM, "no_new_privs is not set, refusing to go on");
        return 0;
}

int privdrop_apply(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups) {
        _cleanup_cap_free_ cap_t empty = NULL;
        bool bounding_kept = false;
        int r;

        if (!have_effective_cap(CAP_SETUID) || !have_effective_cap(CAP_SETGID))
                return log_error_errno(EPERM, "privdrop needs CAP_SETUID and CAP_SETGID: run it as root.");

        /* The bounding set first: changing it needs CAP_SETPCAP, which the uid change takes away. */
        r = drop_bounding_set(&bounding_kept);
        if (r < 0)
                return r;
        if (bounding_kept)
                log_debug("No CAP_SETPCAP: the bounding set stays as it is; no_new_privs keeps it out of reach.");

        /* EINVAL: a kernel before 4.3 has no ambient set, so there is nothing to clear. */
        if (cap_reset_ambient() < 0 && errno != EINVAL)
                return log_error_errno(errno, "Failed to clear the ambient capabilities: %m");

        if (setgroups(n_groups, groups) < 0)
                return log_error_errno(errno, "Failed to set the supplementary groups: %m");
        if (setresgid(gid, gid, gid) < 0)
                return log_error_errno(errno, "Failed to change to gid %u: %m", gid);
        /* With keepcaps off the kernel clears the permitted and effective sets as the uid changes. */
        if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                return log_error_errno(errno, "Failed to turn off PR_SET_KEEPCAPS: %m");
        if (setresuid(uid, uid, uid) < 0)
                return log_error_errno(errno, "Failed to change to uid %u: %m", uid);

        /* For uid 0 (--allow-root) and securebits like SECBIT_NO_SETUID_FIXUP nothing was cleared yet. */
        empty = cap_init();
        if (!empty)
                return log_oom();
        if (cap_clear(empty) < 0 || cap_set_proc(empty) < 0)
                return log_error_errno(errno, "Failed to clear the capabilities: %m");

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(errno, "Failed to set no_new_privs: %m");

        r = verify_ids(uid, gid, groups, n_groups);
        if (r < 0)
                return r;
        return verify_caps(bounding_kept);
}
