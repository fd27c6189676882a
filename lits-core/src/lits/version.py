"""The distribution's version, in a module of its own so that any module can read it without importing the
package's public face (``lits/__init__``)."""

__version__ = "0.3.0"
