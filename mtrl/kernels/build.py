"""Build mtrl's CPU kernels: `python -m mtrl.kernels.build [--strict]`.

Compiles onednn_matmul.cc (bf16 matmuls on oneDNN) and decode_attention.cc (fused
decode attention, OpenMP) with g++ against jaxlib's XLA FFI headers
(`jax.ffi.include_dir()`) and oneDNN (the `onednn-cpu-gomp` and
`onednn-devel-cpu-gomp` wheels, which `pip install -e ".[amx]"` brings into the
environment's lib/ and include/; or --onednn-root DIR) into libmtrl_onednn.so beside
the source, with the source's sha256 in libmtrl_onednn.so.sha256 so that a stale
library is refused at load. Without g++ or oneDNN it prints why and exits 0 (the
bf16 matmuls and decode attention then stay on XLA); --strict makes that an error.
The library is built for the CPU it is built on (-march=native): build it where it runs.
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = (HERE / "onednn_matmul.cc", HERE / "decode_attention.cc")
LIBRARY = HERE / "libmtrl_onednn.so"
DIGEST = HERE / "libmtrl_onednn.so.sha256"
ONEDNN_LIB = "libdnnl.so.3"


def source_digest() -> str:
    digest = hashlib.sha256()
    for source in SOURCES:
        digest.update(source.read_bytes())
    return digest.hexdigest()


def find_onednn(root: str = "") -> tuple[pathlib.Path, pathlib.Path]:
    """(include dir, lib dir) of a oneDNN with C++ headers and libdnnl.so.3, or raise."""
    roots = [pathlib.Path(root)] if root else [pathlib.Path(sys.prefix),
                                                pathlib.Path(sys.base_prefix)]
    for r in roots:
        include, lib = r / "include", r / "lib"
        if (include / "oneapi/dnnl/dnnl.hpp").exists() and (lib / ONEDNN_LIB).exists():
            return include, lib
    raise FileNotFoundError(
        f"no oneDNN (include/oneapi/dnnl/dnnl.hpp and lib/{ONEDNN_LIB}) under "
        f"{', '.join(map(str, roots))}; pip install -e \".[amx]\" brings it")


def compile_command(include: pathlib.Path, lib: pathlib.Path, out: pathlib.Path) -> list[str]:
    import jax.ffi
    # Reassociation lets the attention's dot products and sums reduce in vector
    # registers (not lane by lane); infinities and NaNs keep IEEE semantics.
    math = ["-fassociative-math", "-fno-signed-zeros", "-fno-trapping-math"]
    return ["g++", "-O3", "-march=native", "-fopenmp", *math, "-std=c++17", "-shared", "-fPIC",
            "-w",
            f"-I{include}", f"-I{jax.ffi.include_dir()}", *map(str, SOURCES),
            f"-L{lib}", f"-l:{ONEDNN_LIB}", f"-Wl,-rpath,{lib}", "-o", str(out)]


def build(onednn_root: str = "") -> pathlib.Path:
    """Compile the kernel; raises (FileNotFoundError, CalledProcessError) when it cannot."""
    if shutil.which("g++") is None:
        raise FileNotFoundError("no g++ on PATH")
    include, lib = find_onednn(onednn_root)
    partial = LIBRARY.with_suffix(".so.partial")
    subprocess.run(compile_command(include, lib, partial), check=True)
    partial.replace(LIBRARY)
    DIGEST.write_text(source_digest() + "\n")
    return LIBRARY


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onednn-root", default="", help="a oneDNN install (include/, lib/)")
    parser.add_argument("--strict", action="store_true", help="fail when it cannot build")
    args = parser.parse_args(argv)
    try:
        path = build(args.onednn_root)
    except (FileNotFoundError, subprocess.CalledProcessError) as error:
        print(f"mtrl.kernels.build: not built ({error}); bf16 matmuls stay on XLA")
        return 1 if args.strict else 0
    print(f"mtrl.kernels.build: built {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
