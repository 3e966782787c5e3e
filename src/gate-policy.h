/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The security gate's policy: what `loop syscallwrap` decides inside the container for every trapped
 * syscall. Pure logic, no I/O beyond reading the policy file: the supervisor resolves paths and reads
 * argv from the caller, this file only matches them against rules.
 *
 * The policy document is the reference's gate-policy.json:
 *   {default_decision, path_rules:[{pattern,decision,message}],
 *    command_rules:[{commands[],args_patterns[],decision,message}],
 *    file_rules:[{paths[],operations[],decision,message}]}
 * Rules are checked in order, first match wins; ids are "path[i]", "cmd[i]", "file[i]" (index in the
 * compiled document) or "default". The runner writes one document per container (gate_policy_document():
 * the injected per-container rules, the channel's configured rules, then the default rules), the container
 * compiles it at start; a document that fails to compile stops the container with the reason. */

#include "config.h"

typedef enum GateKind {
        GATE_KIND_CONNECT,              /* connect() to an AF_UNIX path */
        GATE_KIND_EXEC,                 /* execve/execveat */
        GATE_KIND_FILE,                 /* openat, openat2, renameat2, unlinkat, linkat, symlinkat, fchmodat,
                                         * fchownat, mkdirat */
        _GATE_KIND_MAX,
        _GATE_KIND_INVALID = -EINVAL,
} GateKind;

const char *gate_kind_to_string(GateKind k);    /* "connect", "execve", "file" (the protocol's kind) */
GateKind gate_kind_from_string(const char *s);

#define GATE_RULE_ID_MAX 32U
#define GATE_POLICY_FILE_MAX (4U * 1024U * 1024U)
#define GATE_POLICY_RULES_MAX 4096U     /* rules of one kind in a document, at most */

typedef struct GateVerdict {
        Decision decision;
        char rule_id[GATE_RULE_ID_MAX]; /* "path[0]", "cmd[3]", "file[12]", "default" */
        const char *message;            /* the rule's message (owned by the policy), or NULL */
} GateVerdict;

typedef struct GatePolicy GatePolicy;

/* The per-container document: injected rules first (deny /etc/loop/**; approve writes to the project's
 * {work_dir}/.loop config files; allow {work_dir}/** after the denies; rm allowed when every argument is
 * inside the workspace), then cfg's rules in their order, then the built-in default rules, and cfg's
 * default_decision. */
int gate_policy_document(const AgentGateConfig *cfg, const char *work_dir, json_object **ret);

/* Compiles a document. On a compile error (empty pattern, bad regex, bad glob, unknown operation or
 * decision, wrong type, too many rules) returns -EINVAL and a one-line reason naming the rule in
 * *ret_error (allocated; may be NULL when the caller does not want it). */
int gate_policy_compile(json_object *doc, GatePolicy **ret, char **ret_error);
/* Reads (at most GATE_POLICY_FILE_MAX bytes) and compiles a policy file. */
int gate_policy_load_file(const char *path, GatePolicy **ret, char **ret_error);
GatePolicy *gate_policy_free(GatePolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(GatePolicy *, gate_policy_free);

/* The checks never fail: a request they cannot judge gets the stricter of the matching decisions. The
 * inputs are what the supervisor resolved:
 *   connect: the absolute socket path, or "@name" for an abstract socket;
 *   exec:    argv as the caller passed it (wrappers are unwrapped here) and the caller's cwd, absolute;
 *   file:    the cleaned absolute path with symlinks resolved (the last component not followed for
 *            delete and link, see the reference), and one operation. */
void gate_policy_check_connect(const GatePolicy *p, const char *socket_path, GateVerdict *ret);
void gate_policy_check_exec(const GatePolicy *p, char * const *argv, const char *cwd, GateVerdict *ret);
void gate_policy_check_file(const GatePolicy *p, FileOp op, const char *path, GateVerdict *ret);

/* The index in argv of the real command after unwrapping env, sudo, nice, ionice, chrt, timeout, nohup,
 * unshare, setsid, taskset, stdbuf, script and ld-linux* (their options and K=V arguments dropped, "--"
 * ends options). Returns the count of argv when nothing is left (e.g. a bare "env"). */
size_t gate_unwrap_argv(char * const *argv);

/* "**" crosses '/', "*" and "?" do not, [...] classes as in fnmatch(3). */
bool gate_glob_match(const char *pattern, const char *path);

/* Lexical cleaning of an absolute path: "//", "/./", "/x/../" removed, ".." at the root stays at the root,
 * no trailing '/'. Returns NULL on ENOMEM or when path is not absolute. */
char *gate_path_clean(const char *path);

/* Approval cache keys of the reference: "connect:<path>", "execve:<base>:<first 2 args>",
 * "file:<op>:<path>". Allocated; NULL on ENOMEM. */
char *gate_cache_key_connect(const char *socket_path);
char *gate_cache_key_exec(char * const *argv);
char *gate_cache_key_file(FileOp op, const char *path);
