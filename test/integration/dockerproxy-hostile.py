#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hostile requests against loop-dockerproxy's socket, for test-dockerproxy-bypass.sh.

usage: dockerproxy-hostile.py PROXY_SOCKET IMAGE

Every request that could create a container names it "bypass-..." so that the caller can check on the
engine that none was created. Prints one line per behaviour: "PASS name" or "FAIL name: why".
"""

import json
import re
import socket
import sys
import threading
import time

SOCK, IMAGE = sys.argv[1], sys.argv[2]
REFUSED = {400, 403, 404, 405, 408, 411, 413, 414, 431, 501, 505}
results = []


def report(ok, name, why=''):
    results.append(ok)
    print(('PASS ' if ok else 'FAIL ') + name + ('' if ok else ': ' + why), flush=True)


def send_raw(data, timeout=10.0, read=True):
    """Sends bytes, returns (status or None, whole answer)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(SOCK)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass        # the proxy answered (and closed) before it had it all: a 413, say
        if not read:
            return s
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        out = b''
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
    finally:
        if read:
            s.close()
    status = None
    if out.startswith(b'HTTP/1.'):
        try:
            status = int(out[9:12])
        except ValueError:
            pass
    return status, out


def refused(name, data, allowed=REFUSED):
    status, out = send_raw(data)
    if status in allowed or (status is None and out == b''):
        report(True, name + f' is refused ({status})')
    else:
        report(False, name + ' is refused', f'status {status}: {out[:200]!r}')


def post(path, body, extra=b'', ctype=b'application/json'):
    if isinstance(body, str):
        body = body.encode()
    return (b'POST ' + path.encode() + b' HTTP/1.1\r\nHost: d\r\nContent-Type: ' + ctype + b'\r\n' + extra +
            b'Content-Length: ' + str(len(body)).encode() + b'\r\n\r\n' + body)


def create(name, host_config_json, extra=b''):
    body = '{"Image":"%s","Cmd":["true"],"HostConfig":%s}' % (IMAGE, host_config_json)
    return post('/v1.41/containers/create?name=' + name, body, extra)


PRIV = '{"Privileged":true}'
CREATE_PRIV = ('POST /v1.41/containers/create?name=bypass-smuggled HTTP/1.1\r\nHost: d\r\n'
               'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(
                   '{"Image":"%s","HostConfig":%s}' % (IMAGE, PRIV))) + '{"Image":"%s","HostConfig":%s}' % (IMAGE, PRIV)

# ---- path and encoding tricks: each names a denied endpoint ----
for target in ['/v1.41/swarm', '/v1.41//swarm', '/v1.41/./swarm', '/v1.41/x/../swarm', '/v1.41/%73warm',
               '/v1.41/SWARM', '/v1.41/swarm/', '/v1.41/swarm?x=1', '/v1.41/containers/../swarm',
               '/v1.41/%2e%2e/swarm', '/V1.41/swarm', '/v1.41/swarm%2f', '/v1.41/sw%61rm', '/v1.41/swarm%00',
               '/v1.41/swarm%2500', '/v1.41/%2fswarm', '/v1.41/swarm;x=1', '/v1.41/swarm%3bx', '/swarm',
               '/v1.41/libpod/info', '/v4.0.0/libpod/containers/create', '/v1.41/Plugins', '/v1.41/secrets/%2e']:
    refused('GET ' + target, ('GET %s HTTP/1.1\r\nHost: d\r\n\r\n' % target).encode())
refused('an absolute-form target', b'GET http://d/v1.41/swarm HTTP/1.1\r\nHost: d\r\n\r\n')
refused('a target with a fragment', b'GET /v1.41/swarm#x HTTP/1.1\r\nHost: d\r\n\r\n')
refused('a privileged create on a path spelt with dot segments',
        create('bypass-path', PRIV).replace(b'/v1.41/containers/create', b'/v1.41/x/../containers/./create'))
refused('a privileged create on a percent-encoded path',
        create('bypass-pct', PRIV).replace(b'/v1.41/containers/create', b'/v1.41/containers%2fcreate'))
refused('a privileged create on an unversioned path',
        create('bypass-unversioned', PRIV).replace(b'/v1.41/containers/create', b'/containers/create'))

# ---- versions and endpoints the proxy does not know (issue 17, class 1 and 2) ----
# Podman's router takes v[0-9][0-9A-Za-z.-]* as a version: /v1a/ names the create to the engine.
for target in ['/v1a/containers/create', '/v1.41a/containers/create', '/v1-1/containers/create',
               '/v1/containers/create', '/v1.23/containers/create', '/v1.9/containers/create',
               '/V1.41/containers/create', '/v./containers/create', '/v1.41.0/containers/create']:
    refused('a privileged create under the version ' + target.split('/')[1],
            create('bypass-ver', PRIV).replace(b'/v1.41/containers/create', target.encode()))
for target in ['/libpod/containers/create', '/v1.41/libpod/containers/create', '/v4.0.0/libpod/containers/create']:
    refused('a privileged create on ' + target,
            post(target + '?name=bypass-libpod', '{"image":"%s","privileged":true}' % IMAGE))
