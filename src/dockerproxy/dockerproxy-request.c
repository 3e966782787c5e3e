/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "dockerproxy-access.h"
#include "dockerproxy-approval.h"
#include "dockerproxy-body.h"
#include "dockerproxy-build.h"
#include "dockerproxy-forward.h"
#include "dockerproxy-nested.h"
#include "dockerproxy-pin.h"
#include "dockerproxy-record.h"
#include "dockerproxy-request.h"

/* A build context is read whole before the engine sees any of it (its Dockerfile decides whether the
 * build runs), at most PROXY_BUILD_CONTEXT_MAX bytes, within this long; the connection is not kept. */
#define PROXY_BUILD_READ_TIMEOUT_USEC (120ULL * 1000000ULL)
#include "dockerproxy-settings.h"
#include "strv.h"
#include "text-escape.h"

static int conn_read_build_context(ProxyConn *c, char **ret, size_t *ret_size) {
        _cleanup_free_ char *body = NULL, *buf = NULL;
        HttpChunked chunked = { .framing_unlimited = true, .data_max = PROXY_BUILD_CONTEXT_MAX };
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_BUILD_READ_TIMEOUT_USEC;
        const char *in = c->in + c->head_size;
        size_t n_in = c->in_size - c->head_size, n = 0;
        bool done = false;

        if (!c->head.chunked && c->content_length > PROXY_BUILD_CONTEXT_MAX)
                return proxy_conn_reply(c, 413, "build", "the build context is larger than the proxy reads "
                                  "(PROXY_BUILD_CONTEXT_MAX)"), -EFBIG;
        body = malloc((c->head.chunked ? PROXY_BUILD_CONTEXT_MAX : (size_t) c->content_length) + 1);
        buf = malloc(PROXY_IO_BUFFER);
        if (!body || !buf)
                return proxy_conn_reply(c, 500, NULL, "out of memory"), -ENOMEM;
        for (;;) {
                if (c->head.chunked) {
                        size_t out = 0, used = 0;
                        /* data_max keeps what is written within the buffer */
                        int r = http_chunked_decode(&chunked, in, n_in, body + n, &out, &used);
                        n += out;
                        if (r == -EFBIG)
                                return proxy_conn_reply(c, 413, "build", "the build context is larger than the proxy reads "
                                                  "(PROXY_BUILD_CONTEXT_MAX)"), r;
                        if (r < 0)
                                return proxy_conn_reply(c, 400, "parse", "malformed chunked build context"), r;
                        done = r > 0;
                } else {
                        size_t k = MIN(n_in, (size_t) c->content_length - n);
                        memcpy(body + n, in, k);
                        n += k;
                        done = n == c->content_length;
                }
                if (done)
                        break;
                ssize_t k = proxy_recv_some(c->fd, buf, PROXY_IO_BUFFER, deadline);
                if (k == -ETIMEDOUT)
                        return proxy_conn_reply(c, 408, "parse", "the build context took too long"), -ETIMEDOUT;
                if (k <= 0) {
                        c->rule = "parse";
                        c->reason = strdup("the client left mid-request");
                        return -EPIPE;
                }
                in = buf;
                n_in = (size_t) k;
        }
        /* what followed the body in the buffer is dropped with the connection */
        c->complete = true;
        c->consumed = c->in_size;
        c->keep_alive = false;
        body[n] = 0;
        *ret = TAKE_PTR(body);
        *ret_size = n;
        return 0;
}

/* ---- one request ---- */

/* A create of a nested container, counted and forwarded under create_lock, so that parallel creates
 * cannot overshoot the channel's count: the forward's result, -EIO when the engine cannot count, or
 * -EDQUOT with the count in *ret_n (nothing sent to the client under the lock). */
static int conn_create_counted(ProxyConn *c, Engine *e, const char *body, uint64_t *ret_n) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&c->proxy->create_lock);
        uint64_t n = 0;

        if (proxy_count_nested(c->proxy, e, &n) < 0)
                return -EIO;
        if (n >= c->proxy->containers_max) {
                *ret_n = n;
                return -EDQUOT;
        }
        return proxy_conn_forward(c, body, strlen(body), NULL, 0);
}

/* A pause or unpause waits for a frozen start under way: in its middle it would change what that froze. */
static int conn_forward_paused(ProxyConn *c, const char *body, size_t body_size) {
        _cleanup_(proxy_mutex_unlockp) _unused_ pthread_mutex_t *lock = proxy_mutex_lock(&c->proxy->start_lock);

        return proxy_conn_forward(c, body, body_size, NULL, 0);
}


