"""The engine: the kernel contract, the registry, the compiled driver and its rows."""
