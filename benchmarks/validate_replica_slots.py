#!/usr/bin/env python3
"""lint-deploy's `one_device_slot` (a stage with `num_replicas` > 1 and no `devices` gets one
device slot, so replica 1 indexes past it) against an independent oracle: the engine's own
`split_devices_for_replicas`, compiled alone and called as `split(None, 2, 1, 0)` with only a few
builtins; the flag must be true exactly when that call returns fewer than 2 slots.

    python3 benchmarks/validate_replica_slots.py --wheels DIR [--source /path/to/vllm-omni]

This benchmark runs that one pure function from the release wheels you downloaded and the pinned
engine; the skill itself never runs engine code. Exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.lintmodels import load  # noqa: E402

PATH = "vllm_omni/engine/stage_init_utils.py"
SAFE = {
    "len": len,
    "range": range,
    "max": max,
    "min": min,
    "all": all,
    "any": any,
    "int": int,
    "str": str,
    "sorted": sorted,
    "ValueError": ValueError,
    "list": list,
    "set": set,
    "enumerate": enumerate,
}


class _Quiet:
    def __getattr__(self, _name: str):
        return lambda *a, **k: None


def slots(text: str) -> int | None:
    """Slots the engine's split gives a stage without devices and two replicas; None without it."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == "split_devices_for_replicas":
            node.decorator_list = []
            namespace: dict = {"__builtins__": SAFE, "logger": _Quiet()}
            exec(compile(ast.Module(body=[node], type_ignores=[]), PATH, "exec"), namespace)  # noqa: S102
            return len(namespace[node.name](None, 2, 1, 0))
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True)
    parser.add_argument("--source", type=Path)
    args = parser.parse_args()
    texts: dict[str, str] = {}
    for wheel in sorted(args.wheels.glob("vllm_omni-*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            texts[wheel.name.split("-")[1]] = zf.read(PATH).decode("utf-8") if PATH in zf.namelist() else ""
    if args.source:
        import json
        import subprocess

        revision = json.loads((ROOT / "provenance.json").read_text(encoding="utf-8"))["revision"]
        texts["pin"] = subprocess.run(
            ["git", "--git-dir", str(args.source), "show", f"{revision}:{PATH}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    disagreements = 0
    for engine, text in texts.items():
        count = slots(text) if text else None
        model, _spans, _ = load(ROOT, engine)
        oracle = count is not None and count < 2
        ok = oracle == model.one_device_slot
        disagreements += not ok
        print(
            f"{engine:8} split(None, 2 replicas) -> {count} slot(s); lint one_device_slot={model.one_device_slot}"
            f"{'' if ok else '  DISAGREES'}"
        )
    print(f"disagreements: {disagreements} of {len(texts)} engines")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
