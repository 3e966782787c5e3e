/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <sys/stat.h>

#include "cgroup-freeze.h"
#include "dockerproxy-forward.h"
#include "dockerproxy-nested.h"
#include "dockerproxy-pin.h"
#include "io-util.h"
#include "log.h"
#include "strv.h"
#include "text-escape.h"

/* ---- freezing the channel around a start ---- */

/* Thaws what this request froze (a no-op when it froze nothing or thawed already), before the client
 * hears anything: every answer goes through here. A cgroup gone with its container needs no thaw; one
 * that cannot be thawed stays in the record, which the next start of the service (or its ExecStopPost=)
 * thaws. */
void proxy_conn_thaw(ProxyConn *c) {
        int failed = 0;

        if (!c->start_locked)           /* nothing is frozen but under the lock */
                return;
        STRV_FOREACH(cg, c->frozen) {
                int r = cgroup_set_frozen(c->frozen_root_fd, *cg, false);
                if (r < 0 && r != -ENOENT) {
                        log_error_errno(r, "Cannot thaw cgroup %s of channel %s: %m", *cg, c->proxy->channel);
                        failed = r;
                }
        }
        if (failed == 0 && cgroup_freeze_record_remove(c->proxy->state_dir) < 0)
                log_warning("Cannot remove the record of the frozen cgroups in %s, ignoring.", c->proxy->state_dir);
        if (c->froze)
                c->frozen_usec = clock_usec(CLOCK_MONOTONIC) - c->frozen_since;
        c->frozen = strv_free(c->frozen);
        c->frozen_root_fd = safe_close(c->frozen_root_fd);
        /* released here, not when the request ends: an attach goes on streaming after the thaw (and
         * the start it waits for needs the lock) */
        c->start_locked = false;
        pthread_mutex_unlock(&c->proxy->start_lock);
}

/* Refuses a start of a pinned container that cannot be made with the channel frozen; thaws first
 * (proxy_conn_reply()), so nothing stays frozen. */
static int conn_refuse_unfrozen(ProxyConn *c, int error, const char *what) {
        _cleanup_free_ char *msg = NULL;

        log_warning_errno(error, "Channel %s: %s, refusing the start of a container with pinned binds: %m",
                          c->proxy->channel, what);
        if (asprintf(&msg, "the channel's containers cannot be frozen for this start (%s: %s); a container "
                     "with pinned binds is never started unfrozen", what, strerror(-error)) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        c->decision = "deny";
        return proxy_conn_reply(c, 403, "bind-pin", msg), -EPERM;
}

/* The cgroup of one running container of the channel (list entry o): its init's unified cgroup, cut at
 * the component that names the container. 0 with NULL when it has no process (it stopped meanwhile). */
static int container_cgroup(Engine *e, json_object *o, char **ret) {
        _cleanup_(json_object_putp) json_object *inspect = NULL;
        _cleanup_free_ char *proc = NULL, *text = NULL, *unified = NULL;
        json_object *id, *state, *pid;
        size_t size;
        int64_t n;
        int r;

        *ret = NULL;
        if (!json_object_object_get_ex(o, "Id", &id) || !json_object_is_type(id, json_type_string) ||
            strlen(json_object_get_string(id)) != 64)
                return -EBADMSG;
        r = engine_container_inspect(e, json_object_get_string(id), &inspect);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(inspect, "State", &state) || !json_object_object_get_ex(state, "Pid", &pid) ||
            !json_object_is_type(pid, json_type_int))
                return -EBADMSG;
        n = json_object_get_int64(pid);
        if (n <= 0)
                return 0;
        if (n > INT32_MAX || asprintf(&proc, "/proc/%" PRIi64 "/cgroup", n) < 0)
                return n > INT32_MAX ? -EBADMSG : -ENOMEM;
        r = read_full_file_at(AT_FDCWD, proc, CGROUP_PROC_FILE_MAX, true, &text, &size);
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        r = cgroup_proc_unified_path(text, &unified);
        if (r < 0)
                return r;
        return cgroup_path_of_container(unified, json_object_get_string(id), ret);
}

/* Freezes every running container of the channel (label loop-channel=NAME: the agent's and the nested
 * ones), the processes that can swap a bind source in the work dir. The cgroups are recorded before the
 * first is frozen; a cgroup frozen already (a paused container) is left as it is, and not thawed after.
 * Replies itself (403, rule bind-pin) when anything fails, having thawed what it froze. */
