/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-gateway: the egress gateway of one channel (loop-gateway@NAME.service), started by
 * loop-gateway@NAME.socket on /run/loop/NAME/gateway.sock, which the runner bind-mounts into the channel's
 * agent containers. Those containers have no network; `loop relay` inside forwards every connection the
 * agent makes to 127.0.0.1:3128 (its HTTP proxy) or 127.0.0.1:2376 (its model API) to this socket,
 * handing the connection itself over (egress-handover.h): the gateway reads and writes the agent's TCP
 * connection directly, after checking the container's token that comes with it (egress-token.h): only
 * the channel's own containers are served. A client speaking HTTP on the socket itself gets the sandbox
 * CA, and root (the runner) a container's token and dummy (POST /.loop/register); nothing else.
 * Requests are told apart by their target:
 *
 *   CONNECT host:port           a TLS tunnel: policy on host and port, then the gateway resolves the name,
 *                               connects (refusing internal addresses, see egress-address.h), answers 200
 *                               and passes bytes through once the ClientHello's server name agrees with
 *                               the CONNECT target; for a host a credential rule names, the gateway ends
 *                               the agent's TLS itself with a leaf of its sandbox CA (egress-ca.h, made in
 *                               $STATE_DIRECTORY), and treats the request inside as plain HTTP below, sent
 *                               on over TLS it verifies;
 *   GET /.loop/ca.pem           the sandbox CA's certificate, for the runner;
 *   GET http://host/path ...    plain HTTP: policy (http rules) on host, port, method and path; Host must
 *                               agree with the target; the request goes upstream origin-form, never with
 *                               a credential (those go only into TLS), the response streams back;
 *   POST /v1/messages ...       the model API pass-through: to egress.api_upstream over verified TLS, the
 *                               container's dummy key swapped for the real one, the response streamed back
 *                               unbuffered (server-sent events reach the agent as they come).
 *
 * Hosts and paths are normalised once (egress_host_normalize(), egress_path_normalize()) before any
 * decision. The answer to a request with an injected secret has it replaced by the dummy
 * (egress_scrub()); a request carrying a real secret is refused.
 *
 * With the host's HTTP proxy configured (egress.upstream_proxy, else the https_proxy/http_proxy variables
 * of the service's environment), upstream connections are CONNECT tunnels through it to the address the
 * gateway resolved and checked itself.
 *
 * Configuration and secrets come only as the systemd credential egress.json (LoadCredential=, written by
 * loop-generator): {"egress": {...}, "anthropic_api_key": "...", "claude_code_oauth_token": "..."}. A
 * configuration that cannot be loaded does not stop the service: it answers 503 to everything (the agent
 * has no egress) and says why in the journal. Each connection is one gateway-request journal entry; every
 * secret the gateway holds is redacted from every log line by value.
 *
 * Connections are kept alive: the gateway reads every request itself (inside an intercepted tunnel too),
 * checks, rewrites and journals each on its own, re-chunks bodies sent chunked, and finds the end of each
 * response from its framing while streaming it on. Upstream connections are kept in a pool per scheme,
 * host and port (GATEWAY_POOL_MAX, GATEWAY_POOL_IDLE_SEC) for the next request there, from this client
 * or another: one TCP and TLS handshake (verified) serves many requests.
 *
 * One thread per connection (at most GATEWAY_CONNECTIONS_MAX), blocking I/O with timeouts; the main thread
 * runs the sd-event loop that accepts and exits after LOOP_GATEWAY_IDLE_SEC without connections. */

#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "audit.h"
#include "audit-limiter.h"
#include "config.h"
#include "egress-address.h"
#include "egress-ca.h"
#include "egress-handover.h"
#include "egress-policy.h"
#include "egress-rewrite.h"
#include "egress-token.h"
#include "http-server.h"
#include "io-util.h"
#include "log.h"
#include "tls-sni.h"

#define GATEWAY_CONNECTIONS_MAX 256U
#define GATEWAY_HEADER_SIZE_MAX (32U * 1024U)
#define GATEWAY_HEADERS_MAX 100U
#define GATEWAY_BODY_MAX (4ULL * 1024U * 1024U * 1024U)     /* a request body, streamed, never buffered */
#define GATEWAY_CONFIG_MAX (1024U * 1024U)
#define GATEWAY_HEAD_TIMEOUT_MS (30 * 1000)                 /* to send a request head, or a ClientHello */
#define GATEWAY_CONNECT_TIMEOUT_MS (10 * 1000)
#define GATEWAY_IO_TIMEOUT_SEC 300                          /* silence on an upstream exchange */
#define GATEWAY_TUNNEL_IDLE_MS (600 * 1000)
#define GATEWAY_TUNNEL_HALF_CLOSED_MS (5 * 1000)            /* silence after one side of a tunnel closed */
#define GATEWAY_ADDRESSES_MAX 16U                           /* of a name, tried in order */
#define GATEWAY_IDLE_SEC_DEFAULT 60U
#define GATEWAY_STREAM_BUFFER_SIZE (64U * 1024U)            /* per connection, for responses */
#define GATEWAY_CHUNK_LINE_MAX 24U                          /* "%zx\r\n" before a re-chunked piece */
#define GATEWAY_POOL_MAX 64U                                /* idle upstream connections kept */
#define GATEWAY_POOL_IDLE_SEC 20U                           /* below the keep-alive timeout of most servers */
#define GATEWAY_PROXY_REPLY_MAX (8U * 1024U)
#define GATEWAY_PROXY_USERINFO_MAX 1024U                    /* user:password of the host's proxy */
#define GATEWAY_LEAVES_MAX 256U                             /* cached leaf certificates; then started over */
#define GATEWAY_CA_PATH "/.loop/ca.pem"                     /* the sandbox CA, for the runner */
#define GATEWAY_SESSIONS_MAX 256U                           /* upstream TLS sessions kept for resumption */
#define GATEWAY_TLS_READ_BUFFER_SIZE (64U * 1024U)          /* per upstream TLS connection, read ahead */

typedef struct Upstream {
        bool tls;
        char *host;                     /* NULL: not configured */
        uint16_t port;
        char *base_path;                /* "" or "/prefix" without a trailing slash */
        char *authorization;            /* "Basic ..." from user:password@ in the URL, or NULL */
} Upstream;

typedef struct Gateway {
        char *channel;
        char *config_error;             /* set: misconfigured, every request is answered 503 */
        EgressPolicy *policy;
        Upstream api;
        Upstream proxy;                 /* the host's HTTP proxy */
        char *api_key, *oauth_token;
        SSL_CTX *tls;
        EgressOwnAddresses own;
        EgressCa *ca;                   /* NULL: no state directory, no interception */
        uint8_t token_key[EGRESS_TOKEN_KEY_SIZE];
        bool have_token_key;            /* false: no state directory, every hand-over is refused */

        /* Upstream TLS sessions by "host:port", resumed by the next connection there: a full handshake
         * and certificate check per request would cost more than the request. */
        pthread_mutex_t sessions_lock;
        struct {
                char *key;
                SSL_SESSION *session;
        } sessions[GATEWAY_SESSIONS_MAX];
        size_t n_sessions;

        /* Idle upstream connections, oldest first, by "scheme host port". */
        pthread_mutex_t pool_lock;
        struct {
                char *key;
                int fd;
                SSL *ssl;
                char address[INET6_ADDRSTRLEN];
                uint64_t since;         /* CLOCK_MONOTONIC, µs */
        } pool[GATEWAY_POOL_MAX];
        size_t n_pool;

        pthread_mutex_t leaves_lock;
        struct {
                char *host;
                SSL_CTX *ctx;
        } leaves[GATEWAY_LEAVES_MAX];
        size_t n_leaves;

        sd_event *event;
        sd_event_source *idle_timer;
        uint64_t idle_usec;
        int listen_fd;
        int done_fd;                    /* eventfd: a connection thread ended */
        atomic_uint active;
        AuditLimiter *busy;             /* connections refused beyond GATEWAY_CONNECTIONS_MAX, per peer */
} Gateway;

typedef struct Connection {
        Gateway *gw;
        int fd;
        bool handed_over;               /* the relay of a container the gateway knows handed fd over */
        char container[EGRESS_CONTAINER_NAME_MAX + 1];  /* ... that container's name */
        char dummy[EGRESS_DUMMY_LEN + 1];               /* ... and its model-API dummy */
        struct ucred peer;              /* who connected to the gateway socket */
        EgressScrub scrub;              /* the secrets injected into the current request, for its response */
        SSL *client_ssl;                /* intercepted: TLS with the agent, our leaf certificate */
        int up;
        SSL *ssl;
        char *up_key;                   /* the pool's key of c->up */
        bool up_pooled;                 /* c->up came from the pool (it may have gone stale) */
        char *buf;                      /* GATEWAY_HEADER_SIZE_MAX bytes: request heads, request bodies */
        size_t size;
        char *rbuf;                     /* GATEWAY_STREAM_BUFFER_SIZE bytes: responses */
        char *scratch;                  /* GATEWAY_STREAM_BUFFER_SIZE + GATEWAY_CHUNK_LINE_MAX bytes */
        unsigned requests;              /* answered on this connection so far */
        bool again;                     /* the client connection can carry another request */
        bool quiet;                     /* ended between requests: no journal record */
        HttpRequest req;
        struct timespec start;

        /* the journal record */
        const char *kind;
        const char *decision;
        const char *rule;
        const char *reason;
        char *host;
        uint16_t port;
        char address[INET6_ADDRSTRLEN];
        int status;
        uint64_t sent, received;
} Connection;

static void upstream_done(Upstream *u) {
        free(u->host);
        free(u->base_path);
        if (u->authorization) {
                explicit_bzero(u->authorization, strlen(u->authorization));
                free(u->authorization);
        }
        *u = (Upstream) {};
}

/* "Basic base64(user:password)" of the percent-encoded userinfo[0..size) (RFC 3986 3.2.1, RFC 7617). */
static int basic_authorization(const char *userinfo, size_t size, char **ret) {
        _cleanup_free_ char *plain = NULL, *out = NULL;
        size_t n = 0;
        int l;

        if (size > GATEWAY_PROXY_USERINFO_MAX || !memchr(userinfo, ':', size))
                return -EINVAL;
        plain = malloc(size + 1);
        out = malloc(strlen("Basic ") + 4 * ((size + 2) / 3) + 1);
        if (!plain || !out)
                return -ENOMEM;
        for (size_t i = 0; i < size; i++) {
                if (userinfo[i] == '%') {
                        int a = i + 2 < size ? unhexchar(userinfo[i + 1]) : -1, b = i + 2 < size ? unhexchar(userinfo[i + 2]) : -1;
                        if (a < 0 || b < 0 || (a == 0 && b == 0))
                                goto fail;
                        plain[n++] = (char) (a << 4 | b);
                        i += 2;
                } else
                        plain[n++] = userinfo[i];
        }
        memcpy(out, "Basic ", 6);
        l = EVP_EncodeBlock((unsigned char *) out + 6, (const unsigned char *) plain, (int) n);
        explicit_bzero(plain, size + 1);
        if (l < 0)
                return -EINVAL;
        *ret = TAKE_PTR(out);
        return 0;
fail:
        explicit_bzero(plain, size + 1);
        return -EINVAL;
}

