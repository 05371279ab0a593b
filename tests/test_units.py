"""tca.units: the one unit parser (Rust base::units) as Python sees it."""

import math

import pytest
from tca import TcaError, _native
from tca.units import parse_bandwidth, parse_bytes, parse_size_arg, parse_sizes, parse_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8", 8),
        ("4K", 4096),
        ("4k", 4096),
        ("1M", 1 << 20),
        ("1G", 1 << 30),
        ("64KiB", 64 << 10),
        ("4 KiB", 4096),
        ("1GB", 10**9),
        ("2 kB", 2000),
        ("8B", 8),
    ],
)
def test_command_line_sizes(text, expected):
    assert parse_size_arg(text) == expected


def test_size_lists_and_ranges():
    assert parse_sizes("8:64") == [8, 16, 32, 64]
    assert parse_sizes("4K:16K") == [4096, 8192, 16384]
    assert parse_sizes("8:8") == [8]
    assert parse_sizes("64,4096,1K") == [64, 4096, 1024]
    assert parse_sizes("3:13") == [3, 6, 12]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("0", "must be positive"),
        ("0:8", "must be positive"),
        ("64:8", "LOW <= HIGH"),
        ("8:16:32", "expected LOW:HIGH"),
        ("8,,16", "not a number"),
        ("4Q", "expected a size"),
        ("-8", "negative"),
        ("1.5", "whole number of bytes"),
        ("nan", "not a number"),
        ("1e999K", "not a number"),
    ],
)
def test_bad_sizes_are_one_line_errors_naming_the_option(text, fragment):
    with pytest.raises(TcaError) as e:
        parse_sizes(text)
    message = str(e.value)
    assert message.startswith("--sizes: ")
    assert fragment in message
    assert "\n" not in message


def test_platform_spelling_is_strict():
    assert parse_bytes("4 KiB", strict=True) == 4096
    for text in ("4K", "4096", "4 KB"):
        with pytest.raises(TcaError, match="expected a size in B, KiB, MiB, GiB or TiB"):
            parse_bytes(text, strict=True)
    with pytest.raises(TcaError, match="expected a size with its unit"):
        parse_bytes(4096, strict=True)
    assert parse_time("150 ns", strict=True) == pytest.approx(150e-9, rel=1e-15)
    with pytest.raises(TcaError, match="expected a time"):
        parse_time("0", strict=True)
    assert parse_bandwidth("3.66 GB/s", strict=True) == 3.66e9
    with pytest.raises(TcaError, match="expected a bandwidth"):
        parse_bandwidth("1.2GiB/s", strict=True)


def test_time_and_bandwidth_as_typed():
    assert parse_time("10us") == 1e-5
    assert parse_time("1ms") == 1e-3
    assert parse_time("0") == 0.0
    assert parse_time("0us") == 0.0
    assert parse_time(2e-6) == 2e-6
    assert parse_bandwidth("6GB/s") == 6e9
    assert parse_bandwidth("500 MB/s") == 5e8
    assert parse_bandwidth("2GiB/s") == 2 * 2**30
    assert parse_bytes("1GiB") == 2**30
    assert parse_bytes(4096) == 4096
    assert parse_bytes("0 B", allow_zero=True) == 0


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: parse_time("5"), "expected a time"),
        (lambda: parse_time("fast"), "not a number"),
        (lambda: parse_time(math.nan), "finite"),
        (lambda: parse_time(-1.0), "not negative"),
        (lambda: parse_bandwidth("0GB/s"), "greater than zero"),
        (lambda: parse_bandwidth(0), "greater than zero"),
        (lambda: parse_bandwidth("6GB"), "expected a bandwidth"),
        (lambda: parse_bandwidth(math.inf), "finite"),
        (lambda: parse_bytes(True), "expected a size"),
        (lambda: parse_bytes(0), "must be positive"),
        (lambda: parse_bytes(-4), "must be positive"),
    ],
)
def test_bad_values(call, fragment):
    with pytest.raises(TcaError, match=fragment):
        call()


def test_prefix_names_the_parameter():
    with pytest.raises(TcaError, match=r"^bus_latency: expected a time in ps, ns, us, ms or s"):
        parse_time("10 parsecs", "bus_latency")


def test_native_parser_reports_unknown_dimension_and_spelling():
    assert _native.parse_quantity("5 GT/s", "transfer-rate") == 5e9
    assert _native.parse_quantity("250 MHz", "frequency") == 2.5e8
    with pytest.raises(ValueError, match="unknown dimension 'mass'"):
        _native.parse_quantity("1 kg", "mass")
    with pytest.raises(ValueError, match="unknown spelling 'loose'"):
        _native.parse_quantity("1 B", "bytes", "loose")
    with pytest.raises(ValueError, match="too large"):
        _native.parse_quantity("20000000000000 TiB", "bytes")
