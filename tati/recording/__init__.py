"""Recording: the run-info, trajectory and averages tables, their columns and CSV streams."""
