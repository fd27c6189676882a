"""Notice a lost Ray cluster (the driver's node dead, the GCS or the coordinator not answering) in bounded time.

Ray itself waits for a lost node's actors forever: a raylet killed under a run
leaves every ``ray.get`` on its tasks unanswered.  A daemon thread asks the GCS
for the driver's node and pings the run's coordinator every few seconds; the
driver's loop reads :attr:`ClusterWatch.lost` and never blocks on the cluster
itself.  A check that hangs (a dead GCS) counts as not answering, because
only the time of the last good check is trusted.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

#: Seconds between two checks.
CHECK_EVERY = 2.0
#: Seconds without a good check after which the cluster counts as lost.
SILENT_FOR = 30.0
#: Seconds a check waits for the coordinator's answer.
PING_TIMEOUT = 10.0


def cluster_nodes() -> list[dict[str, Any]]:
    """``ray.nodes()``: each node of the cluster as the GCS reports it (Ray leaves it untyped)."""
    import ray

    nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    return nodes()


class ClusterWatch:
    """Checks the cluster from a daemon thread; :attr:`lost` says why it is gone, else None."""

    def __init__(
        self, coordinator: Any, node_id: str, every: float = CHECK_EVERY, silent_for: float = SILENT_FOR
    ) -> None:
        self.coordinator, self.node_id = coordinator, node_id
        self.every, self.silent_for = every, silent_for
        self._last_ok = time.monotonic()
        self._dead: str | None = None
        self._problem = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lits-ray-watch", daemon=True)

    def start(self) -> "ClusterWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def lost(self) -> str | None:
        if self._dead is not None:
            return self._dead
        silent = time.monotonic() - self._last_ok
        if silent > self.silent_for:
            return f"the Ray cluster did not answer for {silent:.0f} s ({self._problem or 'the GCS and the coordinator gave no reply'})"
        return None

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self._check()
            except Exception as exc:  # the GCS or the coordinator is unreachable: wait for SILENT_FOR
                self._problem = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            else:
                self._last_ok = time.monotonic()

    def _check(self) -> None:
        import ray

        nodes = {str(n.get("NodeID")): n for n in cluster_nodes()}
        here = nodes.get(self.node_id)
        if here is None or not here.get("Alive"):
            self._dead = "the Ray node of this run died (its raylet is gone)"
            return
        ray.get(self.coordinator.ping.remote(), timeout=PING_TIMEOUT)
