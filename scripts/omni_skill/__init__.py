"""Helper scripts of the vllm-omni skill: citations, evidence index, checks, bumps."""

__version__ = "1.0.0"