for method, target in [('GET', '/v1.41/containers/canary/attach/ws'), ('GET', '/v1.41/system/df'),
                       ('POST', '/v1.41/images/load'), ('POST', '/v1.41/images/prune'), ('GET', '/v1.41/x-unknown'),
                       ('POST', '/v1.41/auth'), ('GET', '/v1.41/distribution/busybox/json')]:
    status, out = send_raw(('%s %s HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n' % (method, target)).encode())
    report(status == 403 and b'not an endpoint the proxy serves' in out,
           f'{method} {target} is refused as an endpoint outside the allow-list ({status})', repr(out[-200:]))
# Below API 1.24 a start took a HostConfig: no start body is forwarded, and no old version.
status, _ = send_raw(post('/v1.41/containers/allowed-canary/start', '{"Binds":["/:/host"],"Privileged":true}'))
report(status == 400, f'a start with a HostConfig body is refused ({status})')
status, _ = send_raw(post('/v1.23/containers/allowed-canary/start', '{"Binds":["/:/host"],"Privileged":true}'))
report(status == 403, f'a start under API 1.23 is refused ({status})')

# ---- builds and imports (class 6): builds are off unless gates.docker_proxy.build, no pulls, imports of the body only
status, out = send_raw(b'POST /v1.41/build?t=bypass-build HTTP/1.1\r\nHost: d\r\nContent-Type: application/x-tar\r\nContent-Length: 0\r\n\r\n')
report(status == 403 and b'builds are off' in out, f'a build is refused while builds are off ({status})', repr(out[-200:]))
for query in ['fromImage=busybox&tag=latest', 'fromSrc=http%3A%2F%2F127.0.0.1%3A9%2Fx.tar&repo=bypass-import',
              'fromSrc=%2Fetc%2Fshadow&repo=bypass-import', 'fromImage=registry-1.docker.io%2Flibrary%2Fbusybox']:
    status, out = send_raw(('POST /v1.41/images/create?%s HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n' % query).encode())
    report(status == 403, f'POST /images/create?{query} is refused ({status})', repr(out[-200:]))

# ---- JSON tricks ----
refused('Privileged spelt with a unicode escape', create('bypass-u1', '{"\\u0050rivileged":true}'))
refused('Privileged given twice, differing in case', create('bypass-dup1', '{"Privileged":false,"privileged":true}'))
refused('HostConfig given twice', post('/v1.41/containers/create?name=bypass-dup2',
        '{"Image":"%s","HostConfig":{},"HostConfig":%s}' % (IMAGE, PRIV)))
refused('a key with an escaped NUL', create('bypass-nul', '{"Privileged\\u0000":true}'))
refused('a non-ASCII key folding onto an ASCII one', create('bypass-fold', '{"\\u017fecurityOpt":["seccomp=unconfined"]}'))
refused('a bind of / spelt with a unicode escape', create('bypass-u2', '{"Binds":["\\u002f:/host"]}'))
refused('a bind of /etc through dot segments', create('bypass-dots', '{"Binds":["/tmp/../etc:/x"]}'))
refused('BINDS in upper case', create('bypass-case', '{"BINDS":["/:/host"]}'))
refused('a privileged create sent as text/plain', post('/v1.41/containers/create?name=bypass-ctype',
        '{"Image":"%s","HostConfig":%s}' % (IMAGE, PRIV), ctype=b'text/plain'))
refused('nesting 10000 deep', create('bypass-deep', '[' * 10000 + ']' * 10000))
refused('trailing garbage after the JSON', create('bypass-trail', PRIV + 'x'))
refused('a JSON array as create body', post('/v1.41/containers/create?name=bypass-array', '[1,2]'))
refused('invalid UTF-8 in a string', post('/v1.41/containers/create?name=bypass-utf8',
        b'{"Image":"' + IMAGE.encode() + b'","HostConfig":{"Privileged":true,"Binds":["/\xff:/x"]}}'))
status, _ = send_raw(create('bypass-trunc', PRIV)[:-5])      # Content-Length says more than comes
report(status is None or status in REFUSED, f'a truncated body never reaches the engine ({status})')

# ---- header tricks ----
smuggle = CREATE_PRIV.encode()
refused('Content-Length with Transfer-Encoding (CL.TE smuggling)',
        b'POST /v1.41/containers/json HTTP/1.1\r\nHost: d\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' + smuggle)
refused('Transfer-Encoding with Content-Length (TE.CL smuggling)',
        b'POST /v1.41/build HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\n' + smuggle + b'\r\n0\r\n\r\n')
