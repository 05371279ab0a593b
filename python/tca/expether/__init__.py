"""ExpEther (seed 002 ch. 3-4): PCIe over Ethernet. ``pool`` is the system manager of §3.3.1;
:mod:`tca.expether.sim_bench` runs the simulated prototype (seed 002 §4.2);
:mod:`tca.expether.net_bench` is the software bridge's block-I/O benchmark over real links
between network namespaces."""
