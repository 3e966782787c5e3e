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
 * The helper skeleton (socket-service.h) accepts on its sd-event loop and runs each connection on a worker
 * thread it joins (at most GATEWAY_CONNECTIONS_MAX), blocking I/O with timeouts; a request head (the
 * hand-over, a head, a ClientHello, the agent's TLS handshake) has GATEWAY_HEAD_TIMEOUT_MS in all, not per
 * read. It exits after LOOP_GATEWAY_IDLE_SEC without connections (0: never); SIGTERM lets the requests
 * under way finish. */

#include <fcntl.h>
#include <inttypes.h>
#include <openssl/err.h>
#include <systemd/sd-daemon.h>

#include "audit.h"
#include "config.h"
#include "egress-dial.h"
#include "egress-exchange.h"
#include "egress-gateway.h"
#include "egress-handover.h"
#include "egress-target.h"
#include "io-util.h"
#include "log.h"
#include "tls-sni.h"
#include "env-util.h"

/* ---- configuration ---- */

static int gateway_load(EgressGateway *g, const char *path) {
        int r;

        r = egress_config_load(path, &g->config);
        if (r < 0)
                return log_oom();
        if (g->config.error)
                return 0;
        if (g->config.proxy.authorization && !streq(g->config.proxy_from, "egress.upstream_proxy"))
                log_warning("The upstream proxy's password comes from $%s, which `systemctl show` displays; "
                            "egress.upstream_proxy keeps it in the gateway's credential only.", g->config.proxy_from);

        r = egress_upstream_tls_new(g->config.ca_file, &g->tls);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return asprintf(&g->config.error, "egress.ca_file %s cannot be loaded", g->config.ca_file) < 0 ? log_oom() : 0;

        r = egress_own_addresses_load(&g->own);
        if (r < 0)
                log_warning_errno(r, "Cannot list this host's addresses, only the address ranges are refused: %m");
        return 0;
}

static int connection_read_head(EgressConn *c) {
        HttpLimits limits = {
                .header_size_max = GATEWAY_HEADER_SIZE_MAX,
                .headers_max = GATEWAY_HEADERS_MAX,
                .body_size_max = GATEWAY_BODY_MAX,
                .chunked = true,                /* streamed by egress_conn_forward() */
                .proxy_forms = true,
                .head_only = true,
        };

        /* SIGTERM: no further request on this connection */
        if (socket_connection_head_begin(c->sc) < 0) {
                c->reason = "client-gone";
                return -ECONNRESET;
        }
        for (;;) {
                size_t consumed;
                int status = 400, q;
                ssize_t k;

                q = http_request_parse(c->buf, c->size, &limits, &c->req, &consumed, &status, NULL);
                if (q > 0 && socket_connection_head_end(c->sc) == -ETIMEDOUT)
                        return egress_conn_refuse(c, 408, "deny", "timeout", "the request head did not arrive in time");
                if (q > 0) {
                        /* what follows the head (body, or a ClientHello sent early) stays at buf[0..size) */
                        memmove(c->buf, c->buf + consumed, c->size - consumed);
                        c->size -= consumed;
                        return 0;
                }
                if (q < 0)
                        return egress_conn_refuse(c, status, "deny", "bad-request", "the request cannot be parsed");
                if (c->size >= GATEWAY_HEADER_SIZE_MAX)
                        return egress_conn_refuse(c, 431, "deny", "bad-request", "the request head is too large");
                k = egress_conn_client_read(c, c->buf + c->size, GATEWAY_HEADER_SIZE_MAX - c->size, GATEWAY_HEAD_TIMEOUT_MS);
                /* the skeleton shut the read side: the head's deadline passed, however it trickled in */
                if (k <= 0 && k != -ETIMEDOUT && socket_connection_head_expired(c->sc))
                        k = -ETIMEDOUT;
                if (k == -ETIMEDOUT && c->size == 0 && c->requests > 0) {
                        c->reason = "client-gone";      /* an idle kept-alive connection, closed */
                        return -ECONNRESET;
                }
                if (k == -ETIMEDOUT)
                        return egress_conn_refuse(c, 408, "deny", "timeout", "the request head did not arrive in time");
                if (k <= 0) {
                        c->reason = "client-gone";
                        return -ECONNRESET;
                }
                c->size += (size_t) k;
        }
}

/* ---- the three kinds of request ---- */

/* Every decision is taken on one form of the target: the host normalised (egress_host_normalize()), the
 * path normalised (egress_path_normalize()), which is also what goes upstream, and one method in one
 * spelling (egress_method_is_unambiguous()): for the request of a client and for each request inside an
 * intercepted tunnel alike. */
static int request_normalize(EgressConn *c) {
        char *n = NULL;
        int q;

        if (c->req.host) {
                q = egress_host_normalize(c->req.host, &n);
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        return egress_conn_refuse(c, 400, "deny", "bad-host",
                                      "the host is not a name or an IP address in its one dotted-quad or IPv6 form");
                free(c->req.host);
                c->req.host = n;
        }
        if (c->req.form != HTTP_TARGET_AUTHORITY && !egress_method_is_unambiguous(&c->req))
                return egress_conn_refuse(c, 400, "deny", "bad-method",
                              "the method is not in upper case, or a method-override header names another");
        if (c->req.path && c->req.form != HTTP_TARGET_AUTHORITY) {
                q = egress_path_normalize(c->req.path, &n);
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        return egress_conn_refuse(c, 400, "deny", "bad-path",
                                      "the path holds an encoded / or dot-segment, a bad escape, or a byte RFC 3986 "
                                      "does not allow in a path");
                free(c->req.path);
                c->req.path = n;
        }
        return 0;
}

/* One request inside an intercepted tunnel. */
static int intercept_request(EgressConn *c) {
        EgressGateway *g = c->gw;
        _cleanup_free_ char *head = NULL, *host_header = NULL;
        const EgressRule *rule;
        const char *reason = NULL;
        size_t size = 0;
        int q;

        if (c->req.form != HTTP_TARGET_ORIGIN)
                return egress_conn_refuse(c, 400, "deny", "bad-request", "a request inside a tunnel names no other server");
        /* the path rules decide on the path the upstream gets, as for plain requests */
        q = request_normalize(c);
        if (q < 0)
                return q;
        c->req.host = strdup(c->host);
        if (!c->req.host)
                return -ENOMEM;
        c->req.port = c->port;
        if (!egress_host_header_agrees(&c->req, 443))
                return egress_conn_refuse(c, 421, "deny", "host-mismatch", "the Host header is not the CONNECT target");
        rule = egress_policy_match(g->config.policy, EGRESS_SCHEME_HTTPS, c->host, c->port, c->req.method, c->req.path);
        c->rule = rule->id;
        if (rule->decision == EGRESS_DENY)
                return egress_conn_refuse(c, 403, "deny", "policy", "the egress policy does not allow this request");

        if (egress_authority_format(c->host, c->port, 443, &host_header) < 0)
                return -ENOMEM;
        EgressApiAuth auth = { .dummy = c->dummy, .api_key = g->config.api_key, .oauth_token = g->config.oauth_token };
        q = egress_upstream_head(&c->req, g->config.policy, rule, &auth, host_header, &head, &size, &reason);
        if (q == -ENOMEM)
                return q;
        if (q < 0)
                return egress_conn_refuse(c, q == -E2BIG ? 431 : 403, "deny", reason, egress_credential_refusal_text(reason));

        c->decision = rule->decision == EGRESS_CREDENTIAL ? "credential" : "allow";
        egress_scrub_reset(&c->scrub);
        if (rule->decision == EGRESS_CREDENTIAL && egress_scrub_add(&c->scrub, rule->credential.secret, rule->credential.dummy) < 0)
                return -EINVAL;
        q = egress_conn_forward(c, c->host, c->port, true, head, size);
        explicit_bzero(head, size);
        return q;
}

/* A host that gets a credential: the gateway ends the agent's TLS with a leaf of the sandbox CA, reads
 * the request, swaps the dummy for the secret, and sends it on over TLS it verifies itself. */
static int handle_intercept(EgressConn *c) {
        EgressGateway *g = c->gw;
        const char *sni;
        struct timeval tv = { .tv_sec = GATEWAY_HEAD_TIMEOUT_MS / 1000 };
        struct in6_addr a;
        bool literal;
        SSL_CTX *ctx;
        int q;

        if (c->size > 0)
                return egress_conn_refuse(c, 400, "deny", "early-data", "nothing may follow CONNECT before its answer");
        if (egress_leaf_cache_get(g->leaves, c->host, &ctx) < 0)
                return egress_conn_refuse(c, 500, "error", "leaf-certificate", "no certificate can be made for this host");
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
        (void) socket_connection_head_begin(c->sc);
        q = SSL_accept(c->client_ssl);
        (void) socket_connection_head_end(c->sc);
        if (q != 1) {
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
        if (literal ? sni != NULL : !egress_sni_agrees(sni, c->host))
                return egress_conn_refuse(c, 421, "deny", "sni-mismatch", "the TLS server name is not the CONNECT target");

        /* The requests inside, each checked, rewritten and journaled on its own. */
        for (;;) {
                http_request_done(&c->req);
                q = connection_read_head(c);
                if (q < 0) {
                        if (c->requests > 0 && c->size == 0 && !c->decision && streq_ptr(c->reason, "client-gone"))
                                c->quiet = true;
                        return q;
                }
                q = intercept_request(c);
                c->requests++;
                if (q < 0 || !c->again)
                        return q;
                egress_conn_journal(c);
                egress_conn_request_reset(c);
        }
}

static int handle_connect(EgressConn *c) {
        const EgressRule *rule;
        uint8_t hello[TLS_RECORD_HEADER_SIZE + TLS_RECORD_SIZE_MAX];
        size_t got = 0;
        _cleanup_free_ char *sni = NULL;
        int q;

        c->kind = "connect";
        if (!egress_host_header_agrees(&c->req, c->req.port))
                return egress_conn_refuse(c, 400, "deny", "host-mismatch", "the Host header does not name the CONNECT target");
        rule = egress_policy_match(c->gw->config.policy, EGRESS_SCHEME_HTTPS, c->req.host, c->req.port, NULL, NULL);
        c->rule = rule->id;
        /* A host some credential (or "intercept": "always") rule names is intercepted, whatever that
         * rule's methods and paths: the policy then decides on each request inside. */
        if (egress_policy_host_intercepted(c->gw->config.policy, c->req.host, c->req.port)) {
                /* Without a CA (no state directory) the host is refused rather than reached without
                 * its credential. */
                if (!c->gw->ca)
                        return egress_conn_refuse(c, 403, "deny", "interception-unavailable",
                                      "credential injection over TLS is not available; the host is refused");
                return handle_intercept(c);
        }
        if (rule->decision == EGRESS_DENY)
                return egress_conn_refuse(c, 403, "deny", "policy", "the egress policy does not allow this host and port");

        q = egress_conn_upstream_open(c, c->req.host, c->req.port);
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
        (void) socket_connection_head_begin(c->sc);
        for (;;) {
                ssize_t k;
                q = tls_client_hello_sni(hello, got, &sni);
                if (q != -EAGAIN)
                        break;
                k = egress_read_timeout(c->fd, hello + got, sizeof hello - got, GATEWAY_HEAD_TIMEOUT_MS);
                if (k <= 0) {
                        (void) socket_connection_head_end(c->sc);
                        c->reason = "client-gone";
                        return -ECONNRESET;
                }
                got += (size_t) k;
        }
        (void) socket_connection_head_end(c->sc);
        if (q < 0) {
                c->decision = "deny";
                c->reason = "not-tls";
                return -EPROTO;
        }
        {
                struct in6_addr a;
                bool literal = inet_pton(AF_INET, c->req.host, &a) == 1 || inet_pton(AF_INET6, c->req.host, &a) == 1;
                if (literal ? sni != NULL : !egress_sni_agrees(sni, c->req.host)) {
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

static int handle_http(EgressConn *c) {
        _cleanup_free_ char *head = NULL, *host_header = NULL;
        const EgressRule *rule;
        const char *reason = NULL;
        size_t size;
        int q;

        c->kind = "http";
        if (!egress_host_header_agrees(&c->req, 80))
                return egress_conn_refuse(c, 400, "deny", "host-mismatch", "the Host header does not name the request's target");
        rule = egress_policy_match(c->gw->config.policy, EGRESS_SCHEME_HTTP, c->req.host, c->req.port, c->req.method, c->req.path);
        c->rule = rule->id;
        if (rule->decision == EGRESS_DENY)
                return egress_conn_refuse(c, 403, "deny", "policy", "the egress policy does not allow this request");

        if (egress_authority_format(c->req.host, c->req.port, 80, &host_header) < 0)
                return -ENOMEM;
        EgressApiAuth auth = { .dummy = c->dummy, .api_key = c->gw->config.api_key, .oauth_token = c->gw->config.oauth_token };
        q = egress_upstream_head(&c->req, c->gw->config.policy, rule, &auth, host_header, &head, &size, &reason);
        if (q == -ENOMEM)
                return q;
        /* No credential rule matches plain HTTP (they are https only): a dummy here is one the agent
         * would have sent in clear text. */
        if (q == -EACCES && streq_ptr(reason, "dummy-unbound"))
                return egress_conn_refuse(c, 403, "deny", "cleartext-credential",
                              "credentials are only injected over TLS: use https://, never http://");
        if (q < 0)
                return egress_conn_refuse(c, q == -E2BIG ? 431 : 403, "deny", reason, egress_credential_refusal_text(reason));

        c->decision = "allow";
        q = egress_conn_forward(c, c->req.host, c->req.port, false, head, size);
        explicit_bzero(head, size);
        return q;
}

static int handle_api(EgressConn *c) {
        const EgressGateway *g = c->gw;
        _cleanup_free_ char *head = NULL, *host_header = NULL, *path = NULL;
        EgressApiAuth auth = { .pass_through = true, .dummy = c->dummy, .api_key = g->config.api_key, .oauth_token = g->config.oauth_token };
        const char *reason = NULL;
        char *saved_path;
        size_t size = 0;
        int q;

        c->kind = "api";
        c->rule = "api";
        if (!g->config.policy->allow_api)
                return egress_conn_refuse(c, 403, "deny", "api-disabled", "the model API is not allowed (egress.allow_api is false)");
        free(c->host);
        c->host = strdup(g->config.api.host);
        c->port = g->config.api.port;
        if (!c->host)
                return -ENOMEM;

        if (egress_authority_format(g->config.api.host, g->config.api.port, g->config.api.tls ? 443 : 80, &host_header) < 0)
                return -ENOMEM;
        if (asprintf(&path, "%s%s", g->config.api.base_path, c->req.path) < 0)
                return -ENOMEM;
        saved_path = c->req.path;
        c->req.path = path;
        q = egress_upstream_head(&c->req, g->config.policy, NULL, &auth, host_header, &head, &size, &reason);
        c->req.path = saved_path;
        if (q == -ENOMEM)
                return q;
        if (q < 0)
                return egress_conn_refuse(c, q == -E2BIG ? 431 : 403, "deny", reason,
                              "the API pass-through only accepts the dummy key it gave the agent");

        c->decision = "credential";
        egress_scrub_reset(&c->scrub);
        if ((g->config.api_key && egress_scrub_add(&c->scrub, g->config.api_key, c->dummy) < 0) ||
            (g->config.oauth_token && egress_scrub_add(&c->scrub, g->config.oauth_token, c->dummy) < 0))
                return -EINVAL;
        q = egress_conn_forward(c, g->config.api.host, g->config.api.port, g->config.api.tls, head, size);
        explicit_bzero(head, size);
        return q;
}

/* The sandbox CA's certificate (public), which the runner puts into the agent's trust store. */
static int handle_ca(EgressConn *c) {
        _cleanup_free_ char *out = NULL;
        size_t size;
        int q;

        c->kind = "ca";
        c->rule = "ca";
        if (!streq(c->req.method, "GET"))
                return egress_conn_refuse(c, 405, "deny", "bad-request", "only GET");
        if (!c->gw->ca)
                return egress_conn_refuse(c, 404, "deny", "no-ca", "this gateway has no sandbox CA (no state directory)");
        q = http_response_format(200, "application/x-pem-file", c->gw->ca->pem, strlen(c->gw->ca->pem), false, &out, &size);
        if (q < 0)
                return q;
        c->decision = "allow";
        c->status = 200;
        return egress_conn_client_write(c, out, size);
}

/* The runner (root on the host) asks for a container's token and dummy before it creates it. */
static int handle_register(EgressConn *c) {
        _cleanup_free_ char *body = NULL, *out = NULL;
        char token[EGRESS_TOKEN_HEX_LEN + 1], dummy[EGRESS_DUMMY_LEN + 1];
        const char *name = startswith(strempty(c->req.query), "container=");
        size_t size;
        int q;

        c->kind = "register";
        c->rule = "register";
        if (!streq(c->req.method, "POST"))
                return egress_conn_refuse(c, 405, "deny", "bad-request", "only POST");
        if (c->peer.uid != 0)
                return egress_conn_refuse(c, 403, "deny", "not-root", "only root registers containers");
        if (!c->gw->have_token_key)
                return egress_conn_refuse(c, 503, "error", "no-token-key", "this gateway has no token key (no state directory)");
        if (!name || !egress_container_name_is_valid(name))
                return egress_conn_refuse(c, 400, "deny", "bad-request", "container=NAME is missing or not a container name");
        (void) snprintf(c->container, sizeof c->container, "%s", name);
        if (egress_token_make(c->gw->token_key, name, token) < 0 || egress_dummy_make(c->gw->token_key, name, dummy) < 0)
                return egress_conn_refuse(c, 500, "error", "token", "no token can be made");
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
        q = egress_conn_client_write(c, out, size);
        explicit_bzero(out, size);
        return q;
}

static void connection_dispatch(EgressConn *c) {
        EgressGateway *g = c->gw;

        free(c->host);
        c->host = c->req.host ? strdup(c->req.host) : NULL;
        c->port = c->req.host ? c->req.port : 0;
        /* A misconfigured gateway still registers containers (it refuses their requests): the agent is
         * told why it has no egress, not that the gateway cannot be reached. */
        if (g->config.error && !(!c->handed_over && c->req.form == HTTP_TARGET_ORIGIN && streq_ptr(c->req.path, EGRESS_REGISTER_PATH))) {
                (void) egress_conn_refuse(c, 503, "deny", "misconfigured", "the egress gateway is misconfigured; see its journal");
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
                        (void) egress_conn_refuse(c, 403, "deny", "not-a-container",
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
static int connection_take_over(EgressConn *c) {
        char credential[EGRESS_HANDOVER_CREDENTIAL_MAX + 1];
        const char *container, *token;
        socklen_t l = sizeof c->peer;
        int fd = -EBADF, q;

        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &l) < 0)
                return -errno;
        q = (int) egress_read_timeout(c->fd, NULL, 0, GATEWAY_HEAD_TIMEOUT_MS);
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
        socket_connection_set_fd(c->sc, fd);
        c->fd = fd;
        if (q < 0)
                return -EPERM;
        c->handed_over = true;
        return 0;
}

static void connection_run(SocketConnection *sc, void *userdata) {
        EgressGateway *g = userdata;
        EgressConn *c;
        int q;

        /* OpenSSL's error queue is the thread's, and a worker of the skeleton's pool serves one connection
         * after another: what an earlier one left there must not decide how SSL_get_error() reads this
         * one's calls */
        ERR_clear_error();
        if (egress_conn_new(g, sc, &c) < 0) {
                log_oom();
                return;
        }

        /* the hand-over and the first head share one deadline */
        (void) socket_connection_head_begin(sc);
        q = connection_take_over(c);
        if (q == -EBADMSG || q == -EPROTONOSUPPORT) {
                c->kind = "handover";
                c->decision = "deny";
                c->reason = "bad-handover";
        } else if (q == -EPERM) {
                c->kind = "handover";
                (void) egress_conn_refuse(c, 403, "deny", "bad-token", "this connection's container is not one of the channel's");
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
                egress_conn_journal(c);
                egress_conn_request_reset(c);
        }
        if (!c->quiet) {
                if (!c->decision)
                        c->decision = "error";
                egress_conn_journal(c);
        }
        egress_conn_free(c);
}

/* ---- the main thread: the skeleton's callbacks ---- */

/* Connections beyond GATEWAY_CONNECTIONS_MAX are refused before they are requests, as fast as a client
 * opens them: GATEWAY_BUSY_PER_WINDOW per peer address and window are journaled one by one, the rest of a
 * burst as one record with the count. Only the main thread uses the limiter. */
#define GATEWAY_BUSY_PER_WINDOW 3U
#define GATEWAY_BUSY_WINDOW_USEC (10ULL * 1000000ULL)

static void busy_summary(const char *peer, uint64_t suppressed, void *userdata) {
        EgressGateway *g = userdata;
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

static void busy_expire(EgressGateway *g, uint64_t now) {
        if (g->busy)
                audit_limiter_expire(g->busy, now, busy_summary, g);
}

static void on_released(SocketService *s, void *userdata) {
        busy_expire(userdata, clock_usec(CLOCK_MONOTONIC));
}

static void on_busy(SocketService *s, int fd, void *userdata) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        EgressGateway *g = userdata;
        struct sockaddr_storage peer = {};
        socklen_t pl = sizeof peer;
        char address[INET6_ADDRSTRLEN + 8] = "unknown";

        (void) send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (getpeername(fd, (struct sockaddr *) &peer, &pl) >= 0)
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
}

static int run(int argc, char *argv[]) {
        EgressGateway g = {};
        const char *reason, *config = NULL;
        char *channel = NULL;
        SocketServiceOption options[] = { { "config", &config } };
        _cleanup_(socket_service_freep) SocketService *service = NULL;
        uint64_t idle_sec;
        int r;

        log_setup();

        r = socket_service_parse_argv(argc, argv, "CHANNEL [--config FILE]",
                                      "The egress gateway of a channel, started by loop-gateway@CHANNEL.socket.",
                                      options, ELEMENTSOF(options), 1, &channel);
        if (r <= 0)
                return r;
        if (channel_name_check(channel, &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", channel, reason);
        g.channel = channel;
        r = env_uint("LOOP_GATEWAY_IDLE_SEC", GATEWAY_IDLE_SEC_DEFAULT, GATEWAY_IDLE_SEC_MAX, &idle_sec);
        if (r < 0)
                return r;

        r = gateway_load(&g, config);
        if (r < 0)
                return r;
        if (g.config.error) {
                char *extra[] = { NULL, NULL };
                _cleanup_free_ char *e = NULL;
                if (asprintf(&e, "LOOP_REASON=%s", g.config.error) >= 0)
                        extra[0] = e;
                AuditFields f = { .channel = g.channel, .extra = extra };
                (void) audit_log(AUDIT_GATEWAY_FAILED, LOG_ERR, &f,
                                 "The egress gateway of channel %s cannot serve, every request is refused: %s",
                                 g.channel, g.config.error);
        }
        {
                const char *state = getenv("STATE_DIRECTORY");
                _cleanup_free_ char *cn = NULL;
                _cleanup_close_ int dfd = -EBADF;

                if (isempty(state))
                        log_info("No $STATE_DIRECTORY: no sandbox CA and no token key, every container is refused.");
                else if ((dfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        log_warning_errno(errno, "Cannot open %s, no sandbox CA and no token key: %m", state);
                else if (g.config.error)
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
        if (g.ca && egress_leaf_cache_new(GATEWAY_LEAVES_MAX, egress_leaf_mint, g.ca, &g.leaves) < 0)
                return log_oom();
        if (egress_sessions_new(GATEWAY_SESSIONS_MAX, &g.sessions) < 0 ||
            egress_pool_new(GATEWAY_POOL_MAX, GATEWAY_POOL_IDLE_SEC * 1000000ULL, &g.pool) < 0)
                return log_oom();

        r = audit_limiter_new(GATEWAY_BUSY_PER_WINDOW, GATEWAY_BUSY_WINDOW_USEC, &g.busy);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the refusal limiter: %m");
        r = socket_service_new(&(SocketServiceConfig) {
                        .connections_max = GATEWAY_CONNECTIONS_MAX,
                        .idle_usec = idle_sec * 1000000ULL,
                        .head_usec = GATEWAY_HEAD_TIMEOUT_MS * 1000ULL,
                        .drain_usec = GATEWAY_DRAIN_SEC * 1000000ULL,
                        .run = connection_run,
                        .busy = on_busy,
                        .released = on_released,
                        .userdata = &g,
                }, &service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        r = socket_service_listen_systemd(service);
        if (r < 0)
                return log_error_errno(r, "Expected listening AF_UNIX stream sockets from loop-gateway@NAME.socket: %m");

        (void) sd_notify(false, g.config.error ? "READY=1\nSTATUS=Misconfigured: refusing every request."
                                               : "READY=1\nSTATUS=Serving egress.");
        r = socket_service_run(service);
        busy_expire(&g, UINT64_MAX);            /* what is still counted gets its summary */
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
