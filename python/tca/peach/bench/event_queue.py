"""Event-queue throughput of tca's kernel beside SimPy, on the same "hold" model, in one run.

The hold model keeps N events pending: each step takes the earliest event and schedules one at
a random later time. For tca this is `EventQueue` pop + push (Rust, measured inside the
extension); for SimPy it is N processes each looping over ``yield env.timeout(delay)`` and
``env.step()`` delivering one event per step. Both use uniform delays, so the queue shapes match.

Run: ``make bench`` or ``python -m tca.peach.bench.event_queue [--steps N]``.
"""

from __future__ import annotations

import argparse
import random
import time

from tca import _native

PENDING = [1_000, 100_000, 1_000_000]


def simpy_rate(pending: int, steps: int, seed: int = 1) -> float:
    """Events per second of SimPy on the hold model with `pending` events."""
    import simpy

    env = simpy.Environment()
    rng = random.Random(seed)

    def holder():
        while True:
            yield env.timeout(rng.uniform(1.0, 1000.0))

    for _ in range(pending):
        env.process(holder())
    for _ in range(min(pending, steps)):  # start every process: each then has one timeout pending
        env.step()
    start = time.perf_counter()
    for _ in range(steps):
        env.step()
    return steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="hold steps per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per point; the best is kept")
    args = parser.parse_args(argv)
    print(f"# tca event queue vs SimPy, hold model (best of {args.repeat}, {args.steps} steps each)")
    print(f"# {'Pending':<12}{'tca (events/s)':>18}{'SimPy (events/s)':>20}{'tca/SimPy':>12}")
    for pending in PENDING:
        tca = max(_native.hold_model_rate(pending, args.steps * 10, seed=k) for k in range(args.repeat))
        sim = max(simpy_rate(pending, args.steps, seed=k) for k in range(args.repeat))
        print(f"  {pending:<12}{tca:>18,.0f}{sim:>20,.0f}{tca / sim:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
