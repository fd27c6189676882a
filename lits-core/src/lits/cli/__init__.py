"""The ``lits`` command line."""
