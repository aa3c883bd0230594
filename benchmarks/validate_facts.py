"""Cross-check the release facts against an independent extractor over real wheels and the pin.

The skill's extractor (`omni_skill.facts`) walks selected ASTs and, for environment variables,
scans then parses each read. This script re-derives the same facts another way: regular
expressions and indentation over the text for flags, config fields, registries, connectors and
endpoints, and a full AST walk of every module for environment reads. It prints, per engine and
kind, the names and literal defaults on which the two disagree.

    python3 benchmarks/validate_facts.py --wheels /tmp/wheels [--source /tmp/vllm-omni]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from omni_skill.facts import extract  # noqa: E402
from omni_skill.trees import WheelTree  # noqa: E402

FLAG_CALL = re.compile(r"\.add_argument\(\s*((?:[\"'][^\"']+[\"']\s*,\s*)+)", re.S)
DEFAULT = re.compile(r"default\s*=\s*(-?[0-9.]+|None|True|False|\"[^\"]*\"|'[^']*')\s*[,)\n]")


def text_of(files, path):
    try:
        return files.text(path)
    except Exception:
        return None


def flags(files, path):
    text = text_of(files, path)
    found = {}
    if not text:
        return found
    for match in FLAG_CALL.finditer(text):
        names = re.findall(r"[\"']([^\"']+)[\"']", match.group(1))
        longs = [n for n in names if n.startswith("--")]
        if not longs:
            continue
        # the call's text up to its closing parenthesis at depth 0
        depth, end = 0, match.start()
        for i in range(match.start(), len(text)):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        call = text[match.start() : end + 1]
        default = DEFAULT.search(call)
        value = ast.literal_eval(default.group(1)) if default else "?"
        found[longs[0]] = value
    return found


def plain(value):
    """Tuples and lists compare equal (the facts record both as JSON lists)."""
    return [plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def config_fields(files, path):
    text = text_of(files, path)
    found = {}
    if not text:
        return found
    current = None
    for line in text.splitlines():
        head = re.match(r"^class (\w+)\b", line)
        if head:
            current = head.group(1) if head.group(1).endswith("Config") and not head.group(1).startswith("_") else None
            continue
        if line and not line[0].isspace():
            current = None if not line.startswith(("@", "#", ")")) else current
            continue
        field = re.match(r"^    ([A-Za-z]\w*)\s*:\s*(?!ClassVar)[^=]+?(?:=\s*(.+))?$", line)
        if current and field:
            raw = (field.group(2) or "").strip()
            try:
                value = plain(ast.literal_eval(raw)) if raw else "?"
            except (ValueError, SyntaxError):
                value = "?"
            found.setdefault(f"{current}.{field.group(1)}", value)
    return found


def dict_keys(files, path, constant):
    text = text_of(files, path)
    if not text:
        return set()
    block = re.search(rf"^{constant}\b[^=\n]*=\s*\{{\n(.*?)^\}}", text, re.S | re.M)
    if not block:
        return set()
    return set(re.findall(r"^    [\"']([^\"']+)[\"']\s*:", block.group(1), re.M))


def connectors(files, path):
    text = text_of(files, path) or ""
    return set(re.findall(r"register_connector\(\s*[\"']([^\"']+)[\"']", text))


def endpoints(files, paths):
    found = set()
    for path in paths:
        text = text_of(files, path) or ""
        for method, route in re.findall(r"\.(get|post|put|delete|patch|websocket)\(\s*[\"'](/[^\"']*)[\"']", text):
            found.add(f"{'WEBSOCKET' if method == 'websocket' else method.upper()} {route}")
    return found


def env_reads(files, paths):
    found = set()
    for path in paths:
        text = text_of(files, path)
        if not text or ("environ" not in text and "getenv" not in text):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = ast.unparse(node.func)
                if func.endswith(("environ.get", "getenv", "environ.setdefault")):  # any alias of os
                    name = node.args[0].value
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                if ast.unparse(node.value) in ("os.environ", "environ") and isinstance(node.slice, ast.Constant):
                    name = node.slice.value
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and len(node.ops) == 1:
                if isinstance(node.ops[0], ast.In) and ast.unparse(node.comparators[0]) in ("os.environ", "environ"):
                    name = node.left.value
            if isinstance(name, str) and re.match(r"^[A-Z][A-Z0-9_]{1,80}$", name):
                found.add(name)
    return found


def independent(files, paths):
    py = [p for p in paths if p.startswith("vllm_omni/") and p.endswith(".py")]
    out = {
        "flag": flags(files, "vllm_omni/entrypoints/cli/serve.py"),
        "config-field": {
            **config_fields(files, "vllm_omni/config/stage_config.py"),
            **config_fields(files, "vllm_omni/diffusion/data.py"),
        },
        "pipeline": dict_keys(files, "vllm_omni/config/pipeline_registry.py", "OMNI_PIPELINES"),
        "diffusion-model": dict_keys(files, "vllm_omni/diffusion/registry.py", "_DIFFUSION_MODELS"),
        "connector": connectors(files, "vllm_omni/distributed/omni_connectors/factory.py"),
        "endpoint": endpoints(files, [p for p in py if p.startswith("vllm_omni/entrypoints/openai/")]),
        "env": env_reads(files, py),
        "deploy-file": {
            p.rsplit("/", 1)[1]
            for p in paths
            if re.match(r"^vllm_omni/(deploy|model_executor/stage_configs)/[^/_][^/]*\.yaml$", p)
        },
    }
    return out


def compare(name, files, paths):
    mine: dict[str, dict[str, object]] = {}
    for fact in extract(files, paths):
        mine.setdefault(fact.kind, {})[fact.name] = fact.default
    other = independent(files, paths)
    disagreements = 0
    for kind, theirs in other.items():
        ours = mine.get(kind, {})
        names_theirs = set(theirs)
        only_ours, only_theirs = set(ours) - names_theirs, names_theirs - set(ours)
        defaults = []
        if isinstance(theirs, dict):
            for key in set(ours) & names_theirs:
                if theirs[key] != "?" and theirs[key] != ours[key]:
                    defaults.append(f"{key}: {ours[key]!r} vs {theirs[key]!r}")
        problems = len(only_ours) + len(only_theirs) + len(defaults)
        disagreements += problems
        line = f"{name:8} {kind:16} {len(ours):4} ours {len(names_theirs):4} theirs"
        if problems:
            line += f"  only ours {sorted(only_ours)[:5]} only theirs {sorted(only_theirs)[:5]} defaults {defaults[:5]}"
        print(line)
    return disagreements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True)
    parser.add_argument("--source", type=Path)
    parser.add_argument("--revision", default="10906e3a6db947290581b88dc4b6f35bd2a26b41")
    args = parser.parse_args()
    total = 0
    for wheel in sorted(args.wheels.glob("*.whl")):
        tree = WheelTree(wheel)
        total += compare(tree.version, tree, tree.paths())
    if args.source:
        from omni_skill.source import Source

        source = Source(args.source, args.revision)
        total += compare("pin", source, sorted(source.tree))
    print(f"disagreements: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