/* A request while it is decided: what each stage below found for the next. */
typedef struct ProxyRequest {
        const ProxyEndpoint *endpoint;
        bool stream;                            /* the body is streamed to the engine, not read whole */
        HttpRequest full;                       /* the request with its JSON body, when it has one */
        const char *body_sent;                  /* the JSON body as sent (in full), or empty */
        size_t body_sent_size;
        json_object *body;                      /* parsed, then rebuilt from the fields the proxy knows */
        char *context;                          /* a build's context, read whole */
        size_t context_size;
        ProxyVerdict verdict;
        json_object *start_inspect;             /* a start's container, checked again with the channel frozen */
        bool frozen_start, pause;
        char *forced;                           /* the body the engine gets, when the proxy wrote it */
} ProxyRequest;

static void request_done(ProxyRequest *q) {
        http_request_done(&q->full);
        json_object_put(q->body);
        json_object_put(q->start_inspect);
        free(q->context);
        free(q->forced);
}

static HttpLimits request_limits(void) {
        return (HttpLimits) { .header_size_max = PROXY_HEADER_SIZE_MAX, .headers_max = PROXY_HEADERS_MAX, .chunked = true };
}

/* Each stage returns 1 to go on to the next, or what proxy_conn_handle() returns: 0 when the request
 * was answered (or ended without a word), < 0 when the connection ends. */
/* The head, parsed strictly; the caller, checked once per connection. */
static int conn_read_head(ProxyConn *c, ProxyRequest *q) {
        HttpLimits limits = request_limits();
        int status = 0;
        int r;

        /* the head */
        for (;;) {
                if (c->start_usec == 0 && c->in_size > 0) {     /* a kept connection's next request began */
                        c->start_usec = clock_usec(CLOCK_MONOTONIC);
                        c->deadline_usec = c->start_usec + PROXY_HEAD_TIMEOUT_USEC;
                        /* the skeleton's deadline starts again with it too */
                        proxy_conn_head_end(c);
                        (void) proxy_conn_head_begin(c);
                }
                r = http_request_parse_head(c->in, c->in_size, &limits, &c->head, &c->head_size, &c->content_length, &status);
                if (r < 0)
                        return proxy_conn_reply(c, status, "parse", "malformed request");
                if (r > 0)
                        break;
                ssize_t k = proxy_conn_read_more(c);
                /* the skeleton shut the read side: its deadline (a backstop just after ours) or a stop */
                if (k == 0 && proxy_conn_head_expired(c))
                        k = -ETIMEDOUT;
                if (k == 0 && c->in_size == 0 && proxy_conn_stopping(c))
                        return 0;       /* a kept connection ended by a stop between requests */
                if (k == -ETIMEDOUT && c->in_size == 0 && c->n_requests > 0)
                        return 0;               /* a kept connection left idle: closed without a word */
                if (k == -ETIMEDOUT)
                        return proxy_conn_reply(c, 408, "parse", "the request took too long");
                if (k == -EFBIG)
                        return proxy_conn_reply(c, 431, "parse", "request head too large");
                if (k == -ENOMEM)
                        return proxy_conn_reply(c, 500, "parse", "out of memory");
                if (k <= 0) {
                        if (c->in_size == 0)
                                return 0;       /* a connection that never became a request: nothing to record */
                        c->status = 0;
                        c->rule = "parse";
                        c->reason = strdup(k == 0 ? "the client left mid-request" : "the client's connection failed");
                        return -EPIPE;
                }
        }

        proxy_conn_head_end(c);        /* the proxy's own deadline goes on for the body */

        /* once per connection: its peer is fixed at connect, and a container's labels never change */
        if (!c->peer_known) {
                r = proxy_conn_peer_check(c, c->peer_uid, &c->peer_name);
                if (r == -EPERM) {
                        c->unjournaled = !proxy_refusal_journaled(c->proxy, "caller", c->peer_pid, c->peer_uid);
                        r = proxy_conn_reply(c, 403, "caller", "only the channel's own containers may use its Docker API");
                        c->unjournaled = false;
                        return r;
                }
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked who is calling");
                c->peer_known = true;
        }
        return 1;
}

