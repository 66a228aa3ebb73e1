"""Engines past one machine's memory: streaming chunks and Dask partitions into the same sufficient statistics."""
