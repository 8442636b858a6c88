"""Shared test settings. The tests mirror the package (tests/samplers/ for tati/samplers/, ...);
the helper modules beside this file (stats.py: seeds, t/chi-square critical values and
false-failure budgets; langevin_harness.py, baoab_stationary.py: exact answers of the Langevin
schemes; processes.py: signals to child processes; distributed_runs.py: the tf.distribute child
process) are importable from every subdirectory. Seeds: see stats.py (TATI_TEST_SEED)."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# One thread per TensorFlow pool, in the test processes and the tools and examples they start
# (TensorFlow reads these when its runtime starts): the suite runs one pytest worker per core,
# and the models here are small, so a second thread per pool only hands work between
# threads (the suite's CPU time fell by about a tenth; doc/contributing.md, Tests).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# XLA's persistent cache is on by default in the user's cache directory (tati/engine/xla_cache.py):
# the suite keeps its own, one per session (the workers inherit the controller's), so that no
# run of the tests loads programs an earlier run or another checkout compiled.
if not os.environ.get("TATI_TEST_CACHE"):
    import atexit
    import shutil
    import tempfile
    os.environ["XDG_CACHE_HOME"] = os.environ["TATI_TEST_CACHE"] = tempfile.mkdtemp(prefix="tati-test-cache-")
    atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)
    # ArviZ (0.23) writes a once-a-day stamp in the user's cache at import, through one fixed temporary
    # name: two workers importing it at once in this fresh cache raced, one failing its collection with
    # FileNotFoundError. The controller writes the stamp first, so that no worker writes it.
    import importlib.util
    if importlib.util.find_spec("arviz") is not None and importlib.util.find_spec("platformdirs") is not None:
        import datetime
        import pathlib
        from platformdirs import user_cache_dir
        stamp = pathlib.Path(user_cache_dir("arviz", "arviz"), "daily_warning")
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(datetime.date.today().isoformat())

# The longest files first (measured with --durations, about 80-210 s each against 30 s or less
# for the rest): with one file per worker (--dist loadfile), a long file handed out near the end
# keeps one worker busy while the other has nothing left to do.
LONGEST_FILES = ["test_docs.py", "test_examples.py", "samplers/test_proposal.py", "test_distribute.py",
                 "samplers/test_hmc.py", "test_checkpoint.py"]


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))

    def rank(item):
        path = os.path.relpath(str(item.path), here).replace(os.sep, "/")
        return LONGEST_FILES.index(path) if path in LONGEST_FILES else len(LONGEST_FILES)

    items.sort(key=rank)  # stable: a file's tests keep their order