/* The target against the allow-list (the API version, the endpoint table), builds, pulls, imports and pushes. */
static int conn_check_target(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        int r;

        r = proxy_target_parse(c->head.path, c->head.query, TAKE_PTR(c->spare_query), &c->target);
        if (r == -ENOMEM)
                return proxy_conn_reply(c, 500, "parse", "out of memory");
        if (r < 0)
                return proxy_conn_reply(c, 400, "parse", "the request target cannot be read unambiguously");

        /* the allow-list comes first: what it does not name is refused whatever the rules say */
        if (!proxy_api_version_is_supported(c->target.version)) {
                _cleanup_free_ char *msg = NULL, *shown = text_escape_display(c->target.version, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "API version %s is not served (vMAJOR.MINOR, " PROXY_API_VERSION_MIN
                                       " or later)", shown) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                return proxy_conn_reply(c, 403, "api-version", msg);
        }
        q->endpoint = proxy_endpoint_lookup(c->head.method, c->target.unversioned);
        if (!q->endpoint) {
                _cleanup_free_ char *msg = NULL, *shown = text_escape_display(c->target.unversioned, PROXY_DISPLAY_MAX);
                if (!shown || asprintf(&msg, "%s %s is not an endpoint the proxy serves (not in its allow-list)",
                                       c->head.method, shown) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                return proxy_conn_reply(c, 403, "endpoint", msg);
        }

        /* builds run steps the proxy never sees (and read host files through buildah's bind mounts
         * from stages): off unless the channel says otherwise */
        if (streq(q->endpoint->pattern, "/build") && !p->build)
                return proxy_conn_reply(c, 403, "build", "builds are off for this channel (gates.docker_proxy.build)");
        /* POST /images/create is an import of the request body (fromSrc=-) only: a pull or an import
         * from a URL or a path reaches the engine's network or the host's files */
        if (streq(q->endpoint->pattern, "/images/create") && proxy_query_get(&c->target, "fromImage", NULL)) {
                static const char * const known[] = { "fromImage", "tag", "platform" };
                if (!proxy_query_only(&c->target, known, ELEMENTSOF(known)))
                        return proxy_conn_reply(c, 403, "pull", "a pull takes the parameters fromImage, tag and "
                                                "platform only (as the API spells them)");
                r = proxy_conn_check_registry(c, "pull", proxy_conn_query_string(c, "fromImage"), proxy_conn_query_string(c, "tag"));
                if (r < 0)
                        return 0;       /* answered */
        } else if (streq(q->endpoint->pattern, "/images/create")) {
                static const char * const known[] = { "fromSrc", "repo", "tag", "message", "changes", "platform" };
                json_object *src = proxy_query_get(&c->target, "fromSrc", NULL);
                if (!src || !streq_ptr(json_object_get_string(src), "-"))
                        return proxy_conn_reply(c, 403, "pull", "an import reads the request body only (fromSrc=-)");
                if (!proxy_query_only(&c->target, known, ELEMENTSOF(known)))
                        return proxy_conn_reply(c, 403, "pull", "an import takes the parameters fromSrc=-, repo, tag, "
                                                "message, changes and platform only (as the API spells them)");
        }

        /* a push: of the channel's own images, to a registry its egress policy allows */
        if (streq(q->endpoint->pattern, "/images/**/push")) {
                _cleanup_free_ char *name = strndup(c->target.unversioned + strlen("/images/"),
                                                    strlen(c->target.unversioned) - strlen("/images/") - strlen("/push"));
                if (!name)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                json_object_object_foreach(c->target.query, k, e) {
                        (void) e;
                        if (!streq(k, "tag"))
                                return proxy_conn_reply(c, 403, "push", "a push takes the parameter tag only");
                }
                if (proxy_conn_check_image_name(c, name, proxy_conn_query_string(c, "tag"), true) < 0)
                        return 0;       /* answered */
                if (proxy_conn_check_registry(c, "push", name, proxy_conn_query_string(c, "tag")) < 0)
                        return 0;       /* answered */
        }
        return 1;
}

/* A build's context or a JSON body read whole; a streamed body is left for the forward. */
static int conn_read_body(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        HttpLimits limits = request_limits();
        bool sent_continue = false;
        int status = 0;
        int r;

        /* a build's context is read whole: its Dockerfile decides (below) whether the engine gets it */
        if (streq(q->endpoint->pattern, "/build")) {
                const char *expect = http_request_header(&c->head, "Expect");
                if (c->content_length == 0 && !c->head.chunked)
                        return proxy_conn_reply(c, 400, "build", "a build without a build context (the request body) is refused");
                if (c->in_size == c->head_size && c->head.version_minor == 1 && expect &&
                    strcasecmp(expect, "100-continue") == 0) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                        if (proxy_send_all(c->fd, cont, sizeof(cont) - 1) < 0)
                                return -EPIPE;
                }
                r = conn_read_build_context(c, &q->context, &q->context_size);
                if (r == -EPIPE)
                        return r;
                if (r < 0)
                        return 0;       /* answered */
        }

        q->stream = q->endpoint->body == PROXY_BODY_STREAM;
        if (q->context)
                ;       /* read whole above */
        else if (q->stream && c->content_length == 0 && !c->head.chunked) {
                /* nothing to stream (a pull): a request like any other */
                c->complete = true;
                c->consumed = c->head_size;
                c->keep_alive = c->head.keep_alive;
        } else if (!q->stream && c->content_length == 0 && !c->head.chunked) {
                /* no body (most requests: lists, inspects, pings): the head parsed above is the whole
                 * request, not parsed a second time for a body of nothing */
                c->complete = true;
                c->consumed = c->head_size;
                c->keep_alive = c->head.keep_alive;
                /* an endpoint that takes no body keeps the empty one as it is (conn_decide()): the
                 * connection's own, not a new object a request */
                r = q->endpoint->body == PROXY_BODY_NONE ? proxy_conn_empty_body(c, &q->body) :
                                                           proxy_body_parse("", 0, &q->body);
                if (r < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
        } else if (!q->stream) {
                size_t max = PROXY_BODY_MAX;
                HttpParseInfo info;
                size_t consumed;

                (void) proxy_policy_wants_body(p->policy, c->head.method, c->target.unversioned, &max);
                limits.body_size_max = max;
                for (;;) {
                        r = http_request_parse(c->in, c->in_size, &limits, &q->full, &consumed, &status, &info);
                        if (r < 0)
                                return proxy_conn_reply(c, status, "parse", status == 413 ? "request body too large" : "malformed request body");
                        if (r > 0) {
                                c->complete = true;
                                c->consumed = consumed;
                                c->keep_alive = q->full.keep_alive;
                                break;
                        }
                        if (info.expect_continue && !sent_continue) {
                                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                                if (proxy_send_all(c->fd, cont, sizeof(cont) - 1) < 0)
                                        return -EPIPE;
                                sent_continue = true;
                        }
                        ssize_t k = proxy_conn_read_more(c);
                        if (k == -ETIMEDOUT)
                                return proxy_conn_reply(c, 408, "parse", "the request took too long");
                        if (k == -EFBIG)
                                return proxy_conn_reply(c, 413, "parse", "request body too large");
                        if (k == -ENOMEM)
                                return proxy_conn_reply(c, 500, "parse", "out of memory");
                        if (k <= 0) {
                                c->rule = "parse";
                                c->reason = strdup("the client left mid-request");
                                return -EPIPE;
                        }
                }
                r = proxy_body_parse(q->full.body, q->full.body_size, &q->body);
                q->body_sent = q->full.body;
                q->body_sent_size = q->full.body_size;
                if (r == -EFBIG)
                        return proxy_conn_reply(c, 413, "parse", "request body too large");
                if (r < 0)
                        return proxy_conn_reply(c, 400, "parse", "the JSON body cannot be read unambiguously "
                                          "(invalid, too deep, or keys that differ only in case)");
        }
        return 1;
}

/* The policy's verdict, and the body the engine gets rebuilt from the fields the proxy knows. */
static int conn_decide(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        ProxyVerdict http, bv = {};
        const char *content_type = http_request_header(&c->head, "Content-Type");
        bool http_kept;
        int r;

        /* an endpoint that takes no body gets none: a start with a HostConfig is the old API's create */
        if (q->endpoint->body == PROXY_BODY_NONE && q->body &&
            !(json_object_is_type(q->body, json_type_object) && json_object_object_length(q->body) == 0))
                return proxy_conn_reply(c, 400, "body", "this endpoint takes no request body");

        http_kept = c->http_verdict_path && streq(c->http_verdict_method, c->head.method) &&
                streq(c->http_verdict_path, c->target.unversioned);
        if (http_kept)
                http = c->http_verdict;
        else {
                proxy_policy_check_http(p->policy, c->head.method, c->target.unversioned, &http);
                free(c->http_verdict_path);
                c->http_verdict_path = strdup(c->target.unversioned);   /* NULL: not kept, checked again */
                snprintf(c->http_verdict_method, sizeof(c->http_verdict_method), "%s", c->head.method);
                c->http_verdict = http;
                c->body_verdict_plain_kept = false;
        }
        /* the body rules read the body, the query and the Content-Type besides the method and path: with
         * none of them (a ping, an inspect, a list without filters) their verdict is kept with the http
         * rules' for the connection's next such request to the same method and path */
        bool plain = !content_type && c->empty_body && q->body == c->empty_body &&
                json_object_object_length(c->target.query) == 0;
        if (plain && http_kept && c->body_verdict_plain_kept)
                bv = c->body_verdict_plain;
        else {
                proxy_policy_check_body(p->policy, c->head.method, c->target.unversioned, content_type, q->body,
                                        c->target.query, &bv);
                if (plain && c->http_verdict_path) {
                        c->body_verdict_plain = bv;
                        c->body_verdict_plain_kept = true;
                }
        }
        proxy_verdict_combine(&http, &bv, proxy_policy_default_decision(p->policy), &q->verdict);
        /* both PROXY_RULE_ID_MAX bytes, the verdict's NUL-terminated: copied whole, not through snprintf() */
        _Static_assert(sizeof(c->rule_buf) == sizeof(q->verdict.rule_id), "rule id buffers differ");
        memcpy(c->rule_buf, q->verdict.rule_id, sizeof(c->rule_buf));
        c->rule = c->rule_buf;
        if (q->verdict.decision == DECISION_DENY)
                return proxy_conn_reply(c, 403, c->rule, q->verdict.message ?: "denied by the channel's Docker API policy");

        /* the body the engine gets is one the proxy wrote, of fields it knows with values it checked; an
         * endpoint that takes none has an empty one (checked above), which it would rebuild as itself */
        if (q->endpoint->body != PROXY_BODY_STREAM && !(q->endpoint->body == PROXY_BODY_NONE && q->body)) {
                _cleanup_(json_object_putp) json_object *rebuilt = NULL;
                ProxyBodyRefusal refusal = {};
                r = proxy_body_rebuild(q->endpoint->body, q->body, &rebuilt, &c->fields, &refusal);
                if (r == -ENOMEM)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                if (r < 0) {
                        _cleanup_free_ char *msg = NULL, *shown = text_escape_display(refusal.field, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "%s%s%s", shown, isempty(shown) ? "" : " ",
                                               strna(refusal.reason)) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        free(c->fields);
                        c->fields = TAKE_PTR(shown);
                        return proxy_conn_reply(c, r == -EPERM ? 403 : 400, "body-schema", msg);
                }
                json_object_put(q->body);
                q->body = TAKE_PTR(rebuilt);
                c->body_changed = q->endpoint->body != PROXY_BODY_NONE;
        }
        return 1;
}

/* The objects the request names are the channel's; a start of a container with pins is marked for a frozen start. */
static int conn_check_objects(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        int r;

        r = proxy_conn_check_ownership(c, q->body);
        if (r < 0)
                return 0;       /* answered */
        r = proxy_conn_check_images(c, q->endpoint);
        if (r < 0)
                return 0;       /* answered */
        {
                _cleanup_free_ char *ref = NULL;
                const char *tail = NULL;
                if (streq(c->head.method, "POST") && proxy_path_ref(c->head.method, c->target.unversioned, &ref) == PROXY_REF_CONTAINER)
                        tail = c->target.unversioned + strlen("/containers/") + strlen(ref);
                bool attach = tail && strcasecmp(tail, "/attach") == 0;
                if (attach)
                        (void) proxy_engine_kind(p);
                /* a restart mounts the binds again too, and so does Podman's attach to a container that is
                 * not running (it initialises the container: the runtime's create, which mounts; Docker's
                 * attach mounts nothing); a container with pins starts with its channel frozen */
                if (tail && (strcasecmp(tail, "/start") == 0 || strcasecmp(tail, "/restart") == 0 ||
                             (attach && p->engine_kind != ENGINE_DOCKER))) {
                        if (proxy_conn_recheck_start(c, ref, &q->start_inspect) < 0)
                                return 0;       /* answered */
                        r = proxy_binds_pinned(q->start_inspect);
                        if (r < 0)
                                return proxy_conn_reply(c, 403, "bind-pin", "the container's bind pins cannot be read");
                        q->frozen_start = r > 0;
                } else if (tail && strcasecmp(tail, "/update") == 0 && proxy_conn_check_update(c, ref, q->body) < 0)
                        return 0;       /* answered */
                else if (tail && strcasecmp(tail, "/exec") == 0 && proxy_conn_check_host_binds(c, ref, tail, q->body) < 0)
                        return 0;       /* answered */
                /* a pause or unpause in the middle of a frozen start would change what it froze */
                q->pause = tail && (strcasecmp(tail, "/pause") == 0 || strcasecmp(tail, "/unpause") == 0);
        }

        if (streq(c->head.method, "PUT")) {
                _cleanup_free_ char *ref = NULL;
                if (proxy_path_ref(c->head.method, c->target.unversioned, &ref) == PROXY_REF_CONTAINER &&
                    strcasecmp(c->target.unversioned + strlen("/containers/") + strlen(ref), "/archive") == 0 &&
                    proxy_conn_check_host_binds(c, ref, "/archive", NULL) < 0)
                        return 0;       /* answered */
        }
        return 1;
}

/* An "approve" verdict asks a human. */
static int conn_approve(ProxyConn *c, ProxyRequest *q) {
        char *actor = NULL;

        if (q->verdict.decision == DECISION_APPROVE) {
                _cleanup_free_ char *reason = NULL;
                bool allow = proxy_conn_ask_human(c, &q->verdict, &actor, &reason);
                c->actor_owned = actor;         /* recorded after this function returns */
                c->actor = actor ?: "gate";
                c->reason = TAKE_PTR(reason);
                if (!allow) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "%s: not approved (%s)", q->verdict.message ?: "request", strna(c->reason)) < 0)
                                return -ENOMEM;
                        return proxy_conn_reply(c, 403, c->rule, msg);
                }
        }
        c->decision = "allow";
        return 1;
}

