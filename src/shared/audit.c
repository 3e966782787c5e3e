/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <ctype.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/uio.h>
#include <syslog.h>
/* CODE_FILE= etc. would all name audit_send_journal(): an audit entry's origin is its LOOP_* fields. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "audit.h"
#include "io-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

/* Journal field names: at most 64 characters of [A-Z0-9_], not starting with a digit; a leading "_" is
 * for the fields journald adds itself and is refused when a client sends it. */
#define JOURNAL_FIELD_NAME_MAX 64U
#define JOURNALD_SOCKET "/run/systemd/journal/socket"

static const struct {
        const char *name;
        const char *message_id;
} audit_event_table[_AUDIT_EVENT_MAX] = {
        /* The ids were made once with `systemd-id128 new` and never change: loop.catalog and every
         * `journalctl MESSAGE_ID=` an operator saved refer to them. */
        [AUDIT_CONTAINER_REGISTERED] = { "container-registered", "09f96a1d11d245c4b7711f4eb9008c40" },
        [AUDIT_CONTAINER_STATUS]     = { "container-status",     "94ace96791574393ae4385606ae00990" },
        [AUDIT_CONTAINER_REMOVED]    = { "container-removed",    "d3d36da54c284b098f1e75bdadfc1f91" },
        [AUDIT_RUN_STARTED]          = { "run-started",          "055ae6920c2947079e3a0dc52d1376ad" },
        [AUDIT_RUN_TURN]             = { "run-turn",             "abbfc22c99484017888e6f8988870bd2" },
        [AUDIT_RUN_TOOL_USE]         = { "run-tool-use",         "c1e3df5484db4b8a871ea47edbc9a02f" },
        [AUDIT_RUN_FINISHED]         = { "run-finished",         "ed10c01f497d4bbaaf05f935915d9b22" },
        [AUDIT_RUN_FAILED]           = { "run-failed",           "b110b9403d6a4b31a3336cf7fe3fffb4" },
        [AUDIT_RUN_RETRIED]          = { "run-retried",          "f0f69fef7903467c8df599623952c084" },
        [AUDIT_QUEUE_QUEUED]         = { "queue-queued",         "26f90c0c30bd4935be6183e9e452023f" },
        [AUDIT_QUEUE_TAKEN]          = { "queue-taken",          "19e5cd3edacf46158f308b5a4f188e82" },
        [AUDIT_QUEUE_DONE]           = { "queue-done",           "527b5e1abf094497acacdb22d6ae6f0e" },
        [AUDIT_QUEUE_RETRY]          = { "queue-retry",          "87391ca293524ab9866f346f66244810" },
        [AUDIT_QUEUE_FAILED]         = { "queue-failed",         "f2a7300555124baea2194ff09e90c4b7" },
        [AUDIT_RUNNER_STARTED]       = { "runner-started",       "25ccc022b5f04f01b49324da6040c205" },
        [AUDIT_RUNNER_STOPPED]       = { "runner-stopped",       "b5cbb1d781a841edbbb971dcadfe8542" },
        [AUDIT_RUNNER_WAITING]       = { "runner-waiting",       "af26b38832074c25917cbcb3043b8861" },
        [AUDIT_GATE_PENDING]         = { "gate-pending",         "ac51ea316b31483ba54348f5beb30dbc" },
        [AUDIT_GATE_DECISION]        = { "gate-decision",        "1c67da5fa187464598968c5d0c4d6ccd" },
        [AUDIT_GATE_AUDIT_DROPPED]   = { "gate-audit-dropped",   "310a10fada534a7d93b9fbe9549b2cf2" },
        [AUDIT_GATE_ANSWER_REFUSED]  = { "gate-answer-refused",  "f035af493c1148c5ba87ec56dfc0896b" },
        [AUDIT_DOCKERPROXY_REQUEST]  = { "dockerproxy-request",  "26a10ae3739a4d5181b59cd9f48a917f" },
        [AUDIT_GATEWAY_REQUEST]      = { "gateway-request",      "2a348c56c2a442e385ec9c08d6be8992" },
        [AUDIT_GATEWAY_FAILED]       = { "gateway-failed",       "83d2dd1882844e24bc53aec0a867aff8" },
        [AUDIT_TAMPER]               = { "tamper",               "dd6b4d5c384b4f3ea77851055307439a" },
        [AUDIT_TASK_CREATED]         = { "task-created",         "de6abbeabb534479ad110e38ee0863ff" },
        [AUDIT_TASK_CHANGED]         = { "task-changed",         "636d514c73344fd7a8819510dcc8288a" },
        [AUDIT_TASK_REMOVED]         = { "task-removed",         "e318a8bd02a940e1bdd4e7a1dcc93c0d" },
        [AUDIT_TASK_FIRED]           = { "task-fired",           "eace450e3e3e4ecf9606f0fce6c183e1" },
        [AUDIT_TASK_REFUSED]         = { "task-refused",         "6f1d807081df4dcba02ac96b96808d6d" },
        [AUDIT_BROWSER_ACTION]       = { "browser-action",       "8d28bfc4736ee64dfa1b2f73f251ba3d" },
        [AUDIT_BROWSER_REFUSED]      = { "browser-refused",      "f7585af101dd66e1d014fe855869f45c" },
};

