"""TCA on PEACH2/PEACH3: the TCA API for Python rank programs (:mod:`tca.peach.api`,
:mod:`tca.peach.program`), the simulated and shared-memory fabrics' drivers (:mod:`tca.peach.sim`,
:mod:`tca.peach.launch`), the platform files (:mod:`tca.peach.platforms`), the benchmarks
(:mod:`tca.peach.bench`, :mod:`tca.peach.shm_bench`) and the baseline models the seeds compare
with (:mod:`tca.peach.baselines`)."""
