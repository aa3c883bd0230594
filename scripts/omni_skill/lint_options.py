"""The arguments of `lint-deploy` (standard library only: parsing needs no other package)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="a deploy YAML to check (or give --serve)")
    parser.add_argument("--serve", metavar="CMD", help="the serve command line as you run it, quoted")
    parser.add_argument(
        "--deploy-config",
        dest="deploy_config",
        metavar="FILE",
        help="the deploy file, found as the engine finds it: relative to --cwd, else a bundled name",
    )
    parser.add_argument(
        "--stage-overrides",
        dest="stage_overrides",
        metavar="JSON",
        help="per-stage overrides JSON (as the engine's flag)",
    )
    parser.add_argument("--pipeline", help="pipeline-registry key (default: inferred from the deploy file)")
    parser.add_argument(
        "--gpus", type=int, help="how many devices are visible (default: CUDA_VISIBLE_DEVICES of --serve)"
    )
    parser.add_argument(
        "--cwd", type=Path, help="the working directory the engine resolves --deploy-config in (default: .)"
    )
