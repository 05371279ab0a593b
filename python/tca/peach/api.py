"""The TCA user API's names in Python: DMA flags, result codes and errors.

Flags carry the published C names (``tcaDMANotify`` ...) and Python-style aliases
(``DMA_NOTIFY`` ...). API failures raise :class:`TcaApiError`, whose ``code`` is the
``tcaresult`` value the C ABI returns and whose ``name`` is the error's name.
"""

from __future__ import annotations

from tca import TcaError, _native


class TcaApiError(TcaError):
    """A TCA API call failed; ``code`` is the ``tcaresult`` code, ``name`` its name."""

    def __init__(self, message: str, code: int, name: str):
        super().__init__(message)
        self.code = code
        self.name = name


class DeadlockError(TcaError):
    """Every rank of a simulated job waits and nothing can change: the message says for what."""


FLAGS: dict[str, int] = dict(_native.dma_flags())
globals().update(FLAGS)
DMA_USE_INTERNAL = FLAGS["tcaDMAUseInternal"]
DMA_USE_NOTIFY_INTERNAL = FLAGS["tcaDMAUseNotifyInternal"]
DMA_NOTIFY = FLAGS["tcaDMANotify"]
DMA_NOTIFY_SELF = FLAGS["tcaDMANotifySelf"]
DMA_CONTINUE = FLAGS["tcaDMAContinue"]
DMA_PIPELINE = FLAGS["tcaDMAPipeline"]

TCA_SUCCESS = 0
ERRORS: dict[int, tuple[str, str]] = {code: (name, text) for code, name, text in _native.error_codes()}


def tcaGetErrorString(code: int) -> str:  # noqa: N802 - the published C name
    """The message of a ``tcaresult`` code."""
    if code == TCA_SUCCESS:
        return "success"
    return ERRORS.get(code, ("", f"unknown tcaresult {code}"))[1]


Handle = _native.Handle
Desc = _native.Desc
