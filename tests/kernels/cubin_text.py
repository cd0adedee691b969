"""Each kernel's machine code in a cubin, without a disassembler: the size of its .text section in
SASS instructions (16 bytes each on sm_70 and later), a hash of the bytes, and optionally a count
of each opcode (the low 12 bits of an instruction; on sm_90 0x981 is LDG, 0x986 STG, 0x387 STL,
0x983 LDL, 0x947 BRA, 0x918 NOP). Two kernels with the same hash run the same instructions.

    nvcc -O3 -std=c++17 -arch=sm_90 -cubin -o probe.cubin bench/l2_probe.cu
    python3 bench/cubin_text.py probe.cubin [--filter=TEXT] [--opcodes]

Prints one line per kernel: instructions, sha1 (12 digits), mangled name[, opcode counts].
"""
import argparse
import collections
import hashlib
import struct


def text_sections(path):
    """Yields (kernel name, .text bytes) of an ELF64 cubin."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not an ELF64 file (a cubin from nvcc -cubin)")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    for name_offset, _, _, _, offset, size, *_ in headers:
        name = data[names_at + name_offset : data.index(b"\0", names_at + name_offset)].decode()
        if name.startswith(".text."):
            yield name[len(".text."):], data[offset : offset + size]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cubin")
    parser.add_argument("--filter", default="", help="only kernels whose name contains this")
    parser.add_argument("--opcodes", action="store_true", help="append opcode counts")
    args = parser.parse_args()
    for name, code in sorted(text_sections(args.cubin)):
        if args.filter not in name:
            continue
        line = f"{len(code) // 16} {hashlib.sha1(code).hexdigest()[:12]} {name}"
        if args.opcodes:
            ops = collections.Counter(
                struct.unpack_from("<Q", code, i)[0] & 0xFFF for i in range(0, len(code), 16))
            line += " " + ",".join(f"{op:#05x}:{n}" for op, n in sorted(ops.items()))
        print(line)


if __name__ == "__main__":
    main()
