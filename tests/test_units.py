"""Quantities with units: every dimension and prefix, the error messages, and format_quantity."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.spec import units as U
from codesign.spec.units import (
    AREA_MM2,
    BYTES,
    BYTES_PER_S,
    FLOP,
    FLOP_PER_S,
    HERTZ,
    SECONDS,
    WATTS,
    UnitError,
    format_quantity,
    parse_quantity,
)

KI, MI, GI, TI, PI = (2**10, 2**20, 2**30, 2**40, 2**50)

# (text, dimension, value in SI base units; area in mm^2)
CASES = [
    # sizes: decimal prefixes are powers of 1000, binary ones powers of 1024
    ("5 B", BYTES, 5), ("512 bytes", BYTES, 512), ("1 byte", BYTES, 1),
    ("1 kB", BYTES, 1e3), ("1 KB", BYTES, 1e3), ("3 MB", BYTES, 3e6), ("2 GB", BYTES, 2e9),
    ("2 TB", BYTES, 2e12), ("3 PB", BYTES, 3e15), ("2 Mbytes", BYTES, 2e6),
    ("1 KiB", BYTES, KI), ("4 MiB", BYTES, 4 * MI), ("1 GiB", BYTES, GI), ("1 TiB", BYTES, TI),
    ("1 PiB", BYTES, PI), ("3 Gibytes", BYTES, 3 * GI),
    # times
    ("1 s", SECONDS, 1.0), ("2 sec", SECONDS, 2.0), ("3 ms", SECONDS, 3e-3), ("4 us", SECONDS, 4e-6),
    ("4 µs", SECONDS, 4e-6), ("500 ns", SECONDS, 500e-9), ("7 ps", SECONDS, 7e-12), ("2 min", SECONDS, 120.0),
    # bandwidths
    ("1 B/s", BYTES_PER_S, 1), ("10 bytes/s", BYTES_PER_S, 10), ("1 kB/s", BYTES_PER_S, 1e3),
    ("100 MB/s", BYTES_PER_S, 1e8), ("25 GB/s", BYTES_PER_S, 25e9), ("1 TB/s", BYTES_PER_S, 1e12),
    ("1 KiB/s", BYTES_PER_S, KI), ("32 GiB/s", BYTES_PER_S, 32 * GI), ("8 GBps", BYTES_PER_S, 8e9),
    ("2 MBps", BYTES_PER_S, 2e6),
    # amounts of compute
    ("3 FLOP", FLOP, 3), ("3 flop", FLOP, 3), ("2.5 GFLOP", FLOP, 2.5e9), ("1 TFLOPs", FLOP, 1e12),
    ("1 Pflops", FLOP, 1e15),
    # compute rates
    ("120 TFLOP/s", FLOP_PER_S, 120e12), ("1 PFLOPS", FLOP_PER_S, 1e15), ("5 GFLOPS", FLOP_PER_S, 5e9),
    ("2 Tflops/s", FLOP_PER_S, 2e12), ("7 MFLOPs/s", FLOP_PER_S, 7e6), ("9 FLOP/s", FLOP_PER_S, 9),
    # areas (mm^2 is the base)
    ("1.5 mm^2", AREA_MM2, 1.5), ("2 mm2", AREA_MM2, 2.0), ("1 cm^2", AREA_MM2, 100.0),
    ("3 cm2", AREA_MM2, 300.0), ("500 um^2", AREA_MM2, 5e-4), ("500 um2", AREA_MM2, 5e-4),
    # power
    ("2 W", WATTS, 2.0), ("500 mW", WATTS, 0.5), ("3 uW", WATTS, 3e-6), ("1 kW", WATTS, 1e3),
    # frequency
    ("10 Hz", HERTZ, 10.0), ("2 kHz", HERTZ, 2e3), ("500 MHz", HERTZ, 5e8), ("1 GHz", HERTZ, 1e9),
    # number syntax: exponent, leading dot, sign, no space, extra spaces
    ("1e3 B", BYTES, 1e3), ("1.5e-3 s", SECONDS, 1.5e-3), (".5 GB", BYTES, 5e8), ("+2 KiB", BYTES, 2 * KI),
    ("4MiB", BYTES, 4 * MI), ("  4   MiB  ", BYTES, 4 * MI), ("25GB/s", BYTES_PER_S, 25e9),
    ("2E3 ns", SECONDS, 2e-6), ("-1 GB", BYTES, -1e9),  # the sign is the spec's business, not the parser's
]


@pytest.mark.parametrize("text,dim,expected", CASES, ids=[c[0] for c in CASES])
def test_parse_every_dimension_and_prefix(text, dim, expected):
    got = parse_quantity(text, dim)
    assert isinstance(got, float)
    assert got == pytest.approx(expected, rel=1e-12, abs=0)


def test_decimal_and_binary_prefixes_differ():
    assert parse_quantity("1 KB", BYTES) == 1000.0
    assert parse_quantity("1 KiB", BYTES) == 1024.0
    assert parse_quantity("1 GB/s", BYTES_PER_S) == 1e9
    assert parse_quantity("1 GiB/s", BYTES_PER_S) == 1073741824.0


@pytest.mark.parametrize("dim", U.ALL_DIMENSIONS, ids=lambda d: d.base)
@pytest.mark.parametrize("value,expected", [(5, 5.0), (2.5, 2.5), ("42", 42.0), ("1e3", 1000.0), (0, 0.0)])
def test_bare_number_is_the_base_unit(dim, value, expected):
    got = parse_quantity(value, dim)
    assert isinstance(got, float) and got == expected


@pytest.mark.parametrize("dim", U.ALL_DIMENSIONS, ids=lambda d: d.base)
def test_each_dimensions_example_parses_in_that_dimension(dim):
    # the example shown in every error message must itself be valid input
    assert parse_quantity(U.example(dim).strip('"'), dim) > 0


def test_unit_tables_are_disjoint():
    # a unit in two dimensions would make the "which is ..." hint ambiguous
    for a, b in itertools.combinations(U.ALL_DIMENSIONS, 2):
        assert not set(a.units) & set(b.units), (a.name, b.name)


WRONG_DIMENSION = [
    ("25 GB", BYTES_PER_S, 'expected a bandwidth such as "25 GB/s"', "which is a size (bytes)"),
    ("25 GB/s", BYTES, 'expected a size such as "4 MiB"', "which is a bandwidth (B/s)"),
    ("500 ns", BYTES, 'expected a size such as "4 MiB"', "which is a time (s)"),
    ("4 MiB", SECONDS, 'expected a time such as "500 ns"', "which is a size (bytes)"),
    ("120 TFLOP", FLOP_PER_S, 'expected a compute rate such as "120 TFLOP/s"', "which is an amount of compute (FLOP)"),
    ("120 TFLOPs", FLOP_PER_S, "expected a compute rate", "which is an amount of compute (FLOP)"),
    ("120 TFLOP/s", FLOP, 'expected an amount of compute such as "2.5 GFLOP"', "which is a compute rate (FLOP/s)"),
    ("100 GB/s", FLOP_PER_S, "expected a compute rate", "which is a bandwidth (B/s)"),
    ("1 GHz", SECONDS, "expected a time", "which is a frequency (Hz)"),
    ("2 W", AREA_MM2, 'expected an area such as "1.5 mm^2"', "which is a power (W)"),
    ("1 mm^2", WATTS, 'expected a power such as "2 W"', "which is an area (mm^2)"),
    ("5 ms", HERTZ, 'expected a frequency such as "1 GHz"', "which is a time (s)"),
]


@pytest.mark.parametrize("text,dim,expected,which", WRONG_DIMENSION,
                         ids=[f"{c[0]}->{c[1].base}" for c in WRONG_DIMENSION])
def test_wrong_dimension_names_both_dimensions(text, dim, expected, which):
    with pytest.raises(UnitError) as ei:
        parse_quantity(text, dim)
    msg = str(ei.value)
    assert expected in msg
    assert repr(text) in msg
    assert msg.endswith(which)


@pytest.mark.parametrize("text", ["fast", "GB/s", "", "   ", "1.2.3 GB", "ten MiB", "--1 GB", "nan", "inf GB/s",
                                  "NaN B", "0x10 B", "e5 B"])
def test_garbage_is_rejected_with_the_expectation(text):
    with pytest.raises(UnitError) as ei:
        parse_quantity(text, BYTES)
    assert 'a size such as "4 MiB"' in str(ei.value)


@pytest.mark.parametrize("text,unit", [("25 gb/s", "gb/s"), ("4 MiBs", "MiBs"), ("1 furlong", "furlong"),
                                       ("25 GB/s extra", "GB/s extra"), ("1 KIB/s", "KIB/s")])
def test_unknown_unit_is_named(text, unit):
    with pytest.raises(UnitError) as ei:
        parse_quantity(text, BYTES_PER_S)
    assert str(ei.value) == f"unknown unit {unit!r} in {text!r}; expected a bandwidth such as \"25 GB/s\""


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_numbers(value):
    with pytest.raises(UnitError) as ei:
        parse_quantity(value, SECONDS)
    assert str(ei.value) == 'expected a time such as "500 ns", got a boolean'


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_numbers_are_rejected(value):
    with pytest.raises(UnitError) as ei:
        parse_quantity(value, BYTES_PER_S)
    msg = str(ei.value)
    assert "finite" in msg and "bandwidth" in msg and msg.endswith(f"got {value}")


def test_non_finite_message_reads_well():
    with pytest.raises(UnitError) as ei:
        parse_quantity(math.inf, BYTES_PER_S)
    assert str(ei.value) == "expected a finite bandwidth, got inf"


@pytest.mark.parametrize("text", ["1e400 B", "1e999 GB/s"])
def test_non_finite_strings_are_rejected(text):
    with pytest.raises(UnitError, match="finite"):
        parse_quantity(text, BYTES if text.endswith(" B") else BYTES_PER_S)


def test_huge_integer_is_a_unit_error():
    with pytest.raises(UnitError):
        parse_quantity(10**400, BYTES)


@pytest.mark.parametrize("value,kind", [(None, "nothing (null)"), ([1], "a list"), ({"a": 1}, "a mapping")])
def test_other_types_are_rejected(value, kind):
    with pytest.raises(UnitError) as ei:
        parse_quantity(value, BYTES)
    assert str(ei.value) == f'expected a size such as "4 MiB", got {kind}'


def test_unit_error_is_a_value_error():
    assert issubclass(UnitError, ValueError)


# ------------------------------------------------------------------ properties (hypothesis)

_finite = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(x=_finite, prefix=st.sampled_from([("", 1.0), ("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9),
                                          ("T", 1e12), ("P", 1e15)]))
def test_decimal_prefix_scaling(x, prefix):
    p, f = prefix
    assert math.isclose(parse_quantity(f"{x} {p}B/s", BYTES_PER_S), x * f, rel_tol=1e-12)
    assert math.isclose(parse_quantity(f"{x} {p}B", BYTES), x * f, rel_tol=1e-12)
    assert math.isclose(parse_quantity(f"{x}{p}FLOP/s", FLOP_PER_S), x * f, rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(x=_finite)
def test_gb_per_s_is_1e9(x):
    assert math.isclose(parse_quantity(f"{x} GB/s", BYTES_PER_S), x * 1e9, rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=0, max_value=2**20), k=st.integers(min_value=1, max_value=5))
def test_binary_prefixes_are_exact_powers_of_1024(n, k):
    p = ["Ki", "Mi", "Gi", "Ti", "Pi"][k - 1]
    assert parse_quantity(f"{n} {p}B", BYTES) == n * 1024**k  # exact, no rounding
    assert parse_quantity(f"{n} {p}B/s", BYTES_PER_S) == n * 1024**k


@settings(max_examples=60, deadline=None)
@given(x=st.floats(min_value=1e-3, max_value=1e12, allow_nan=False))
def test_binary_is_decimal_times_ratio(x):
    # 1 GiB / 1 GB = 2^30 / 1e9, for any number written in front
    gib, gb = parse_quantity(f"{x} GiB", BYTES), parse_quantity(f"{x} GB", BYTES)
    assert math.isclose(gib / gb, 2**30 / 1e9, rel_tol=1e-12)


@settings(max_examples=100, deadline=None)
@given(dim=st.sampled_from([SECONDS, BYTES, BYTES_PER_S, FLOP_PER_S, AREA_MM2, WATTS, HERTZ, FLOP]),
       x=st.floats(min_value=1e-9, max_value=1e16, allow_nan=False))
def test_format_then_parse_round_trips_to_4_digits(dim, x):
    s = format_quantity(x, dim)
    assert math.isclose(parse_quantity(s, dim), x, rel_tol=5e-4, abs_tol=0.5 if dim is BYTES else 0), s


# ------------------------------------------------------------------ format_quantity

@pytest.mark.parametrize("value,dim,text", [
    (2.5e-6, SECONDS, "2.5 us"), (1.5, SECONDS, "1.5 s"), (3e-3, SECONDS, "3 ms"), (500e-9, SECONDS, "500 ns"),
    (1e-12, SECONDS, "0.001 ns"), (0.0, SECONDS, "0 ns"), (120.0, SECONDS, "120 s"),
    (4 * MI, BYTES, "4 MiB"), (1.5 * GI, BYTES, "1.5 GiB"), (2048, BYTES, "2 KiB"), (100, BYTES, "100 B"),
    (1023, BYTES, "1023 B"), (4e9, BYTES, "3.725 GiB"),
    (25e9, BYTES_PER_S, "25 GB/s"), (2e12, BYTES_PER_S, "2 TB/s"), (5e6, BYTES_PER_S, "5 MB/s"),
    (10, BYTES_PER_S, "10 B/s"), (123456789, BYTES_PER_S, "123.5 MB/s"), (32 * GI, BYTES_PER_S, "34.36 GB/s"),
    (120e12, FLOP_PER_S, "120 TFLOP/s"), (1e15, FLOP_PER_S, "1 PFLOP/s"), (5e9, FLOP_PER_S, "5 GFLOP/s"),
    (5e3, FLOP_PER_S, "5000 FLOP/s"),
    (1.5, AREA_MM2, "1.5 mm^2"), (2.0, WATTS, "2 W"), (2.5e9, FLOP, "2.5e+09 FLOP"),
    (1e9, HERTZ, "1 GHz"), (5e5, HERTZ, "500 kHz"), (10.0, HERTZ, "10 Hz"), (2**41, BYTES, "2 TiB"),
])
def test_format_quantity(value, dim, text):
    assert format_quantity(value, dim) == text
