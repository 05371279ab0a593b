"""The pure part of Victream: the subtask graph, the DAG analyzer, the scheduler core and the
memory manager. Nothing here owns a clock, a thread or a device (sans-I/O)."""
