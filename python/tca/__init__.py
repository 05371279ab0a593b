"""tca: Tightly Coupled Accelerators in software.

The TCA API and the systems around it (PEACH2, PEACH3, ExpEther, Victream, PM/Ethernet-HXB),
each as real software and as a calibrated model of the original hardware in a deterministic
simulator. The command-line entry point is ``tca`` (see ``tca --help``).
"""

__version__ = "0.1.0"


class TcaError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""
