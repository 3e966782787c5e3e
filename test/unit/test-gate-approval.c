/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The approval protocol of the security gate (gate-approval.c) and the per-container tokens
 * (gate-token.c): decisions, the session cache, rate limits, timeouts, removed containers. */

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "gate-approval.h"
#include "gate-token.h"
#include "macro.h"
#include "tap.h"

#define SEC 1000000ULL

typedef struct Settled {
        uint64_t id;
        bool allow;
        char actor[64];
        char reason[64];
        char container[64];
} Settled;

static Settled settled[64];
static size_t n_settled;

static void on_resolved(GateApprovals *a, GatePending *p, const GateOutcome *o, uint64_t now, void *userdata) {
        Settled *s;

        if (n_settled >= ELEMENTSOF(settled))
                return;
        s = &settled[n_settled++];
        s->id = p->id;
        s->allow = o->allow;
        snprintf(s->actor, sizeof(s->actor), "%s", o->actor);
        snprintf(s->reason, sizeof(s->reason), "%s", o->reason);
        snprintf(s->container, sizeof(s->container), "%s", p->container);
}

static GateApprovals *make(uint64_t total, uint64_t pending, uint64_t per_minute, uint64_t timeout_sec) {
        GateLimits l = { .total = total, .pending = pending, .per_minute = per_minute, .timeout_usec = timeout_sec * SEC };
        GateApprovals *a = NULL;

        n_settled = 0;
        if (gate_approvals_new(&l, on_resolved, NULL, &a) < 0)
                abort();
        return a;
}

/* Submits a request; returns 1 and the id when pending, 0 and the outcome when answered at once. */
static int submit(GateApprovals *a, const char *container, const char *key, uint64_t now, uint64_t *ret_id, GateOutcome *o) {
        GateRequestInfo info = {
                .container = container, .kind = "execve", .target = "git push", .message = "push?",
                .cache_key = key, .rule = "cmd[0]", .pid = 42,
        };
        GatePending *p = NULL;
        int r = gate_approvals_submit(a, &info, now, o, &p);
        if (r == 1 && ret_id)
                *ret_id = p->id;
        return r;
}

/* The digest `loop gate list` shows with id, "" when it is not pending. */
static const char *digest_of(GateApprovals *a, uint64_t id) {
        GatePending *p = gate_approvals_find(a, id);
        return p ? p->digest : "";
}

static void test_digest(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300);
        char d[GATE_APPROVAL_DIGEST_HEX + 1], other[GATE_APPROVAL_DIGEST_HEX + 1];
        GatePending *p = NULL;
        GateOutcome o;
        uint64_t id = 0, n;
        int r;

        GateRequestInfo info = { .container = "c1", .kind = "execve", .target = "/bin/uname -s" };
        is_int(gate_approvals_submit(a, &info, SEC, &o, &p), 1, "a request is pending");
        id = p->id;
        gate_request_digest("c1", "execve", "/bin/uname -s", d);
        is_str(p->digest, d, "its digest is that of its container, kind and target");
        gate_request_digest("c1", "execve", "/bin/uname -a", other);
        ok(!streq(d, other), "another target has another digest");
        gate_request_digest("c1", "execvex", "/bin/uname -s", other);
        ok(!streq(d, other), "the fields cannot shift into each other");
        is_int(gate_approvals_answer(a, id, other, GATE_ANSWER_ONCE, "alice", 2 * SEC), -ESTALE,
               "an answer with another request's digest is -ESTALE");
        is_int(gate_approvals_answer(a, id, NULL, GATE_ANSWER_ONCE, "alice", 2 * SEC), -ESTALE,
               "an answer without a digest is -ESTALE");
        ok(n_settled == 0 && gate_approvals_find(a, id), "and nothing is settled: the request still waits");
        is_int(gate_approvals_answer(a, id, d, GATE_ANSWER_ONCE, "alice", 2 * SEC), 1, "the right digest answers it");

        char text[64];
        snprintf(text, sizeof(text), "%" PRIu64 "-%s", id, d);
        r = gate_request_id_parse(text, &n, other);
        ok(r == 0 && n == id && streq(other, d), "N-DIGEST parses");
        snprintf(text, sizeof(text), "%" PRIu64 "-ABCDEF01", id);
        r = gate_request_id_parse(text, &n, other);
        ok(r == 0 && streq(other, "abcdef01"), "the digest is taken in either case, kept lowercase");
        is_int(gate_request_id_parse("1234", &n, other), -EINVAL, "a bare number is not an id");
        is_int(gate_request_id_parse("1234-abcdef0", &n, other), -EINVAL, "a short digest is not");
        is_int(gate_request_id_parse("1234-abcdef012", &n, other), -EINVAL, "a long one is not");
        is_int(gate_request_id_parse("1234-abcdefgh", &n, other), -EINVAL, "nor one with other letters");
        is_int(gate_request_id_parse("0-abcdef01", &n, other), -EINVAL, "nor number 0");
        is_int(gate_request_id_parse("-1-abcdef01", &n, other), -EINVAL, "nor a sign");
}

