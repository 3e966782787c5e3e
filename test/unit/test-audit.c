/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The audit stream without a journal: events as lines on stderr (LOOP_LOG_TARGET=console), redaction by
 * value and by key, the field caps, and the ids against catalog/loop.catalog. What reaches journald is
 * checked on a real one by test/integration/test-journal.sh. */

#include <assert.h>
#include <fcntl.h>
#include <syslog.h>

#include "audit.h"
#include "config-build.h"
#include "io-util.h"
#include "log.h"
#include "strv.h"
#include "tap.h"

#define SECRET "sk-ant-api03-VERYSECRETVALUE"
#define SECRET2 "ghp_anotherSecretToken42"

static int saved_stderr = -EBADF;
static FILE *capture_file;

static void capture_start(void) {
        fflush(stderr);
        capture_file = tmpfile();
        saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        assert(capture_file && saved_stderr >= 0);
        assert(dup2(fileno(capture_file), STDERR_FILENO) >= 0);
}

/* What was written to stderr since capture_start(). */
static char *capture_end(void) {
        _cleanup_fclose_ FILE *f = TAKE_PTR(capture_file);
        char *s = NULL;
        size_t n = 0;

        fflush(stderr);
        assert(dup2(saved_stderr, STDERR_FILENO) >= 0);
        saved_stderr = safe_close(saved_stderr);
        rewind(f);
        if (getdelim(&s, &n, '\0', f) < 0) {
                free(s);
                return strdup("");
        }
        return s;
}

