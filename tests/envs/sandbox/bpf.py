"""A classic-BPF interpreter for seccomp filters: what the kernel would answer to a
system call (number, arguments) under seccomp.py's bytes, without making it.

The kernel's rules: the program reads `struct seccomp_data` (nr, arch, ip, six
64-bit args) as 32-bit little-endian words, and its return value's high half is
the action (errno in the low half for SECCOMP_RET_ERRNO)."""

from __future__ import annotations

import struct

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_I386 = 0x40000003
ALLOW, LOG, ERRNO, KILL_PROCESS = 0x7FFF0000, 0x7FFC0000, 0x00050000, 0x80000000
_ACTION = 0xFFFF0000


def instructions(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack_from("<HBBI", program, offset) for offset in range(0, len(program), 8)]


def run(program: bytes, nr: int, args=(0,) * 6, arch: int = AUDIT_ARCH_X86_64) -> int:
    """The filter's 32-bit return value for this call."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(int(a) & (1 << 64) - 1 for a in args))
    code = instructions(program)
    a = x = pc = 0
    memory = [0] * 16
    for _ in range(len(code) + 1):  # classic BPF only jumps forward
        op, jt, jf, k = code[pc]
        pc += 1
        kind = op & 0x07
        if kind == 0x00:  # LD
            mode = op & 0xE0
            a = (struct.unpack_from("<I", data, k)[0] if mode == 0x20 else
                 memory[k] if mode == 0x60 else k if mode == 0x00 else _unknown(op))
        elif kind == 0x01:  # LDX
            x = memory[k] if op & 0xE0 == 0x60 else k
        elif kind == 0x02:  # ST
            memory[k] = a
        elif kind == 0x03:  # STX
            memory[k] = x
        elif kind == 0x04:  # ALU
            operand = x if op & 0x08 else k
            a = _alu(op & 0xF0, a, operand) & 0xFFFFFFFF
        elif kind == 0x05:  # JMP
            operand = x if op & 0x08 else k
            test = op & 0xF0
            if test == 0x00:
                pc += k
                continue
            taken = {0x10: a == operand, 0x20: a > operand, 0x30: a >= operand,
                     0x40: bool(a & operand)}[test]
            pc += jt if taken else jf
        elif kind == 0x06:  # RET
            return a if op & 0x18 == 0x10 else k
        elif kind == 0x07:  # MISC
            if op & 0xF8 == 0x00:
                x = a
            else:
                a = x
    raise ValueError("the filter ran off its end")


def action(value: int) -> int:
    return value & _ACTION


def errno_of(value: int) -> int | None:
    return value & 0xFFFF if action(value) == ERRNO else None


def _alu(operation: int, a: int, operand: int) -> int:
    return {0x00: lambda: a + operand, 0x10: lambda: a - operand, 0x20: lambda: a * operand,
            0x40: lambda: a | operand, 0x50: lambda: a & operand,
            0x60: lambda: a << operand, 0x70: lambda: a >> operand, 0x80: lambda: -a,
            0xA0: lambda: a ^ operand}[operation]()


def _unknown(op: int) -> int:
    raise ValueError(f"unsupported BPF load 0x{op:x}")