/* The fields audit_log() fills itself; an extra field may not name one of them. */
#define RESERVED(n) { n, sizeof(n) - 1 }
static const struct { const char *name; size_t len; } audit_reserved_fields[] = {
        RESERVED("MESSAGE"), RESERVED("PRIORITY"), RESERVED("MESSAGE_ID"), RESERVED("SYSLOG_IDENTIFIER"),
        RESERVED("LOOP_EVENT"), RESERVED("LOOP_CHANNEL"), RESERVED("LOOP_CONTAINER"), RESERVED("LOOP_CONTAINER_NAME"),
        RESERVED("LOOP_CONTAINER_TYPE"), RESERVED("LOOP_SCOPE"), RESERVED("LOOP_SESSION"), RESERVED("LOOP_QUEUE_ID"),
        RESERVED("OBJECT_SYSTEMD_UNIT"),
};
#undef RESERVED


/* Longest first, so a secret that contains another is replaced as a whole. */
static char *audit_secrets[AUDIT_SECRETS_MAX];
static size_t audit_secret_lengths[AUDIT_SECRETS_MAX];
static size_t audit_n_secrets;
/* Recursive: log_internal() redacts through audit_redact(), and audit_log() may log while it holds it. */
static pthread_mutex_t audit_secrets_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

const char *audit_event_to_string(AuditEvent e) {
        if (e < 0 || e >= _AUDIT_EVENT_MAX)
                return NULL;
        return audit_event_table[e].name;
}

AuditEvent audit_event_from_string(const char *s) {
        if (!s)
                return _AUDIT_EVENT_INVALID;
        for (size_t i = 0; i < _AUDIT_EVENT_MAX; i++)
                if (streq(s, audit_event_table[i].name))
                        return (AuditEvent) i;
        return _AUDIT_EVENT_INVALID;
}

const char *audit_event_message_id(AuditEvent e) {
        if (e < 0 || e >= _AUDIT_EVENT_MAX)
                return NULL;
        return audit_event_table[e].message_id;
}

static int audit_add_secret_one(const char *value) {
        size_t l, i;
        char *copy;
        int r = 1;

        if (!value)
                return 0;
        l = strlen(value);
        if (l < AUDIT_SECRET_MIN)
                return 0;

        pthread_mutex_lock(&audit_secrets_lock);
        for (i = 0; i < audit_n_secrets; i++)
                if (audit_secret_lengths[i] == l && memcmp(audit_secrets[i], value, l) == 0) {
                        r = 0;
                        goto finish;
                }
        if (audit_n_secrets >= AUDIT_SECRETS_MAX) {
                r = -E2BIG;
                goto finish;
        }
        copy = strdup(value);
        if (!copy) {
                r = -ENOMEM;
                goto finish;
        }
        for (i = audit_n_secrets; i > 0 && audit_secret_lengths[i - 1] < l; i--) {
                audit_secrets[i] = audit_secrets[i - 1];
                audit_secret_lengths[i] = audit_secret_lengths[i - 1];
        }
        audit_secrets[i] = copy;
        audit_secret_lengths[i] = l;
        audit_n_secrets++;
finish:
        pthread_mutex_unlock(&audit_secrets_lock);
        return r;
}