static size_t count_lines(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static size_t count_substr(const char *s, const char *needle) {
        size_t n = 0;
        for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static void test_events(void) {
        bool names_ok = true, ids_ok = true, unique = true, roundtrip = true;

        for (AuditEvent e = 0; e < _AUDIT_EVENT_MAX; e++) {
                const char *n = audit_event_to_string(e), *id = audit_event_message_id(e);

                if (!n || !*n || strspn(n, "abcdefghijklmnopqrstuvwxyz-") != strlen(n))
                        names_ok = false;
                if (!id || strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
                        ids_ok = false;
                if (audit_event_from_string(n) != e)
                        roundtrip = false;
                for (AuditEvent k = 0; k < e; k++)
                        if (streq_ptr(n, audit_event_to_string(k)) || streq_ptr(id, audit_event_message_id(k)))
                                unique = false;
        }
        ok(names_ok, "every event has a LOOP_EVENT name of lowercase letters and dashes");
        ok(ids_ok, "every event has a MESSAGE_ID of 32 lowercase hex digits");
        ok(unique, "event names and MESSAGE_IDs are unique");
        ok(roundtrip, "audit_event_from_string() inverts audit_event_to_string()");
        is_str(audit_event_to_string(AUDIT_RUN_FINISHED), "run-finished", "AUDIT_RUN_FINISHED is run-finished");
        is_str(audit_event_to_string(AUDIT_QUEUE_RETRY), "queue-retry", "AUDIT_QUEUE_RETRY is queue-retry");
        ok(!audit_event_to_string(_AUDIT_EVENT_MAX) && !audit_event_message_id(-1),
           "events out of range have no name and no id");
        ok(audit_event_from_string("run-exploded") < 0 && audit_event_from_string(NULL) < 0,
           "unknown event names are refused");
}

static void test_catalog(void) {
        _cleanup_free_ char *cat = NULL, *path = NULL;
        size_t n_headers = 0, size;
        bool all_found = true, subjects = true;
        int r;

        assert(asprintf(&path, "%s/catalog/loop.catalog", LOOP_SOURCE_DIR) >= 0);
        r = read_full_file_at(AT_FDCWD, path, 1024 * 1024, false, &cat, &size);
        if (!ok(r >= 0, "catalog/loop.catalog is readable"))
                return;

        for (const char *p = cat; (p = strstr(p, "\n-- ")); p++)
                n_headers++;
        for (AuditEvent e = 0; e < _AUDIT_EVENT_MAX; e++) {
                _cleanup_free_ char *hdr = NULL;
                const char *entry, *next;

                assert(asprintf(&hdr, "\n-- %s\n", audit_event_message_id(e)) >= 0);
                entry = strstr(cat, hdr);
                if (!entry || count_substr(cat, hdr) != 1) {
                        all_found = false;
                        diag(hdr + 1);
                        continue;
                }
                entry += strlen(hdr);
                next = strstr(entry, "\n-- ") ?: entry + strlen(entry);
                if (!startswith(entry, "Subject: ") || !memmem(entry, (size_t) (next - entry), "\nDefined-By: loop\n", 17))
                        subjects = false;
        }
        ok(all_found, "catalog/loop.catalog has exactly one entry for each MESSAGE_ID");
        is_int(n_headers, _AUDIT_EVENT_MAX, "catalog/loop.catalog has no entries for unknown ids");
        ok(subjects, "each catalog entry starts with Subject: and says Defined-By: loop");
}

static void test_console_line(void) {
        _cleanup_free_ char *out = NULL;
        char *extra[] = { (char *) "LOOP_TOOL=Bash", (char *) "LOOP_NOTE=two words", NULL };
        AuditFields f = {
                .channel = "demo", .container = "0123abcd", .container_type = "agent",
                .scope = "loop-demo-agent-1.scope", .session = "sess-1", .message_id = "q-42", .extra = extra,
        };
        int r;

        capture_start();
        r = audit_log(AUDIT_RUN_FINISHED, LOG_INFO, &f, "Run finished after %d turns.", 3);
        out = capture_end();
        is_int(r, 0, "audit_log() succeeds on the console");
        is_str(out, "run-finished: Run finished after 3 turns. [LOOP_CHANNEL=demo LOOP_CONTAINER=0123abcd "
                    "LOOP_CONTAINER_TYPE=agent LOOP_SCOPE=loop-demo-agent-1.scope LOOP_SESSION=sess-1 "
                    "LOOP_QUEUE_ID=q-42 LOOP_TOOL=Bash LOOP_NOTE=\"two words\"]\n",
               "an event is one stderr line: event, message, the fields that are set");

        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUNNER_STARTED, LOG_INFO, NULL, "Runner started.");
        out = capture_end();
        is_str(out, "runner-started: Runner started.\n", "an event without fields is event and message");

        out = mfree(out);
        f = (AuditFields) { .channel = "demo", .session = "a\nb" };
        capture_start();
        (void) audit_log(AUDIT_RUN_TURN, LOG_INFO, &f, "line one\nline two %s", "%s%n");
        out = capture_end();
        is_int(count_lines(out), 1, "newlines in the message and fields do not break the one-line form");
        ok(!!strstr(out, "line one\\nline two %s%n") && strstr(out, "LOOP_SESSION=\"a\\nb\""),
           "newlines are escaped and values are data, never a format") || (diag(out), 0);

        out = mfree(out);
        char *odd[] = { (char *) "LOOP_QUOTED=say \"hi\" \\ ok", (char *) "LOOP_UTF8=na\xc3\xafve",
                        (char *) "LOOP_CONTROL=\x01\x7f\t\r", (char *) "LOOP_EMPTY=", (char *) "LOOP_SLASH=a\\b", NULL };
        f = (AuditFields) { .extra = odd };
        capture_start();
        (void) audit_log(AUDIT_RUN_TURN, LOG_INFO, &f, "m\"\\\x02");
        out = capture_end();
        is_str(out, "run-turn: m\"\\\\x02 [LOOP_QUOTED=\"say \\\"hi\\\" \\\\ ok\" LOOP_UTF8=na\xc3\xafve "
                    "LOOP_CONTROL=\"\\x01\\x7f\\t\\r\" LOOP_EMPTY=\"\" LOOP_SLASH=\"a\\\\b\"]\n",
               "quotes and backslashes are escaped inside quotes only, control bytes as \\xNN, UTF-8 as it is")
                || (diag(out), 0);

        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TURN, LOG_DEBUG, &f, "debug detail");
        out = capture_end();
        is_str(out, "", "on the console, events above LOOP_LOG_LEVEL are not shown");

        out = mfree(out);
        log_set_target(LOG_TARGET_NULL);
        capture_start();
        (void) audit_log(AUDIT_RUN_TURN, LOG_ERR, &f, "nowhere");
        out = capture_end();
        log_set_target(LOG_TARGET_CONSOLE);
        is_str(out, "", "LOOP_LOG_TARGET=null silences the audit stream too");
}

static void test_extras_validated(void) {
        _cleanup_free_ char *out = NULL;
        char *extra[] = {
                (char *) "LOOP_OK=1", (char *) "loop_lower=x", (char *) "NOEQUALS", (char *) "_TRUSTED=x",
                (char *) "1DIGIT=x", (char *) "MESSAGE=forged", (char *) "LOOP_CHANNEL=forged",
                (char *) "PRIORITY=0", (char *) "LOOP_EVENT=forged", NULL,
        };
        AuditFields f = { .channel = "demo", .extra = extra };

        capture_start();
        (void) audit_log(AUDIT_QUEUE_DONE, LOG_INFO, &f, "done");
        out = capture_end();
        is_str(out, "queue-done: done [LOOP_CHANNEL=demo LOOP_OK=1]\n",
               "extra fields with invalid journal names or naming audit_log()'s own fields are dropped");
}

static void test_extras_capped(void) {
        _cleanup_strv_free_ char **extra = NULL;
        _cleanup_free_ char *out = NULL;

        for (unsigned i = 0; i < AUDIT_EXTRA_MAX + 10; i++) {
                char buf[32];
                snprintf(buf, sizeof buf, "LOOP_X%u=v", i);
                assert(strv_extend(&extra, buf) >= 0);
        }
        AuditFields f = { .extra = extra };
        capture_start();
        (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, &f, "many");
        out = capture_end();
        is_int(count_substr(out, "LOOP_X"), AUDIT_EXTRA_MAX, "at most AUDIT_EXTRA_MAX (%u) extra fields are kept", AUDIT_EXTRA_MAX);
}

static void test_redaction(void) {
        _cleanup_free_ char *out = NULL;
        char *extra[] = {
                (char *) "LOOP_ARGS=curl -H 'x-api-key: " SECRET "' https://example.com",
                (char *) "LOOP_API_TOKEN=not-registered-but-named-token",
                (char *) "LOOP_SSH_KEY=ssh-ed25519 AAAA",
                (char *) "LOOP_CLIENT_SECRET=s3cr3t-value",
                (char *) "LOOP_DB_PASSWORD=hunter2hunter2",
                (char *) "LOOP_AUTHORIZATION=Bearer abc",
                (char *) "LOOP_TOOL=Bash",
                NULL,
        };
        AuditFields f = { .channel = "demo", .container_name = "name-with-" SECRET2 "-inside", .extra = extra };
        int r;

        is_int(audit_add_secret(SECRET), 1, "a secret is registered");
        is_int(audit_add_secret(SECRET), 0, "registering the same secret again is a no-op");
        is_int(audit_add_secret(SECRET2), 1, "a second secret is registered");
        is_int(audit_add_secret("short"), 0, "values shorter than 8 bytes are not registered");
        is_int(audit_add_secret(NULL), 0, "NULL is not registered");

        capture_start();
        r = audit_log(AUDIT_RUN_STARTED, LOG_INFO, &f, "Prompt: use %s, then %s and %s again; short here.",
                      SECRET, SECRET2, SECRET);
        out = capture_end();
        is_int(r, 0, "audit_log() with secrets succeeds");
        ok(!strstr(out, SECRET) && !strstr(out, SECRET2), "no registered secret reaches stderr") || (diag(out), 0);
        ok(!!strstr(out, "Prompt: use [REDACTED], then [REDACTED] and [REDACTED] again; short here."),
           "secrets are replaced by [REDACTED] in MESSAGE, every occurrence; short values are left alone") || (diag(out), 0);
        ok(!!strstr(out, "LOOP_CONTAINER_NAME=name-with-[REDACTED]-inside"),
           "a secret inside a standard field is replaced as a substring") || (diag(out), 0);
        ok(!!strstr(out, "LOOP_ARGS=\"curl -H 'x-api-key: [REDACTED]' https://example.com\""),
           "a secret inside an extra field is replaced as a substring") || (diag(out), 0);
        ok(!!strstr(out, "LOOP_API_TOKEN=[REDACTED]") && !strstr(out, "not-registered"),
           "an extra field named *TOKEN* is redacted whatever its value");
        ok(!!strstr(out, "LOOP_SSH_KEY=[REDACTED]"), "an extra field named *KEY* is redacted");
        ok(!!strstr(out, "LOOP_CLIENT_SECRET=[REDACTED]"), "an extra field named *SECRET* is redacted");
        ok(!!strstr(out, "LOOP_DB_PASSWORD=[REDACTED]") && !strstr(out, "hunter2"), "an extra field named *PASSWORD* is redacted");
        ok(!!strstr(out, "LOOP_AUTHORIZATION=[REDACTED]"), "an extra field named *AUTHORIZATION* is redacted");
        ok(!!strstr(out, "LOOP_TOOL=Bash"), "other extra fields keep their value");
        ok(audit_field_name_is_secret("LOOP_Api_Key") && !audit_field_name_is_secret("LOOP_TOOL"),
           "secret field names are matched in any case");
        ok(audit_field_name_is_secret("x_authorization") && audit_field_name_is_secret("PASSWORD") &&
           audit_field_name_is_secret("LOOP_TOKEN_ID") && audit_field_name_is_secret("secretive") &&
           audit_field_name_is_secret("LOOP_SSSSECRET") && audit_field_name_is_secret("KEY"),
           "...anywhere in the name: first, last, after a false start");
        ok(!audit_field_name_is_secret("LOOP_TOKE") && !audit_field_name_is_secret("LOOP_KE") && !audit_field_name_is_secret("") &&
           !audit_field_name_is_secret("LOOP_BYTES_RECEIVED") && !audit_field_name_is_secret("LOOP_PASSWOR"),
           "...and a name cut short of one is not");

        out = mfree(out);
        capture_start();
        r = audit_log_message(AUDIT_RUN_TURN, LOG_INFO, &f, "made by the caller: " SECRET " %s%n");
        out = capture_end();
        is_int(r, 0, "audit_log_message() succeeds");
        ok(!!strstr(out, "run-turn: made by the caller: [REDACTED] %s%n [") && !strstr(out, SECRET) &&
           strstr(out, "LOOP_API_TOKEN=[REDACTED]") && strstr(out, "LOOP_TOOL=Bash"),
           "audit_log_message(): the message is taken as it is (no format), redacted, with the same fields")
                || (diag(out), 0);

        /* A secret that contains another is replaced as a whole, not as "[REDACTED]" plus a tail. */
        is_int(audit_add_secret("abcdefgh"), 1, "a secret that is part of a longer one is registered");
        is_int(audit_add_secret("xxabcdefghyy"), 1, "the longer one is registered after it");
        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TURN, LOG_INFO, NULL, "[xxabcdefghyy] [abcdefgh]");
        out = capture_end();
        is_str(out, "run-turn: [[REDACTED]] [[REDACTED]]\n", "overlapping secrets: the longest is replaced whole");

        audit_clear_secrets();
        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TURN, LOG_INFO, NULL, "%s", SECRET);
        out = capture_end();
        is_str(out, "run-turn: " SECRET "\n", "audit_clear_secrets() forgets the secrets");
}

