"""Command-line tools that land data in bronze (``ingest``) and decide on quarantined rows (``steward``)."""
