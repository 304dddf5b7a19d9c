"""The private folder of a process's ipc sockets is gone when the process ends, however it ends."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import os, sys
from protocol.transport import new_ipc_endpoint, remove_ipc_dir
folder = os.path.dirname(new_ipc_endpoint()[len("ipc://"):])
print(folder, flush=True)
pid = os.fork()
if pid == 0:  # a forked child shares the folder: not its to remove, now or at its exit
    remove_ipc_dir()
    sys.exit(0)
os.waitpid(pid, 0)
print(os.path.isdir(folder), flush=True)
if sys.argv[1] == "remove":
    remove_ipc_dir()
os._exit(0)  # as a tournament worker stopped in a hurry ends: no atexit
"""


def test_a_process_ending_with_os_exit_leaves_no_ipc_folder_once_it_removed_it(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    for mode, left in (("remove", False), ("keep", True)):  # "keep": what a worker's os._exit left before
        out = subprocess.run([sys.executable, "-c", CHILD, mode], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=30).stdout.split()
        folder, kept_by_child = Path(out[0]), out[1]
        assert folder.parent == tmp_path and kept_by_child == "True"
        assert folder.exists() is left, mode
