#!/usr/bin/env bash
# Download every vllm-omni release wheel on the package index (no dependencies) into DIR.
set -euo pipefail
dir="${1:?usage: download-wheels.sh DIR}"
mkdir -p "$dir"
versions=$(python3 -m pip index versions vllm-omni 2>/dev/null | sed -n 's/^Available versions: //p' | tr -d ',')
if [ -z "$versions" ]; then
  echo "download-wheels: the package index lists no vllm-omni versions" >&2
  exit 2
fi
for version in $versions; do
  python3 -m pip download --quiet --no-deps --only-binary=:all: "vllm-omni==$version" -d "$dir"
done
ls "$dir"
