"""Configuration: the option table, the checks before TensorFlow is imported, and building a run from options."""
