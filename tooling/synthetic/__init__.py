"""Synthetic store history for the benchmark (see :mod:`tooling.synthetic.generator`)."""

from tooling.synthetic.generator import (
    EPOCH,
    GENERATOR_VERSION,
    SOURCES,
    Batch,
    History,
    Mix,
    Scale,
    Source,
    generate,
)

__all__ = ["EPOCH", "GENERATOR_VERSION", "SOURCES", "Batch", "History", "Mix", "Scale", "Source", "generate"]
