/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Logging: to the journal when stderr is connected to it (or LOOP_LOG_TARGET=journal), to /dev/kmsg for a
 * generator run by systemd, and to stderr otherwise. The *_errno() variants return the negative error, so
 * "return log_error_errno(r, "...: %m");" both logs and propagates; %m prints that error. */

#include <syslog.h>

#include "macro.h"

typedef enum LogTarget {
        LOG_TARGET_AUTO,
        LOG_TARGET_CONSOLE,
        LOG_TARGET_JOURNAL,
        LOG_TARGET_KMSG,
        LOG_TARGET_NULL,
        _LOG_TARGET_MAX,
        _LOG_TARGET_INVALID = -EINVAL,
} LogTarget;

/* Reads LOOP_LOG_TARGET and LOOP_LOG_LEVEL and picks the target for an ordinary program. */
void log_setup(void);
/* As log_setup(), but a generator run by systemd logs to /dev/kmsg. */
void log_setup_generator(void);

void log_set_target(LogTarget target);
LogTarget log_get_target(void);
/* Whether the target was chosen (LOOP_LOG_TARGET, log_set_target()) rather than found out by log_setup(). */
bool log_target_was_chosen(void);
/* The target, resolved as log_setup() does if nobody called it yet: never LOG_TARGET_AUTO. For writers
 * of their own (the audit stream) that must go where the logs go. */
LogTarget log_resolve_target(void);
void log_set_max_level(int level);
int log_get_max_level(void);
int log_level_from_string(const char *s);
LogTarget log_target_from_string(const char *s);

/* FIELD ("KEY=value", or NULL to drop it) is added to every journal record this process writes from
 * now on. -EINVAL for a field without '=' or with a newline. */
int log_set_context_field(const char *field);
/* The last message this thread logged at LOG_ERR or worse (after redaction); NULL when there was none
 * since the start or since log_forget_last_error(). */
const char *log_last_error(void);
void log_forget_last_error(void);
/* "OBJECT_SYSTEMD_UNIT=NAME.service" when this process is root in a system service, else NULL: every
 * journal record of such a process names its unit itself (see log.c). */
const char *log_unit_field(void);

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) _printf_(6, 7);

#define log_full_errno(level, error, ...)                                               \
        ({                                                                              \
                int _level = (level), _e = (error);                                     \
                _level <= log_get_max_level()                                           \
                        ? log_internal(_level, _e, __FILE__, __LINE__, __func__, __VA_ARGS__) \
                        : -(_e < 0 ? -_e : _e);                                         \
        })
#define log_full(level, ...) (void) log_full_errno(level, 0, __VA_ARGS__)

#define log_debug(...)   log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)    log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...)  log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...)   log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...)   log_full_errno(LOG_DEBUG, error, __VA_ARGS__)
#define log_info_errno(error, ...)    log_full_errno(LOG_INFO, error, __VA_ARGS__)
#define log_notice_errno(error, ...)  log_full_errno(LOG_NOTICE, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...)   log_full_errno(LOG_ERR, error, __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
