"""The kinds of release facts and how names match them (standard library only: argument parsing
and `find` use them without loading pydantic)."""

FACTS_PATH = "evidence/facts.json"
PIN = "pin"

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


def normalise(name: str) -> str:
    """What a user may type for the same thing: `--max-num-seqs`, `max_num_seqs`, `max-num-seqs`."""
    return name.strip().lstrip("-").replace("-", "_").lower()


def matches(fact_name: str, query: str) -> bool:
    """A fact answers a query when the names agree, or the query is the field/keyword part."""
    wanted = normalise(query)
    candidates = {normalise(fact_name)}
    for separator in (".", ":"):
        if separator in fact_name:
            candidates.add(normalise(fact_name.rsplit(separator, 1)[1]))
    if fact_name.startswith(("GET ", "POST ", "PUT ", "DELETE ", "PATCH ", "WEBSOCKET ")):
        candidates.add(normalise(fact_name.split(" ", 1)[1]))
    return wanted in candidates
