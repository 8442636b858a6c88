"""Shared test settings: keep TensorFlow quiet. Seeds: see stats.py (TATI_TEST_SEED)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
