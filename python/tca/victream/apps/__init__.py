"""Programs on Victream: the seed's workloads, the scheduler benchmark, the optimal-schedule
search and the ``tca victream`` command."""
