"""What the NVIDIA compilers made of the SGEMM kernels: finds the cubins
(ELF, e_machine EM_CUDA) that the Vulkan driver left in its pipeline caches
(the files under the directories given with --scan: ephc's own pipeline
cache and the driver's shader disk cache), and takes the executables given
with --exe (cuda_bench); for every function whose name matches --match it
prints the registers, shared memory and an opcode histogram (summary), and
writes the SASS to --sass. Needs cuobjdump (the CUDA toolkit).

  python3 bench/device/sass_report.py --scan /tmp/pcache /tmp/nvcache --exe /tmp/cuda_bench \\
      --match sgemm --sass $OUT/sass_sgemm.txt
"""
import argparse
import collections
import os
import re
import struct
import subprocess
import sys

EM_CUDA = 190


def elf_blobs(data):
    """Every ELF64 image inside data whose machine is EM_CUDA."""
    start = 0
    while True:
        i = data.find(b"\x7fELF", start)
        if i < 0:
            return
        start = i + 4
        hdr = data[i:i + 64]
        if len(hdr) < 64 or hdr[4] != 2:  # ELFCLASS64
            continue
        machine = struct.unpack_from("<H", hdr, 18)[0]
        if machine != EM_CUDA:
            continue
        phoff, shoff = struct.unpack_from("<QQ", hdr, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", hdr, 54)
        # The image ends where the last of its headers or sections ends.
        size = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
        if not 64 <= size <= len(data) - i:
            continue
        for k in range(shnum):
            sh = data[i + shoff + k * shentsize:i + shoff + (k + 1) * shentsize]
            if len(sh) < 40:
                break
            sh_type = struct.unpack_from("<I", sh, 4)[0]
            sh_offset, sh_size = struct.unpack_from("<QQ", sh, 24)
            if sh_type != 8:  # SHT_NOBITS occupies nothing
                size = max(size, sh_offset + sh_size)
        if size <= len(data) - i:
            yield data[i:i + size]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.stdout + r.stderr


def functions(sass):
    """(name, [instruction lines]) for each function in cuobjdump -sass output."""
    name, lines = None, []
    for line in sass.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            if name:
                yield name, lines
            name, lines = m.group(1), []
        elif name and re.match(r"\s*/\*[0-9a-f]{4,}\*/\s", line):
            lines.append(line)
    if name:
        yield name, lines


def opcode(line):
    text = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", line)
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    op = text.split(" ")[0].rstrip(";")
    base = op.split(".")[0]
    # Keep the width and cache modifiers of memory operations.
    return op if base in ("LDS", "LDG", "STG", "STS", "LDC", "LD", "ST", "MEMBAR", "BAR", "FENCE") else base


def report(label, path, match, sass_out):
    usage = run(["cuobjdump", "-res-usage", path])
    sass = run(["cuobjdump", "-sass", path])
    for name, lines in functions(sass):
        if not re.search(match, name):
            continue
        res = ""
        for i, u in enumerate(usage.splitlines()):
            if name in u and i + 1 < len(usage.splitlines()):
                res = usage.splitlines()[i + 1].strip()
        hist = collections.Counter(opcode(l) for l in lines)
        print(f"== {label}: {name}\n   {res}\n   {len(lines)} instructions: " +
              ", ".join(f"{op} {n}" for op, n in hist.most_common(24)))
        sass_out.write(f"==== {label}: {name} ({res})\n" + "\n".join(lines) + "\n\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scan", nargs="*", default=[])
    ap.add_argument("--exe", nargs="*", default=[])
    ap.add_argument("--match", default="sgemm")
    ap.add_argument("--sass", required=True)
    args = ap.parse_args()
    with open(args.sass, "w") as out:
        found = 0
        for d in args.scan:
            for root, _, files in os.walk(d):
                for f in sorted(files):
                    p = os.path.join(root, f)
                    with open(p, "rb") as fh:
                        data = fh.read()
                    for k, blob in enumerate(elf_blobs(data)):
                        cub = f"/tmp/sass_{found}.cubin"
                        with open(cub, "wb") as fh:
                            fh.write(blob)
                        found += 1
                        print(f"cubin {cub}: {len(blob)} bytes at #{k} in {p}")
                        report(f"vulkan ({os.path.basename(p)})", cub, ".", out)
        if not found:
            print("no CUDA ELF image in " + ", ".join(args.scan) + " (sizes: " + ", ".join(
                f"{os.path.join(r, f)} {os.path.getsize(os.path.join(r, f))}"
                for d in args.scan for r, _, fs in os.walk(d) for f in fs) + ")")
        for exe in args.exe:
            report(f"cuda ({os.path.basename(exe)})", exe, args.match, out)


if __name__ == "__main__":
    sys.exit(main())
