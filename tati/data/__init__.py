"""Data: built-in datasets, CSV files and the batch pipeline."""
