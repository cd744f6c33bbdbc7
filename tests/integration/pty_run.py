#!/usr/bin/env python3
"""pty_run.py - run a command on a pseudo-terminal and keep what it showed.

    pty_run.py TRANSCRIPT COMMAND...

stdin, stdout and stderr of COMMAND are one new terminal (so isatty(2) is
true: moeprobe draws its live progress line); every byte it writes there is
appended to TRANSCRIPT, exactly as a terminal would have received it. Exits
with COMMAND's exit status (128+N when a signal N ended it).
"""
import os
import pty
import sys

if len(sys.argv) < 3:
    sys.exit("usage: pty_run.py TRANSCRIPT COMMAND...")
pid, master = pty.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
with open(sys.argv[1], "ab") as out:
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not data:
            break
        out.write(data)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status)
         else 128 + os.WTERMSIG(status))
