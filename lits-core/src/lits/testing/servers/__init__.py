"""Loopback servers for tests and benchmarks, on one base (:mod:`.loopback`): an OpenAI-compatible server (with
what vLLM makes of a request's constraint fields), a chaos proxy in front of one, and a vLLM Pooling API server.
Stdlib only."""
