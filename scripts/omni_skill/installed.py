"""Find an installed `vllm_omni` without importing it: its version, and its commit when known."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class InstalledEngine:
    location: Path
    version: str
    git_dir: Path | None  # a checkout the package lives in (editable install)
    commit: str | None  # from the checkout, or from pip's direct_url.json


def find_installed() -> InstalledEngine | None:
    spec = importlib.util.find_spec("vllm_omni")
    if spec is None or not spec.submodule_search_locations:
        return None
    location = Path(next(iter(spec.submodule_search_locations))).resolve()
    version, commit = "unknown", None
    try:
        dist = importlib.metadata.distribution("vllm-omni")
        version = dist.version or "unknown"  # a dist-info folder without METADATA has no version
        direct = dist.read_text("direct_url.json")
        if direct:
            commit = json.loads(direct).get("vcs_info", {}).get("commit_id")
    except importlib.metadata.PackageNotFoundError:
        pass
    git_dir = None
    for parent in [location, *location.parents]:
        if (parent / ".git").exists():
            git_dir = parent
            break
    return InstalledEngine(location=location, version=version, git_dir=git_dir, commit=commit)
