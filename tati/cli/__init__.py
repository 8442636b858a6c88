"""Command-line tools: thin wrappers that parse options from the option table and run."""