refused('Transfer-Encoding: chunked, chunked', b'POST /v1.41/build HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n')
refused('Transfer-Encoding: xchunked', b'POST /v1.41/build HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n')
refused('a space before the colon', b'POST /v1.41/build HTTP/1.1\r\nHost: d\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n')
refused('obs-fold', b'GET /_ping HTTP/1.1\r\nHost: d\r\nX: a\r\n b\r\n\r\n')
refused('two different Content-Lengths', create('bypass-cl2', PRIV, b'Content-Length: 3\r\n'))
refused('Content-Length with a sign', post('/v1.41/containers/create', '{}').replace(b'Content-Length: 2', b'Content-Length: +2'))
refused('two Host headers', b'GET /_ping HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n')
refused('a NUL in a header', b'GET /_ping HTTP/1.1\r\nHost: d\r\nX: a\x00b\r\n\r\n')
refused('bare LF line ends', b'GET /_ping HTTP/1.1\nHost: d\n\n')
refused('chunked in HTTP/1.0', b'POST /v1.41/build HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')
refused('HTTP/2 on the wire', b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
refused('a chunk extension', b'POST /v1.41/build HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\n\r\n')

# Pipelined: a request after an allowed one on the same connection is a request of its own, read,
# checked and answered on its own (keep-alive); it never rides along with the first one.
status, out = send_raw(b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n' + smuggle)
statuses = [int(x) for x in re.findall(rb'HTTP/1\.1 (\d{3}) ', out)]
report(statuses == [200, 403], f'a request pipelined after an allowed one is checked on its own and refused ({statuses})')
status, out = send_raw(b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n' + smuggle +
                       b'GET /_ping HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n' +
                       b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n')
statuses = [int(x) for x in re.findall(rb'HTTP/1\.1 (\d{3}) ', out)]
report(statuses == [200, 403, 200], f'a refused request does not end a kept connection; Connection: close does ({statuses})')
report(out.count(b'Connection: keep-alive') == 2 and out.count(b'Connection: close') == 1,
       'each answer says whether the connection is kept')
status, out = send_raw(b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n' + b'GET /_ping HTTP/1.1\r\nHost: d\r\nX: a\x00b\r\n\r\n' + smuggle)
statuses = [int(x) for x in re.findall(rb'HTTP/1\.1 (\d{3}) ', out)]
report(statuses == [200, 400], f'a malformed request on a kept connection ends it: nothing after it is read ({statuses})')
# Upgrade on an endpoint that never switches protocols: what follows is not forwarded either.
status, out = send_raw(post('/v1.41/containers/json', '', b'Connection: Upgrade\r\nUpgrade: tcp\r\n').replace(b'POST', b'GET', 1) + smuggle)
report(status in (200, 400, 404, 405), f'bytes after an Upgrade request to an ordinary endpoint are not forwarded ({status})')

# ---- huge things ----
big = '{"Image":"%s","Labels":{"x":"%s"}}' % (IMAGE, 'a' * (2 * 1024 * 1024))
refused('a 2 MiB JSON body', post('/v1.41/containers/create?name=bypass-big', big), {413})
chunked_big = (b'POST /v1.41/containers/create?name=bypass-bigchunk HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n' +
               b''.join(b'%x\r\n' % 65536 + b'a' * 65536 + b'\r\n' for _ in range(20)) + b'0\r\n\r\n')
refused('a 1.25 MiB chunked JSON body', chunked_big, {413})
refused('a 20 KiB header', b'GET /_ping HTTP/1.1\r\nHost: d\r\nX: ' + b'a' * 20000 + b'\r\n\r\n', {431})
refused('100 headers', b'GET /_ping HTTP/1.1\r\nHost: d\r\n' + b''.join(b'X%d: y\r\n' % i for i in range(100)) + b'\r\n', {431})
refused('one-byte chunks beyond the framing cap',
        b'POST /v1.41/containers/create HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n' + b'1\r\na\r\n' * 20000 + b'0\r\n\r\n', {413})

# ---- slowloris: slow clients are cut off, and do not hold up others ----
slow = []
for i in range(5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    s.sendall(b'GET /_ping HTTP/1.1\r\nHo')
    slow.append(s)
status, _ = send_raw(b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n')
report(status == 200, f'a normal request is answered while slow clients hang ({status})')


def dribble(s, out):
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 50:
            s.sendall(b'X')
            time.sleep(2)
    except OSError:
        pass
    s.settimeout(5)
    try:
        out.append(s.recv(4096))
    except OSError:
        out.append(b'')


outs = [[] for _ in slow]
threads = [threading.Thread(target=dribble, args=(s, o)) for s, o in zip(slow, outs)]
t0 = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.monotonic() - t0
cut = all(o and (o[0] == b'' or o[0].startswith(b'HTTP/1.1 408')) for o in outs)
report(cut and elapsed < 50, f'clients sending a byte every 2 s are cut off ({elapsed:.0f} s)')
for s in slow:
    s.close()

# ---- too many connections: refused, not queued forever; the proxy recovers ----
idle = []
try:
    for i in range(140):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
        idle.append(s)
    time.sleep(1)
    status, _ = send_raw(b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n')
    report(status == 503, f'a connection beyond the cap is answered 503 ({status})')
finally:
    for s in idle:
        s.close()
time.sleep(1)
status, _ = send_raw(b'GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n')
report(status == 200, f'the proxy answers again once they are gone ({status})')

sys.exit(0 if all(results) else 1)
