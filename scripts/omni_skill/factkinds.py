"""The kinds of release facts (standard library only: argument parsing lists them)."""

KINDS = {
    "flag": "a flag the omni serve entry point adds (vllm serve … --omni / vllm-omni serve)",
    "cli-flag": "a flag of another omni command line (bench, the omni CLI, engine arguments)",
    "config-field": "a field of a deploy, stage, pipeline or diffusion config class (Class.field)",
    "reserved-key": "a stage key the deploy loader keeps for itself",
    "pipeline-wide-field": "an engine field the deploy file sets once for every stage",
    "deep-merge-key": "a deploy key whose mappings an overlay merges instead of replacing",
    "env": "an environment variable the package reads (default: the literal it falls back to)",
    "pipeline": "a key of the pipeline registry",
    "diffusion-model": "an architecture of the diffusion model registry",
    "deploy-file": "a bundled deploy (or stage-config) YAML file",
    "endpoint": "an HTTP route of the OpenAI-compatible server (METHOD /path)",
    "cache-backend": "a value the diffusion cache selector accepts for cache_backend",
    "connector": "a registered stage connector name",
    "attention-backend": "a member of the diffusion attention backend enum",
    "quantization-method": "a quantization method name the omni quantization factory adds",
    "entry-kwarg": "a keyword of a public Python entry point (Class.method:keyword)",
}
