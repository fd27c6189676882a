"""How a model call reaches its server: httpx transports stacked as layers, each testable and switchable alone.

From the top: :mod:`~lits.lm.http.retry` (tenacity over any transport: the
call's time budget, backoff, ``Retry-After``, the learned read timeout of
:mod:`~lits.lm.http.patience`), :mod:`~lits.lm.http.hedging` (a second copy of a
call slower than nearly all recent ones), the run's stop gate, and the wire:
:mod:`~lits.lm.http.lean_transport` for ``http://`` (httpx's own transport for
``https://``).  :mod:`~lits.lm.http.billing` tallies what the server billed per
call.  :func:`~lits.lm.http.stack.server_transport` builds the stack of one server.
"""
