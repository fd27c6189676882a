"""Test helpers: a scripted deterministic model (and a loopback server, see
:mod:`lits.testing.server`).  Nothing here talks to the network."""

from lits.testing.scripted import ScriptedModel

__all__ = ["ScriptedModel"]