static void test_answers(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300);
        GateOutcome o;
        uint64_t id1 = 0, id2 = 0;

        is_int(submit(a, "c1", "execve:git:push", 1 * SEC, &id1, &o), 1, "an approval request becomes pending");
        ok(id1 > 0, "a pending request has an id");
        is_int(gate_approvals_n_pending(a), 1, "it is listed as pending");
        is_int(gate_approvals_answer(a, id1, digest_of(a, id1), GATE_ANSWER_ONCE, "alice", 2 * SEC), 1, "a human answers once");
        ok(n_settled == 1 && settled[0].allow, "once allows");
        is_str(settled[0].actor, "alice", "the actor is the human who answered");
        is_str(settled[0].reason, "once", "the reason is the answer");
        is_int(gate_approvals_n_pending(a), 0, "an answered request is no longer pending");
        is_int(gate_approvals_answer(a, id1, digest_of(a, id1), GATE_ANSWER_ONCE, "alice", 2 * SEC), -ENOENT, "answering twice is -ENOENT");

        is_int(submit(a, "c1", "execve:git:push", 3 * SEC, &id2, &o), 1, "once is not cached: the next request asks again");
        is_int(gate_approvals_answer(a, id2, digest_of(a, id2), GATE_ANSWER_DENY, "bob", 4 * SEC), 1, "a human answers deny");
        ok(!settled[1].allow, "deny denies");
        is_int(submit(a, "c1", "execve:git:push", 5 * SEC, NULL, &o), 1, "deny is not cached either");
        is_int(gate_approvals_answer(a, 4242, digest_of(a, 4242), GATE_ANSWER_ONCE, "x", 5 * SEC), -ENOENT, "an unknown id is -ENOENT");
        is_int(gate_answer_from_string("deny-session"), GATE_ANSWER_DENY_SESSION, "\"deny-session\" is an answer");
        is_int(gate_answer_from_string("always"), _GATE_ANSWER_INVALID, "\"always\" is not");
}

static void test_session_cache(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300);
        GateOutcome o;
        uint64_t id1, id2, id3, id4;

        submit(a, "c1", "file:write:/w/.loop/config.json", SEC, &id1, &o);
        submit(a, "c1", "file:write:/w/.loop/config.json", SEC, &id2, &o);
        submit(a, "c1", "connect:/run/x.sock", SEC, &id3, &o);
        submit(a, "c2", "file:write:/w/.loop/config.json", SEC, &id4, &o);
        is_int(gate_approvals_answer(a, id1, digest_of(a, id1), GATE_ANSWER_SESSION, "alice", 2 * SEC), 2,
               "a session answer also settles the container's other requests with the same key");
        ok(settled[0].allow && settled[1].allow && settled[1].id == id2, "both are allowed");
        is_int(gate_approvals_n_pending(a), 2, "other keys and other containers still wait");

        is_int(submit(a, "c1", "file:write:/w/.loop/config.json", 3 * SEC, NULL, &o), 0, "the next request is answered by the cache");
        ok(o.allow, "the cached session answer allows");
        is_str(o.actor, "cache", "the actor of a cached answer is \"cache\"");
        is_str(o.reason, "session", "its reason is \"session\"");
        ok(gate_approvals_find(a, id4) != NULL, "the cache is per container: the other container's request still waits");

        is_int(gate_approvals_answer(a, id3, digest_of(a, id3), GATE_ANSWER_DENY_SESSION, "alice", 4 * SEC), 1, "deny-session settles one request");
        is_int(submit(a, "c1", "connect:/run/x.sock", 5 * SEC, NULL, &o), 0, "deny-session is cached");
        ok(!o.allow, "the cached deny-session denies");
        is_str(o.reason, "deny-session", "its reason is \"deny-session\"");

        uint64_t id5;
        is_int(submit(a, "c1", NULL, 6 * SEC, &id5, &o), 1, "a request without cache key is pending");
        is_int(gate_approvals_answer(a, id5, digest_of(a, id5), GATE_ANSWER_SESSION, "alice", 6 * SEC), 1, "a session answer to it settles it");
        is_int(submit(a, "c1", NULL, 7 * SEC, NULL, &o), 1, "but nothing without a key is ever cached");
}