/* What the proxy answers itself, and lists and prunes scoped to the channel. */
static int conn_answer_here(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        int r;

        /* when the agent has no network its nested containers have none: a connect after the create
         * (compose makes one per network) is dropped as the create's networks were, and answered done */
        if (p->network_none && streq(q->endpoint->pattern, "/networks/*/connect")) {
                c->reason = strdup("the channel's nested containers have no network: the connect is dropped");
                return proxy_conn_reply_body(c, 200, "network", "dropped", "");
        }
        if (c->default_network) {
                c->reason = strdup("the engine's default network, without its containers");
                return proxy_conn_answer_json(c, c->default_network);
        }
        /* the engine as the channel sees it: no other channel's containers, images, labels or names */
        if (streq(q->endpoint->pattern, "/info")) {
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_(json_object_putp) json_object *info = NULL, *shown = NULL;
                if (proxy_engine_open(p, &e) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                if (engine_info(e, &info) < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about itself");
                r = proxy_info_redact(info, &shown);
                if (r == -ENOMEM)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine's info is malformed");
                c->reason = strdup("the engine's info, without other channels' objects");
                return proxy_conn_answer_json(c, shown);
        }
        if (streq(q->endpoint->pattern, "/events") && proxy_query_scope_to_channel(c->target.query, p->channel) < 0)
                return proxy_conn_reply(c, 400, "parse", "the filters parameter cannot be read");

        /* the network list without filters of the agent's: the channel's networks and the engine's
         * defaults (redacted), picked by the proxy from the engine's whole list */
        if (streq(c->head.method, "GET") && strcasecmp(c->target.unversioned, "/networks") == 0 &&
            json_object_object_length(c->target.query) == 0) {
                _cleanup_(engine_freep) Engine *e = NULL;
                _cleanup_(json_object_putp) json_object *all = NULL, *shown = NULL;
                if (proxy_engine_open(p, &e) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                r = engine_network_list(e, &all);
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot list its networks");
                r = proxy_network_list_scope(all, p->channel, &shown);
                if (r == -ENOMEM)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                if (r < 0)
                        return proxy_conn_reply(c, 502, "engine", "the engine's network list is malformed");
                return proxy_conn_answer_json(c, shown);
        }

        /* lists and prunes see only the channel's containers, volumes and networks */
        if ((streq(c->head.method, "GET") && (strcasecmp(c->target.unversioned, "/containers/json") == 0 ||
                                               strcasecmp(c->target.unversioned, "/volumes") == 0 ||
                                               strcasecmp(c->target.unversioned, "/networks") == 0)) ||
            (streq(c->head.method, "POST") && (strcasecmp(c->target.unversioned, "/containers/prune") == 0 ||
                                                strcasecmp(c->target.unversioned, "/volumes/prune") == 0 ||
                                                strcasecmp(c->target.unversioned, "/networks/prune") == 0))) {
                if (proxy_query_scope_to_channel(c->target.query, p->channel) < 0)
                        return proxy_conn_reply(c, 400, "parse", "the filters parameter cannot be read");
        }
        return 1;
}

/* A build's parameters, its Dockerfile and bases, and on Podman the network namespace its RUN steps get. */
static int conn_prepare_build(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        int r;

        /* a build's RUN steps run in containers the engine makes itself: what the build API lets a
         * caller widen is refused, and their network is the nested containers' */
        if (streq(c->head.method, "POST") && strcasecmp(c->target.unversioned, "/build") == 0) {
                _cleanup_free_ char *network = NULL, *refused = NULL, *msg = NULL, *shown = NULL;
                r = proxy_build_force(c->target.query, p->network_none, &network, &refused);
                if (r == -EPERM) {
                        shown = text_escape_display(refused, PROXY_DISPLAY_MAX);
                        if (!shown || asprintf(&msg, "the build parameter %s is refused (the build's RUN steps would "
                                               "get what the channel's containers may not have)", shown) < 0)
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        c->decision = "deny";
                        return proxy_conn_reply(c, 403, "build", msg);
                }
                if (r == -ENOMEM)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                if (r < 0)
                        return proxy_conn_reply(c, 400, "parse", "the build's networkmode cannot be read");
                if (network && proxy_conn_check_ref(c, PROXY_REF_NETWORK, network, NULL) < 0)
                        return 0;       /* answered */
                /* the Dockerfile the engine will read, by the name it will read it by */
                {
                        _cleanup_free_ char *dockerfile = NULL, *why = NULL;
                        const char *given = proxy_conn_query_string(c, "dockerfile");
                        r = proxy_build_dockerfile_name(given, &dockerfile);
                        if (r == -ENOMEM)
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        if (r < 0)
                                return proxy_conn_reply(c, 403, "build", "the dockerfile parameter is refused (a path inside "
                                                  "the build context only)");
                        _cleanup_strv_free_ char **bases = NULL;
                        r = proxy_build_context_check_bases(q->context, q->context_size, dockerfile, isempty(given), p->channel,
                                                            &bases, &why);
                        if (r == -ENOMEM)
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        if (r < 0) {
                                _cleanup_free_ char *why_shown = text_escape_display(why, PROXY_DISPLAY_MAX);
                                c->decision = "deny";
                                return proxy_conn_reply(c, 403, "build", why_shown ?: "the build context is refused");
                        }
                        if (proxy_conn_check_build_bases(c, bases) < 0)
                                return 0;       /* answered */
                        /* the bases checked are the ones built on: the engine pulls none (Podman: never;
                         * Docker's classic builder takes local images first, which they are) */
                        for (bool again = true; again;) {
                                _cleanup_free_ char *key = NULL;
                                again = false;
                                json_object_object_foreach(c->target.query, k, e) {
                                        (void) e;
                                        if (!key && (strcasecmp(k, "pull") == 0 || strcasecmp(k, "pullpolicy") == 0)) {
                                                if (!(key = strdup(k)))
                                                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                                        }
                                }
                                if (key) {
                                        json_object_object_del(c->target.query, key);
                                        again = true;
                                }
                        }
                        if (!isempty(given)) {
                                _cleanup_free_ char *key = NULL;
                                json_object *o;
                                json_object_object_foreach(c->target.query, k, e) {
                                        (void) e;
                                        if (strcasecmp(k, "dockerfile") == 0 && !key && !(key = strdup(k)))
                                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                                }
                                if (key)
                                        json_object_object_del(c->target.query, key);
                                if (!(o = json_object_new_string(dockerfile)) ||
                                    json_object_object_add(c->target.query, "dockerfile", o) < 0) {
                                        json_object_put(o);
                                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                                }
                        }
                }
                /* Podman's compat build runs RUN steps in the engine's own network namespace (the host's)
                 * whatever networkmode says; it honours a namespace given by path: the proxy's own, which
                 * PrivateNetwork= leaves with loopback alone and nothing listening */
                if (proxy_engine_kind(p) == ENGINE_UNKNOWN)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked which it is");
                if (p->engine_kind == ENGINE_PODMAN) {
                        _cleanup_free_ char *ns = NULL;
                        json_object *o;
                        if (!proxy_network_is_isolated()) {
                                c->decision = "deny";
                                return proxy_conn_reply(c, 403, "build", "builds on Podman need the proxy in a network namespace "
                                                  "of its own (PrivateNetwork=), where their RUN steps are put");
                        }
                        if (asprintf(&ns, "[{\"Name\":\"network\",\"Path\":\"/proc/%d/ns/net\"}]", (int) getpid()) < 0 ||
                            !(o = json_object_new_string(ns)))
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        if (json_object_object_add(c->target.query, "nsoptions", o) < 0) {
                                json_object_put(o);
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        }
                        if (!(o = json_object_new_string("never")) ||
                            json_object_object_add(c->target.query, "pullpolicy", o) < 0) {
                                json_object_put(o);
                                return proxy_conn_reply(c, 500, NULL, "out of memory");
                        }
                        c->hold_until_engine_done = true;
                }
        }
        return 1;
}

/* The request sent to the engine, each kind its way. */
static int conn_dispatch(ProxyConn *c, ProxyRequest *q) {
        DockerProxy *p = c->proxy;
        int r;

        /* volumes and networks made through the proxy are the channel's */
        if (streq(c->head.method, "POST") && (strcasecmp(c->target.unversioned, "/volumes/create") == 0 ||
                                              strcasecmp(c->target.unversioned, "/networks/create") == 0)) {
                if (proxy_conn_check_create_name(c, q->body, strcasecmp(c->target.unversioned, "/volumes/create") == 0) < 0)
                        return 0;       /* answered */
                if (proxy_labels_force(q->body, p->channel) < 0)
                        return proxy_conn_reply(c, 400, "parse", "the create body has fields of the wrong type");
                q->forced = strdup(json_object_to_json_string_ext(q->body, JSON_C_TO_STRING_PLAIN));
                if (!q->forced)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                return proxy_conn_forward(c, q->forced, strlen(q->forced), NULL, 0);
        }

        if (q->context)
                return proxy_conn_forward(c, q->context, q->context_size, NULL, 0);
        if (q->stream && c->complete)
                return proxy_conn_forward(c, "", 0, NULL, 0);
        if (q->stream) {
                size_t pending = c->in_size - c->head_size;
                const char *expect = http_request_header(&c->head, "Expect");

                /* the decision is made: a client that waits before sending its body may send it now */
                if (pending == 0 && c->head.version_minor == 1 && expect && strcasecmp(expect, "100-continue") == 0) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                        if (proxy_send_all(c->fd, cont, sizeof(cont) - 1) < 0)
                                return -EPIPE;
                }
                return proxy_conn_forward(c, NULL, 0, c->in + c->head_size, pending);
        }

        if (streq(c->head.method, "POST") && strcasecmp(c->target.unversioned, "/containers/create") == 0) {
                _cleanup_(engine_freep) Engine *e = NULL;
                uint64_t n = 0;

                r = proxy_seccomp_option(p);
                if (r < 0)      /* fail closed: no nested container without the workload profile */
                        return proxy_conn_reply(c, 502, "engine", "the seccomp profile for the engine cannot be made");
                ProxyNestedPolicy nested = {
                        .channel = p->channel, .cgroup_parent = p->cgroup_parent, .seccomp_option = p->seccomp_option,
                        .masked_paths = p->masked_paths, .podman = p->engine_kind == ENGINE_PODMAN,
                        .network_none = p->network_none,
                };
                r = proxy_container_force(q->body, &nested);
                if (r < 0)
                        return proxy_conn_reply(c, 400, "parse", "the create body has fields of the wrong type");
                c->decision = NULL;     /* not allowed until what it uses is the channel's too */
                if (proxy_conn_check_references(c, q->body) < 0)
                        return 0;       /* answered */
                const char *why = NULL;
                r = proxy_tmpfs_check(q->body, &why);
                if (r == -EPERM)
                        return proxy_conn_reply(c, 403, "tmpfs", why);
                if (r < 0)
                        return proxy_conn_reply(c, 400, "parse", "the create body's tmpfs mounts cannot be read");
                /* bind sources resolved now and pinned (checked again at start) */
                r = proxy_binds_pin(q->body);
                if (r == -ENOMEM)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                if (r == -EBADMSG)
                        return proxy_conn_reply(c, 400, "parse", "the create body's binds cannot be read");
                if (r < 0)
                        return proxy_conn_reply(c, 403, "bind-pin", "a bind source cannot be resolved to a path a bind can name");
                /* a container that binds host paths writes host files as whoever runs in it: the agent */
                r = proxy_container_host_binds(q->body);
                if (r < 0)
                        return proxy_conn_reply(c, 400, "parse", "the create body's binds cannot be read");
                if (r > 0) {
                        uid_t uid;
                        gid_t gid;
                        r = proxy_conn_run_as(c, &uid, &gid);
                        if (r < 0)
                                return proxy_conn_reply(c, 403, "bind-owner", "a container that binds host paths runs as the "
                                                  "agent's uid, which this caller does not have (root in the agent's "
                                                  "container)");
                        if (r > 0 && proxy_container_run_as(q->body, uid, gid) < 0)
                                return proxy_conn_reply(c, 400, "parse", "the create body has fields of the wrong type");
                }
                c->decision = "allow";
                q->forced = strdup(json_object_to_json_string_ext(q->body, JSON_C_TO_STRING_PLAIN));
                if (!q->forced || proxy_engine_open(p, &e) < 0)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                r = conn_create_counted(c, e, q->forced, &n);
                if (r == -EIO)
                        return proxy_conn_reply(c, 502, "engine", "the engine cannot list the channel's containers");
                if (r == -EDQUOT) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "channel %s has %" PRIu64 " containers, the most it may have",
                                     p->channel, n) < 0)
                                return -ENOMEM;
                        c->decision = "deny";
                        return proxy_conn_reply(c, 403, "container-limit", msg);
                }
                return r;
        }
        if (q->frozen_start)
                return proxy_conn_start_frozen(c, q->start_inspect, q->body_sent, q->body_sent_size);
        if (c->body_changed) {
                q->forced = strdup(json_object_to_json_string_ext(q->body, JSON_C_TO_STRING_PLAIN));
                if (!q->forced)
                        return proxy_conn_reply(c, 500, NULL, "out of memory");
                q->body_sent = q->forced;
                q->body_sent_size = strlen(q->forced);
        }
        if (q->pause)
                return conn_forward_paused(c, q->body_sent, q->body_sent_size);
        return proxy_conn_forward(c, q->body_sent, q->body_sent_size, NULL, 0);
}

