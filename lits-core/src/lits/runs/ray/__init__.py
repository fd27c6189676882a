"""Ray's wing of a run: the driver's executor, the instance workers, the actors they share and the cluster watch."""
