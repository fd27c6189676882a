"""Test helpers: a scripted deterministic model (and a loopback server, see
:mod:`lits.testing.server`).  Nothing here talks to the network."""

from lits.testing.chaos import FAULT_KINDS, ChaosProxy, evenly
from lits.testing.scripted import ScriptedModel
from lits.testing.server import FakeOpenAIServer

__all__ = ["FAULT_KINDS", "ChaosProxy", "FakeOpenAIServer", "ScriptedModel", "evenly"]
