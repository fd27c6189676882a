"""When a run stops early (Ctrl-C, a circuit breaker, a full disk) and why an instance failed."""
