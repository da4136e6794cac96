"""Regenerate the Python code for the contract in proto/ into sgsverify/.

Usage: python tools/gen_proto.py [--check] [--out DIR]

--check regenerates into a temporary folder and fails if anything differs from
the committed code (CI runs it through tests/test_contract.py).
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_DIR = "sgsverify"


def proto_files() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def generate(out: Path) -> None:
    import grpc_tools
    from grpc_tools import protoc  # imported late: only a dev dependency

    include = Path(grpc_tools.__file__).parent / "_proto"
    files = [str(p.relative_to(PROTO_ROOT)) for p in proto_files()]
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for folder in [out / PACKAGE_DIR, *[p for p in (out / PACKAGE_DIR).rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()
    (out / PACKAGE_DIR / "py.typed").touch()


def generated_files(base: Path) -> list[Path]:
    files = (base / PACKAGE_DIR).rglob("*")
    return sorted(p.relative_to(base) for p in files if p.is_file() and "__pycache__" not in p.parts)


def check() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        generate(out)
        fresh = generated_files(out)
        committed = generated_files(ROOT)
        problems = []
        if fresh != committed:
            problems.append(f"file lists differ: generated {fresh}, committed {committed}")
        for rel in fresh:
            if (ROOT / rel).exists() and not filecmp.cmp(out / rel, ROOT / rel, shallow=False):
                problems.append(f"{rel} differs from what proto/ generates")
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print("run: python tools/gen_proto.py", file=sys.stderr)
            return 1
    print("generated code matches proto/")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        return check()
    generate(ROOT)
    print(f"generated {len(generated_files(ROOT))} files under {PACKAGE_DIR}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