static void test_secret_encodings(void) {
        _cleanup_free_ char *out = NULL;

        audit_clear_secrets();
        ok(audit_add_secret("pa55:w/rd+Secret") == 1, "a secret is registered");
        /* base64 "cGE1NTp3L3JkK1NlY3JldA==", percent-encoded "pa55%3Aw%2Frd%2BSecret" */
        ok(audit_redact("basic cGE1NTp3L3JkK1NlY3JldA== url ?p=pa55%3Aw%2Frd%2BSecret jwt cGE1NTp3L3JkK1NlY3JldA.", &out) == 1 &&
           streq(out, "basic [REDACTED] url ?p=[REDACTED] jwt [REDACTED]."),
           "its base64 (padded or not) and percent-encoded forms are redacted too");
        audit_clear_secrets();
}

static void test_secret_table_capped(void) {
        int r = 0;
        unsigned i;

        for (i = 0; i < AUDIT_SECRETS_MAX; i++) {
                char buf[32];
                snprintf(buf, sizeof buf, "secret-number-%u", i);
                r = audit_add_secret(buf);
                if (r != 1)
                        break;
        }
        ok(i >= AUDIT_SECRETS_MAX / 4 && r == -E2BIG,
           "at least AUDIT_SECRETS_MAX/4 (%u) secrets, each in its four forms, can be registered (%u), then -E2BIG",
           AUDIT_SECRETS_MAX / 4, i);
        is_int(audit_add_secret("one-secret-too-many"), -E2BIG, "one more is refused with -E2BIG");
        audit_clear_secrets();
        is_int(audit_add_secret("one-secret-too-many"), 1, "after audit_clear_secrets() there is room again");
        audit_clear_secrets();
}