static void test_rate_limits(void) {
        GateOutcome o;
        uint64_t id;

        {
                _cleanup_(gate_approvals_freep) GateApprovals *a = make(3, 2, 60, 300);
                is_int(submit(a, "c1", "k1", SEC, &id, &o), 1, "request 1 pending");
                is_int(submit(a, "c1", "k2", SEC, NULL, &o), 1, "request 2 pending");
                is_int(submit(a, "c1", "k3", SEC, NULL, &o), 0, "a third concurrent request is answered at once");
                ok(!o.allow, "the pending limit denies");
                is_str(o.reason, "rate-limit-pending", "with reason rate-limit-pending");
                is_int(submit(a, "c2", "k3", SEC, NULL, &o), 1, "the limits are per container");
                gate_approvals_answer(a, id, digest_of(a, id), GATE_ANSWER_ONCE, "h", 2 * SEC);
                is_int(submit(a, "c1", "k3", 2 * SEC, NULL, &o), 1, "after an answer there is room again");
                gate_approvals_deny_all(a, "test", 3 * SEC);
                is_int(submit(a, "c1", "k4", 3 * SEC, NULL, &o), 0, "the fourth request of a container exceeds total=3");
                is_str(o.reason, "rate-limit-total", "with reason rate-limit-total");
                is_str(o.actor, "gate", "limits are the gate's own decision");
        }
        {
                _cleanup_(gate_approvals_freep) GateApprovals *a = make(1, 1, 60, 300);
                submit(a, "c1", "k1", SEC, NULL, &o);
                submit(a, "c1", "k2", SEC, NULL, &o);
                is_str(o.reason, "rate-limit-total", "total is checked before pending");
        }
        {
                _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 3, 300);
                for (int i = 0; i < 3; i++) {
                        submit(a, "c1", "k", 10 * SEC, &id, &o);
                        gate_approvals_answer(a, id, digest_of(a, id), GATE_ANSWER_ONCE, "h", 10 * SEC);
                }
                is_int(submit(a, "c1", "k", 20 * SEC, NULL, &o), 0, "the fourth request within a minute is answered at once");
                is_str(o.reason, "rate-limit-per-minute", "with reason rate-limit-per-minute");
                is_int(submit(a, "c1", "k", 71 * SEC, NULL, &o), 1, "a minute later requests are pending again");
        }
        {
                _cleanup_(gate_approvals_freep) GateApprovals *a = make(0, 0, 0, 300);
                int n = 0;
                for (int i = 0; i < 100; i++)
                        n += submit(a, "c1", "k", SEC, NULL, &o) == 1;
                is_int(n, 100, "limits of 0 do not limit");
        }
        {
                _cleanup_(gate_approvals_freep) GateApprovals *a = make(0, 0, 0, 300);
                int r = 0;
                for (unsigned i = 0; i <= GATE_PENDING_MAX && r >= 0; i++)
                        r = submit(a, "c1", "k", SEC, NULL, &o);
                is_int(r, -ENOBUFS, "GATE_PENDING_MAX holds across the channel even without configured limits");
        }
        {
                _cleanup_(gate_approvals_freep) GateApprovals *a = make(0, 0, 0, 300);
                int r = 0;
                char c[32];
                for (unsigned i = 0; i <= GATE_CONTAINERS_MAX && r >= 0; i++) {
                        snprintf(c, sizeof(c), "c%u", i);
                        r = submit(a, c, "k", SEC, NULL, &o);
                }
                is_int(r, -ENOBUFS, "GATE_CONTAINERS_MAX containers are tracked at most");
        }
}

