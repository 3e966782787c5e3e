/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "io-util.h"
#include "audit.h"
#include "log.h"
#include "string-util.h"

#define LOG_LINE_MAX 2048

static LogTarget log_target = LOG_TARGET_AUTO;
static bool log_target_chosen;  /* by LOOP_LOG_TARGET or log_set_target(), not found out by log_setup() */
static int log_max_level = LOG_INFO;
static int kmsg_fd = -EBADF;
/* One field ("KEY=value") added to every journal record of this process: what a channel's runner logs
 * carries LOOP_CHANNEL= like its audit records, so that `journalctl LOOP_CHANNEL=NAME` finds the reason
 * a run could not start, not only the record saying that it could not. */
static char *log_context_field;
/* The last message logged at LOG_ERR or worse by this thread, for a caller that reports a failure
 * further up (the runner puts the reason into the message's audit record and its queue entry). */
static _Thread_local char log_last_error_buf[LOG_LINE_MAX];

static const char * const log_target_table[_LOG_TARGET_MAX] = {
        [LOG_TARGET_AUTO] = "auto",
        [LOG_TARGET_CONSOLE] = "console",
        [LOG_TARGET_JOURNAL] = "journal",
        [LOG_TARGET_KMSG] = "kmsg",
        [LOG_TARGET_NULL] = "null",
};

static const char * const log_level_table[] = {
        [LOG_EMERG] = "emerg",
        [LOG_ALERT] = "alert",
        [LOG_CRIT] = "crit",
        [LOG_ERR] = "err",
        [LOG_WARNING] = "warning",
        [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info",
        [LOG_DEBUG] = "debug",
};

LogTarget log_target_from_string(const char *s) {
        int i = string_table_lookup(log_target_table, ELEMENTSOF(log_target_table), s);

        if (i >= 0)
                return (LogTarget) i;
        if (streq(s, "stderr"))
                return LOG_TARGET_CONSOLE;
        return _LOG_TARGET_INVALID;
}

int log_level_from_string(const char *s) {
        int i = string_table_lookup(log_level_table, ELEMENTSOF(log_level_table), s);

        if (i >= 0)
                return i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        return -EINVAL;
}

void log_set_target(LogTarget target) {
        log_target = target;
        log_target_chosen = target != LOG_TARGET_AUTO;
}

LogTarget log_get_target(void) {
        return log_target;
}

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

/* True when stderr is the stream systemd connected to the journal ($JOURNAL_STREAM is "dev:inode"). */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

static void log_parse_environment(void) {
        const char *e;

        e = getenv("LOOP_LOG_LEVEL");
        if (e) {
                int l = log_level_from_string(e);
                if (l >= 0)
                        log_max_level = l;
        }
        e = getenv("LOOP_LOG_TARGET");
        if (e) {
                LogTarget t = log_target_from_string(e);
                if (t >= 0)
                        log_target = t;
        }
}

void log_setup(void) {
        log_parse_environment();
        if (log_target != LOG_TARGET_AUTO)
                log_target_chosen = true;
        else
                log_target = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_CONSOLE;
}

bool log_target_was_chosen(void) {
        (void) log_resolve_target();
        return log_target_chosen;
}

LogTarget log_resolve_target(void) {
        if (log_target == LOG_TARGET_AUTO)
                log_setup();
        return log_target;
}

void log_setup_generator(void) {
        log_parse_environment();
        /* systemd >= 251 sets $SYSTEMD_SCOPE for the generators it runs; their stderr goes nowhere useful. */
        if (log_target == LOG_TARGET_AUTO)
                log_target = getenv("SYSTEMD_SCOPE") ? LOG_TARGET_KMSG : LOG_TARGET_CONSOLE;
        if (log_target == LOG_TARGET_KMSG) {
                kmsg_fd = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC);
                if (kmsg_fd < 0)
                        log_target = LOG_TARGET_CONSOLE;
        }
}

static void write_console(int level, const char *buf) {
        struct iovec iov[2] = {
                { .iov_base = (char *) buf, .iov_len = strlen(buf) },
                { .iov_base = (char *) "\n", .iov_len = 1 },
        };
        (void) level;
        /* Nowhere left to report a failure to. */
        if (writev(STDERR_FILENO, iov, 2) < 0)
                return;
}

static void write_kmsg(int level, const char *buf) {
        char header[64];
        struct iovec iov[3];

        /* The facility is LOG_DAEMON, as for systemd's own generators. */
        snprintf(header, sizeof header, "<%d>%s[%d]: ", LOG_DAEMON | level,
                 program_invocation_short_name, (int) getpid());
        iov[0] = (struct iovec) { .iov_base = header, .iov_len = strlen(header) };
        iov[1] = (struct iovec) { .iov_base = (char *) buf, .iov_len = strlen(buf) };
        iov[2] = (struct iovec) { .iov_base = (char *) "\n", .iov_len = 1 };
        if (writev(kmsg_fd, iov, 3) < 0)
                write_console(level, buf);
}

