#!/usr/bin/env python3
"""Test helper (tests/test_director.py): a shell's job control, in small. Session leader on a pty: runs CMD as a job of its own, in the foreground; after the export
holds N games, puts it in the background (tostop set: its next write to the terminal stops it
with SIGTTOU), waits S seconds, then brings it back (fg). Prints the job's exit code. With S
"stray": leaves it in the foreground and sends it SIGTTOU, SIGTTIN, SIGTTOU (a handler that runs
after the shell's fg sees that), printing the job's state after each."""
import os, signal, subprocess, sys, termios, time
export, games, pause = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cmd = sys.argv[4:]


def say(line: str) -> None:
    """To the terminal, and to EXPORT.job: the last lines a session leader writes before it exits
    can be lost to the terminal's reader (the pty hangs up with them unread)."""
    print(line, file=sys.stderr, flush=True)
    with open(export + ".job", "a") as f:
        f.write(line + "\n")


signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # the shell's part: take the terminal back while in the background
attrs = termios.tcgetattr(0)
attrs[3] |= termios.TOSTOP
termios.tcsetattr(0, termios.TCSANOW, attrs)
job = subprocess.Popen(cmd, process_group=0, preexec_fn=lambda: signal.signal(signal.SIGTTOU, signal.SIG_DFL))
os.tcsetpgrp(0, job.pid)
stopped = False
while job.poll() is None:
    if not stopped and os.path.exists(export) and len(open(export).read().splitlines()) >= games and pause == "stray":
        states = []
        for signum in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGTTOU):
            os.killpg(job.pid, signum)
            time.sleep(0.3)
            states.append(open(f"/proc/{job.pid}/stat").read().rsplit(")", 1)[1].split()[0])
        stopped = True
        say(f"STATES-IN-FOREGROUND {' '.join(states)}")
    elif not stopped and os.path.exists(export) and len(open(export).read().splitlines()) >= games:
        os.tcsetpgrp(0, os.getpgrp())  # the job is in the background now
        t0 = time.monotonic()
        while time.monotonic() - t0 < float(pause):
            time.sleep(0.01)
        state = open(f"/proc/{job.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        os.tcsetpgrp(0, job.pid)  # fg
        os.killpg(job.pid, signal.SIGCONT)
        stopped = True
        say(f"STATE-WHILE-BACKGROUND {state}")
    time.sleep(0.02)
say(f"JOB-EXIT {job.returncode}")