static void test_caps(void) {
        _cleanup_free_ char *big = malloc(200 * 1024 + 1), *exact = malloc(AUDIT_FIELD_MAX + 1), *utf8 = NULL;
        _cleanup_free_ char *out = NULL, *extra0 = NULL;
        const char *msg, *end;
        char *extra[2] = {};
        AuditFields f = {};

        assert(big && exact);
        memset(big, 'a', 200 * 1024);
        big[200 * 1024] = 0;
        memset(exact, 'b', AUDIT_FIELD_MAX);
        exact[AUDIT_FIELD_MAX] = 0;

        capture_start();
        (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, NULL, "%s", big);
        out = capture_end();
        msg = out + strlen("run-tool-use: ");
        end = strchr(msg, '\n');
        is_int(end - msg, AUDIT_FIELD_MAX, "a 200 KiB MESSAGE is cut to AUDIT_FIELD_MAX (64 KiB)");
        ok(end - msg >= (ptrdiff_t) strlen(AUDIT_TRUNCATED_MARKER) &&
           memcmp(end - strlen(AUDIT_TRUNCATED_MARKER), AUDIT_TRUNCATED_MARKER, strlen(AUDIT_TRUNCATED_MARKER)) == 0,
           "a cut field ends in the truncation marker");

        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, NULL, "%s", exact);
        out = capture_end();
        is_int(strlen(out), strlen("run-tool-use: ") + AUDIT_FIELD_MAX + 1, "a field of exactly 64 KiB is kept whole");

        assert(asprintf(&extra0, "LOOP_OUTPUT=%s", big) >= 0);
        extra[0] = extra0;
        f.extra = extra;
        f.session = big;
        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, &f, "m");
        out = capture_end();
        is_int(count_substr(out, AUDIT_TRUNCATED_MARKER), 2, "standard and extra fields are capped too");
        ok(strlen(out) < 3 * AUDIT_FIELD_MAX, "the whole line stays within the caps (%zu bytes)", strlen(out));

        /* "é" is two bytes: a cut must not leave half of one before the marker. */
        utf8 = malloc(AUDIT_FIELD_MAX + 101);
        assert(utf8);
        utf8[0] = 'x';
        for (size_t i = 1; i + 1 < AUDIT_FIELD_MAX + 100; i += 2)
                memcpy(utf8 + i, "\xc3\xa9", 2);
        utf8[AUDIT_FIELD_MAX + 99] = 0;
        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, NULL, "%s", utf8);
        out = capture_end();
        end = strstr(out, AUDIT_TRUNCATED_MARKER);
        ok(end && (unsigned char) end[-1] == 0xa9 && (unsigned char) end[-2] == 0xc3,
           "a cut never splits a UTF-8 sequence");

        /* Redaction comes before the cut: a secret across the cut must not leave its first half behind. */
        assert(audit_add_secret("SECRETACROSSTHECUT") == 1);
        memcpy(big + AUDIT_FIELD_MAX - 20, "SECRETACROSSTHECUT", 18);
        out = mfree(out);
        capture_start();
        (void) audit_log(AUDIT_RUN_TOOL_USE, LOG_INFO, NULL, "%s", big);
        out = capture_end();
        ok(!strstr(out, "SECRETACROSS"), "a secret straddling the cap is redacted, not cut in half");
        audit_clear_secrets();
}