/* snprintf into BUF and an iovec of what it holds (a field too long is cut, never unterminated). */
#define IOVEC_MAKE_STRING(buf, ...)                                                             \
        ({                                                                                      \
                int _l = snprintf((buf), sizeof(buf), __VA_ARGS__);                             \
                (struct iovec) { (buf), _l < 0 ? 0 : MIN((size_t) _l, sizeof(buf) - 1) };       \
        })

int log_set_context_field(const char *field) {
        char *f = NULL;

        if (field && (!strchr(field, '=') || strchr(field, '\n')))
                return -EINVAL;
        if (field && !(f = strdup(field)))
                return -ENOMEM;
        free(log_context_field);
        log_context_field = f;
        return 0;
}

const char *log_last_error(void) {
        return log_last_error_buf[0] ? log_last_error_buf : NULL;
}

void log_forget_last_error(void) {
        log_last_error_buf[0] = '\0';
}

/* journald names a record's unit (_SYSTEMD_UNIT) after the sender's cgroup, which it reads from /proc when
 * it gets to the datagram: a process that has exited by then is in no unit, and `journalctl -u` misses its
 * record. That is the last words of every oneshot (`loop reconcile`'s removals, a runner's queue-done): about
 * one record in ten on an idle machine. `journalctl -u NAME` also matches OBJECT_SYSTEMD_UNIT=NAME from
 * _UID=0 (a record about the unit), so a root service names its unit itself. Looked up once, while the
 * process is surely alive; a command run from a terminal (a session scope) adds nothing. */
static char log_unit_buf[sizeof("OBJECT_SYSTEMD_UNIT=") + 256];
static pthread_once_t log_unit_once = PTHREAD_ONCE_INIT;

static void log_unit_init(void) {
        _cleanup_free_ char *unit = NULL;

        if (getuid() != 0 || sd_pid_get_unit(0, &unit) < 0 || !endswith(unit, ".service") ||
            strlen(unit) >= 256)
                return;
        (void) snprintf(log_unit_buf, sizeof log_unit_buf, "OBJECT_SYSTEMD_UNIT=%s", unit);
}

const char *log_unit_field(void) {
        (void) pthread_once(&log_unit_once, log_unit_init);
        return log_unit_buf[0] ? log_unit_buf : NULL;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        char buf[LOG_LINE_MAX];
        int saved = errno;
        va_list ap;

        if (error < 0)
                error = -error;

        /* Make %m print the error we were given. */
        errno = error;
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);

        /* Secrets registered for the audit stream (audit_add_secret()) never reach a log line either. */
        _cleanup_free_ char *redacted = NULL;
        int q = audit_redact(buf, &redacted);
        if (q > 0)
                (void) snprintf(buf, sizeof buf, "%s", redacted);
        else if (q < 0)
                (void) snprintf(buf, sizeof buf, "[a message was dropped: out of memory while redacting it]");

        if (level <= LOG_ERR)
                (void) snprintf(log_last_error_buf, sizeof log_last_error_buf, "%s", buf);

        switch (log_target) {
        case LOG_TARGET_NULL:
                break;
        case LOG_TARGET_JOURNAL: {
                char fbuf[LOG_LINE_MAX / 4], lbuf[32], mbuf[LOG_LINE_MAX + 8], pbuf[16], ebuf[24];
                const char *unit = log_unit_field();
                struct iovec iov[5];
                size_t n = 0;

                snprintf(fbuf, sizeof fbuf, "CODE_FILE=%s", file);
                snprintf(lbuf, sizeof lbuf, "CODE_LINE=%d", line);
                iov[n++] = IOVEC_MAKE_STRING(mbuf, "MESSAGE=%s", buf);
                iov[n++] = IOVEC_MAKE_STRING(pbuf, "PRIORITY=%i", level);
                if (error > 0)
                        iov[n++] = IOVEC_MAKE_STRING(ebuf, "ERRNO=%i", error);
                if (log_context_field)
                        iov[n++] = (struct iovec) { log_context_field, strlen(log_context_field) };
                if (unit)
                        iov[n++] = (struct iovec) { (char *) unit, strlen(unit) };
                if (sd_journal_sendv_with_location(fbuf, lbuf, func, iov, (int) n) >= 0)
                        break;
                write_console(level, buf);
                break;
        }
        case LOG_TARGET_KMSG:
                write_kmsg(level, buf);
                break;
        default:
                write_console(level, buf);
        }

        errno = saved;
        return -error;
}
