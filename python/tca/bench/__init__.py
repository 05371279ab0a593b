"""Benchmark drivers: each builds rows (see :mod:`tca.report`) from the simulator or a fabric."""