static void test_journal_fallback(void) {
        _cleanup_free_ char *out = NULL;

        if (access("/run/systemd/journal/socket", F_OK) >= 0) {
                skip("without journald an event for the journal goes to stderr",
                     "journald runs here; the journal itself is tested by test-journal.sh");
                return;
        }
        log_set_target(LOG_TARGET_JOURNAL);
        capture_start();
        (void) audit_log(AUDIT_RUNNER_STOPPED, LOG_INFO, NULL, "Runner stopped.");
        out = capture_end();
        log_set_target(LOG_TARGET_CONSOLE);
        is_str(out, "runner-stopped: Runner stopped.\n", "without journald an event for the journal goes to stderr");
}

/* Plain log lines are redacted by value too: the egress gateway logs with log_*() and holds secrets. */
static void test_log_redaction(void) {
        _cleanup_free_ char *out = NULL, *copy = NULL;

        audit_clear_secrets();
        ok(audit_redact("nothing to hide", &copy) == 0 && !copy, "with no secret registered nothing is copied");
        (void) audit_add_secret("gateway-secret-0001");
        ok(audit_redact("a gateway-secret-0001 b", &copy) == 1 && streq_ptr(copy, "a [REDACTED] b"),
           "audit_redact() replaces a registered secret");
        capture_start();
        log_warning("upstream said: token=%s", "gateway-secret-0001");
        out = capture_end();
        ok(out && !strstr(out, "gateway-secret-0001") && strstr(out, "token=[REDACTED]"),
           "a log_warning() line carrying a registered secret is redacted") || (diag(strna(out)), 0);
        audit_clear_secrets();
}

int main(void) {
        /* The environment meson gives unit tests silences logs; this test reads the console. */
        setenv("LOOP_LOG_TARGET", "console", 1);
        setenv("LOOP_LOG_LEVEL", "info", 1);
        log_setup();
        is_int(log_get_target(), LOG_TARGET_CONSOLE, "LOOP_LOG_TARGET=console selects the console");

        test_events();
        test_catalog();
        test_console_line();
        test_extras_validated();
        test_extras_capped();
        test_redaction();
        test_secret_encodings();
        test_secret_table_capped();
        test_caps();
        test_journal_fallback();
        test_log_redaction();
        return done_testing();
}
