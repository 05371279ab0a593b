"""ExpEther (seed 002 ch. 3-4): PCIe over Ethernet. ``pool`` is the system manager of §3.3.1."""