/* A secret also travels encoded: in a Basic header or a JSON blob (base64), in a query or a form
 * (percent-encoded). Each form a log line could carry is redacted as well. */
int audit_add_secret(const char *value) {
        _cleanup_free_ char *b64 = NULL, *pct = NULL;
        size_t l;
        int r, q;

        r = audit_add_secret_one(value);
        if (r <= 0)
                return r;
        l = strlen(value);
        b64 = malloc(4 * ((l + 2) / 3) + 1);
        pct = malloc(3 * l + 1);
        if (!b64 || !pct)
                return -ENOMEM;
        if (EVP_EncodeBlock((unsigned char *) b64, (const unsigned char *) value, (int) l) > 0) {
                size_t n = strlen(b64);
                q = audit_add_secret_one(b64);
                if (q < 0)
                        r = q;
                /* without its padding too, as in URLs and JWTs */
                while (n > 0 && b64[n - 1] == '=')
                        b64[--n] = 0;
                q = audit_add_secret_one(b64);
                if (q < 0)
                        r = q;
                explicit_bzero(b64, n);
        }
        {
                static const char hex[] = "0123456789ABCDEF";
                size_t o = 0;
                for (size_t i = 0; i < l; i++) {
                        unsigned char c = (unsigned char) value[i];
                        if (isalnum(c) || strchr("-._~", c))
                                pct[o++] = (char) c;
                        else {
                                pct[o++] = '%';
                                pct[o++] = hex[c >> 4];
                                pct[o++] = hex[c & 15];
                        }
                }
                pct[o] = 0;
                q = audit_add_secret_one(pct);          /* the same value again when nothing needed escaping */
                if (q < 0)
                        r = q;
                explicit_bzero(pct, o);
        }
        return r;
}

void audit_clear_secrets(void) {
        pthread_mutex_lock(&audit_secrets_lock);
        for (size_t i = 0; i < audit_n_secrets; i++) {
                explicit_bzero(audit_secrets[i], audit_secret_lengths[i]);
                audit_secrets[i] = mfree(audit_secrets[i]);
                audit_secret_lengths[i] = 0;
        }
        audit_n_secrets = 0;
        pthread_mutex_unlock(&audit_secrets_lock);
}

/* Whether name contains one of the secret name parts (TOKEN, KEY, SECRET, PASSWORD, AUTHORIZATION), in any
 * case: one pass, each part tried only where its first letter is. strcasestr() per part costs more in its
 * set-up alone, and a gateway record has 13 fields. */
static char ascii_upper(char c) {
        return c >= 'a' && c <= 'z' ? (char) (c - 'a' + 'A') : c;
}

/* The secret name part that begins with c (each begins with a letter of its own), NULL when none does:
 * a proxied request's record checks ten names, a letter at a time. */
static const char *secret_part_first(char c) {
        switch (c) {
        case 'T': return "TOKEN";
        case 'K': return "KEY";
        case 'S': return "SECRET";
        case 'P': return "PASSWORD";
        case 'A': return "AUTHORIZATION";
        default:  return NULL;
        }
}

/* name[0..n), which need not be NUL-terminated there */
static bool field_name_is_secret(const char *name, size_t n) {
        for (size_t at = 0; at < n; at++) {
                const char *part = secret_part_first(ascii_upper(name[at]));
                size_t k = 1;

                if (!part)
                        continue;
                while (part[k] && at + k < n && ascii_upper(name[at + k]) == part[k])
                        k++;
                if (!part[k])
                        return true;
        }
        return false;
}

