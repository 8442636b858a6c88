"""Shared test settings. The tests mirror the package (tests/samplers/ for tati/samplers/, ...);
the helper modules beside this file (stats.py: seeds, t/chi-square critical values and
false-failure budgets; langevin_harness.py, baoab_stationary.py: exact answers of the Langevin
schemes; processes.py: signals to child processes; distributed_runs.py: the tf.distribute child
process) are importable from every subdirectory. Seeds: see stats.py (TATI_TEST_SEED)."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