/* scheme://[user:password@]host[:port][/path], scheme http or https; IPv6 in brackets. */
static int upstream_parse(const char *url, bool allow_path, Upstream *ret) {
        Upstream u = {};
        const char *rest, *end, *colon = NULL, *at;
        size_t host_len;

        if ((rest = startswith(url, "https://")))
                u.tls = true;
        else if (!(rest = startswith(url, "http://")))
                return -EINVAL;
        end = rest + strcspn(rest, "/");
        at = memrchr(rest, '@', (size_t) (end - rest));
        if (at) {
                int r = basic_authorization(rest, (size_t) (at - rest), &u.authorization);
                if (r < 0)
                        return r;
                rest = at + 1;
        }
        if (rest[0] == '[') {
                const char *close = memchr(rest, ']', (size_t) (end - rest));
                if (!close)
                        return -EINVAL;
                u.host = strndup(rest + 1, (size_t) (close - rest - 1));
                if (close + 1 < end) {
                        if (close[1] != ':')
                                goto fail;
                        colon = close + 1;
                }
        } else {
                colon = memchr(rest, ':', (size_t) (end - rest));
                host_len = colon ? (size_t) (colon - rest) : (size_t) (end - rest);
                u.host = strndup(rest, host_len);
        }
        if (!u.host) {
                upstream_done(&u);
                return -ENOMEM;
        }
        {
                char *n = NULL;
                if (egress_host_normalize(u.host, &n) < 0)
                        goto fail;
                free(u.host);
                u.host = n;
        }
        if (colon) {
                char *e;
                unsigned long p;
                errno = 0;
                p = strtoul(colon + 1, &e, 10);
                if (errno != 0 || e != end || e == colon + 1 || p == 0 || p > 65535)
                        goto fail;
                u.port = (uint16_t) p;
        } else
                u.port = u.tls ? 443 : 80;
        if (*end && !allow_path)
                goto fail;
        u.base_path = strndup(end, strlen(end) - (strlen(end) > 0 && end[strlen(end) - 1] == '/'));
        if (!u.base_path) {
                upstream_done(&u);
                return -ENOMEM;
        }
        *ret = u;
        return 0;
fail:
        upstream_done(&u);
        return -EINVAL;
}

/* ---- configuration ---- */

static int on_new_session(SSL *ssl, SSL_SESSION *session);

static int gateway_fail_config(Gateway *g, const char *format, ...) _printf_(2, 3);
static int gateway_fail_config(Gateway *g, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&g->config_error, format, ap) < 0)
                g->config_error = NULL;
        va_end(ap);
        if (!g->config_error)
                return log_oom();
        return 0;
}

static const char *json_str(json_object *o, const char *key) {
        json_object *v;
        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static int gateway_load(Gateway *g, const char *path) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *text = NULL, *error = NULL, *api_host = NULL, *config_path = NULL;
        json_object *egress = NULL;
        const char *s, *dir, *from_env = NULL;
        size_t size;
        int r;

        if (!path) {
                dir = getenv("CREDENTIALS_DIRECTORY");
                if (isempty(dir))
                        return gateway_fail_config(g, "no egress.json credential ($CREDENTIALS_DIRECTORY is not set)");
                if (asprintf(&config_path, "%s/egress.json", dir) < 0)
                        return log_oom();
                path = config_path;
        }
        r = read_full_file_at(AT_FDCWD, path, GATEWAY_CONFIG_MAX, true, &text, &size);
        if (r < 0)
                return gateway_fail_config(g, "cannot read %s: %s", path, strerror(-r));
        doc = json_tokener_parse(text);
        explicit_bzero(text, size);
        if (!doc || !json_object_is_type(doc, json_type_object))
                return gateway_fail_config(g, "%s is not a JSON object", path);

        /* Secrets first, so that nothing logged from here on can carry them. */
        s = json_str(doc, "anthropic_api_key");
        if (!isempty(s) && (!(g->api_key = strdup(s)) || audit_add_secret(s) < 0))
                return log_oom();
        s = json_str(doc, "claude_code_oauth_token");
        if (!isempty(s) && (!(g->oauth_token = strdup(s)) || audit_add_secret(s) < 0))
                return log_oom();

        (void) json_object_object_get_ex(doc, "egress", &egress);
        r = egress_config_api_host(doc, &api_host);
        if (r < 0)
                return gateway_fail_config(g, "egress.api_upstream is not a usable URL");
        r = egress_policy_compile(egress, api_host, &g->policy, &error);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return gateway_fail_config(g, "the egress policy does not compile: %s", strna(error));
        for (size_t i = 0; i < g->policy->n_rules; i++)
                if (g->policy->rules[i].decision == EGRESS_CREDENTIAL && audit_add_secret(g->policy->rules[i].credential.secret) < 0)
                        return log_oom();

        s = json_str(egress, "api_upstream");
        r = upstream_parse(isempty(s) ? EGRESS_API_UPSTREAM_DEFAULT : s, true, &g->api);
        if (r >= 0 && g->api.authorization)
                r = -EINVAL;
        if (r < 0)
                return gateway_fail_config(g, "egress.api_upstream \"%s\" is not an http(s)://HOST[:PORT][/PATH] URL", s);
        /* the real key goes only into TLS the gateway made and verified */
        if (!g->api.tls)
                return gateway_fail_config(g, "egress.api_upstream \"%s\" is not https://: the real key is never sent in clear text", s);
        /* Without egress.upstream_proxy, the host's own proxy variables, as the service's environment has
         * them (DefaultEnvironment= of the manager, or a drop-in): the gateway goes out the way the host
         * does. */
        s = json_str(egress, "upstream_proxy");
        if (isempty(s)) {
                static const char * const proxy_variables[] = { "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY" };
                for (size_t i = 0; i < ELEMENTSOF(proxy_variables) && isempty(s); i++)
                        if (!isempty(s = getenv(proxy_variables[i])))
                                from_env = proxy_variables[i];
        }
        if (!isempty(s)) {
                r = upstream_parse(s, true, &g->proxy);
                if (r == -ENOMEM)
                        return log_oom();
                /* not echoed: a proxy URL may carry a password */
                if (r < 0 || g->proxy.tls)
                        return gateway_fail_config(g, "the upstream proxy (egress.upstream_proxy, or the service's "
                                                   "https_proxy/http_proxy) is not an http://[USER:PASSWORD@]HOST:PORT URL");
                if (g->proxy.authorization) {
                        /* redacted by value from every log line, in the forms it could take */
                        const char *at = strrchr(s, '@'), *userinfo = strstr(s, "://") + 3;
                        _cleanup_free_ char *raw = strndup(userinfo, (size_t) (at - userinfo));
                        const char *password = raw ? strchr(raw, ':') : NULL;
                        if (!raw || audit_add_secret(raw) < 0 || (password && !isempty(password + 1) && audit_add_secret(password + 1) < 0) ||
                            audit_add_secret(g->proxy.authorization + strlen("Basic ")) < 0)
                                return log_oom();
                        explicit_bzero(raw, strlen(raw));
                        if (from_env)
                                log_warning("The upstream proxy's password comes from $%s, which `systemctl show` displays; "
                                            "egress.upstream_proxy keeps it in the gateway's credential only.", from_env);
                }
        }

        g->tls = SSL_CTX_new(TLS_client_method());
        if (!g->tls)
                return log_oom();
        (void) SSL_CTX_set_min_proto_version(g->tls, TLS1_2_VERSION);
        /* Many servers close without close_notify. The agent's HTTP client sees any truncation in the
         * response's own framing (Content-Length, chunks, SSE), which passes through untouched. */
        SSL_CTX_set_options(g->tls, SSL_OP_IGNORE_UNEXPECTED_EOF);
        /* A record in one read() rather than its header and then its body; a download's records, several
         * in one read() (GATEWAY_TLS_READ_BUFFER_SIZE). */
        SSL_CTX_set_read_ahead(g->tls, 1);
        SSL_CTX_set_default_read_buffer_len(g->tls, GATEWAY_TLS_READ_BUFFER_SIZE);
        SSL_CTX_set_session_cache_mode(g->tls, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(g->tls, on_new_session);
        SSL_CTX_set_verify(g->tls, SSL_VERIFY_PEER, NULL);
        if (SSL_CTX_set_default_verify_paths(g->tls) != 1)
                log_warning("Cannot load the system's trust store; only egress.ca_file is trusted.");
        s = json_str(egress, "ca_file");
        if (!isempty(s) && SSL_CTX_load_verify_locations(g->tls, s, NULL) != 1)
                return gateway_fail_config(g, "egress.ca_file %s cannot be loaded", s);

        r = egress_own_addresses_load(&g->own);
        if (r < 0)
                log_warning_errno(r, "Cannot list this host's addresses, only the address ranges are refused: %m");
        return 0;
}

/* ---- the journal record ---- */

static uint64_t elapsed_ms(const struct timespec *start) {
        struct timespec now;
        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        return (uint64_t) (now.tv_sec - start->tv_sec) * 1000U + (uint64_t) ((now.tv_nsec - start->tv_nsec) / 1000000L);
}

#define GATEWAY_RECORD_FIELDS_MAX 20U
#define GATEWAY_RECORD_ARENA_SIZE 1024U         /* the usual record's fields; a longer one is allocated */

/* A record's extra fields, "NAME=value" each, written into one buffer on the stack: a record per
 * request should not cost an allocation per field. */
typedef struct RecordFields {
        char *extra[GATEWAY_RECORD_FIELDS_MAX];  /* NULL-terminated */
        size_t n;
        char *allocated[GATEWAY_RECORD_FIELDS_MAX];
        size_t n_allocated;
        char arena[GATEWAY_RECORD_ARENA_SIZE];
        size_t used;
} RecordFields;

static void field_add(RecordFields *r, const char *key, const char *value) {
        size_t kl, vl, need;
        char *p;

        if (!value || r->n >= GATEWAY_RECORD_FIELDS_MAX - 1)
                return;
        kl = strlen(key);
        vl = strlen(value);
        need = kl + 1 + vl + 1;
        if (need <= sizeof r->arena - r->used) {
                p = r->arena + r->used;
                r->used += need;
        } else {
                p = malloc(need);
                if (!p)
                        return;
                r->allocated[r->n_allocated++] = p;
        }
        memcpy(p, key, kl);
        p[kl] = '=';
        memcpy(p + kl + 1, value, vl + 1);
        r->extra[r->n++] = p;
}

static void connection_journal(Connection *c) {
        char port[8], status[8], sent[24], received[24], duration[24];
        RecordFields r;
        bool allowed = c->decision && (streq(c->decision, "allow") || streq(c->decision, "credential"));
        uint64_t ms = elapsed_ms(&c->start);

        r.n = r.n_allocated = r.used = 0;
        (void) snprintf(port, sizeof port, "%u", c->port);
        (void) snprintf(status, sizeof status, "%d", c->status);
        (void) snprintf(sent, sizeof sent, "%" PRIu64, c->sent);
        (void) snprintf(received, sizeof received, "%" PRIu64, c->received);
        (void) snprintf(duration, sizeof duration, "%" PRIu64, ms);

        field_add(&r, "LOOP_KIND", c->kind);
        field_add(&r, "LOOP_HOST", c->host);
        field_add(&r, "LOOP_PORT", c->port ? port : NULL);
        field_add(&r, "LOOP_DECISION", c->decision);
        field_add(&r, "LOOP_RULE", c->rule);
        field_add(&r, "LOOP_REASON", c->reason);
        field_add(&r, "LOOP_ADDRESS", c->address[0] ? c->address : NULL);
        field_add(&r, "LOOP_METHOD", c->req.method);
        /* the path only: a query may carry a token */
        field_add(&r, "LOOP_PATH", c->req.path && c->req.path[0] ? c->req.path : NULL);
        field_add(&r, "LOOP_STATUS", c->status ? status : NULL);
        field_add(&r, "LOOP_BYTES_SENT", sent);
        field_add(&r, "LOOP_BYTES_RECEIVED", received);
        field_add(&r, "LOOP_DURATION_MS", duration);
        if (!c->handed_over) {
                /* not a container's relay: who it was */
                char pid[16], uid[16];
                (void) snprintf(pid, sizeof pid, "%d", (int) c->peer.pid);
                (void) snprintf(uid, sizeof uid, "%u", (unsigned) c->peer.uid);
                field_add(&r, "LOOP_PEER_PID", pid);
                field_add(&r, "LOOP_PEER_UID", uid);
        }
        r.extra[r.n] = NULL;

        AuditFields f = { .channel = c->gw->channel, .container_name = c->container[0] ? c->container : NULL, .extra = r.extra };
        (void) audit_log(AUDIT_GATEWAY_REQUEST, allowed ? LOG_INFO : LOG_NOTICE, &f,
                         "%s %s %s:%u%s%s%s%s (rule %s, %" PRIu64 " bytes up, %" PRIu64 " down, %" PRIu64 " ms)",
                         strna(c->decision), strna(c->kind), strna(c->host), c->port,
                         c->req.method ? " " : "", strempty(c->req.method), c->reason ? ": " : "", strempty(c->reason),
                         strna(c->rule), c->sent, c->received, ms);
        for (size_t i = 0; i < r.n_allocated; i++)
                free(r.allocated[i]);
}

/* ---- answering the client ---- */

/* Reads until poll says readable or timeout_ms passed. */
static ssize_t read_timeout(int fd, void *buf, size_t size, int timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t k;

        for (;;) {
                int n = poll(&p, 1, timeout_ms);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ETIMEDOUT;
                if (size == 0)
                        return 0;
                k = read(fd, buf, size);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                return k < 0 ? -errno : k;
        }
}

/* The agent's side: the relay's connection, or TLS on it once intercepted. */
static ssize_t client_read(Connection *c, void *buf, size_t size, int timeout_ms) {
        int k;

        if (!c->client_ssl)
                return read_timeout(c->fd, buf, size, timeout_ms);
        /* with read-ahead, bytes OpenSSL has read but not yet decrypted count too */
        if (!SSL_has_pending(c->client_ssl)) {
                ssize_t q = read_timeout(c->fd, NULL, 0, timeout_ms);   /* waits for readability only */
                if (q == -ETIMEDOUT)
                        return q;
        }
        k = SSL_read(c->client_ssl, buf, (int) MIN(size, (size_t) INT_MAX));
        if (k > 0)
                return k;
        return SSL_get_error(c->client_ssl, k) == SSL_ERROR_ZERO_RETURN ? 0 : -ECONNRESET;
}

static int client_write(Connection *c, const void *buf, size_t n) {
        if (!c->client_ssl)
                return loop_write(c->fd, buf, n);
        while (n > 0) {
                int k = SSL_write(c->client_ssl, buf, (int) MIN(n, (size_t) INT_MAX));
                if (k <= 0)
                        return -EPIPE;
                buf = (const char *) buf + k;
                n -= (size_t) k;
        }
        return 0;
}


static int reply(Connection *c, int status, const char *why) {
        _cleanup_free_ char *body = NULL, *out = NULL;
        size_t size;
        int r;

        c->status = status;
        if (asprintf(&body, "loop egress gateway: %s\n", why) < 0)
                return -ENOMEM;
        r = http_response_format(status, "text/plain; charset=utf-8", body, strlen(body), false, &out, &size);
        if (r < 0)
                return r;
        return client_write(c, out, size);
}

static int refuse(Connection *c, int status, const char *decision, const char *reason, const char *why) {
        c->decision = decision;
        c->reason = reason;
        (void) reply(c, status, why);
        return -EACCES;
}

static int connection_read_head(Connection *c) {
        HttpLimits limits = {
                .header_size_max = GATEWAY_HEADER_SIZE_MAX,
                .headers_max = GATEWAY_HEADERS_MAX,
                .body_size_max = GATEWAY_BODY_MAX,
                .chunked = true,                /* streamed by request_body_relay() */
                .proxy_forms = true,
                .head_only = true,
        };

        for (;;) {
                size_t consumed;
                int status = 400, q;
                ssize_t k;

                q = http_request_parse(c->buf, c->size, &limits, &c->req, &consumed, &status, NULL);
                if (q > 0) {
                        /* what follows the head (body, or a ClientHello sent early) stays at buf[0..size) */
                        memmove(c->buf, c->buf + consumed, c->size - consumed);
                        c->size -= consumed;
                        return 0;
                }
                if (q < 0)
                        return refuse(c, status, "deny", "bad-request", "the request cannot be parsed");
                if (c->size >= GATEWAY_HEADER_SIZE_MAX)
                        return refuse(c, 431, "deny", "bad-request", "the request head is too large");
                k = client_read(c, c->buf + c->size, GATEWAY_HEADER_SIZE_MAX - c->size, GATEWAY_HEAD_TIMEOUT_MS);
                if (k == -ETIMEDOUT && c->size == 0 && c->requests > 0) {
                        c->reason = "client-gone";      /* an idle kept-alive connection, closed */
                        return -ECONNRESET;
                }
                if (k == -ETIMEDOUT)
                        return refuse(c, 408, "deny", "timeout", "the request head did not arrive in time");
                if (k <= 0) {
                        c->reason = "client-gone";
                        return -ECONNRESET;
                }
                c->size += (size_t) k;
        }
}

/* ---- upstream connections ---- */

static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        socklen_t el = sizeof(int);
        int e = 0, n;

        if (connect(fd, sa, len) >= 0)
                return 0;
        if (errno != EINPROGRESS)
                return -errno;
        do
                n = poll(&p, 1, GATEWAY_CONNECT_TIMEOUT_MS);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ETIMEDOUT;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
                return -errno;
        return -e;
}