static void test_timeout_and_removal(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300);
        GateOutcome o;
        uint64_t id1, id2, id3;

        submit(a, "c1", "k1", 10 * SEC, &id1, &o);
        submit(a, "c1", "k2", 20 * SEC, &id2, &o);
        is_int(gate_approvals_next_deadline(a), 310 * SEC, "the next deadline is the oldest request's plus the timeout");
        is_int(gate_approvals_expire(a, 309 * SEC), 0, "nothing expires early");
        is_int(gate_approvals_expire(a, 310 * SEC), 1, "the oldest request expires at its deadline");
        ok(!settled[0].allow && settled[0].id == id1, "a timeout denies");
        is_str(settled[0].actor, "timeout", "recorded with actor timeout, not as a human's no");
        is_str(settled[0].reason, "timeout", "and reason timeout");
        is_int(gate_approvals_next_deadline(a), 320 * SEC, "the deadline moves to the next request");

        submit(a, "c2", "k1", 30 * SEC, &id3, &o);
        is_int(gate_approvals_remove_container(a, "c1", 40 * SEC), 1, "removing a container denies its pending requests");
        is_str(settled[1].reason, "container-removed", "with reason container-removed");
        ok(gate_approvals_find(a, id3) != NULL, "other containers' requests stay");
        is_int(gate_approvals_n_containers(a), 1, "the removed container's state is forgotten");

        is_int(gate_approvals_deny(a, id3, "caller-gone", 41 * SEC), 0, "a request whose caller went away is denied");
        is_str(settled[2].reason, "caller-gone", "with reason caller-gone");
        is_int(gate_approvals_next_deadline(a), (long long) UINT64_MAX, "no deadline when nothing is pending");
}

static bool gone_if_c1(const char *container, void *userdata) {
        return streq(container, "c1");
}

static void test_forget_gone(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300);
        GateOutcome o;

        submit(a, "c1", "k1", SEC, NULL, &o);
        submit(a, "c1", "k2", SEC, NULL, &o);
        submit(a, "c2", "k1", SEC, NULL, &o);
        submit(a, "c3", "k1", SEC, NULL, &o);
        is_int(gate_approvals_forget_gone(a, gone_if_c1, NULL, 2 * SEC), 2,
               "containers whose token vanished get their pending requests denied");
        ok(streq(settled[0].reason, "container-removed") && streq(settled[1].reason, "container-removed"),
           "both with reason container-removed");
        is_int(gate_approvals_n_containers(a), 2, "and are forgotten, the others stay");
}

static void test_no_approver(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 0);
        GateOutcome o;

        is_int(submit(a, "c1", "k", SEC, NULL, &o), 0, "without approvals a request is answered at once");
        ok(!o.allow, "it is denied");
        is_str(o.reason, "no-approver", "with reason no-approver");
}

static void test_validation(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300);
        _cleanup_free_ char *long_target = malloc(GATE_TARGET_MAX + 2);
        GateRequestInfo info = { .container = "c1", .kind = "execve", .target = "x" };
        GateOutcome o;
        GatePending *p;

        info.kind = "ptrace";
        is_int(gate_approvals_submit(a, &info, SEC, &o, &p), -EINVAL, "an unknown kind is refused");
        info.kind = "execve";
        info.container = "../etc";
        is_int(gate_approvals_submit(a, &info, SEC, &o, &p), -EINVAL, "a container id that is a path is refused");
        info.container = "c1";
        info.target = "";
        is_int(gate_approvals_submit(a, &info, SEC, &o, &p), -EINVAL, "an empty target is refused");
        memset(long_target, 'a', GATE_TARGET_MAX + 1);
        long_target[GATE_TARGET_MAX + 1] = 0;
        info.target = long_target;
        is_int(gate_approvals_submit(a, &info, SEC, &o, &p), -EINVAL, "a target over GATE_TARGET_MAX is refused");
        long_target[GATE_TARGET_MAX] = 0;
        is_int(gate_approvals_submit(a, &info, SEC, &o, &p), 1, "a target of exactly GATE_TARGET_MAX is fine");
        ok(gate_request_kind_is_valid("docker"), "the Docker proxy's kind is accepted");
}

