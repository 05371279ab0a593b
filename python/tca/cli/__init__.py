"""The ``tca`` command line (DESIGN.md, "Interfaces"): one module per command.

    tca platforms [--show NAME]
    tca bench dma-bw|pingpong|block-stride|local-copy --platform P [options] [--json]
                  [--plot FILE.png] [--trace FILE.json]
    tca run -n N [--fabric shm|sim --platform P] PROGRAM [ARGS...]
    tca cc [compiler options] FILE.c ... -o PROGRAM
    tca hxb bench bandwidth|latency|neighbour [--platform P | --fabric net] ...
    tca expether pool serve|status|assign|unassign|hosts|devices ...
    tca expether bench aggregation|latency [--platform P] ...
    tca expether bench io --fabric net [--paths 1,2] [--loss 0.01] [--rate 1G|10G] ...
    tca victream bench|optimal ...
    tca demo [--out DIR]

Errors in input print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from tca import TcaError

# The commands, each a module of this package with add_parser(subparsers).
COMMANDS = ("platforms", "bench", "demo", "run", "cc", "hxb", "expether", "victream")


class Parser(argparse.ArgumentParser):
    """A usage error in one line, as every other error of the CLI (argparse printed the usage
    block first); the parsers of the subcommands are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(commands: tuple[str, ...] = COMMANDS) -> argparse.ArgumentParser:
    parser = Parser(
        prog="tca", description="Tightly Coupled Accelerators: simulated platforms and benchmarks."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in commands:
        importlib.import_module(f"tca.cli.{name}").add_parser(sub)
    return parser


# How the simulated PEACH2 fabric moves TLPs (crates/tca/model/src/train.rs): in trains (the
# default), or one by one.
TLP_RESOLUTION = "TCA_SIM_TLPS"


def check_tlp_resolution() -> None:
    value = os.environ.get(TLP_RESOLUTION)
    if value not in (None, "trains", "exact"):
        raise TcaError(f"{TLP_RESOLUTION}={value!r}: expected 'trains' (the default) or 'exact' (TLP by TLP)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Only the command named is imported: `tca run` and `tca cc` then start without numpy,
    # whose BLAS threads would spin on the CPUs the ranks are pinned to.
    parser = build_parser((argv[0],) if argv and argv[0] in COMMANDS else COMMANDS)
    # Commands implemented elsewhere (victream) take the rest of the line as it is, options
    # in front included.
    args, extra = parser.parse_known_args(argv)
    if extra:
        if not hasattr(args, "rest"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.rest = extra + args.rest
    try:
        check_tlp_resolution()
        return args.func(args)
    except TcaError as e:
        print(f"tca: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        # numpy names the size it could not have ("Unable to allocate 96.9 GiB ...").
        detail = f": {str(e).splitlines()[0]}" if str(e) else ""
        print(f"tca: error: out of memory{detail} (ask for less data)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
