"""The design documents' import path for the benchmark domains (``from lits_benchmark.blocksworld import ...``)."""