bool audit_field_name_is_secret(const char *name) {
        return field_name_is_secret(name, strlen(name));
}

static bool journal_field_name_valid(const char *name, size_t n) {
        if (n == 0 || n > JOURNAL_FIELD_NAME_MAX)
                return false;
        if (name[0] == '_' || isdigit((unsigned char) name[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(name[i] >= 'A' && name[i] <= 'Z') && !isdigit((unsigned char) name[i]) && name[i] != '_')
                        return false;
        return true;
}

static bool audit_field_reserved(const char *name, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(audit_reserved_fields); i++)
                if (audit_reserved_fields[i].len == n && memcmp(audit_reserved_fields[i].name, name, n) == 0)
                        return true;
        return false;
}

/* A copy of value with every registered secret replaced. Called with audit_secrets_lock held. */
static char *redact_dup(const char *value) {
        _cleanup_free_ char *s = strdup(value);
        size_t len;

        if (!s)
                return NULL;
        len = strlen(s);
        for (size_t i = 0; i < audit_n_secrets; i++) {
                const char *secret = audit_secrets[i], *p;
                size_t sl = audit_secret_lengths[i], rl = strlen(AUDIT_REDACTED), n = 0, off = 0;
                char *out, *w;

                for (p = s; (p = memmem(p, len - (size_t) (p - s), secret, sl)); p += sl)
                        n++;
                if (n == 0)
                        continue;

                out = malloc(len - n * sl + n * rl + 1);
                if (!out) {
                        explicit_bzero(s, len);
                        return NULL;
                }
                w = out;
                for (p = s; (p = memmem(s + off, len - off, secret, sl)); ) {
                        size_t k = (size_t) (p - (s + off));
                        memcpy(w, s + off, k);
                        w += k;
                        memcpy(w, AUDIT_REDACTED, rl);
                        w += rl;
                        off += k + sl;
                }
                memcpy(w, s + off, len - off);
                w += len - off;
                *w = 0;
                explicit_bzero(s, len);
                free(s);
                s = out;
                len = (size_t) (w - out);
        }
        return TAKE_PTR(s);
}

/* Cuts s in place to at most AUDIT_FIELD_MAX bytes, ending in the marker; never inside a UTF-8
 * sequence. s must have room for the marker, which it does when it is longer than the cap. */
static void field_cap(char *s) {
        size_t len = strlen(s), keep;

        if (len <= AUDIT_FIELD_MAX)
                return;
        keep = AUDIT_FIELD_MAX - strlen(AUDIT_TRUNCATED_MARKER);
        while (keep > 0 && ((unsigned char) s[keep] & 0xc0) == 0x80)
                keep--;
        strcpy(s + keep, AUDIT_TRUNCATED_MARKER);
}

typedef struct AuditField {
        const char *name;       /* not NUL-terminated when it points into an extra */
        size_t name_len;
        const char *value;      /* redacted and capped */
        bool owned;             /* value is a copy (redacted, capped or secret), freed with the entry */
} AuditField;

#define AUDIT_FIELDS_MAX (ELEMENTSOF(audit_reserved_fields) + AUDIT_EXTRA_MAX)

typedef struct AuditEntry {
        AuditField fields[AUDIT_FIELDS_MAX];
        size_t n;
} AuditEntry;

static void audit_entry_done(AuditEntry *e) {
        for (size_t i = 0; i < e->n; i++)
                if (e->fields[i].owned)
                        free((char *) e->fields[i].value);
        e->n = 0;
}

int audit_redact(const char *value, char **ret) {
        int r = 0;

        pthread_mutex_lock(&audit_secrets_lock);
        if (audit_n_secrets > 0) {
                *ret = redact_dup(value);
                r = *ret ? 1 : -ENOMEM;
        }
        pthread_mutex_unlock(&audit_secrets_lock);
        return r;
}

/* Adds a field, redacting its value. Called with audit_secrets_lock held. A value with no secret to
 * look for and within the cap is used as it is (it outlives the entry): a record is written per proxied
 * request, and most of its fields are short. */
static int audit_entry_add(AuditEntry *e, const char *name, size_t name_len, const char *value, bool secret) {
        char *v;

        if (!value)
                return 0;
        assert(e->n < AUDIT_FIELDS_MAX);
        if (!secret && audit_n_secrets == 0 && strnlen(value, AUDIT_FIELD_MAX + 1) <= AUDIT_FIELD_MAX) {
                e->fields[e->n++] = (AuditField) { .name = name, .name_len = name_len, .value = value };
                return 0;
        }
        v = secret ? strdup(AUDIT_REDACTED) : redact_dup(value);
        if (!v)
                return -ENOMEM;
        field_cap(v);
        e->fields[e->n++] = (AuditField) { .name = name, .name_len = name_len, .value = v, .owned = true };
        return 0;
}

static int audit_entry_add_std(AuditEntry *e, const char *name, const char *value) {
        return audit_entry_add(e, name, strlen(name), value, false);
}

static int audit_entry_fill(AuditEntry *e, AuditEvent ev, const char *message, const AuditFields *f) {
        size_t n_extra = 0;
        int r;

        assert(e->n == 0);
        r = audit_entry_add_std(e, "MESSAGE", message);
        if (r < 0)
                return r;
        r = audit_entry_add_std(e, "LOOP_EVENT", audit_event_to_string(ev));
        if (r < 0)
                return r;
        if (!f)
                return 0;

        const struct { const char *name, *value; } std[] = {
                { "LOOP_CHANNEL",        f->channel },
                { "LOOP_CONTAINER",      f->container },
                { "LOOP_CONTAINER_NAME", f->container_name },
                { "LOOP_CONTAINER_TYPE", f->container_type },
                { "LOOP_SCOPE",          f->scope },
                { "LOOP_SESSION",        f->session },
                { "LOOP_QUEUE_ID",       f->message_id },
        };
        for (size_t i = 0; i < ELEMENTSOF(std); i++) {
                r = audit_entry_add_std(e, std[i].name, std[i].value);
                if (r < 0)
                        return r;
        }

        STRV_FOREACH(x, f->extra) {
                const char *eq = strchr(*x, '=');
                size_t nl;

                if (!eq || !journal_field_name_valid(*x, (size_t) (eq - *x))) {
                        log_debug("Audit field \"%.64s\" is not NAME=value with a valid journal field name, dropping it.", *x);
                        continue;
                }
                nl = (size_t) (eq - *x);
                if (audit_field_reserved(*x, nl)) {
                        log_debug("Audit field %.*s is set by audit_log() itself, dropping the extra one.", (int) nl, *x);
                        continue;
                }
                if (n_extra >= AUDIT_EXTRA_MAX) {
                        log_debug("More than %u extra audit fields, dropping the rest.", AUDIT_EXTRA_MAX);
                        break;
                }
                r = audit_entry_add(e, *x, nl, eq + 1, field_name_is_secret(*x, nl));
                if (r < 0)
                        return r;
                n_extra++;
        }
        return 0;
}

static int audit_send_journal(const AuditEntry *e, AuditEvent ev, int priority) {
        char mid[sizeof("MESSAGE_ID=") + 32], prio[sizeof("PRIORITY=") + 12];   /* a 128-bit id in hex; an int */
        const char *unit = log_unit_field();
        _cleanup_free_ char *ident = NULL;
        struct iovec iov[AUDIT_FIELDS_MAX + 4];
        char *bufs[AUDIT_FIELDS_MAX] = {};
        size_t n = 0;
        int r;

        /* sd_journal_sendv() reports success when journald is not there at all; the event would be lost. */
        if (access(JOURNALD_SOCKET, F_OK) < 0)
                return -errno;

        r = -ENOMEM;
        snprintf(mid, sizeof(mid), "MESSAGE_ID=%s", audit_event_message_id(ev));
        snprintf(prio, sizeof(prio), "PRIORITY=%d", priority);
        if (asprintf(&ident, "SYSLOG_IDENTIFIER=%s", program_invocation_short_name) < 0)
                ident = NULL;
        if (!ident)
                goto finish;
        iov[n++] = (struct iovec) { .iov_base = mid, .iov_len = strlen(mid) };
        iov[n++] = (struct iovec) { .iov_base = prio, .iov_len = strlen(prio) };
        iov[n++] = (struct iovec) { .iov_base = ident, .iov_len = strlen(ident) };
        if (unit)       /* journalctl -u finds the record when its sender has exited before journald read it */
                iov[n++] = (struct iovec) { .iov_base = (char *) unit, .iov_len = strlen(unit) };

        /* Values are data, never a format: each field is one "NAME=value" iovec, which sd_journal_sendv()
         * sends binary-safe, newlines included. */
        for (size_t i = 0; i < e->n; i++) {
                const AuditField *fld = &e->fields[i];
                size_t vl = strlen(fld->value);

                /* an extra used as it came is "NAME=value" already */
                if (fld->value == fld->name + fld->name_len + 1 && fld->name[fld->name_len] == '=') {
                        iov[n++] = (struct iovec) { .iov_base = (char *) fld->name, .iov_len = fld->name_len + 1 + vl };
                        continue;
                }
                bufs[i] = malloc(fld->name_len + 1 + vl);
                if (!bufs[i])
                        goto finish;
                memcpy(bufs[i], fld->name, fld->name_len);
                bufs[i][fld->name_len] = '=';
                memcpy(bufs[i] + fld->name_len + 1, fld->value, vl);
                iov[n++] = (struct iovec) { .iov_base = bufs[i], .iov_len = fld->name_len + 1 + vl };
        }
        r = sd_journal_sendv(iov, (int) n);
finish:
        for (size_t i = 0; i < e->n; i++)
                free(bufs[i]);
        return r;
}

/* A value on one console line: control characters escaped; quoted when it has blanks or quotes. Written
 * at p, which has room for 4 bytes per byte of s and 2 quotes (audit_write_console() sizes it); returns
 * the end. Runs of plain bytes are copied whole: a record is written for every proxied request. */
/* The bytes that go out as they are: printable ASCII but '"' and '\\', and UTF-8's high bytes. A table:
 * the test per byte was most of a record's console line. */
static bool console_plain[256];

static void console_plain_init(void) {
        for (unsigned c = 0; c < 256; c++)
                console_plain[c] = (c >= ' ' && c != 0x7f && c != '"' && c != '\\') || c >= 0x80;
}

static char *escaped_stpcpy(char *p, const char *s, bool quote_if_needed) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        bool quote = quote_if_needed && (*s == 0 || strpbrk(s, " \t\n\r\"\\'"));
        static const char hex[] = "0123456789abcdef";

        (void) pthread_once(&once, console_plain_init);
        if (quote)
                *p++ = '"';
        for (;;) {
                size_t run = 0;
                while (console_plain[(unsigned char) s[run]])
                        run++;
                p = mempcpy(p, s, run);
                s += run;
                if (*s == 0)
                        break;
                switch (*s) {
                case '\n':
                        p = mempcpy(p, "\\n", 2);
                        break;
                case '\t':
                        p = mempcpy(p, "\\t", 2);
                        break;
                case '\r':
                        p = mempcpy(p, "\\r", 2);
                        break;
                case '"':
                case '\\':
                        if (quote)
                                *p++ = '\\';
                        *p++ = *s;
                        break;
                default:                /* other control characters and DEL */
                        *p++ = '\\';
                        *p++ = 'x';
                        *p++ = hex[(unsigned char) *s >> 4];
                        *p++ = hex[(unsigned char) *s & 0xf];
                }
                s++;
        }
        if (quote)
                *p++ = '"';
        return p;
}

