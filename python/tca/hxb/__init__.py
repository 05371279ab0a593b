"""PM/Ethernet-HXB (seed 004): benchmarks of the protocol on simulated PACS-CS platforms
(:mod:`tca.hxb.sim_bench`) and over real Linux links between network namespaces
(:mod:`tca.hxb.net_bench`)."""