static void socket_set_blocking_timeouts(int fd) {
        struct timeval tv = { .tv_sec = GATEWAY_IO_TIMEOUT_SEC };
        int one = 1;

        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Resolves host and returns its addresses the policy lets us connect to, or a refusal. */
static int resolve_checked(Connection *c, const char *host, uint16_t port, struct sockaddr_storage *ret,
                           socklen_t *ret_len, size_t *ret_n) {
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
        struct addrinfo *res = NULL;
        EgressAddressClass blocked = EGRESS_ADDRESS_PUBLIC;
        char service[8];
        size_t n = 0;
        int q;

        (void) snprintf(service, sizeof service, "%u", port);
        q = getaddrinfo(host, service, &hints, &res);
        if (q != 0) {
                c->decision = "error";
                c->reason = "resolve-failed";
                (void) reply(c, 502, "the name cannot be resolved");
                return -EHOSTUNREACH;
        }
        for (struct addrinfo *a = res; a && n < GATEWAY_ADDRESSES_MAX; a = a->ai_next) {
                EgressAddressClass k = egress_address_classify(a->ai_addr, &c->gw->own);
                if (k != EGRESS_ADDRESS_PUBLIC) {
                        blocked = k;
                        continue;
                }
                memcpy(&ret[n], a->ai_addr, a->ai_addrlen);
                ret_len[n++] = a->ai_addrlen;
        }
        freeaddrinfo(res);
        if (n == 0) {
                static _Thread_local char reason[64];
                (void) snprintf(reason, sizeof reason, "address-blocked:%s", egress_address_class_to_string(blocked));
                return refuse(c, 403, "deny", reason, "the name leads to an address the gateway does not connect to");
        }
        *ret_n = n;
        return 0;
}

static int tcp_connect_any(Connection *c, const struct sockaddr_storage *addrs, const socklen_t *lens, size_t n) {
        int last = -ECONNREFUSED;

        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = socket(addrs[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                struct sockaddr_storage peer;
                socklen_t pl = sizeof peer;

                if (fd < 0)
                        return -errno;
                last = connect_timeout(fd, (const struct sockaddr *) &addrs[i], lens[i]);
                if (last < 0)
                        continue;
                /* The address actually connected to is checked again, whatever resolved to it. */
                if (getpeername(fd, (struct sockaddr *) &peer, &pl) < 0)
                        return -errno;
                if (egress_address_classify((struct sockaddr *) &peer, &c->gw->own) != EGRESS_ADDRESS_PUBLIC) {
                        last = -EACCES;
                        continue;
                }
                (void) egress_address_format((struct sockaddr *) &peer, c->address, sizeof c->address);
                socket_set_blocking_timeouts(fd);
                return TAKE_FD(fd);
        }
        return last;
}

/* A tunnel through the host's HTTP proxy to an address we checked. */
static int proxy_tunnel(Connection *c, const struct sockaddr_storage *target) {
        const Upstream *p = &c->gw->proxy;
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
        struct addrinfo *res = NULL;
        struct sockaddr_storage addrs[GATEWAY_ADDRESSES_MAX];
        socklen_t lens[GATEWAY_ADDRESSES_MAX];
        char service[8], ip[INET6_ADDRSTRLEN], reply_buf[GATEWAY_PROXY_REPLY_MAX + 1];
        _cleanup_free_ char *request = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0, got = 0;
        uint16_t port;
        int q;

        (void) snprintf(service, sizeof service, "%u", p->port);
        if (getaddrinfo(p->host, service, &hints, &res) != 0)
                return -EHOSTUNREACH;
        for (struct addrinfo *a = res; a && n < GATEWAY_ADDRESSES_MAX; a = a->ai_next) {
                memcpy(&addrs[n], a->ai_addr, a->ai_addrlen);
                lens[n++] = a->ai_addrlen;
        }
        freeaddrinfo(res);

        /* the proxy itself may well sit on a private address: it is the operator's */
        for (size_t i = 0; i < n && fd < 0; i++) {
                int s = socket(addrs[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (s < 0)
                        return -errno;
                if (connect_timeout(s, (struct sockaddr *) &addrs[i], lens[i]) < 0) {
                        safe_close(s);
                        continue;
                }
                fd = s;
        }
        if (fd < 0)
                return -ECONNREFUSED;
        socket_set_blocking_timeouts(fd);

        (void) egress_address_format((const struct sockaddr *) target, ip, sizeof ip);
        port = ntohs(target->ss_family == AF_INET ? ((const struct sockaddr_in *) target)->sin_port
                                                   : ((const struct sockaddr_in6 *) target)->sin6_port);
        if (asprintf(&request, target->ss_family == AF_INET6 ? "CONNECT [%s]:%u HTTP/1.1\r\nHost: [%s]:%u\r\n%s%s%s\r\n"
                                                             : "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n%s%s%s\r\n",
                     ip, port, ip, port, p->authorization ? "Proxy-Authorization: " : "", strempty(p->authorization),
                     p->authorization ? "\r\n" : "") < 0)
                return -ENOMEM;
        q = loop_write(fd, request, strlen(request));
        explicit_bzero(request, strlen(request));
        if (q < 0)
                return q;
        /* Byte by byte up to the blank line: what follows belongs to the tunnel. */
        while (got < GATEWAY_PROXY_REPLY_MAX) {
                ssize_t k = read(fd, reply_buf + got, 1);
                if (k <= 0)
                        return -ECONNRESET;
                got++;
                if (got >= 4 && memcmp(reply_buf + got - 4, "\r\n\r\n", 4) == 0)
                        break;
        }
        reply_buf[got] = 0;
        if (startswith(reply_buf, "HTTP/1.1 407") || startswith(reply_buf, "HTTP/1.0 407"))
                return -EKEYREJECTED;   /* the proxy wants (other) credentials */
        if (!(startswith(reply_buf, "HTTP/1.1 200") || startswith(reply_buf, "HTTP/1.0 200")))
                return -ECONNREFUSED;
        memcpy(c->address, ip, sizeof ip);
        return TAKE_FD(fd);
}

/* Connects c->up to host:port (directly or through the host's proxy) or refuses. */
static int upstream_open(Connection *c, const char *host, uint16_t port) {
        struct sockaddr_storage addrs[GATEWAY_ADDRESSES_MAX];
        socklen_t lens[GATEWAY_ADDRESSES_MAX];
        size_t n = 0;
        int q;

        q = resolve_checked(c, host, port, addrs, lens, &n);
        if (q < 0)
                return q;
        if (c->gw->proxy.host) {
                q = -ECONNREFUSED;
                for (size_t i = 0; i < n && q < 0 && q != -EKEYREJECTED; i++)
                        q = proxy_tunnel(c, &addrs[i]);
                if (q == -EKEYREJECTED) {
                        c->decision = "error";
                        c->reason = "upstream-proxy-auth";
                        (void) reply(c, 502, "the host's proxy refused the gateway's credentials (407)");
                        return q;
                }
        } else
                q = tcp_connect_any(c, addrs, lens, n);
        if (q == -EACCES)
                return refuse(c, 403, "deny", "address-blocked:connected", "the connection ended at a refused address");
        if (q < 0) {
                c->decision = "error";
                c->reason = q == -ETIMEDOUT ? "connect-timeout" : "connect-failed";
                (void) reply(c, q == -ETIMEDOUT ? 504 : 502, "the upstream server cannot be reached");
                return q;
        }
        c->up = q;
        return 0;
}

static int session_key(const Connection *c, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s:%u", strempty(c->host), c->port);
        return n > 0 && (size_t) n < size ? 0 : -ENAMETOOLONG;
}

static int on_new_session(SSL *ssl, SSL_SESSION *session) {
        Connection *c = SSL_get_app_data(ssl);
        Gateway *g;
        char key[EGRESS_HOST_MAX + 8];
        size_t i;

        if (!c || session_key(c, key, sizeof key) < 0)
                return 0;
        g = c->gw;
        pthread_mutex_lock(&g->sessions_lock);
        for (i = 0; i < g->n_sessions; i++)
                if (streq(g->sessions[i].key, key))
                        break;
        if (i == g->n_sessions) {
                if (g->n_sessions >= GATEWAY_SESSIONS_MAX) {
                        for (size_t j = 0; j < g->n_sessions; j++) {
                                free(g->sessions[j].key);
                                SSL_SESSION_free(g->sessions[j].session);
                        }
                        g->n_sessions = i = 0;
                }
                g->sessions[i].key = strdup(key);
                if (!g->sessions[i].key) {
                        pthread_mutex_unlock(&g->sessions_lock);
                        return 0;
                }
                g->sessions[i].session = NULL;
                g->n_sessions++;
        }
        SSL_SESSION_free(g->sessions[i].session);
        g->sessions[i].session = session;       /* the reference OpenSSL gave us (return 1) */
        pthread_mutex_unlock(&g->sessions_lock);
        return 1;
}

static void session_resume(Connection *c) {
        Gateway *g = c->gw;
        char key[EGRESS_HOST_MAX + 8];

        if (session_key(c, key, sizeof key) < 0)
                return;
        pthread_mutex_lock(&g->sessions_lock);
        for (size_t i = 0; i < g->n_sessions; i++)
                if (streq(g->sessions[i].key, key) && g->sessions[i].session) {
                        (void) SSL_set_session(c->ssl, g->sessions[i].session);
                        break;
                }
        pthread_mutex_unlock(&g->sessions_lock);
}

static int upstream_tls(Connection *c, const char *host) {
        struct in6_addr a6;
        struct in_addr a4;

        c->ssl = SSL_new(c->gw->tls);
        if (!c->ssl)
                return -ENOMEM;
        if (SSL_set_fd(c->ssl, c->up) != 1 || SSL_set_app_data(c->ssl, c) != 1)
                return -EIO;
        /* Names get SNI and a name check, IP literals an address check. */
        if (inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1) {
                if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1)
                        return -EIO;
        } else if (SSL_set_tlsext_host_name(c->ssl, host) != 1 || SSL_set1_host(c->ssl, host) != 1)
                return -EIO;
        session_resume(c);
        if (SSL_connect(c->ssl) != 1) {
                unsigned long e = ERR_peek_last_error();
                log_debug("TLS to %s failed: %s (verify: %s)", host, ERR_reason_error_string(e) ?: "?",
                          X509_verify_cert_error_string(SSL_get_verify_result(c->ssl)));
                ERR_clear_error();
                c->decision = "error";
                c->reason = "upstream-tls";
                (void) reply(c, 502, "the upstream server's TLS certificate cannot be verified");
                return -EPROTO;
        }
        log_debug("TLS to %s:%u %s.", host, c->port, SSL_session_reused(c->ssl) ? "resumed" : "with a full handshake");
        return 0;
}

static int up_write(Connection *c, const void *buf, size_t n) {
        if (!c->ssl)
                return loop_write(c->up, buf, n);
        while (n > 0) {
                int k = SSL_write(c->ssl, buf, (int) MIN(n, (size_t) INT_MAX));
                if (k <= 0)
                        return -EIO;
                buf = (const char *) buf + k;
                n -= (size_t) k;
        }
        return 0;
}

static ssize_t up_read(Connection *c, void *buf, size_t n) {
        if (!c->ssl) {
                ssize_t k;
                do
                        k = read(c->up, buf, n);
                while (k < 0 && errno == EINTR);
                return k < 0 ? -errno : k;
        }
        int k = SSL_read(c->ssl, buf, (int) MIN(n, (size_t) INT_MAX));
        if (k > 0)
                return k;
        if (SSL_get_error(c->ssl, k) == SSL_ERROR_ZERO_RETURN)
                return 0;
        /* Servers that close without close_notify are common; after a response that is an end. */
        return SSL_get_error(c->ssl, k) == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 ? 0 : -EIO;
}

/* ---- the upstream connection pool ---- */

static void pool_entry_free(Gateway *g, size_t i) {
        free(g->pool[i].key);
        SSL_free(g->pool[i].ssl);
        safe_close(g->pool[i].fd);
        memmove(&g->pool[i], &g->pool[i + 1], (g->n_pool - i - 1) * sizeof g->pool[0]);
        g->n_pool--;
}

/* An idle connection to key, the newest first. One the server closed (or that has bytes nobody asked
 * for) is readable: it is dropped, as are those idle too long. */
static bool pool_take(Connection *c, const char *key) {
        Gateway *g = c->gw;
        uint64_t now = clock_usec(CLOCK_MONOTONIC);
        bool found = false;

        pthread_mutex_lock(&g->pool_lock);
        for (size_t i = g->n_pool; i > 0 && !found; i--) {
                struct pollfd p = { .fd = g->pool[i - 1].fd, .events = POLLIN };

                if (now - g->pool[i - 1].since > GATEWAY_POOL_IDLE_SEC * 1000000ULL) {
                        pool_entry_free(g, i - 1);
                        continue;
                }
                if (!streq(g->pool[i - 1].key, key))
                        continue;
                if (poll(&p, 1, 0) != 0) {
                        pool_entry_free(g, i - 1);
                        continue;
                }
                c->up = g->pool[i - 1].fd;
                c->ssl = g->pool[i - 1].ssl;
                memcpy(c->address, g->pool[i - 1].address, sizeof c->address);
                g->pool[i - 1].fd = -EBADF;
                g->pool[i - 1].ssl = NULL;
                pool_entry_free(g, i - 1);
                found = true;
        }
        pthread_mutex_unlock(&g->pool_lock);
        if (found && c->ssl)
                (void) SSL_set_app_data(c->ssl, c);
        return found;
}

/* Hands c->up to the pool (reusable) or closes it. */
static void upstream_release(Connection *c, bool reusable) {
        Gateway *g = c->gw;

        if (c->up < 0)
                return;
        /* bytes after the response that OpenSSL read ahead: the server is confused */
        if (c->ssl && SSL_has_pending(c->ssl))
                reusable = false;
        if (reusable && c->up_key) {
                char *key = strdup(c->up_key);
                if (key) {
                        if (c->ssl)
                                (void) SSL_set_app_data(c->ssl, NULL);
                        pthread_mutex_lock(&g->pool_lock);
                        if (g->n_pool >= GATEWAY_POOL_MAX)
                                pool_entry_free(g, 0);
                        g->pool[g->n_pool].key = key;
                        g->pool[g->n_pool].fd = TAKE_FD(c->up);
                        g->pool[g->n_pool].ssl = TAKE_PTR(c->ssl);
                        memcpy(g->pool[g->n_pool].address, c->address, sizeof c->address);
                        g->pool[g->n_pool].since = clock_usec(CLOCK_MONOTONIC);
                        g->n_pool++;
                        pthread_mutex_unlock(&g->pool_lock);
                        return;
                }
        }
        if (c->ssl) {
                (void) SSL_shutdown(c->ssl);
                SSL_free(TAKE_PTR(c->ssl));
        }
        c->up = safe_close(c->up);
}

/* c->up to host:port, TLS verified when tls: from the pool, or a new connection (which refuses or
 * answers the client itself on failure). */
static int upstream_get(Connection *c, const char *host, uint16_t port, bool tls) {
        int q;

        free(c->up_key);
        if (asprintf(&c->up_key, "%s %s %u", tls ? "https" : "http", host, port) < 0) {
                c->up_key = NULL;
                return -ENOMEM;
        }
        c->up_pooled = pool_take(c, c->up_key);
        if (c->up_pooled)
                return 0;
        q = upstream_open(c, host, port);
        if (q >= 0 && tls)
                q = upstream_tls(c, host);
        return q;
}

/* ---- one exchange: the request's body up, the response down ---- */

/* data[GATEWAY_CHUNK_LINE_MAX..+n) goes upstream as one chunk, in one write. */
static int up_write_chunk(Connection *c, char *data, size_t n) {
        char line[GATEWAY_CHUNK_LINE_MAX];
        int l = snprintf(line, sizeof line, "%zx\r\n", n);
        char *start = data + GATEWAY_CHUNK_LINE_MAX - l;

        memcpy(start, line, (size_t) l);
        memcpy(data + GATEWAY_CHUNK_LINE_MAX + n, "\r\n", 2);
        return up_write(c, start, (size_t) l + n + 2);
}

/* The request body: Content-Length bytes, or a chunked body decoded (strictly, capped by
 * GATEWAY_BODY_MAX; chunk extensions checked and ignored, trailer fields checked and dropped: RFC 9110
 * 6.5.1 lets a proxy discard them, and none reaches an upstream unchecked) and sent on re-chunked, so the
 * upstream never sees the client's framing. What
 * follows the body (a pipelined request) stays in c->buf. Returns -ECONNRESET (client), -EIO
 * (upstream), -EBADMSG or -EFBIG (a bad chunked body). */
static int request_body_relay(Connection *c, uint64_t already) {
        if (!c->req.chunked) {
                uint64_t left = c->req.content_length - already;
                size_t first = (size_t) MIN((uint64_t) c->size, left);

                if (first > 0) {
                        if (up_write(c, c->buf, first) < 0)
                                return -EIO;
                        memmove(c->buf, c->buf + first, c->size - first);
                        c->size -= first;
                        c->sent += first;
                        left -= first;
                }
                while (left > 0) {
                        ssize_t k = client_read(c, c->rbuf, (size_t) MIN(left, (uint64_t) GATEWAY_STREAM_BUFFER_SIZE),
                                                GATEWAY_IO_TIMEOUT_SEC * 1000);
                        if (k <= 0)
                                return -ECONNRESET;
                        if (up_write(c, c->rbuf, (size_t) k) < 0)
                                return -EIO;
                        c->sent += (uint64_t) k;
                        left -= (uint64_t) k;
                }
                return 0;
        }

        HttpChunked d = { .data_max = GATEWAY_BODY_MAX, .framing_unlimited = true, .extensions = true, .trailers = true };
        for (;;) {
                size_t n = 0, consumed = 0;
                int q;

                if (c->size == 0) {
                        ssize_t k = client_read(c, c->buf, GATEWAY_HEADER_SIZE_MAX, GATEWAY_IO_TIMEOUT_SEC * 1000);
                        if (k <= 0)
                                return -ECONNRESET;
                        c->size = (size_t) k;
                }
                q = http_chunked_decode(&d, c->buf, c->size, c->scratch + GATEWAY_CHUNK_LINE_MAX, &n, &consumed);
                if (q < 0)
                        return q;
                if (q == 0)
                        consumed = c->size;
                if (n > 0) {
                        if (up_write_chunk(c, c->scratch, n) < 0)
                                return -EIO;
                        c->sent += n;
                }
                memmove(c->buf, c->buf + consumed, c->size - consumed);
                c->size -= consumed;
                if (q == 1)
                        return up_write(c, "0\r\n\r\n", 5) < 0 ? -EIO : 0;
        }
}

static int client_send_response(Connection *c, const char *buf, size_t n) {
        int q = client_write(c, buf, n);
        if (q < 0) {
                c->reason = "client-gone";
                return q;
        }
        c->received += n;
        return 0;
}

/* What goes to the agent next, collected so that a small response leaves in one write (one TLS record):
 * sent before the gateway waits for the upstream, and at the end. */
typedef struct ClientOut {
        char *data;
        size_t size, allocated;
} ClientOut;

static void client_out_done(ClientOut *o) {
        if (o->data)
                explicit_bzero(o->data, o->allocated);
        free(o->data);
        *o = (ClientOut) {};
}

static int client_out_append(ClientOut *o, const char *s, size_t n) {
        if (o->size + n > o->allocated) {
                size_t want = MAX(o->allocated * 2, o->size + n + 256);
                char *d = malloc(want);
                if (!d)
                        return -ENOMEM;
                if (o->data) {
                        memcpy(d, o->data, o->size);
                        explicit_bzero(o->data, o->allocated);
                        free(o->data);
                }
                o->data = d;
                o->allocated = want;
        }
        memcpy(o->data + o->size, s, n);
        o->size += n;
        return 0;
}

static int client_out_flush(Connection *c, ClientOut *o) {
        int q = 0;

        if (o->size > 0)
                q = client_send_response(c, o->data, o->size) < 0 ? -ECONNRESET : 0;
        if (o->data)
                explicit_bzero(o->data, o->size);
        o->size = 0;
        return q;
}

/* Scrubs in[0..n) (and what was held back) into o, as one chunk when chunked. */
static int scrub_append(Connection *c, ClientOut *o, const char *in, size_t n, bool final, bool chunked) {
        _cleanup_free_ char *out = NULL;
        char line[GATEWAY_CHUNK_LINE_MAX];
        size_t size = 0;
        int q, l;

        q = egress_scrub(&c->scrub, in, n, final, 0, 0, &out, &size);
        if (q >= 0 && size > 0) {
                l = snprintf(line, sizeof line, "%zx\r\n", size);
                if (chunked)
                        q = client_out_append(o, line, (size_t) l);
                if (q >= 0)
                        q = client_out_append(o, out, size);
                if (q >= 0 && chunked)
                        q = client_out_append(o, "\r\n", 2);
        }
        if (out)
                explicit_bzero(out, size);
        return q;
}

/* The head of a response to an injected request, scrubbed, into o; a body framed by Content-Length is
 * sent on chunked instead (a dummy need not be as long as its secret), or, to an HTTP/1.0 client, until
 * the connection closes. */
static int scrub_head(Connection *c, ClientOut *o, const char *head, size_t size, bool rechunk, bool *ret_until_close) {
        _cleanup_free_ char *out = NULL;
        EgressScrub h = c->scrub;
        size_t n = 0;
        int q;

        h.held = 0;
        q = egress_scrub(&h, head, size, true, 0, 0, &out, &n);
        explicit_bzero(&h, sizeof h);
        if (q < 0)
                return q;
        *ret_until_close = false;
        if (!rechunk) {
                q = client_out_append(o, out, n);
                explicit_bzero(out, n);
                return q;
        }
        /* every line but Content-Length, then Transfer-Encoding before the blank line */
        for (size_t i = 0; i + 2 <= n && q >= 0;) {
                const char *eol = memmem(out + i, n - i, "\r\n", 2);
                size_t l = eol ? (size_t) (eol - (out + i)) + 2 : n - i;
                if (l == 2)
                        break;  /* the blank line */
                if (!(i > 0 && l >= 15 && strncasecmp(out + i, "Content-Length:", 15) == 0))
                        q = client_out_append(o, out + i, l);
                i += l;
        }
        explicit_bzero(out, n);
        if (q < 0)
                return q;
        if (c->req.version_minor >= 1)
                q = client_out_append(o, "Transfer-Encoding: chunked\r\n", 28);
        else
                *ret_until_close = true;
        return q < 0 ? q : client_out_append(o, "\r\n", 2);
}

/* Reads the next piece of the response; what is waiting for the agent goes first, so nothing is held
 * back while the upstream is silent (server-sent events). */
static ssize_t scrub_read(Connection *c, ClientOut *o, char *buf, size_t size) {
        ssize_t k;

        if (client_out_flush(c, o) < 0)
                return -ECONNRESET;     /* c->reason says client-gone */
        k = up_read(c, buf, size);
        if (k <= 0)
                c->reason = "upstream-broke";
        return k;
}

/* response_relay() for a request the gateway injected a secret into: the same framing rules, every byte
 * scrubbed of the secret (egress_scrub()), chunks re-made (extensions and trailers dropped). */
static int response_relay_scrubbed(Connection *c, const EgressResponseFraming *f, char *buf, size_t have,
                                   bool *ret_upstream_reusable, bool *ret_client_reusable) {
        _cleanup_(client_out_done) ClientOut o = {};
        bool rechunk = !f->chunked && !f->until_close && f->length > 0, to_close = false, extra = false;
        bool chunked_out;
        size_t off = f->head_size;
        int q;

        q = scrub_head(c, &o, buf, f->head_size, rechunk, &to_close);
        if (q < 0)
                return q;
        chunked_out = f->chunked || (rechunk && !to_close);
        have -= f->head_size;

        if (f->chunked) {
                HttpChunked d = { .framing_unlimited = true, .extensions = true, .trailers = true };
                for (;;) {
                        size_t n = 0, consumed = 0;
                        if (have == 0) {
                                ssize_t k = scrub_read(c, &o, buf, GATEWAY_STREAM_BUFFER_SIZE);
                                if (k <= 0)
                                        return k < 0 ? (int) k : -ECONNRESET;
                                off = 0;
                                have = (size_t) k;
                        }
                        q = http_chunked_decode(&d, buf + off, have, c->scratch, &n, &consumed);
                        if (q < 0) {
                                c->reason = "upstream-bad-chunks";
                                return q;
                        }
                        if (q == 0)
                                consumed = have;
                        if (n > 0) {
                                int w = scrub_append(c, &o, c->scratch, n, false, true);
                                if (w < 0)
                                        return w;
                        }
                        off += consumed;
                        have -= consumed;
                        if (q == 1) {
                                extra = have > 0;
                                break;
                        }
                }
        } else if (f->until_close || rechunk) {
                uint64_t left = f->until_close ? UINT64_MAX : f->length;
                size_t first = (size_t) MIN((uint64_t) have, left);

                if (first > 0 && (q = scrub_append(c, &o, buf + off, first, false, chunked_out)) < 0)
                        return q;
                extra = have > first;
                left -= f->until_close ? 0 : first;
                while (left > 0) {
                        ssize_t k = scrub_read(c, &o, buf, (size_t) MIN(left, (uint64_t) GATEWAY_STREAM_BUFFER_SIZE));
                        if (k == 0 && f->until_close) {
                                c->reason = NULL;       /* the end of such a body */
                                break;
                        }
                        if (k <= 0)
                                return k < 0 ? (int) k : -ECONNRESET;
                        if ((q = scrub_append(c, &o, buf, (size_t) k, false, chunked_out)) < 0)
                                return q;
                        if (!f->until_close)
                                left -= (uint64_t) k;
                }
        } else
                extra = have > 0;

        /* what was held back, then the last chunk: with a small response, all in the head's write */
        if ((q = scrub_append(c, &o, NULL, 0, true, chunked_out)) < 0 ||
            (chunked_out && (q = client_out_append(&o, "0\r\n\r\n", 5)) < 0))
                return q;
        if (client_out_flush(c, &o) < 0)
                return -ECONNRESET;
        *ret_upstream_reusable = f->reusable && !extra;
        *ret_client_reusable = c->req.keep_alive && !f->until_close && !f->ambiguous && !to_close;
        return 0;
}

/* The response, passed on as it arrives (server-sent events are not held back), its end found from its
 * framing. Returns -ECONNABORTED when the upstream ended before any byte of an answer (a pooled
 * connection the server had closed), other errors with c->reason set. */
static int response_relay(Connection *c, bool *ret_upstream_reusable, bool *ret_client_reusable) {
        char *buf = c->rbuf;
        size_t have = 0;
        EgressResponseFraming f;
        bool extra = false;
        int q;

        for (;;) {
                q = egress_response_framing(buf, have, c->req.method, &f);
                if (q < 0) {
                        c->reason = "upstream-bad-response";
                        return -EBADMSG;
                }
                if (q == 0) {
                        ssize_t k = up_read(c, buf + have, GATEWAY_STREAM_BUFFER_SIZE - have);
                        if (k <= 0 && have == 0 && c->received == 0)
                                return -ECONNABORTED;
                        if (k <= 0) {
                                c->reason = "upstream-broke";
                                return k < 0 ? (int) k : -ECONNRESET;
                        }
                        have += (size_t) k;
                        continue;
                }
                if (!f.interim) {
                        c->status = f.status;
                        break;
                }
                /* an interim head (103 Early Hints may carry Link headers) is scrubbed too */
                if (c->scrub.n > 0) {
                        _cleanup_(client_out_done) ClientOut o = {};
                        bool unused;
                        q = scrub_head(c, &o, buf, f.head_size, false, &unused);
                        if (q >= 0)
                                q = client_out_flush(c, &o);
                        if (q < 0)
                                return q;
                        memmove(buf, buf + f.head_size, have - f.head_size);
                        have -= f.head_size;
                        continue;
                }
                q = client_send_response(c, buf, f.head_size);
                if (q < 0)
                        return q;
                memmove(buf, buf + f.head_size, have - f.head_size);
                have -= f.head_size;
        }

        if (c->scrub.n > 0)
                return response_relay_scrubbed(c, &f, buf, have, ret_upstream_reusable, ret_client_reusable);

        /* The head goes out together with what of the body came with it: one write, one TLS record for a
         * small response. buf[0..off) is the head, the body's bytes read so far (have) follow it. When
         * nothing of the body came yet, the head goes alone before the gateway waits for more (a stream
         * of server-sent events begins at once). */
        size_t off = f.head_size;
        have -= f.head_size;

        if (f.chunked) {
                /* passed on byte for byte, extensions and trailers included: the decoder only finds the end */
                HttpChunked d = { .framing_unlimited = true, .extensions = true, .trailers = true };
                for (;;) {
                        size_t n = 0, consumed = 0;

                        if (have == 0) {
                                if (off > 0 && client_send_response(c, buf, off) < 0)
                                        return -ECONNRESET;
                                off = 0;
                                ssize_t k = up_read(c, buf, GATEWAY_STREAM_BUFFER_SIZE);
                                if (k <= 0) {
                                        c->reason = "upstream-broke";
                                        return k < 0 ? (int) k : -ECONNRESET;
                                }
                                have = (size_t) k;
                        }
                        q = http_chunked_decode(&d, buf + off, have, c->scratch, &n, &consumed);
                        if (q < 0) {
                                /* malformed framing, or over a cap: its end is unknown */
                                c->reason = "upstream-bad-chunks";
                                return q;
                        }
                        if (client_send_response(c, buf, off + (q == 1 ? consumed : have)) < 0)
                                return -ECONNRESET;
                        off = 0;
                        if (q == 1) {
                                extra = consumed < have;
                                break;
                        }
                        have = 0;
                }
        } else if (f.until_close) {
                if (off + have > 0 && client_send_response(c, buf, off + have) < 0)
                        return -ECONNRESET;
                for (;;) {
                        ssize_t k = up_read(c, buf, GATEWAY_STREAM_BUFFER_SIZE);
                        if (k < 0) {
                                c->reason = "upstream-broke";
                                return (int) k;
                        }
                        if (k == 0)
                                break;
                        if (client_send_response(c, buf, (size_t) k) < 0)
                                return -ECONNRESET;
                }
        } else {
                uint64_t left = f.length;
                size_t first = (size_t) MIN((uint64_t) have, left);

                if (off + first > 0 && client_send_response(c, buf, off + first) < 0)
                        return -ECONNRESET;
                extra = have > first;
                left -= first;
                while (left > 0) {
                        ssize_t k = up_read(c, buf, (size_t) MIN(left, (uint64_t) GATEWAY_STREAM_BUFFER_SIZE));
                        if (k <= 0) {
                                c->reason = "upstream-broke";
                                return k < 0 ? (int) k : -ECONNRESET;
                        }
                        if (client_send_response(c, buf, (size_t) k) < 0)
                                return -ECONNRESET;
                        left -= (uint64_t) k;
                }
        }
        /* bytes after the end of a response: the server is confused, its connection is not kept */
        *ret_upstream_reusable = f.reusable && !extra;
        *ret_client_reusable = c->req.keep_alive && !f.until_close && !f.ambiguous;
        return 0;
}

/* What follows the head: the body (after a "100 Continue" of our own when the client waits for one: the
 * gateway dropped its Expect), then the response. */
static int exchange(Connection *c, bool body, uint64_t already, const char *expect, bool *ret_upstream_reusable,
                    bool *ret_client_reusable) {
        int q;

        if (body) {
                if (already == 0 && expect && strcasecmp(expect, "100-continue") == 0 &&
                    client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
                        return -ECONNRESET;
                q = request_body_relay(c, already);
                if (q < 0)
                        return q;
        }
        return response_relay(c, ret_upstream_reusable, ret_client_reusable);
}

/* A buffer that held a credential. */
static void wipe_free(char *p, size_t size) {
        if (!p)
                return;
        explicit_bzero(p, size);
        free(p);
}

/* Sends head (and the body) to host:port and the response back. A pooled connection the server closed
 * meanwhile is replaced once, when nothing of the request but its head was sent. Sets c->again when
 * the client connection can carry another request. */
static int forward(Connection *c, const char *host, uint16_t port, bool tls, const char *head, size_t head_size) {
        bool body = c->req.chunked || c->req.content_length > 0;
        const char *expect = http_request_header(&c->req, "Expect");
        bool up_ok = false, client_ok = false;
        char *joined = NULL;
        size_t joined_size = 0;
        uint64_t with_head = 0;
        int q;

        /* What of a Content-Length body came with the head goes up in the same write: one TLS record for
         * a small POST (the model API's requests are), not two. (A request with a body is never retried,
         * so its bytes can leave c->buf now.) */
        if (!c->req.chunked && c->req.content_length > 0 && c->size > 0) {
                with_head = MIN((uint64_t) c->size, c->req.content_length);
                joined_size = head_size + (size_t) with_head;
                joined = malloc(joined_size);
                if (!joined)
                        return -ENOMEM;
                memcpy(joined, head, head_size);
                memcpy(joined + head_size, c->buf, (size_t) with_head);
                memmove(c->buf, c->buf + with_head, c->size - (size_t) with_head);
                c->size -= (size_t) with_head;
        }

        for (unsigned attempt = 0;; attempt++) {
                q = upstream_get(c, host, port, tls);
                if (q < 0) {
                        wipe_free(joined, joined_size);         /* upstream_get() answered the client */
                        return q;
                }
                c->sent = 0;
                q = joined ? up_write(c, joined, joined_size) : up_write(c, head, head_size);
                if (q >= 0) {
                        c->sent += head_size + with_head;
                        q = exchange(c, body, with_head, expect, &up_ok, &client_ok);
                }
                if ((q == -EIO || q == -ECONNABORTED) && c->up_pooled && !body && attempt == 0 && c->received == 0) {
                        log_debug("A pooled connection to %s:%u was closed by the server, opening another.", host, port);
                        upstream_release(c, false);
                        c->address[0] = 0;
                        continue;
                }
                break;
        }
        wipe_free(joined, joined_size);
        if (q >= 0) {
                upstream_release(c, up_ok);
                c->again = client_ok;
                return 0;
        }
        upstream_release(c, false);
        if ((q == -EBADMSG || q == -EFBIG) && !c->reason) {
                /* the client's chunked body */
                c->decision = "deny";
                c->reason = "bad-request";
                if (c->received == 0)
                        (void) reply(c, q == -EFBIG ? 413 : 400, "the request body's chunks cannot be read");
                return q;
        }
        if (q == -ECONNRESET && !c->reason)
                c->reason = "client-gone";
        if (c->reason && !startswith(c->reason, "upstream"))
                return q;
        if (!c->reason)
                c->reason = "upstream-failed";
        if (c->received == 0) {
                c->decision = "error";
                (void) reply(c, 502, "the upstream server failed");
        }
        return q;
}

/* Whether the Host header (if any; HTTP/1.1 requires one) names the target host:port. */
static bool host_header_agrees(const HttpRequest *r, uint16_t default_port) {
        const char *h = http_request_header(r, "Host"), *host, *colon;
        size_t host_len;
        unsigned long port = default_port;

        if (!h)
                return r->version_minor == 0;
        if (h[0] == '[') {
                const char *close = strchr(h, ']');
                if (!close)
                        return false;
                host = h + 1;
                host_len = (size_t) (close - host);
                colon = close[1] == ':' ? close + 1 : NULL;
                if (!colon && close[1])
                        return false;
        } else {
                host = h;
                colon = strchr(h, ':');
                if (colon && strchr(colon + 1, ':'))
                        return false;
                host_len = colon ? (size_t) (colon - h) : strlen(h);
        }
        if (colon) {
                char *end;
                errno = 0;
                port = strtoul(colon + 1, &end, 10);
                if (errno != 0 || *end || end == colon + 1 || port == 0 || port > 65535)
                        return false;
        }
        /* a trailing dot names the same host */
        if (host_len > 1 && host[host_len - 1] == '.')
                host_len--;
        return host_len == strlen(r->host) && strncasecmp(host, r->host, host_len) == 0 && port == r->port;
}

/* ---- the three kinds of request ---- */

/* Whether a ClientHello's server name, normalised as hosts are, is the (normalised) CONNECT target. */
static bool sni_agrees(const char *sni, const char *host) {
        _cleanup_free_ char *n = NULL;

        return sni && egress_host_normalize(sni, &n) >= 0 && streq(n, host);
}

/* The server context with the leaf certificate of host, made once and cached. */
static SSL_CTX *leaf_ctx(Gateway *g, const char *host) {
        SSL_CTX *ctx = NULL;
        X509 *cert = NULL;
        EVP_PKEY *key = NULL;

        pthread_mutex_lock(&g->leaves_lock);
        for (size_t i = 0; i < g->n_leaves; i++)
                if (streq(g->leaves[i].host, host)) {
                        ctx = g->leaves[i].ctx;
                        SSL_CTX_up_ref(ctx);
                        goto done;
                }
        if (egress_ca_issue(g->ca, host, &cert, &key) < 0)
                goto done;
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
            SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
                SSL_CTX_free(ctx);
                ctx = NULL;
                goto done;
        }
        SSL_CTX_set_read_ahead(ctx, 1);
        /* A full cache starts over: leaves are cheap to make again, and connections hold their own
         * reference. */
        if (g->n_leaves >= GATEWAY_LEAVES_MAX) {
                for (size_t i = 0; i < g->n_leaves; i++) {
                        free(g->leaves[i].host);
                        SSL_CTX_free(g->leaves[i].ctx);
                }
                g->n_leaves = 0;
        }
        g->leaves[g->n_leaves].host = strdup(host);
        if (g->leaves[g->n_leaves].host) {
                g->leaves[g->n_leaves++].ctx = ctx;
                SSL_CTX_up_ref(ctx);
        }
done:
        pthread_mutex_unlock(&g->leaves_lock);
        X509_free(cert);
        EVP_PKEY_free(key);
        return ctx;
}

static void request_reset(Connection *c) {
        http_request_done(&c->req);
        egress_scrub_reset(&c->scrub);
        c->decision = c->rule = c->reason = NULL;
        c->status = 0;
        c->sent = c->received = 0;
        c->address[0] = 0;
        c->again = false;
        (void) clock_gettime(CLOCK_MONOTONIC, &c->start);
}

/* One request inside an intercepted tunnel. */
static int intercept_request(Connection *c, bool literal) {
        Gateway *g = c->gw;
        _cleanup_free_ char *head = NULL, *host_header = NULL;
        const EgressRule *rule;
        const char *reason = NULL;
        size_t size = 0;
        int q;

        if (c->req.form != HTTP_TARGET_ORIGIN)
                return refuse(c, 400, "deny", "bad-request", "a request inside a tunnel names no other server");
        c->req.host = strdup(c->host);
        if (!c->req.host)
                return -ENOMEM;
        c->req.port = c->port;
        if (!host_header_agrees(&c->req, 443))
                return refuse(c, 421, "deny", "host-mismatch", "the Host header is not the CONNECT target");
        rule = egress_policy_match(g->policy, EGRESS_SCHEME_HTTPS, c->host, c->port, c->req.method, c->req.path);
        c->rule = rule->id;
        if (rule->decision == EGRESS_DENY)
                return refuse(c, 403, "deny", "policy", "the egress policy does not allow this request");

        if ((c->port == 443 ? asprintf(&host_header, literal && strchr(c->host, ':') ? "[%s]" : "%s", c->host)
                            : asprintf(&host_header, literal && strchr(c->host, ':') ? "[%s]:%u" : "%s:%u", c->host, c->port)) < 0)
                return -ENOMEM;
        EgressApiAuth auth = { .dummy = c->dummy, .api_key = g->api_key, .oauth_token = g->oauth_token };
        q = egress_upstream_head(&c->req, g->policy, rule, &auth, host_header, &head, &size, &reason);
        if (q == -ENOMEM)
                return q;
        if (q < 0)
                return refuse(c, q == -E2BIG ? 431 : 403, "deny", reason, "the request carries a credential it may not send");

        c->decision = rule->decision == EGRESS_CREDENTIAL ? "credential" : "allow";
        egress_scrub_reset(&c->scrub);
        if (rule->decision == EGRESS_CREDENTIAL && egress_scrub_add(&c->scrub, rule->credential.secret, rule->credential.dummy) < 0)
                return -EINVAL;
        q = forward(c, c->host, c->port, true, head, size);
        explicit_bzero(head, size);
        return q;
}

/* A host that gets a credential: the gateway ends the agent's TLS with a leaf of the sandbox CA, reads
 * the request, swaps the dummy for the secret, and sends it on over TLS it verifies itself. */
static int handle_intercept(Connection *c) {
        Gateway *g = c->gw;
        const char *sni;
        struct timeval tv = { .tv_sec = GATEWAY_HEAD_TIMEOUT_MS / 1000 };
        struct in6_addr a;
        bool literal;
        SSL_CTX *ctx;
        int q;

        if (c->size > 0)
                return refuse(c, 400, "deny", "early-data", "nothing may follow CONNECT before its answer");
        ctx = leaf_ctx(g, c->host);
        if (!ctx)
                return refuse(c, 500, "error", "leaf-certificate", "no certificate can be made for this host");
        c->status = 200;
        q = loop_write(c->fd, "HTTP/1.1 200 Connection Established\r\n\r\n", 39);
        if (q < 0) {
                SSL_CTX_free(ctx);
                c->reason = "client-gone";
                return q;
        }
        (void) setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        c->client_ssl = SSL_new(ctx);
        SSL_CTX_free(ctx);
        if (!c->client_ssl || SSL_set_fd(c->client_ssl, c->fd) != 1)
                return -ENOMEM;
        if (SSL_accept(c->client_ssl) != 1) {
                ERR_clear_error();
                SSL_free(c->client_ssl);
                c->client_ssl = NULL;
                c->decision = "deny";
                c->reason = "client-tls";
                return -EPROTO;
        }
        /* The agent's TLS must ask for the host the CONNECT named. */
        sni = SSL_get_servername(c->client_ssl, TLSEXT_NAMETYPE_host_name);
        literal = inet_pton(AF_INET, c->host, &a) == 1 || inet_pton(AF_INET6, c->host, &a) == 1;
        if (literal ? sni != NULL : !sni_agrees(sni, c->host))
                return refuse(c, 421, "deny", "sni-mismatch", "the TLS server name is not the CONNECT target");

        /* The requests inside, each checked, rewritten and journaled on its own. */
        for (;;) {
                http_request_done(&c->req);
                q = connection_read_head(c);
                if (q < 0) {
                        if (c->requests > 0 && c->size == 0 && !c->decision && streq_ptr(c->reason, "client-gone"))
                                c->quiet = true;
                        return q;
                }
                q = intercept_request(c, literal);
                c->requests++;
                if (q < 0 || !c->again)
                        return q;
                connection_journal(c);
                request_reset(c);
        }
}

static int handle_connect(Connection *c) {
        const EgressRule *rule;
        uint8_t hello[TLS_RECORD_HEADER_SIZE + TLS_RECORD_SIZE_MAX];
        size_t got = 0;
        _cleanup_free_ char *sni = NULL;
        int q;

        c->kind = "connect";
        if (!host_header_agrees(&c->req, c->req.port))
                return refuse(c, 400, "deny", "host-mismatch", "the Host header does not name the CONNECT target");
        rule = egress_policy_match(c->gw->policy, EGRESS_SCHEME_HTTPS, c->req.host, c->req.port, NULL, NULL);
        c->rule = rule->id;
        /* A host some credential (or "intercept": "always") rule names is intercepted, whatever that
         * rule's methods and paths: the policy then decides on each request inside. */
        if (egress_policy_host_intercepted(c->gw->policy, c->req.host, c->req.port)) {
                /* Without a CA (no state directory) the host is refused rather than reached without
                 * its credential. */
                if (!c->gw->ca)
                        return refuse(c, 403, "deny", "interception-unavailable",
                                      "credential injection over TLS is not available; the host is refused");
                return handle_intercept(c);
        }
        if (rule->decision == EGRESS_DENY)
                return refuse(c, 403, "deny", "policy", "the egress policy does not allow this host and port");

        q = upstream_open(c, c->req.host, c->req.port);
        if (q < 0)
                return q;
        c->decision = "allow";
        c->status = 200;
        q = loop_write(c->fd, "HTTP/1.1 200 Connection Established\r\n\r\n", 39);
        if (q < 0) {
                c->reason = "client-gone";
                return q;
        }

        /* The ClientHello (the client may have sent it with the CONNECT already) must ask for the host the
         * policy allowed: otherwise an allowed name could front a tunnel to any server on that address. */
        memcpy(hello, c->buf, MIN(c->size, sizeof hello));
        got = MIN(c->size, sizeof hello);
        for (;;) {
                ssize_t k;
                q = tls_client_hello_sni(hello, got, &sni);
                if (q != -EAGAIN)
                        break;
                k = read_timeout(c->fd, hello + got, sizeof hello - got, GATEWAY_HEAD_TIMEOUT_MS);
                if (k <= 0) {
                        c->reason = "client-gone";
                        return -ECONNRESET;
                }
                got += (size_t) k;
        }
        if (q < 0) {
                c->decision = "deny";
                c->reason = "not-tls";
                return -EPROTO;
        }
        {
                struct in6_addr a;
                bool literal = inet_pton(AF_INET, c->req.host, &a) == 1 || inet_pton(AF_INET6, c->req.host, &a) == 1;
                if (literal ? sni != NULL : !sni_agrees(sni, c->req.host)) {
                        c->decision = "deny";
                        c->reason = "sni-mismatch";
                        return -EACCES;
                }
        }
        q = loop_write(c->up, hello, got);
        if (q < 0) {
                c->reason = "upstream-broke";
                return q;
        }
        c->sent += got;
        {
                FdPumpStats stats = {};
                q = fd_pump(c->fd, c->up, GATEWAY_TUNNEL_IDLE_MS, GATEWAY_TUNNEL_HALF_CLOSED_MS, &stats);
                c->sent += stats.a_to_b;
                c->received += stats.b_to_a;
        }
        /* a peer resetting at the end is how many TLS connections close */
        if (q == -ETIMEDOUT)
                c->reason = "idle";
        else if (q < 0 && q != -ECONNRESET && q != -EPIPE)
                c->reason = "tunnel-broke";
        return q;
}

static int handle_http(Connection *c) {
        _cleanup_free_ char *head = NULL, *host_header = NULL;
        const EgressRule *rule;
        const char *reason = NULL;
        size_t size;
        int q;

        c->kind = "http";
        if (!host_header_agrees(&c->req, 80))
                return refuse(c, 400, "deny", "host-mismatch", "the Host header does not name the request's target");
        rule = egress_policy_match(c->gw->policy, EGRESS_SCHEME_HTTP, c->req.host, c->req.port, c->req.method, c->req.path);
        c->rule = rule->id;
        if (rule->decision == EGRESS_DENY)
                return refuse(c, 403, "deny", "policy", "the egress policy does not allow this request");

        if ((c->req.port == 80 ? asprintf(&host_header, strchr(c->req.host, ':') ? "[%s]" : "%s", c->req.host)
                               : asprintf(&host_header, strchr(c->req.host, ':') ? "[%s]:%u" : "%s:%u", c->req.host, c->req.port)) < 0)
                return -ENOMEM;
        EgressApiAuth auth = { .dummy = c->dummy, .api_key = c->gw->api_key, .oauth_token = c->gw->oauth_token };
        q = egress_upstream_head(&c->req, c->gw->policy, rule, &auth, host_header, &head, &size, &reason);
        if (q == -ENOMEM)
                return q;
        /* No credential rule matches plain HTTP (they are https only): a dummy here is one the agent
         * would have sent in clear text. */
        if (q == -EACCES && streq_ptr(reason, "dummy-unbound"))
                return refuse(c, 403, "deny", "cleartext-credential",
                              "credentials are only injected over TLS: use https://, never http://");
        if (q < 0)
                return refuse(c, q == -E2BIG ? 431 : 403, "deny", reason, "the request carries a credential it may not send");

        c->decision = "allow";
        q = forward(c, c->req.host, c->req.port, false, head, size);
        explicit_bzero(head, size);
        return q;
}

static int handle_api(Connection *c) {
        const Gateway *g = c->gw;
        _cleanup_free_ char *head = NULL, *host_header = NULL, *path = NULL;
        EgressApiAuth auth = { .pass_through = true, .dummy = c->dummy, .api_key = g->api_key, .oauth_token = g->oauth_token };
        const char *reason = NULL;
        char *saved_path;
        size_t size = 0;
        int q;

        c->kind = "api";
        c->rule = "api";
        if (!g->policy->allow_api)
                return refuse(c, 403, "deny", "api-disabled", "the model API is not allowed (egress.allow_api is false)");
        free(c->host);
        c->host = strdup(g->api.host);
        c->port = g->api.port;
        if (!c->host)
                return -ENOMEM;

        if ((g->api.tls ? g->api.port != 443 : g->api.port != 80) ?
            asprintf(&host_header, strchr(g->api.host, ':') ? "[%s]:%u" : "%s:%u", g->api.host, g->api.port) < 0 :
            asprintf(&host_header, strchr(g->api.host, ':') ? "[%s]" : "%s", g->api.host) < 0)
                return -ENOMEM;
        if (asprintf(&path, "%s%s", g->api.base_path, c->req.path) < 0)
                return -ENOMEM;
        saved_path = c->req.path;
        c->req.path = path;
        q = egress_upstream_head(&c->req, g->policy, NULL, &auth, host_header, &head, &size, &reason);
        c->req.path = saved_path;
        if (q == -ENOMEM)
                return q;
        if (q < 0)
                return refuse(c, q == -E2BIG ? 431 : 403, "deny", reason,
                              "the API pass-through only accepts the dummy key it gave the agent");

        c->decision = "credential";
        egress_scrub_reset(&c->scrub);
        if ((g->api_key && egress_scrub_add(&c->scrub, g->api_key, c->dummy) < 0) ||
            (g->oauth_token && egress_scrub_add(&c->scrub, g->oauth_token, c->dummy) < 0))
                return -EINVAL;
        q = forward(c, g->api.host, g->api.port, g->api.tls, head, size);
        explicit_bzero(head, size);
        return q;
}

/* The sandbox CA's certificate (public), which the runner puts into the agent's trust store. */
static int handle_ca(Connection *c) {
        _cleanup_free_ char *out = NULL;
        size_t size;
        int q;

        c->kind = "ca";
        c->rule = "ca";
        if (!streq(c->req.method, "GET"))
                return refuse(c, 405, "deny", "bad-request", "only GET");
        if (!c->gw->ca)
                return refuse(c, 404, "deny", "no-ca", "this gateway has no sandbox CA (no state directory)");
        q = http_response_format(200, "application/x-pem-file", c->gw->ca->pem, strlen(c->gw->ca->pem), false, &out, &size);
        if (q < 0)
                return q;
        c->decision = "allow";
        c->status = 200;
        return client_write(c, out, size);
}

static void connection_free(Connection *c) {
        if (!c)
                return;
        upstream_release(c, false);
        free(c->up_key);
        if (c->client_ssl) {
                (void) SSL_shutdown(c->client_ssl);
                SSL_free(c->client_ssl);
        }
        safe_close(c->up);
        safe_close(c->fd);
        http_request_done(&c->req);
        if (c->buf) {
                explicit_bzero(c->buf, GATEWAY_HEADER_SIZE_MAX);
                free(c->buf);
        }
        if (c->scratch) {
                explicit_bzero(c->scratch, GATEWAY_STREAM_BUFFER_SIZE + GATEWAY_CHUNK_LINE_MAX);
                free(c->scratch);
        }
        free(c->rbuf);
        free(c->host);
        free(c);
}

/* The runner (root on the host) asks for a container's token and dummy before it creates it. */
static int handle_register(Connection *c) {
        _cleanup_free_ char *body = NULL, *out = NULL;
        char token[EGRESS_TOKEN_HEX_LEN + 1], dummy[EGRESS_DUMMY_LEN + 1];
        const char *name = startswith(strempty(c->req.query), "container=");
        size_t size;
        int q;

        c->kind = "register";
        c->rule = "register";
        if (!streq(c->req.method, "POST"))
                return refuse(c, 405, "deny", "bad-request", "only POST");
        if (c->peer.uid != 0)
                return refuse(c, 403, "deny", "not-root", "only root registers containers");
        if (!c->gw->have_token_key)
                return refuse(c, 503, "error", "no-token-key", "this gateway has no token key (no state directory)");
        if (!name || !egress_container_name_is_valid(name))
                return refuse(c, 400, "deny", "bad-request", "container=NAME is missing or not a container name");
        (void) snprintf(c->container, sizeof c->container, "%s", name);
        if (egress_token_make(c->gw->token_key, name, token) < 0 || egress_dummy_make(c->gw->token_key, name, dummy) < 0)
                return refuse(c, 500, "error", "token", "no token can be made");
        q = asprintf(&body, "{\"container\":\"%s\",\"token\":\"%s\",\"dummy\":\"%s\"}\n", name, token, dummy);
        explicit_bzero(token, sizeof token);
        if (q < 0)
                return -ENOMEM;
        q = http_response_format(200, "application/json", body, strlen(body), false, &out, &size);
        explicit_bzero(body, strlen(body));
        if (q < 0)
                return q;
        c->decision = "allow";
        c->status = 200;
        q = client_write(c, out, size);
        explicit_bzero(out, size);
        return q;
}

/* Every decision is taken on one form of the target: the host normalised (egress_host_normalize()) and
 * the path normalised (egress_path_normalize()), which is also what goes upstream. */
static int request_normalize(Connection *c) {
        char *n = NULL;
        int q;

        if (c->req.host) {
                q = egress_host_normalize(c->req.host, &n);
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        return refuse(c, 400, "deny", "bad-host",
                                      "the host is not a name or an IP address in its one dotted-quad or IPv6 form");
                free(c->req.host);
                c->req.host = n;
        }
        if (c->req.path && c->req.form != HTTP_TARGET_AUTHORITY) {
                q = egress_path_normalize(c->req.path, &n);
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        return refuse(c, 400, "deny", "bad-path",
                                      "the path holds an encoded / or dot-segment, or a bad escape");
                free(c->req.path);
                c->req.path = n;
        }
        return 0;
}

static void connection_dispatch(Connection *c) {
        Gateway *g = c->gw;

        free(c->host);
        c->host = c->req.host ? strdup(c->req.host) : NULL;
        c->port = c->req.host ? c->req.port : 0;
        /* A misconfigured gateway still registers containers (it refuses their requests): the agent is
         * told why it has no egress, not that the gateway cannot be reached. */
        if (g->config_error && !(!c->handed_over && c->req.form == HTTP_TARGET_ORIGIN && streq_ptr(c->req.path, EGRESS_REGISTER_PATH))) {
                (void) refuse(c, 503, "deny", "misconfigured", "the egress gateway is misconfigured; see its journal");
                return;
        }
        if (request_normalize(c) < 0)
                return;
        free(c->host);
        c->host = c->req.host ? strdup(c->req.host) : NULL;

        /* Straight on the socket (not a hand-over of a container's relay): the sandbox CA, which is
         * public, and the runner's registration; nothing leaves for such a caller. */
        if (!c->handed_over) {
                if (c->req.form == HTTP_TARGET_ORIGIN && streq(c->req.path, GATEWAY_CA_PATH))
                        (void) handle_ca(c);
                else if (c->req.form == HTTP_TARGET_ORIGIN && streq(c->req.path, EGRESS_REGISTER_PATH))
                        (void) handle_register(c);
                else {
                        c->kind = c->req.form == HTTP_TARGET_AUTHORITY ? "connect" : c->req.form == HTTP_TARGET_ABSOLUTE ? "http" : "api";
                        (void) refuse(c, 403, "deny", "not-a-container",
                                      "only the channel's own containers use this gateway, through their relay");
                }
                return;
        }
        if (c->req.form == HTTP_TARGET_AUTHORITY)
                (void) handle_connect(c);
        else if (c->req.form == HTTP_TARGET_ABSOLUTE)
                (void) handle_http(c);
        else
                (void) handle_api(c);
}

/* A connection from the relay is the agent's own, handed over with its container's credential: from
 * then on c->fd is that. Anything else is a client speaking HTTP on the socket itself. */
static int connection_take_over(Connection *c) {
        char credential[EGRESS_HANDOVER_CREDENTIAL_MAX + 1];
        const char *container, *token;
        socklen_t l = sizeof c->peer;
        int fd = -EBADF, q;

        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &l) < 0)
                return -errno;
        q = (int) read_timeout(c->fd, NULL, 0, GATEWAY_HEAD_TIMEOUT_MS);
        if (q < 0)
                return q;
        q = egress_handover_receive(c->fd, &fd, credential);
        if (q <= 0)
                return q;
        q = egress_credential_parse(credential, &container, &token);
        if (q >= 0 && !(c->gw->have_token_key && egress_token_check(c->gw->token_key, container, token)))
                q = -EPERM;
        if (q >= 0) {
                (void) snprintf(c->container, sizeof c->container, "%s", container);
                q = egress_dummy_make(c->gw->token_key, container, c->dummy);
        }
        explicit_bzero(credential, sizeof credential);
        /* the agent's connection either way: a refusal is answered on it */
        safe_close(c->fd);
        c->fd = fd;
        if (q < 0)
                return -EPERM;
        c->handed_over = true;
        return 0;
}

static void *connection_run(void *userdata) {
        Connection *c = userdata;
        Gateway *g = c->gw;
        uint64_t one = 1;
        int q;

        q = connection_take_over(c);
        if (q == -EBADMSG || q == -EPROTONOSUPPORT) {
                c->kind = "handover";
                c->decision = "deny";
                c->reason = "bad-handover";
        } else if (q == -EPERM) {
                c->kind = "handover";
                (void) refuse(c, 403, "deny", "bad-token", "this connection's container is not one of the channel's");
        } else if (q < 0)
                c->quiet = true;        /* gone (or silent) before a byte */
        for (; q >= 0;) {
                if (connection_read_head(c) < 0) {
                        /* a connection that sent nothing (more) is not worth a record */
                        if (!c->decision && streq_ptr(c->reason, "client-gone") && c->size == 0)
                                c->quiet = true;
                        break;
                }
                connection_dispatch(c);
                c->requests++;
                /* a CONNECT took the connection over, with its own requests inside */
                if (!c->again || streq_ptr(c->kind, "connect"))
                        break;
                connection_journal(c);
                request_reset(c);
        }
        if (!c->quiet) {
                if (!c->decision)
                        c->decision = "error";
                connection_journal(c);
        }
        connection_free(c);
        atomic_fetch_sub(&g->active, 1);
        if (write(g->done_fd, &one, sizeof one) < 0)
                log_debug_errno(errno, "Waking the event loop failed, ignoring: %m");
        return NULL;
}

/* ---- the main thread: accept, idle exit ---- */

/* Connections beyond GATEWAY_CONNECTIONS_MAX are refused before they are requests, as fast as a client
 * opens them: GATEWAY_BUSY_PER_WINDOW per peer address and window are journaled one by one, the rest of a
 * burst as one record with the count. Only the main thread uses the limiter. */
#define GATEWAY_BUSY_PER_WINDOW 3U
#define GATEWAY_BUSY_WINDOW_USEC (10ULL * 1000000ULL)

static void busy_summary(const char *peer, uint64_t suppressed, void *userdata) {
        Gateway *g = userdata;
        _cleanup_free_ char *f_dropped = NULL, *f_limit = NULL, *f_peer = NULL;

        if (asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", GATEWAY_BUSY_PER_WINDOW) < 0 ||
            asprintf(&f_peer, "LOOP_PEER=%s", peer ?: "beyond-the-count") < 0) {
                log_oom();
                return;
        }
        char *extra[] = { (char *) "LOOP_DECISION=deny", (char *) "LOOP_REASON=busy", f_dropped, f_limit, f_peer, NULL };
        AuditFields f = { .channel = g->channel, .extra = extra };
        (void) audit_log(AUDIT_GATEWAY_REQUEST, LOG_WARNING, &f,
                         "Egress deny: %" PRIu64 " more connections of %s refused beyond %u at once in %llu s "
                         "(the first %u journaled one by one).", suppressed, peer ?: "peers beyond the count",
                         GATEWAY_CONNECTIONS_MAX, GATEWAY_BUSY_WINDOW_USEC / 1000000ULL, GATEWAY_BUSY_PER_WINDOW);
}

static void busy_expire(Gateway *g, uint64_t now) {
        if (g->busy)
                audit_limiter_expire(g->busy, now, busy_summary, g);
}

static void gateway_update_idle(Gateway *g) {
        if (atomic_load(&g->active) > 0) {
                (void) sd_event_source_set_enabled(g->idle_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time_relative(g->idle_timer, g->idle_usec);
        (void) sd_event_source_set_enabled(g->idle_timer, SD_EVENT_ONESHOT);
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Gateway *g = userdata;

        if (atomic_load(&g->active) > 0)
                return 0;
        log_debug("Idle, exiting; the next connection starts the gateway again.");
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(g->event, 0);
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        uint64_t n;

        if (read(fd, &n, sizeof n) < 0)
                log_debug_errno(errno, "Reading the eventfd failed, ignoring: %m");
        busy_expire(userdata, clock_usec(CLOCK_MONOTONIC));
        gateway_update_idle(userdata);
        return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Gateway *g = userdata;
        _cleanup_close_ int cfd = -EBADF;
        pthread_attr_t attr;
        pthread_t t;
        Connection *c;
        int q;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                        log_warning_errno(errno, "accept() failed, ignoring: %m");
                return 0;
        }
        if (atomic_load(&g->active) >= GATEWAY_CONNECTIONS_MAX) {
                static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                struct sockaddr_storage peer = {};
                socklen_t pl = sizeof peer;
                char address[INET6_ADDRSTRLEN + 8] = "unknown";

                (void) send(cfd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (getpeername(cfd, (struct sockaddr *) &peer, &pl) >= 0)
                        (void) egress_address_format((struct sockaddr *) &peer, address, sizeof address);
                if (!g->busy || audit_limiter_admit(g->busy, address, clock_usec(CLOCK_MONOTONIC), busy_summary, g) != 0) {
                        _cleanup_free_ char *f_peer = NULL;

                        if (asprintf(&f_peer, "LOOP_PEER=%s", address) < 0)
                                log_oom();
                        char *extra[] = { (char *) "LOOP_DECISION=deny", (char *) "LOOP_REASON=busy", f_peer, NULL };
                        AuditFields f = { .channel = g->channel, .extra = extra };
                        (void) audit_log(AUDIT_GATEWAY_REQUEST, LOG_WARNING, &f,
                                         "Egress deny: more than %u connections at once, refusing one of %s.",
                                         GATEWAY_CONNECTIONS_MAX, address);
                }
                return 0;
        }

        c = calloc(1, sizeof(Connection));
        if (!c || !(c->buf = malloc(GATEWAY_HEADER_SIZE_MAX)) || !(c->rbuf = malloc(GATEWAY_STREAM_BUFFER_SIZE)) ||
            !(c->scratch = malloc(GATEWAY_STREAM_BUFFER_SIZE + GATEWAY_CHUNK_LINE_MAX))) {
                if (c) {
                        free(c->buf);
                        free(c->rbuf);
                }
                free(c);
                log_oom();
                return 0;
        }
        c->gw = g;
        c->fd = TAKE_FD(cfd);
        c->up = -EBADF;
        (void) clock_gettime(CLOCK_MONOTONIC, &c->start);

        atomic_fetch_add(&g->active, 1);
        gateway_update_idle(g);
        (void) pthread_attr_init(&attr);
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        (void) pthread_attr_setstacksize(&attr, 512U * 1024U);
        q = pthread_create(&t, &attr, connection_run, c);
        (void) pthread_attr_destroy(&attr);
        if (q != 0) {
                log_warning_errno(q, "Cannot start a connection thread, dropping the connection: %m");
                connection_free(c);
                atomic_fetch_sub(&g->active, 1);
                gateway_update_idle(g);
        }
        return 0;
}

static int gateway_listen(Gateway *g) {
        int r;

        r = listen_fd_from_systemd(true, &g->listen_fd);
        if (r < 0)
                return log_error_errno(r, "Expected one listening AF_UNIX stream socket from loop-gateway@NAME.socket: %m");
        r = sd_event_add_io(g->event, NULL, g->listen_fd, EPOLLIN, on_accept, g);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the listening socket: %m");
        return 0;
}

static int run(int argc, char *argv[]) {
        Gateway g = { .listen_fd = -EBADF, .done_fd = -EBADF };
        const char *reason, *config = NULL, *idle;
        sigset_t mask;
        int r;

        log_setup();

        if (argc == 4 && streq(argv[2], "--config"))
                config = argv[3];
        else if (argc != 2)
                return log_error_errno(EINVAL, "Usage: %s CHANNEL [--config FILE] (started by loop-gateway@CHANNEL.socket)",
                                       program_invocation_short_name);
        if (channel_name_check(argv[1], &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", argv[1], reason);
        g.channel = argv[1];

        r = gateway_load(&g, config);
        if (r < 0)
                return r;
        if (g.config_error) {
                char *extra[] = { NULL, NULL };
                _cleanup_free_ char *e = NULL;
                if (asprintf(&e, "LOOP_REASON=%s", g.config_error) >= 0)
                        extra[0] = e;
                AuditFields f = { .channel = g.channel, .extra = extra };
                (void) audit_log(AUDIT_GATEWAY_FAILED, LOG_ERR, &f,
                                 "The egress gateway of channel %s cannot serve, every request is refused: %s",
                                 g.channel, g.config_error);
        }
        {
                const char *state = getenv("STATE_DIRECTORY");
                _cleanup_free_ char *cn = NULL;
                _cleanup_close_ int dfd = -EBADF;

                if (isempty(state))
                        log_info("No $STATE_DIRECTORY: no sandbox CA and no token key, every container is refused.");
                else if ((dfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        log_warning_errno(errno, "Cannot open %s, no sandbox CA and no token key: %m", state);
                else if (g.config_error)
                        ;       /* no CA: nothing is served but the registration */
                else if (asprintf(&cn, "loop egress CA of channel %s", g.channel) < 0)
                        return log_oom();
                else if ((r = egress_ca_load_or_create(dfd, cn, &g.ca)) < 0)
                        log_error_errno(r, "Cannot load or make the sandbox CA in %s, credential rules on HTTPS are refused: %m", state);
                if (dfd >= 0) {
                        r = egress_token_key_load_or_create(dfd, g.token_key);
                        if (r < 0)
                                log_error_errno(r, "Cannot load or make the token key in %s, every container is refused: %m", state);
                        g.have_token_key = r >= 0;
                }
        }
        (void) pthread_mutex_init(&g.leaves_lock, NULL);
        (void) pthread_mutex_init(&g.sessions_lock, NULL);
        (void) pthread_mutex_init(&g.pool_lock, NULL);
        idle = getenv("LOOP_GATEWAY_IDLE_SEC");
        g.idle_usec = (idle && atoi(idle) > 0 ? (uint64_t) atoi(idle) : GATEWAY_IDLE_SEC_DEFAULT) * 1000000ULL;

        /* Threads inherit this mask: only the event loop takes SIGTERM/SIGINT. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Cannot block signals: %m");
        (void) signal(SIGPIPE, SIG_IGN);

        g.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (g.done_fd < 0)
                return log_error_errno(errno, "Cannot make an eventfd: %m");
        r = sd_event_default(&g.event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m");
        r = audit_limiter_new(GATEWAY_BUSY_PER_WINDOW, GATEWAY_BUSY_WINDOW_USEC, &g.busy);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the refusal limiter: %m");
        if ((r = sd_event_add_signal(g.event, NULL, SIGTERM, NULL, NULL)) < 0 ||
            (r = sd_event_add_signal(g.event, NULL, SIGINT, NULL, NULL)) < 0 ||
            (r = sd_event_add_io(g.event, NULL, g.done_fd, EPOLLIN, on_done, &g)) < 0 ||
            (r = sd_event_add_time_relative(g.event, &g.idle_timer, CLOCK_MONOTONIC, g.idle_usec, 0, on_idle, &g)) < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        r = gateway_listen(&g);
        if (r < 0)
                return r;

        (void) sd_notify(false, g.config_error ? "READY=1\nSTATUS=Misconfigured: refusing every request."
                                               : "READY=1\nSTATUS=Serving egress.");
        r = sd_event_loop(g.event);
        busy_expire(&g, UINT64_MAX);            /* what is still counted gets its summary */
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        /* Threads still running end with the process: their clients see the connection break. */
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
