"""Benchmark drivers: each builds rows (see :mod:`tca.common.report`) from the simulator or a fabric."""
