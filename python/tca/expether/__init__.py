"""ExpEther (seed 002): PCIe over Ethernet. Benchmarks of the simulated prototype
(:mod:`tca.expether.sim_bench`, command ``tca expether bench``)."""
