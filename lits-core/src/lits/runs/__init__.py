"""Runs: one run from its declaration (:mod:`spec`) to its summary (:mod:`session`); its rooms: Ray's
executor (``ray/``), what a run leaves and how it is read (``results/``), and why it stops or fails (``faults/``)."""