static void test_tokens(void) {
        char dir[] = "/tmp/test-gate-token.XXXXXX", t1[GATE_TOKEN_HEX_LEN + 1], t2[GATE_TOKEN_HEX_LEN + 1];
        _cleanup_free_ char *tdir = NULL, *found = NULL, *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (!mkdtemp(dir))
                abort();
        setenv("LOOP_RUNTIME_DIR", dir, 1);

        is_int(gate_token_generate(t1), 0, "a token is generated");
        ok(gate_token_is_well_formed(t1), "it is 64 lowercase hex characters");
        gate_token_generate(t2);
        ok(!streq(t1, t2), "two tokens differ");
        ok(!gate_token_is_well_formed("ABC"), "a short token is not well formed");

        is_int(gate_token_write("demo", "loop-demo-abc123", t1), 0, "the token of a container is written");
        is_int(gate_token_write("demo", "loop-demo-def456", t2), 0, "and of a second one");
        is_int(gate_token_write("demo", "../evil", t2), -EINVAL, "a container id with a slash is refused");
        gate_token_dir("demo", &tdir);
        ok(stat(tdir, &st) == 0 && (st.st_mode & 0777) == 0700, "the token directory is 0700");
        if (asprintf(&path, "%s/loop-demo-abc123", tdir) < 0)
                abort();
        ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0400, "a token file is 0400");

        fd = open(tdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        is_int(gate_token_find_at(fd, t2, &found), 0, "a valid token is found");
        is_str(found, "loop-demo-def456", "and names its container");
        found = mfree(found);
        t1[0] = t1[0] == 'a' ? 'b' : 'a';
        is_int(gate_token_find_at(fd, t1, &found), -EPERM, "a token that differs in one character is -EPERM");
        is_int(gate_token_find_at(fd, "", &found), -EPERM, "an empty token is -EPERM");
        ok(gate_token_exists_at(fd, "loop-demo-abc123"), "the token file's existence can be checked");
        is_int(gate_token_remove("demo", "loop-demo-abc123"), 0, "a token is removed");
        ok(!gate_token_exists_at(fd, "loop-demo-abc123"), "and is gone");
        is_int(gate_token_remove("demo", "loop-demo-abc123"), 0, "removing it again is fine");
        is_int(gate_token_remove("nochannel", "x"), 0, "removing from a channel without tokens is fine");
        ok(gate_token_equal("abc", "abc") && !gate_token_equal("abc", "abd") && !gate_token_equal("abc", "abcd"),
           "gate_token_equal compares content and length");

        unlink(path);
        free(path);
        if (asprintf(&path, "%s/loop-demo-def456", tdir) < 0)
                abort();
        unlink(path);
        rmdir(tdir);
        free(path);
        if (asprintf(&path, "%s/demo", dir) < 0)
                abort();
        rmdir(path);
        rmdir(dir);
}

/* An id typed after a restart never names another request: each start counts from its own random point. */
static void test_ids_across_restarts(void) {
        _cleanup_(gate_approvals_freep) GateApprovals *a = make(500, 30, 60, 300), *b = make(500, 30, 60, 300);
        uint64_t ida = 0, idb = 0, ida2 = 0;
        GateOutcome o;

        ok(submit(a, "c1", NULL, SEC, &ida, &o) == 1 && submit(b, "c1", NULL, SEC, &idb, &o) == 1,
           "two service starts each take a request");
        ok(ida >= GATE_APPROVAL_ID_MIN && idb >= GATE_APPROVAL_ID_MIN, "ids do not start at 1");
        ok(ida != idb, "...and the first ids of two starts differ");
        ok(submit(a, "c1", NULL, SEC, &ida2, &o) == 1 && ida2 == ida + 1, "within one start ids count up");
}

int main(void) {
        test_digest();
        test_answers();
        test_ids_across_restarts();
        test_session_cache();
        test_rate_limits();
        test_timeout_and_removal();
        test_forget_gone();
        test_no_approver();
        test_validation();
        test_tokens();
        return done_testing();
}
