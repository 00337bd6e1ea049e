"""What this CPU offers: its flags from /proc/cpuinfo (Linux), read once."""

from __future__ import annotations

import functools

# Intel AMX with bfloat16 tiles (Sapphire Rapids and later): what oneDNN's AMX kernels need.
AMX_BF16_FLAGS = frozenset({"amx_bf16", "amx_tile"})


def parse_flags(cpuinfo: str) -> frozenset[str]:
    """The first processor's `flags` line of a /proc/cpuinfo text, as a set."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


@functools.cache
def cpu_flags() -> frozenset[str]:
    """This machine's CPU flags (empty off Linux or when /proc/cpuinfo is unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            return parse_flags(f.read())
    except OSError:
        return frozenset()


def has_amx_bf16(flags: frozenset[str] | None = None) -> bool:
    """True when the CPU (default: this one) has AMX tiles with bfloat16 dot products."""
    flags = cpu_flags() if flags is None else flags
    return AMX_BF16_FLAGS <= flags
