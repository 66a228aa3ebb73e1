"""Noise mechanisms: each returns its output together with the guarantee it gives."""
