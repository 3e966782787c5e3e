#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cron -> OnCalendar= table (test/unit/tasks-cron-table.h, which test-tasks-schedule checks the C
conversion against) checked against two implementations this project did not write: for every accepted
expression, the next five firings that `systemd-analyze calendar --iterations=5` computes for the
OnCalendar= value must be those Python's croniter computes for the cron expression, from the same
instant, in UTC. Prints TAP."""

import datetime
import os
import re
import subprocess
import sys

try:
    from croniter import croniter
except ImportError:
    print('1..0 # SKIP python3-croniter is not installed')
    sys.exit(0)

src = os.environ.get('LOOP_SOURCE_DIR', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
table = open(os.path.join(src, 'test', 'unit', 'tasks-cron-table.h')).read()
rows = re.findall(r'\{ "((?:[^"\\]|\\.)*)", (NULL|"((?:[^"\\]|\\.)*)"), (NULL|"[^"]*") \},', table)
entries = [(cron, cal) for cron, raw, cal, _ in rows if raw != 'NULL']

env = dict(os.environ, TZ='UTC', LC_ALL='C')
n = 0
failed = 0


def ok(cond, name, diag=None):
    global n, failed
    n += 1
    print(('ok' if cond else 'not ok') + f' {n} - {name}')
    if not cond:
        failed += 1
        for line in (diag or '').splitlines():
            print('#   ' + line)


def systemd_next(cal):
    out = subprocess.run(['systemd-analyze', 'calendar', '--iterations=5', cal], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr
    times = re.findall(r'(?:Next elapse|Iter\. #\d+): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC', out.stdout)
    return [datetime.datetime.strptime(t, '%Y-%m-%d %H:%M:%S') for t in times], out.stdout


ok(len(entries) >= 20, f'the table has {len(entries)} accepted expressions')
for cron, cal in entries:
    for attempt in range(3):
        before = datetime.datetime.utcnow().replace(microsecond=0)
        got, text = systemd_next(cal)
        after = datetime.datetime.utcnow().replace(microsecond=0)
        # the two computations must start from the same second: retry when the clock moved meanwhile
        if before == after:
            break
    if got is None:
        ok(False, f'systemd-analyze accepts OnCalendar={cal}', text)
        continue
    it = croniter(cron, before)
    want = [it.get_next(datetime.datetime) for _ in range(5)]
    ok(got == want, f'"{cron}" -> OnCalendar={cal}: systemd and croniter agree on the next five firings',
       'systemd:  ' + ', '.join(map(str, got)) + '\ncroniter: ' + ', '.join(map(str, want)))

print(f'1..{n}')
sys.exit(1 if failed else 0)
