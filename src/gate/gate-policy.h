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
#include "gate-glob.h"
#include "gate-unwrap.h"

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

/* The rule id of a verdict the checks could not make (out of memory, an argv too ambiguous to unwrap, an
 * invalid operation): its decision is always deny. */
#define GATE_RULE_ID_ERROR "error"
/* The rule id of a name in a case-folding directory the gate cannot fold as the kernel does (not ASCII):
 * always deny. */
#define GATE_RULE_ID_CASEFOLD "casefold"

typedef struct GateVerdict {
        Decision decision;
        char rule_id[GATE_RULE_ID_MAX]; /* "path[0]", "cmd[3]", "file[12]", "default", "error" */
        const char *message;            /* the rule's message (owned by the policy), or NULL */
        bool needs_cwd;                 /* exec checked with no cwd: a rule wanted it for a relative operand */
        bool by_operand_names;          /* exec: an args_within rule was weighed for some reading, and
                                         * it compares the operands' names (lexically cleaned) with its
                                         * directory: unless denied anyway, the caller checks again with
                                         * the operands resolved (symlinks followed) */
} GateVerdict;

typedef struct GatePolicy GatePolicy;

/* The per-container document: injected rules first (deny everything under /etc/loop; approve writes to
 * the project's {work_dir}/.loop config files; allow everything under {work_dir} after the denies; rm
 * allowed when every argument is inside the workspace), then cfg's rules in their order, then the built-in
 * default rules, and cfg's default_decision.
 *
 * The exact order, first match wins (see gate-policy.c for the rules themselves):
 *   path_rules:    cfg's rules; docker.sock.host deny; docker.sock allow.
 *   command_rules: cfg's rules; rm inside {work_dir} allow; rm inside /tmp allow; recursive rm of an
 *                  absolute or ".." path deny.
 *   file_rules:    /etc/loop and below deny; the {work_dir}/.loop config files approve (every modifying
 *                  operation); cfg's rules; the default denies (process memory, shadow/sudoers/host keys,
 *                  credential dirs, agent config and shell rc writes, system dir writes); {work_dir} and
 *                  below allow; {home} and below allow; /tmp, /var/tmp allow; reads of /proc, /sys allow.
 * So a channel rule overrides a default (it comes first), but neither can override /etc/loop or the .loop
 * approval, and the workspace allow never beats a deny (a .ssh dir inside the workspace stays denied).
 * cfg may be NULL (no channel rules, default_decision allow). work_dir must be absolute and not "/" (or
 * NULL: no workspace rules); -EINVAL otherwise. */
int gate_policy_document(const AgentGateConfig *cfg, const char *work_dir, json_object **ret);
/* The same, knowing the agent's HOME in the container (NULL or "/": as gate_policy_document(); relative:
 * -EINVAL): its shell rc files are denied like those under /root and /home/NAME, and HOME and below is
 * allowed after the denies, like the workspace, because the agent keeps its state there. */
int gate_policy_document_home(const AgentGateConfig *cfg, const char *work_dir, const char *home,
                              json_object **ret);

/* The command names (literal basenames, no glob) that p denies whatever their arguments: the first rule
 * that can match the name without conditions is a deny, and every conditional rule before it is a deny
 * too. These are the ones a static floor may refuse to execute (gate-exec-floor.h). */
int gate_policy_denied_commands(const GatePolicy *p, char ***ret);
/* Whether an exec's verdict can depend on more than the file it runs: false only when the default allows
 * and every command rule denies plain names outright (the exec floor's commands, which it enforces on the
 * file). Otherwise what the kernel reads after the check must be what was checked (gate-mm.h). */
bool gate_policy_exec_reads_memory(const GatePolicy *p);
/* "exec_shared_memory": "check" (gates.agentgate): an exec whose arguments another task sharing the
 * caller's memory could still change is decided on them as read instead of refused. Racy by nature (a
 * sibling thread can change them before the kernel reads them again); for Go toolchains and other
 * multi-threaded programs that exec, at the operator's choice. */
