#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The upstream servers of the egress tests: HTTP on :80 and HTTPS on :443 (certificate from a test CA)
on every address of the network namespace the test runs this in.

usage: egress-upstream.py CERT KEY STATE_DIR

  /hello          "hello from upstream HOST"
  /whoami         what arrived: method, path, and whether an Authorization / x-api-key header was
                  present; the headers themselves go to STATE_DIR/requests.log only (the agent must never
                  be shown a credential, so the test reads them here)
  /reflect        the Authorization header that arrived, as the body and in a Set-Cookie (an upstream
                  that echoes credentials back to the agent); chunked, split in two, with X-Chunked
  /echo           the request body's length and MD5, read by its Content-Length or decoded from chunks
                  (trailer fields that arrive are logged as "trailer: ...")
  /chunky         a chunked response with chunk extensions and trailer fields (RFC 9112 7.1.1, 7.1.2),
                  kept alive: CHUNKY below, byte for byte
  /v1/messages    the model API: server-sent events "one", then (once STATE_DIR/release exists) "two"
  /stream         the same, for the tunnel
Every request is appended to STATE_DIR/requests.log as "HOST METHOD PATH", the client's port ("peer:
PORT": two requests with the same one came on one kept-alive connection) and its headers. Connections
are kept alive except after the streams.
"""

import hashlib

import http.server
import os
import socketserver
import ssl
import sys
import threading
import time

CERT, KEY, STATE = sys.argv[1], sys.argv[2], sys.argv[3]
CHUNKY = (b'3;name=value\r\nabc\r\n4 ; q="x;y" ; flag\r\ndefg\r\n'
          b'0;end\r\nX-Trailer: yes\r\nX-Digest: md5=abc\r\n\r\n')
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        pass

    def record(self):
        with LOCK, open(os.path.join(STATE, 'requests.log'), 'a') as f:
            f.write(f'{self.headers.get("Host")} {self.command} {self.path}\n')
            f.write(f'  peer: {self.client_address[1]}\n')
            for k, v in self.headers.items():
                f.write(f'  {k}: {v}\n')

    def body(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def chunk(self, data):
        self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
        self.wfile.flush()

    def sse(self):
        # Chunked, as the model API sends its streams: a stream cut short is told from a finished one.
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Cache-Control', 'no-cache')
        self.send_header('Transfer-Encoding', 'chunked')
        self.send_header('Connection', 'close')
        self.end_headers()
        self.chunk(b'data: one\n\n')
        release = os.path.join(STATE, 'release')
        for _ in range(1200):
            if os.path.exists(release):
                break
            time.sleep(0.1)
        self.chunk(b'data: two\n\n')
        self.wfile.write(b'0\r\n\r\n')
        self.wfile.flush()
        self.close_connection = True

    def read_body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            data = b''
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    while True:
                        line = self.rfile.readline()
                        if line in (b'\r\n', b'\n', b''):
                            return data
                        with LOCK, open(os.path.join(STATE, 'requests.log'), 'a') as f:
                            f.write(f'  trailer: {line.decode(errors="replace").strip()}\n')
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n else b''

    def handle_any(self):
        data = self.read_body()
        self.record()
        path = self.path.split('?')[0]
        if path == '/hello':
            self.body(200, f'hello from upstream {self.headers.get("Host")}\n')
        elif path == '/whoami':
            self.body(200, f'{self.command} {path} authorization={"Authorization" in self.headers} '
                           f'x-api-key={"x-api-key" in self.headers}\n')
        elif path == '/reflect':
            # an upstream that reflects what it got: the Authorization header, in the body and a cookie
            # (with X-Chunked: the body chunked, the value split across two chunks)
            data = (self.headers.get('Authorization') or '').encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain')
            self.send_header('Set-Cookie', 'seen=' + (self.headers.get('Authorization') or '').replace(' ', '_'))
            if self.headers.get('X-Chunked'):
                self.send_header('Transfer-Encoding', 'chunked')
                self.end_headers()
                self.chunk(data[:len(data) // 2])
                self.chunk(data[len(data) // 2:])
                self.wfile.write(b'0\r\n\r\n')
            else:
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        elif path == '/echo':
            self.body(200, f'echo {len(data)} {hashlib.md5(data).hexdigest()}\n')
        elif path == '/chunky':
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain')
            self.send_header('Transfer-Encoding', 'chunked')
            self.send_header('Trailer', 'X-Trailer, X-Digest')
            self.end_headers()
            self.wfile.write(CHUNKY)
        elif path in ('/v1/messages', '/stream'):
            self.sse()
        else:
            self.body(404, 'not here\n')

    do_GET = do_POST = do_PUT = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(port, tls):
    s = Server(('0.0.0.0', port), Handler)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(CERT, KEY)
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    s.serve_forever()


threading.Thread(target=serve, args=(443, True), daemon=True).start()
open(os.path.join(STATE, 'ready'), 'w').close()
serve(80, False)
