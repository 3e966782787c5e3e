/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <strings.h>

#include "egress-dial.h"
#include "egress-exchange.h"
#include "log.h"
#include "secret-buffer.h"

/* ---- one exchange: the request's body up, the response down ---- */

/* data[GATEWAY_CHUNK_LINE_MAX..+n) goes upstream as one chunk, in one write. */
static int up_write_chunk(EgressConn *c, char *data, size_t n) {
        char line[GATEWAY_CHUNK_LINE_MAX];
        int l = snprintf(line, sizeof line, "%zx\r\n", n);
        char *start = data + GATEWAY_CHUNK_LINE_MAX - l;

        memcpy(start, line, (size_t) l);
        memcpy(data + GATEWAY_CHUNK_LINE_MAX + n, "\r\n", 2);
        return egress_conn_up_write(c, start, (size_t) l + n + 2);
}

/* The request body: Content-Length bytes, or a chunked body decoded (strictly, capped by
 * GATEWAY_BODY_MAX; chunk extensions checked and ignored, trailer fields checked and dropped: RFC 9110
 * 6.5.1 lets a proxy discard them, and none reaches an upstream unchecked) and sent on re-chunked, so the
 * upstream never sees the client's framing. What
 * follows the body (a pipelined request) stays in c->buf. Returns -ECONNRESET (client), -EIO
 * (upstream), -EBADMSG or -EFBIG (a bad chunked body). */
static int request_body_relay(EgressConn *c, uint64_t already) {
        if (!c->req.chunked) {
                uint64_t left = c->req.content_length - already;
                size_t first = (size_t) MIN((uint64_t) c->size, left);

                if (first > 0) {
                        if (egress_conn_up_write(c, c->buf, first) < 0)
                                return -EIO;
                        memmove(c->buf, c->buf + first, c->size - first);
                        c->size -= first;
                        c->sent += first;
                        left -= first;
                }
                while (left > 0) {
                        ssize_t k = egress_conn_client_read(c, c->rbuf, (size_t) MIN(left, (uint64_t) GATEWAY_STREAM_BUFFER_SIZE),
                                                GATEWAY_IO_TIMEOUT_SEC * 1000);
                        if (k <= 0)
                                return -ECONNRESET;
                        if (egress_conn_up_write(c, c->rbuf, (size_t) k) < 0)
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
                        ssize_t k = egress_conn_client_read(c, c->buf, GATEWAY_HEADER_SIZE_MAX, GATEWAY_IO_TIMEOUT_SEC * 1000);
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
                        return egress_conn_up_write(c, "0\r\n\r\n", 5) < 0 ? -EIO : 0;
        }
}

static int client_send_response(EgressConn *c, const char *buf, size_t n) {
        int q = egress_conn_client_write(c, buf, n);
        if (q < 0) {
                c->reason = "client-gone";
                return q;
        }
        c->received += n;
        return 0;
}

/* What goes to the agent next (o) is collected so that a small response leaves in one write (one TLS record):
 * sent before the gateway waits for the upstream, and at the end. */
static int client_out_flush(EgressConn *c, SecretBuffer *o) {
        int q = 0;

        if (o->size > 0)
                q = client_send_response(c, o->data, o->size) < 0 ? -ECONNRESET : 0;
        if (o->data)
                explicit_bzero(o->data, o->size);
        o->size = 0;
        return q;
}

/* Scrubs in[0..n) (and what was held back) into o, as one chunk when chunked. */
static int scrub_append(EgressConn *c, SecretBuffer *o, const char *in, size_t n, bool final, bool chunked) {
        _cleanup_free_ char *out = NULL;
        char line[GATEWAY_CHUNK_LINE_MAX];
        size_t size = 0;
        int q, l;

        q = egress_scrub(&c->scrub, in, n, final, 0, 0, &out, &size);
        if (q >= 0 && size > 0) {
                l = snprintf(line, sizeof line, "%zx\r\n", size);
                if (chunked)
                        q = secret_buffer_append(o, line, (size_t) l);
                if (q >= 0)
                        q = secret_buffer_append(o, out, size);
                if (q >= 0 && chunked)
                        q = secret_buffer_append(o, "\r\n", 2);
        }
        if (out)
                explicit_bzero(out, size);
        return q;
}

/* The head of a response to an injected request, scrubbed, into o; a body framed by Content-Length is
 * sent on chunked instead (a dummy need not be as long as its secret), or, to an HTTP/1.0 client, until
 * the connection closes. */
static int scrub_head(EgressConn *c, SecretBuffer *o, const char *head, size_t size, bool rechunk, bool *ret_until_close) {
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
                q = secret_buffer_append(o, out, n);
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
                        q = secret_buffer_append(o, out + i, l);
                i += l;
        }
        explicit_bzero(out, n);
        if (q < 0)
                return q;
        if (c->req.version_minor >= 1)
                q = secret_buffer_append(o, "Transfer-Encoding: chunked\r\n", 28);
        else
                *ret_until_close = true;
        return q < 0 ? q : secret_buffer_append(o, "\r\n", 2);
}