static bool audit_field_is(const AuditField *fld, const char *name) {
        return fld->name_len == strlen(name) && memcmp(fld->name, name, fld->name_len) == 0;
}

/* "run-finished: MESSAGE [LOOP_CHANNEL=demo LOOP_SESSION=...]", built in one allocation sized first */
static int audit_write_console(const AuditEntry *e, AuditEvent ev) {
        _cleanup_free_ char *line = NULL;
        const char *event = audit_event_to_string(ev);
        size_t size = strlen(event) + sizeof(": ") + sizeof(" []\n");
        bool first = true;
        char *p;

        for (size_t i = 0; i < e->n; i++)
                size += 1 + e->fields[i].name_len + 1 + 4 * strlen(e->fields[i].value) + 2;
        line = malloc(size);
        if (!line)
                return -ENOMEM;
        p = stpcpy(stpcpy(line, event), ": ");
        for (size_t i = 0; i < e->n; i++)
                if (audit_field_is(&e->fields[i], "MESSAGE"))
                        p = escaped_stpcpy(p, e->fields[i].value, false);
        for (size_t i = 0; i < e->n; i++) {
                const AuditField *fld = &e->fields[i];
                if (audit_field_is(fld, "MESSAGE") || audit_field_is(fld, "LOOP_EVENT"))
                        continue;
                p = stpcpy(p, first ? " [" : " ");
                first = false;
                p = mempcpy(p, fld->name, fld->name_len);
                *p++ = '=';
                p = escaped_stpcpy(p, fld->value, true);
        }
        p = stpcpy(p, first ? "\n" : "]\n");
        assert((size_t) (p - line) < size);
        return loop_write(STDERR_FILENO, line, (size_t) (p - line));
}

