"""Simulation mode: the scheduler core driven in virtual time by a cost model (seed 002 §6.2)."""
