"""CPU flag detection (what decides whether the bf16 units are used)."""

from mtrl.kernels import cpu

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse avx512f avx512_bf16 amx_bf16 amx_tile amx_int8
bogomips\t: 4000

processor\t: 1
flags\t\t: fpu sse
"""


def test_parse_flags_reads_the_first_processor():
    flags = cpu.parse_flags(CPUINFO)
    assert {"amx_bf16", "amx_tile", "avx512f"} <= flags and "bogomips" not in flags


def test_amx_needs_both_flags():
    assert cpu.has_amx_bf16(frozenset({"amx_bf16", "amx_tile"}))
    assert not cpu.has_amx_bf16(frozenset({"amx_bf16"}))
    assert not cpu.has_amx_bf16(frozenset({"avx512_bf16", "avx512f"}))
    assert not cpu.has_amx_bf16(cpu.parse_flags("no flags here"))


def test_this_machine_matches_proc_cpuinfo():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    assert cpu.has_amx_bf16() == ({"amx_bf16", "amx_tile"} <= set(cpu.parse_flags(text)))