/* The entry of message, errno restored to saved after it (audit_log() took it before formatting). */
static int audit_log_saved(AuditEvent e, int priority, const AuditFields *f, const char *message, int saved) {
        AuditEntry entry = {};
        LogTarget target;
        int r;

        assert(e >= 0 && e < _AUDIT_EVENT_MAX);
        assert(priority >= LOG_EMERG && priority <= LOG_DEBUG);
        assert(message);

        target = log_resolve_target();
        if (target == LOG_TARGET_NULL)
                return 0;

        pthread_mutex_lock(&audit_secrets_lock);
        r = audit_entry_fill(&entry, e, message, f);
        pthread_mutex_unlock(&audit_secrets_lock);
        if (r < 0)
                goto finish;    /* never send what could not be redacted */

        if (target == LOG_TARGET_JOURNAL) {
                r = audit_send_journal(&entry, e, priority);
                if (r >= 0)
                        goto finish;
                log_debug_errno(r, "Failed to send an audit entry to the journal, writing it to stderr: %m");
        } else {
                /* A command on a terminal (loop run, loop shell) on a host with journald: the record goes to
                 * the journal all the same (it is a record, not chatter), and to the terminal as its level
                 * allows. Only LOOP_LOG_TARGET=console keeps it off the journal. */
                if (!log_target_was_chosen())
                        (void) audit_send_journal(&entry, e, priority);  /* no journald: the console only */
                if (priority > log_get_max_level()) {
                        r = 0;
                        goto finish;
                }
        }
        r = audit_write_console(&entry, e);
finish:
        audit_entry_done(&entry);
        errno = saved;
        return r < 0 ? r : 0;
}

int audit_log(AuditEvent e, int priority, const AuditFields *f, const char *format, ...) {
        _cleanup_free_ char *message = NULL;
        va_list ap;
        int saved = errno, r;

        assert(format);
        if (log_resolve_target() == LOG_TARGET_NULL)
                return 0;

        errno = saved;          /* for %m */
        va_start(ap, format);
        r = strprintf_va(&message, format, ap);
        va_end(ap);
        if (r < 0)
                return r;
        r = audit_log_saved(e, priority, f, message, saved);
        explicit_bzero(message, strlen(message));       /* the record may have used it as it was */
        return r;
}

int audit_log_message(AuditEvent e, int priority, const AuditFields *f, const char *message) {
        return audit_log_saved(e, priority, f, message, errno);
}
