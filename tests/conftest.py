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