static int conn_freeze_channel(ProxyConn *c) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_close_ int root_fd = -EBADF;
        _cleanup_free_ char *label = NULL;
        int r;

        c->froze = true;
        c->n_frozen = 0;
        c->frozen_since = clock_usec(CLOCK_MONOTONIC);
        r = cgroup2_root_open(&root_fd);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, "no cgroup2 hierarchy");
        if (asprintf(&label, PROXY_LABEL_CHANNEL "=%s", c->proxy->channel) < 0 || proxy_engine_open(c->proxy, &e) < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        r = engine_container_list(e, label, false, &list);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, "the engine cannot list the channel's running containers");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                _cleanup_free_ char *cg = NULL;
                r = container_cgroup(e, json_object_array_get_idx(list, i), &cg);
                if (r < 0)
                        return conn_refuse_unfrozen(c, r, "a running container's cgroup cannot be found");
                if (!cg || strv_contains(paths, cg))
                        continue;
                r = cgroup_is_frozen(root_fd, cg);
                if (r < 0)
                        return conn_refuse_unfrozen(c, r, "a container's cgroup.freeze cannot be read");
                if (r > 0)
                        continue;
                if (strv_length(paths) >= CGROUP_FREEZE_MAX)
                        return conn_refuse_unfrozen(c, -E2BIG, "too many running containers");
                if (strv_consume(&paths, TAKE_PTR(cg)) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        }
        /* recorded first: a proxy that dies from here on leaves the list of what to thaw */
        r = cgroup_freeze_record_write(c->proxy->state_dir, paths);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, "the frozen cgroups cannot be recorded");
        c->frozen = TAKE_PTR(paths);
        c->frozen_root_fd = TAKE_FD(root_fd);
        r = cgroup_freeze_all(c->frozen_root_fd, c->frozen);
        if (r < 0)
                return conn_refuse_unfrozen(c, r, r == -ETIMEDOUT ? "a container did not freeze" :
                                                                    "a container's cgroup.freeze cannot be written");
        c->n_frozen = (unsigned) strv_length(c->frozen);
        return 0;
}

/* POST /containers/ID/start|restart|attach of a container with pinned binds: with the channel's containers
 * frozen (conn_freeze_channel()), the pins are checked once more and the start forwarded; nothing of the
 * channel runs between the check and the runtime's mount of the sources, so nothing can swap them. The
 * channel is thawed once the engine's answer is read (proxy_conn_forward()), or before a refusal
 * (proxy_conn_reply()), and in any case before this returns. One frozen start at a time. */
int proxy_conn_start_frozen(ProxyConn *c, json_object *inspect, const char *body, size_t body_size) {
        DockerProxy *p = c->proxy;
        int r;

        pthread_mutex_lock(&p->start_lock);
        c->start_locked = true;
        r = conn_freeze_channel(c);
        if (r < 0)
                r = 0;          /* answered */
        else {
                _cleanup_free_ char *changed = NULL, *msg = NULL, *shown = NULL;
                r = proxy_binds_verify(inspect, &changed);
                if (r < 0)
                        c->decision = "deny";
                if (r == -EXDEV) {
                        shown = text_escape_display(changed, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "the bind source %s changed since the container was created "
                                               "(checked again at start, the channel frozen)", shown) < 0)
                                r = proxy_conn_reply(c, 500, NULL, "out of memory");
                        else
                                r = proxy_conn_reply(c, 403, "bind-pin", msg);
                } else if (r < 0)
                        r = proxy_conn_reply(c, 403, "bind-pin", "the container's bind pins cannot be read");
                else
                        r = proxy_conn_forward(c, body, body_size, NULL, 0);
        }
        proxy_conn_thaw(c);           /* every path: a no-op when the answer or the refusal thawed already */
        return r;
}

/* POST /containers/ID/update of a container with pinned binds may not give it a restart policy: the
 * engine restarting it on its own would mount its binds by path, unchecked and unfrozen. Replies itself
 * when refused. */
/* Who a nested container that binds host paths runs as (dockerproxy-nested.h, proxy_container_run_as):
 * the agent, that is the calling process of the channel's container as the kernel saw it at connect.
 * Root there is not the agent (which never runs as root) and is refused. Root on the host (the operator,
 * tests) makes them as the work dir's owner, or as asked when that is root too: the caller is root on
 * the host already. 1 with the ids, 0 when nothing is forced, -EPERM. */
int proxy_conn_run_as(ProxyConn *c, uid_t *ret_uid, gid_t *ret_gid) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (c->peer_name) {
                if (c->peer_uid == 0 || c->peer_uid == (uid_t) -1 || c->peer_gid == (gid_t) -1)
                        return -EPERM;
                *ret_uid = c->peer_uid;
                *ret_gid = c->peer_gid;
                return 1;
        }
        if (c->peer_uid != 0)
                return -EPERM;          /* proxy_conn_peer_check() lets no one else in */
        if (!c->proxy->work_dir)
                return 0;
        fd = open(c->proxy->work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -EPERM;
        if (st.st_uid == 0)
                return 0;
        *ret_uid = st.st_uid;
        *ret_gid = st.st_gid;
        return 1;
}
