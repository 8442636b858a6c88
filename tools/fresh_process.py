"""One measurement in a new Python process: the benchmarks that time what a fresh process pays
(imports, tracing, XLA's compile) run a child script and read the JSON line it prints last."""

import json
import subprocess
import sys


def child_result(code, *args, what=""):
    """The JSON value of the last line `python -c code *args` prints; its stderr's end, after
    `what`, as the exit message if it fails."""
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(what + done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])
