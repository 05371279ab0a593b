"""Victream on real devices: emulated and CUDA GPUs, and the threaded executors that drive them."""