bool gate_policy_exec_shared_memory_checked(const GatePolicy *p);

/* Puts a deny of every modifying operation on each of paths (absolute; a directory with everything
 * below it) in front of doc's file rules, so no channel rule or workspace allow comes before it: the work
 * dir's guarded paths (protected_paths_guarded(): git's control surface, tool settings) must neither
 * change nor appear, and a read-only mount cannot stop a file from appearing. No paths: doc unchanged. */
int gate_policy_document_guard(json_object *doc, char * const *paths);

/* Besides the reference's fields, a command rule may carry "args_within": "/abs/dir" (the document uses it
 * for "rm inside the workspace"): the rule then matches only when the command has at least one operand
 * and every operand (the arguments after unwrapping that do not start with '-', and all of them after
 * "--"), resolved against the caller's cwd and cleaned lexically, lies strictly inside that directory. The
 * check is lexical: symlinks are the file rules' business (they see resolved paths). A relative operand
 * with no absolute cwd is not inside. The directory must be absolute and not "/".
 *
 * Compiles a document. On a compile error (empty pattern, bad regex, bad glob, unknown operation or
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
 *            with a NULL cwd a relative operand is never inside an args_within directory, and the
 *            verdict says needs_cwd when that made a difference to a rule: a supervisor may check
 *            without the cwd first and read it only then;
 *   file:    the cleaned absolute path with symlinks resolved (the last component not followed for
 *            delete and link, see the reference), and one operation. */
void gate_policy_check_connect(const GatePolicy *p, const char *socket_path, GateVerdict *ret);
void gate_policy_check_exec(const GatePolicy *p, char * const *argv, const char *cwd, GateVerdict *ret);
/* As gate_policy_check_exec(), also knowing the path the kernel is asked to execute (execve's pathname as
 * passed, made absolute, symlinks NOT resolved; for execveat the resolved fd or dirfd path). argv[0] is
 * chosen by the caller and may name something else ("ls" for /bin/rm), while a multi-call binary
 * (busybox) acts on argv[0]: both readings are checked and the stricter verdict wins. Supervisors should
 * use this one. */
void gate_policy_check_execve(const GatePolicy *p, const char *path, char * const *argv, const char *cwd,
                              GateVerdict *ret);
void gate_policy_check_file(const GatePolicy *p, FileOp op, const char *path, GateVerdict *ret);
/* As gate_policy_check_file(), for a path whose components from byte fold_from on lie in directories that
 * fold case (see gate-casefold.h; SIZE_MAX: none do): the stricter of the verdict on the path as written
 * and the one on the path and the rules' globs in lower case (the kernel would open .env for .ENV there),
 * and deny (GATE_RULE_ID_CASEFOLD) when those components have a non-ASCII byte, which the kernel folds by
 * Unicode rules the gate does not repeat. */
void gate_policy_check_file_folding(const GatePolicy *p, FileOp op, const char *path, size_t fold_from,
                                    GateVerdict *ret);
/* Whether folding could make a difference to path's verdict: whether it would be stricter were every
 * component of path in a folding directory (fold_from 0). When not, no directory need be asked. */
bool gate_policy_check_file_fold_matters(const GatePolicy *p, FileOp op, const char *path);

/* Approval cache keys: "connect:<path>", "file:<op>:<path>" (the reference's), and for an exec
 * "execve:<file>:<argv as a JSON array>" with the file that runs and every argument, not the reference's
 * basename and two arguments: approving "uname -s -n" for the session must not allow "uname -a", nor a
 * "uname" elsewhere. Allocated; NULL on ENOMEM (or a file name beyond any key). */
char *gate_cache_key_connect(const char *socket_path);
char *gate_cache_key_exec(const char *file, char * const *argv);
char *gate_cache_key_file(FileOp op, const char *path);