/* One request: its head, its target, its body, the decision, the checks of what it names, then its
 * answer (the proxy's own or the engine's). */
int proxy_conn_handle(ProxyConn *c) {
        _cleanup_(request_done) ProxyRequest q = { .body_sent = "" };
        int r;

        if ((r = conn_read_head(c, &q)) <= 0 ||
            (r = conn_check_target(c, &q)) <= 0 ||
            (r = conn_read_body(c, &q)) <= 0 ||
            (r = conn_decide(c, &q)) <= 0 ||
            (r = conn_check_objects(c, &q)) <= 0 ||
            (r = conn_approve(c, &q)) <= 0 ||
            (r = conn_answer_here(c, &q)) <= 0 ||
            (r = conn_prepare_build(c, &q)) <= 0)
                return r;
        return conn_dispatch(c, &q);
}

void proxy_conn_serve(ProxyConn *c) {
        for (int r = proxy_conn_head_begin(c); r >= 0;) {
                r = proxy_conn_handle(c);
                if (c->rule)            /* not recorded yet */
                        proxy_conn_record(c);
                if (r < 0 || !c->keep_alive)
                        break;
                /* a stop ends a kept connection between its requests */
                r = proxy_conn_head_begin(c);
                if (r >= 0)
                        proxy_conn_next_request(c);
        }
        if (c->status >= 400 && !c->complete && (c->content_length > 0 || c->head.chunked))
                proxy_lingering_close(c->fd);
}