/* Reads the next piece of the response; what is waiting for the agent goes first, so nothing is held
 * back while the upstream is silent (server-sent events). */
static ssize_t scrub_read(EgressConn *c, SecretBuffer *o, char *buf, size_t size) {
        ssize_t k;

        if (client_out_flush(c, o) < 0)
                return -ECONNRESET;     /* c->reason says client-gone */
        k = egress_conn_up_read(c, buf, size);
        if (k <= 0)
                c->reason = "upstream-broke";
        return k;
}

/* response_relay() for a request the gateway injected a secret into: the same framing rules, every byte
 * scrubbed of the secret (egress_scrub()), chunks re-made (extensions and trailers dropped). */
static int response_relay_scrubbed(EgressConn *c, const EgressResponseFraming *f, char *buf, size_t have,
                                   bool *ret_upstream_reusable, bool *ret_client_reusable) {
        _cleanup_(secret_buffer_wipe) SecretBuffer o = {};
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
            (chunked_out && (q = secret_buffer_append(&o, "0\r\n\r\n", 5)) < 0))
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
static int response_relay(EgressConn *c, bool *ret_upstream_reusable, bool *ret_client_reusable) {
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
                        ssize_t k = egress_conn_up_read(c, buf + have, GATEWAY_STREAM_BUFFER_SIZE - have);
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
                        _cleanup_(secret_buffer_wipe) SecretBuffer o = {};
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

        if (c->scrub.n > 0 && (f.chunked || f.until_close || f.length > 0) && egress_response_is_encoded(buf, f.head_size)) {
                /* deflate's bytes hide the secret from the scrubber; the agent would inflate them */
                c->decision = "error";
                c->reason = "encoded-response";
                (void) egress_conn_reply(c, 502, "the upstream answered with a content coding (Content-Encoding) to a request "
                                         "carrying a credential, whose answer the gateway must read: it is refused");
                return -EPROTO;
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
                                ssize_t k = egress_conn_up_read(c, buf, GATEWAY_STREAM_BUFFER_SIZE);
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
                        ssize_t k = egress_conn_up_read(c, buf, GATEWAY_STREAM_BUFFER_SIZE);
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
                        ssize_t k = egress_conn_up_read(c, buf, (size_t) MIN(left, (uint64_t) GATEWAY_STREAM_BUFFER_SIZE));
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
static int exchange(EgressConn *c, bool body, uint64_t already, const char *expect, bool *ret_upstream_reusable,
                    bool *ret_client_reusable) {
        int q;

        if (body) {
                if (already == 0 && expect && strcasecmp(expect, "100-continue") == 0 &&
                    egress_conn_client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
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
int egress_conn_forward(EgressConn *c, const char *host, uint16_t port, bool tls, const char *head, size_t head_size) {
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
                q = egress_conn_upstream_get(c, host, port, tls);
                if (q < 0) {
                        wipe_free(joined, joined_size);         /* egress_conn_upstream_get() answered the client */
                        return q;
                }
                c->sent = 0;
                q = joined ? egress_conn_up_write(c, joined, joined_size) : egress_conn_up_write(c, head, head_size);
                if (q >= 0) {
                        c->sent += head_size + with_head;
                        q = exchange(c, body, with_head, expect, &up_ok, &client_ok);
                }
                if ((q == -EIO || q == -ECONNABORTED) && c->up_pooled && !body && attempt == 0 && c->received == 0) {
                        log_debug("A pooled connection to %s:%u was closed by the server, opening another.", host, port);
                        egress_conn_upstream_release(c, false);
                        c->address[0] = 0;
                        continue;
                }
                break;
        }
        wipe_free(joined, joined_size);
        if (q >= 0) {
                egress_conn_upstream_release(c, up_ok);
                c->again = client_ok;
                return 0;
        }
        egress_conn_upstream_release(c, false);
        if ((q == -EBADMSG || q == -EFBIG) && !c->reason) {
                /* the client's chunked body */
                c->decision = "deny";
                c->reason = "bad-request";
                if (c->received == 0)
                        (void) egress_conn_reply(c, q == -EFBIG ? 413 : 400, "the request body's chunks cannot be read");
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
                (void) egress_conn_reply(c, 502, "the upstream server failed");
        }
        return q;
}
