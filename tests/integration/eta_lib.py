#!/usr/bin/env python3
"""eta_lib.py - run a moeprobe command, stamp each stderr line on arrival,
and compare the ETA it printed after its first attempt with the time the
rest of the run took (#29 item 6). Used by q_eta_*.sh.

usage: eta_lib.py PATTERN TOLERANCE -- COMMAND...
  PATTERN   a regex matching the first line whose ETA counts (its last
            "ETA N s|min|h" is read)
  TOLERANCE allowed |ETA - actual| / actual (0.3)
Prints "ETA X s after the first attempt, Y s taken (Z %)"; exits 1 outside
the tolerance or when no such line came, with the stamped stderr."""
import re
import subprocess
import sys
import time


def seconds(text):
    m = re.search(r"ETA ~?([0-9.]+) ?(s|min|h)\b", text)
    if not m:
        return None
    return float(m.group(1)) * {"s": 1, "min": 60, "h": 3600}[m.group(2)]


def main():
    pattern, tol = re.compile(sys.argv[1]), float(sys.argv[2])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         errors="replace")
    lines, at, eta = [], None, None
    for line in p.stderr:
        now = time.monotonic() - t0
        lines.append("%7.2f %s" % (now, line.rstrip()))
        if at is None and pattern.search(line) and seconds(line) is not None:
            at, eta = now, seconds(line)
    p.wait()
    end = time.monotonic() - t0
    if at is None:
        print("no line matching %r with an ETA" % sys.argv[1])
        print("\n".join(lines[-40:]))
        return 1
    actual = end - at
    err = (eta - actual) / actual if actual > 0 else 0
    print("ETA %.0f s printed at %.1f s, %.1f s taken after it (%+.0f %%), exit %d" %
          (eta, at, actual, 100 * err, p.returncode))
    if abs(err) > tol:
        print("\n".join(lines[-60:]))
        return 1
    return 0


sys.exit(main())
