"""The Python bindings name the DMA flags and result codes as the C header does: the header is
checked against the Rust tables (crates/tca/capi/tests/header.rs), and here the Python side
against the header, so one table (DmaFlags::NAMES, TcaError::ALL) serves C, Rust and Python."""

import re

from conftest import ROOT
from tca import _native

HEADER = (ROOT / "crates" / "tca" / "capi" / "include" / "tca-api.h").read_text()


def defines(prefix: str) -> dict[str, int]:
    """Every ``#define NAME VALUE`` of the header whose name starts with ``prefix``."""
    found = re.findall(rf"^#define ({prefix}\w*) (0x[0-9a-fA-F]+|\d+)", HEADER, re.M)
    return {name: int(value, 0) for name, value in found}


def c_error_name(rust: str) -> str:
    """``SizeNotMultipleOf4`` -> ``TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4`` (the header's names)."""
    return "TCA_ERROR_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[a-zA-Z])(?=[0-9])", "_", rust).upper()


def test_python_flags_are_the_header_flags():
    assert dict(_native.dma_flags()) == defines("tcaDMA")


def test_python_error_codes_are_the_header_codes():
    header = defines("TCA_ERROR_")
    python = {c_error_name(name): code for code, name, _ in _native.error_codes()}
    assert python, "no error codes from the native module"
    # The header adds the codes of the C ABI itself (crates/tca/capi/src/results.rs and, for the
    # descriptor tables, desc_table.rs; for the collective library, coll.rs).
    assert {k: header[k] for k in python} == python
    assert set(header) - set(python) == {
        "TCA_ERROR_INVALID_ARGUMENT",
        "TCA_ERROR_INTERNAL",
        "TCA_ERROR_UNKNOWN_FABRIC",
        "TCA_ERROR_MEMORY_TYPE_MISMATCH",
        "TCA_ERROR_UNKNOWN_TAG",
        "TCA_ERROR_DESTROYED_TAG",
        "TCA_ERROR_DESC_SLOT_OUT_OF_RANGE",
        "TCA_ERROR_EMPTY_TABLE",
        "TCA_ERROR_INTERNAL_MEMORY_FULL",
        "TCA_ERROR_INVALID_OP",
        "TCA_ERROR_COLL_MISMATCH",
        "TCA_ERROR_CHANNEL_TAKEN",
    }
