"""LiTS: Language Inference via Tree Search.

Importing ``lits`` is cheap on purpose: plugins load lazily, the first time a
registry is read (or explicitly via :func:`lits.plugins.load_plugins`).
"""

__version__ = "0.3.0"
