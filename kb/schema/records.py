"""The record kinds of the knowledge base.

Authored fields are plain model fields; derived figures (parameter counts, KV bytes, ridge
points) are `computed_field`s, so they appear in dumps and tables but can never be typed
into a YAML file (`extra="forbid"` rejects them).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    computed_field,
    model_validator,
)
from pydantic_core import ErrorDetails
from rlmguide.kb.schema.common import (
    Date,
    NonNegativeInt,
    Positive,
    PositiveInt,
    Slug,
    Strict,
    Support,
    Text,
    Url,
)
from rlmguide.kb.schema.scenario import Currency, Execution, Placement, Scenario
from rlmguide.kb.schema.specs import (
    AcceleratorFigures,
    Architecture,
    FullAttentionShape,
    LayerKind,
    LinearAttention,
    MixtureOfExperts,
    MultiHeadLatent,
    SparseAttention,
    VisionTower,
)

Commit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]
"""A git commit, abbreviated to at least 7 hex digits."""


class Record(Strict):
    """Every record has an id (its file name) and cites its sources by id."""

    kind: ClassVar[str]
    id: Slug

    def cited_sources(self) -> list[str]:
        """The sources this record cites itself (a framework's claims carry their own)."""
        return list(getattr(self, "sources", []))


class Cited(Strict):
    """The sources a record rests on, and where in them."""

    sources: Annotated[list[Slug], Field(min_length=1)]
    locators: dict[Slug, Text] = {}
    """Where in a cited source the record rests, by source id: a section, table or page as the
    source numbers it (`{arxiv-2608.27046: "§4.7, Table 9"}`). Optional for each source; the
    `citations` table and the site show it beside the source."""

    @model_validator(mode="after")
    def _locators_name_cited_sources(self) -> Cited:
        stray = sorted(set(self.locators) - set(self.sources))
        if stray:
            raise ValueError(f"locators name sources not in sources: {', '.join(stray)}")
        return self


class Source(Record):
    """A paper, repository, documentation page, model configuration, datasheet, blog post or
    issue thread (a GitHub issue or pull request, for a measurement someone posted)."""

    kind: ClassVar[str] = "source"
    type: Literal[
        "paper", "repository", "documentation", "model-config", "datasheet", "blog", "issue"
    ]
    title: Text
    authors: list[Text] = []
    year: Annotated[int, Field(ge=1990, le=2100)] | None = None
    venue: Text | None = None
    url: Url
    accessed: Date | None = None

    def cited_sources(self) -> list[str]:
        return []


class Technique(Record, Cited):
    """A node of the taxonomy of parallelism, placement, execution and rollout techniques."""

    kind: ClassVar[str] = "technique"
    name: Text
    parent: Slug | None = None
    scope: Literal[
        "intra-model", "inter-model", "execution", "rollout", "training", "weight-sync", "memory"
    ]
    aliases: list[Text] = []
    description: Text
    splits: Text | None = None
    work_effect: Text | None = None
    depth_effect: Text | None = None
    memory_effect: Text | None = None
    communication_effect: Text | None = None
    tradeoffs: Text | None = None


Intra = Literal["tp", "pp", "sp", "cp", "ep"]
ModelRole = Literal["actor", "critic", "reward", "reference"]


class SpecStep(Strict):
    """One model invocation of the survey's parallelism-focused specifications (§5,
    Algorithms 1-4) with its annotations."""

    algorithm: Annotated[int, Field(ge=1, le=4)]
    """The survey's algorithm the step is a line of: 1 is the rollout generation that PPO and
    GRPO share, 2 PPO, 3 GRPO, 4 DPO."""
    stage: Literal["generation", "assessment", "training"]
    model: ModelRole
    step: Text
    """What the invocation computes, in words."""
    dp_loops: list[Text] = []
    """The [DP] loops around it, outermost first (prompts, candidates, minibatches, pairs):
    independent sample-level work."""
    concurrent_with: list[ModelRole] = []
    """The other models of its [inter-model concurrency] fork-join region: no data
    dependency, so they run at once when placed on separate device groups."""
    intra: list[Intra] = []
    """The intra-model tags of the line ([TP, PP, SP, CP, EP])."""
    sequential: Text | None = None
    """A chain no parallelism removes (the token-by-token decode loop)."""


class Algorithm(Record, Cited):
    """An RL algorithm for LLM post-training and the models it needs."""

    kind: ClassVar[str] = "algorithm"
    name: Text
    variant_of: Slug | None = None
    needs_critic: bool
    needs_reference: bool
    reward: Literal["model", "verifier", "either", "none"]
    """`none`: nobody scores responses (offline preference methods whose labels are human or
    AI preferences in the dataset). An offline method with `model` had its dataset labelled
    by a reward model before training (RPO); nothing scores in its loop either."""
    grouped: bool
    typical_samples_per_prompt: PositiveInt | None = None
    extra_generations_per_prompt: NonNegativeInt = 0
    objectives: PositiveInt = 1
    """Objectives scored and valued apart, each with a scoring model of its own (where the
    reward is a model) and a value model of its own (where `needs_critic`): Safe-RLHF's
    reward and cost give 2."""
    value_rollouts_per_state: PositiveInt | None = None
    """Completions the algorithm decodes from each intermediate state of a response to
    estimate its value by Monte Carlo (VinePPO), the default of `workload.search.branching`;
    unset, the algorithm searches nothing."""
    advantage: Text
    kl: Text
    kl_placement: Literal["reward", "loss"] | None = None
    """Where the KL penalty toward the reference goes, as the algorithm's source states it:
    `reward`, subtracted from the reward before the advantages (InstructGPT's PPO, RLOO);
    `loss`, a term of the policy loss (GRPO). Unset: no KL to a reference, or the sources
    read do not say. Export writes it in the framework's key for that side."""
    kl_estimator: Literal["k1", "k2", "k3"] | None = None
    """The estimator of that KL (Schulman's k1 = log r, k2 = (log r)^2 / 2, k3 = r - 1 - log r
    for r the reference-to-policy ratio) where the algorithm's paper or reference
    implementation fixes one: GRPO's k3 (DeepSeekMath eq. 4), InstructGPT's k1 in the reward.
    Unset: the sources read fix none, and a launch keeps the framework's default."""
    clip_low: Positive | None = None
    """The ratio clip below 1 (1 - clip_low) the algorithm's source sets where it departs
    from PPO's 0.2 that frameworks default to (GSPO's sequence-level ratio: 3e-4)."""
    clip_high: Positive | None = None
    """The ratio clip above 1 (1 + clip_high), likewise."""
    off_policy: Text | None = None
    max_staleness: NonNegativeInt | None = None
    """Policy versions of lag the algorithm is designed to tolerate, where its source says."""
    online: bool = True
    """False for offline methods (DPO and its family) that train on a fixed dataset and never
    sample: no generation stage, no rollout to lay out and no weight sync; an iteration is
    the reference's forward over the batch (if any) and the policy's forward and backward."""
    specification: list[SpecStep] = []
    """The survey's §5 specification of the algorithm (Algorithms 1-4), step by step, with
    its parallelism annotations; empty where the survey gives none."""
    description: Text

    @model_validator(mode="after")
    def _offline_has_no_generation(self) -> Algorithm:
        if not self.online and any(s.stage == "generation" for s in self.specification):
            raise ValueError("an offline algorithm has no generation stage in its specification")
        if self.reward == "none" and self.online:
            raise ValueError("an online algorithm scores its samples: reward cannot be none")
        if self.kl_placement is not None and not self.needs_reference:
            raise ValueError("kl_placement is for an algorithm with a reference (needs_reference)")
        if self.kl_estimator is not None and not self.needs_reference:
            raise ValueError("kl_estimator is for an algorithm with a reference (needs_reference)")
        return self


class Component(Record, Cited):
    """A building block frameworks use: a training backend, rollout engine or orchestrator."""

    kind: ClassVar[str] = "component"
    name: Text
    role: Literal[
        "training-backend", "rollout-engine", "orchestration", "communication", "model-library"
    ]
    """`model-library`: model definitions and checkpoints other components wrap (Hugging Face
    Transformers), not a distributed trainer of its own."""
    extends: Slug | None = None
    """The component this one is a layer over (MindSpeed patches Megatron-LM): what the other's
    code refuses, this one refuses too."""
    url: Url | None = None
    description: Text


class Dated(Strict):
    """Two dates of every fact read from a source: when it was read and how old the
    evidence is. They differ: a snapshot read today may be a year old."""

    checked: Date
    """The day someone read the evidence (the field was `verified` before 2026-12)."""
    as_of: Date | None
    """The date of the evidence itself: the commit date of the pinned version for code or docs
    read from a repository, the release or publication date of a docs or paper version; null
    when it is not known. Required (even as null) so that no record leaves it out by accident."""
    as_of_unknown: Text | None = None
    """Why as_of is null: what the evidence is and why its date could not be read (a commit of
    a repository too large to fetch, a journal issue dated by volume and number)."""

    @model_validator(mode="after")
    def _evidence_before_reading(self) -> Dated:
        if self.as_of is not None and self.as_of > self.checked:
            raise ValueError(f"as_of {self.as_of} is after checked {self.checked}")
        if self.as_of is not None and self.as_of_unknown is not None:
            raise ValueError("as_of_unknown is for a null as_of")
        return self


class ClaimPart(Strict):
    """What a `partial` claim's framework has of the feature, and whether that is what the
    planner costs when a plan uses the feature."""

    exists: Text
    """The part the framework has (in its code, or in the paper for a system without code)."""
    costed: bool
    """True when the planner's cost of the feature is that part alone, so a plan that uses
    the feature is costed as the framework runs it; false when the planner's cost assumes
    more than exists, so the claim lets the framework run no plan that uses the feature."""


class Claim(Dated):
    """One cited fact: how far a framework supports a feature, read from a pinned version."""

    feature: Slug
    support: Support
    note: Text | None = None
    source: Slug
    version: Text | None = None
    """The pinned version read: a commit, a `git describe` name, a release tag, a paper
    version. A repository or documentation source needs one that does not float (not `main`)."""
    part: ClaimPart | None = None
    """For a `partial` claim: the part that exists. A partial claim on a placement, execution
    mode, Table 9 configuration or algorithm lets the framework run a plan that uses it only
    with a part the planner costs as is (`costed: true`)."""

    @model_validator(mode="after")
    def _part_of_partial(self) -> Claim:
        if self.part is not None and self.support != "partial":
            raise ValueError(
                f"part: only a partial claim names its part (this one is {self.support})"
            )
        return self

    @model_validator(mode="after")
    def _undated_says_why(self) -> Claim:
        if self.as_of is None and self.as_of_unknown is None:
            raise ValueError("as_of is null: say in as_of_unknown why the evidence has no date")
        return self


AvailabilityStatus = Literal["released", "partial-code", "paper-only", "closed"]
"""What a user can run of a framework: its end-to-end training code public at a pinned
version; some parts public (a solver, a rollout engine, a recipe); a paper and no code; an
in-house system its owner describes but does not publish."""


class Availability(Dated):
    """What a user can download and run of a framework, and where that is shown."""

    status: AvailabilityStatus
    part: Text | None = None
    """For `partial-code`: which part is public (and what is not)."""
    note: Text | None = None
    source: Slug
    """Where it is shown: the repository (its release) for released code, the public part's
    repository, or the paper or post that describes the system."""
    version: Text | None = None
    """For `released`: the release or commit whose code runs end to end."""

    @model_validator(mode="after")
    def _status_facts(self) -> Availability:
        if self.status == "released" and self.version is None:
            raise ValueError("released: name the release or commit (version) that runs")
        if self.status == "partial-code" and self.part is None:
            raise ValueError("partial-code: say which part is public (part)")
        if self.status != "partial-code" and self.part is not None:
            raise ValueError(f"part: only partial-code availability names a part ({self.status})")
        if self.as_of is None and self.as_of_unknown is None:
            raise ValueError("as_of is null: say in as_of_unknown why the evidence has no date")
        return self


class Release(Strict):
    """A framework's newest release known to the knowledge base, with where it is listed."""

    version: Text
    """The release's tag or version name."""
    date: Date
    """The release date: the tag's date where the release is read from repository tags."""
    source: Slug
    """Where the release is listed (the repository source record, for its tags)."""


DefaultValue = TypeVar("DefaultValue")
"""What a default holds: a number (a size, a threshold) or a yes/no (a rule that applies)."""


class FrameworkDefault(Strict, Generic[DefaultValue]):
    """A value the framework uses when a launch does not set it: read where its code sets it
    (file and commit) or where its documentation of a release says it (version)."""

    value: DefaultValue
    source: Slug
    file: Text | None = None
    lines: Text | None = None
    commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")] | None = None
    version: Text | None = None
    """The documented release, where the evidence is a documentation page."""
    checked: Date
    as_of: Date | None
    """The commit's or the release's date."""

    @model_validator(mode="after")
    def _pinned(self) -> FrameworkDefault[DefaultValue]:
        if (self.commit is None) == (self.version is None):
            raise ValueError("a default pins its evidence with a commit (code) or a version (docs)")
        if self.commit is not None and self.file is None:
            raise ValueError("a default read in code names its file")
        return self


class Framework(Record, Cited):
    """An RL-for-LLM system: an open-source library or a system described in a paper."""

    kind: ClassVar[str] = "framework"
    name: Text
    type: Literal["library", "system"]
    organisation: Text | None = None
    repository: Url | None = None
    paper: Slug | None = None
    licence: Text | None = None
    first_release: Text | None = None
    latest_release: Release | None = None
    """The newest release known, read from the repository's tags or release page: a claim
    whose evidence is more than a year older than it is stale."""
    default_rollout_tp: FrameworkDefault[PositiveInt] | None = None
    """The rollout engine's tensor-parallel size when a launch sets none: when the search runs
    for this framework alone, plans that tie break toward an engine of this size; for a
    framework that records none (or is held out), toward the median of the other released
    frameworks' values."""
    model_parallel_above_params_b: FrameworkDefault[PositiveInt] | None = None
    """Above this many billion parameters the framework directs training to its model-parallel
    backend (Megatron); at or below, its default backend shards data-parallel (FSDP): when the
    search runs for this framework alone, plans that tie break toward that family (the median
    of the other released frameworks' thresholds, for one that records none)."""
    moe_model_parallel: FrameworkDefault[bool] | None = None
    """Whether the framework directs a mixture-of-experts model to its model-parallel backend
    (Megatron, with expert parallelism) whatever its size: where known (the median, that is the
    majority, ties to no, of the other released frameworks' statements, for one that records
    none), it decides the family a mixture of experts' ties break toward, in place of
    `model_parallel_above_params_b`."""
    survey_class: (
        Literal["library-centric", "orchestrator-centric", "scheduling-centric"] | None
    ) = None
    """The class the survey (arXiv:2608.27046, §6.2) puts the framework in; a framework that
    sets it cites the survey with its locator."""
    availability: Availability
    """What a user can run: only a `released` framework makes a plan launchable; the others
    are knowledge and what-ifs."""
    description: Text
    claims: list[Claim] = []

    @property
    def released(self) -> bool:
        return self.availability.status == "released"

    def cited_sources(self) -> list[str]:
        extra = [self.paper] if self.paper else []
        extra.append(self.availability.source)
        if self.latest_release:
            extra.append(self.latest_release.source)
        for default in (
            self.default_rollout_tp,
            self.model_parallel_above_params_b,
            self.moe_model_parallel,
        ):
            if default:
                extra.append(default.source)
        return [*self.sources, *extra]

    @model_validator(mode="after")
    def _one_claim_per_feature(self) -> Framework:
        seen: set[str] = set()
        for claim in self.claims:
            if claim.feature in seen:
                raise ValueError(f"feature {claim.feature!r} is claimed twice")
            seen.add(claim.feature)
        return self


class Price(Dated):
    """A public on-demand list price of one GPU-hour, as a provider publishes it: the default
    price of a run on this part (a scenario's cluster.price_per_gpu_hour overrides it)."""

    per_gpu_hour: Positive
    """Price of one GPU for one hour, before tax."""
    currency: Currency
    """ISO 4217 code of the price's currency."""
    offering: Text
    """Which provider, instance and terms (on-demand, region) the price is for."""
    source: Slug
    """The source record the price is read from."""


class Accelerator(Record, Cited, AcceleratorFigures):
    """A GPU or accelerator with its dense datasheet figures (no sparsity)."""

    kind: ClassVar[str] = "accelerator"
    name: Text
    vendor: Text
    released: Annotated[int, Field(ge=2010, le=2100)] | None = None
    notes: Text | None = None
    price: Price | None = None
    """Null where no public on-demand price is published (parts sold only in some markets,
    such as H20 and H800): a price is never estimated."""
    visible_memory_source: Slug | None = None
    """The source record where `visible_memory_mib` is printed for this very product (an
    issue or file showing nvidia-smi's or rocm-smi's output); given exactly when it is."""
    compute_capability: Annotated[float, Field(ge=1, lt=100)] | None = None
    """CUDA compute capability as major.minor (8.0 A100, 9.0 Hopper, 10.0 B200), which
    kernels select on (vLLM's fused-MoE backend, FlashInfer); null for a part that runs no
    CUDA (AMD, Gaudi, TPU, Trainium). Cited by the record's sources (NVIDIA's CUDA GPUs
    table)."""

    @model_validator(mode="after")
    def _visible_memory_cited(self) -> Accelerator:
        if (self.visible_memory_mib is None) != (self.visible_memory_source is None):
            raise ValueError(
                "visible_memory_mib and visible_memory_source go together: a driver's figure "
                "is recorded with the source that prints it"
            )
        return self

    def cited_sources(self) -> list[str]:
        return [
            *self.sources,
            *([self.price.source] if self.price else []),
            *([self.visible_memory_source] if self.visible_memory_source else []),
        ]


ARCHITECTURE_FIELDS = tuple(Architecture.model_fields)


def _problem(error: ErrorDetails) -> str:
    """One architecture error as the validator words it: `field: message`, or the message."""
    message = error["msg"].removeprefix("Value error, ")
    where = ".".join(map(str, error["loc"]))
    return f"{where}: {message}" if where else message


class Model(Record, Cited):
    """A language model: its architecture numbers copied from its published configuration, or,
    for a model whose configuration is not published (o1, GPT-5, Claude 4), what its makers
    publish about it. Only a model with an architecture can be costed."""

    kind: ClassVar[str] = "model"
    name: Text
    family: Text
    aliases: list[Text] = []
    """Other names launches use for this architecture: Hugging Face ids (`Qwen/Qwen2-7B-Instruct`),
    variants of the same shapes (-Instruct, -Base, -Thinking, fine-tunes such as Tulu 3) and local
    folder names. `review` matches a model path by these; one alias names one record."""
    organisation: Text | None = None
    released: Text | None = None
    access: Literal["open", "closed", "mixed"] = "open"
    """Whether the weights are published: `mixed` for a family with open and closed members."""
    scale: Text | None = None
    """The scale as published, for a model without an architecture ("671B MoE, about 37B
    active", "undisclosed")."""
    active_params_b: Positive | None = None
    """Parameters active per token in billions as published, for a model without an
    architecture (derived from the architecture otherwise: `params_active`)."""
    post_training: Text | None = None
    """The post-training signal as published ("PPO-like: SFT, reward model, PPO")."""
    fp8_checkpoint: Text | None = None
    """The Hugging Face id of the makers' own block-quantised FP8 weights of this model (an FP8
    rollout loads them: slime's --hf-checkpoint), shown by a model-config source with its
    quantization_config; the model's own id where it is published in FP8 (DeepSeek-V3, R1)."""
    release_quantization: Literal["fp8", "mxfp4"] | None = None
    """Where the makers' own Hugging Face release stores its weights quantised (its config's
    quantization_config: DeepSeek-V3's FP8 blocks, gpt-oss's MXFP4 experts): the checkpoint
    cannot be trained as it is (transformers' FP8 and MXFP4 quantisers are not trainable,
    verl's Megatron converter refuses a quantization_config), so export leaves it out of the
    policy's default path: `bf16_checkpoint`, else the bf16 folder `bf16_conversion` makes."""
    bf16_conversion: Text | None = None
    """How a framework's own documentation or example turns that release into bf16 weights to
    train from (file, lines and commit), shown in an exported script beside the path."""
    bf16_checkpoint: Text | None = None
    """A bf16 copy of that release on Hugging Face that a framework's own example trains from
    (named in `bf16_conversion`): the policy's default path where the release is quantised."""
    model_type: Text | None = None
    """The `model_type` of its Hugging Face config.json (qwen3_next, kimi_k2), read at the cited
    configuration: the key transformers and mbridge register a model by, so whether a trainer
    can build it. Null: not read."""
    remote_code: bool | None = None
    """Whether the Hugging Face checkpoint loads classes from Python files in its own repository
    (an `auto_map` in its config.json or tokenizer_config.json: Moonlight's tiktoken tokenizer),
    which transformers runs only under trust_remote_code: a framework whose flag defaults to
    false stops at start-up unless the launch turns it on. Null: not read."""
    architecture_absent: Text | None = None
    """Why an open model carries no architecture: its weights are published but no
    configuration was found at a pinned version, or its configuration uses parts the
    architecture schema does not describe yet (the shapes are never guessed)."""
    # The architecture (kb.schema.specs.Architecture), all or nothing: given, it is checked as
    # one and the derived figures below follow from it.
    layers: PositiveInt | None = None
    hidden: PositiveInt | None = None
    heads: PositiveInt | None = None
    kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    ffn: PositiveInt | None = None
    ffn_kind: Literal["gated", "plain"] = "gated"
    vocab: PositiveInt | None = None
    max_context_tokens: PositiveInt | None = None
    tied_embeddings: bool = False
    qkv_bias: bool = False
    mla: MultiHeadLatent | None = None
    moe: MixtureOfExperts | None = None
    layer_pattern: list[LayerKind] | None = None
    sliding_window: PositiveInt | None = None
    linear: LinearAttention | None = None
    sparse: SparseAttention | None = None
    full_attention: FullAttentionShape | None = None
    attention_output_gate: bool = False
    qk_norm: bool | None = None
    mtp_layers: NonNegativeInt = 0
    vision: VisionTower | None = None
    """The vision encoder of a vision-language model (its vision_config). The architecture
    above is the language tower, which the planner costs; the encoder's share is stated."""
    _architecture: Architecture | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _architecture_or_what_is_published(self) -> Model:
        given = self.model_dump(include=set(ARCHITECTURE_FIELDS), exclude_unset=True)
        if given:
            try:
                self._architecture = Architecture.model_validate(given)
            except ValidationError as error:
                raise ValueError("; ".join(map(_problem, error.errors()))) from None
            if self.active_params_b is not None:
                raise ValueError("active_params_b is derived from the architecture (params_active)")
            if self.architecture_absent is not None:
                raise ValueError("architecture_absent is for a model without an architecture")
            return self
        if self.architecture_absent is not None and self.access != "open":
            raise ValueError(
                "architecture_absent is for open weights; a closed model's is unpublished"
            )
        if self.access == "open" and self.architecture_absent is None:
            raise ValueError(
                "an open model gives its architecture from its published configuration "
                "(layers, hidden, heads, kv_heads, ffn, vocab, max_context_tokens), or says "
                "in architecture_absent why none was found"
            )
        if self.scale is None and self.post_training is None:
            raise ValueError("a model without an architecture gives its scale or post_training")
        return self

    @property
    def architecture(self) -> Architecture | None:
        """The architecture the cost core reads; None when it is not published."""
        return self._architecture

    @computed_field  # type: ignore[prop-decorator]
    @property
    def attention(self) -> str | None:
        return self._architecture.attention if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def embedding_params(self) -> int | None:
        return self._architecture.embedding_params if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def params_total(self) -> int | None:
        return self._architecture.params_total if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def params_active(self) -> int | None:
        """Parameters touched per token: routed top-k plus shared experts for MoE."""
        return self._architecture.params_active if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kv_bytes_per_token(self) -> int | None:
        """KV-cache bytes per token in bf16 of the layers that cache every token (full and
        sparse attention; MLA caches the latent + RoPE key)."""
        return self._architecture.kv_bytes_per_token if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def layer_mix(self) -> str | None:
        """How many layers of each kind (`36 linear + 12 full`)."""
        return self._architecture.layer_mix if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def window_kv_bytes_per_token(self) -> int | None:
        """KV-cache bytes per token in bf16 of the sliding-window layers (at most
        sliding_window tokens)."""
        return self._architecture.window_kv_bytes_per_token if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state_bytes_per_sequence(self) -> int | None:
        """Bytes in bf16 the linear layers keep per sequence, whatever its length."""
        return self._architecture.state_bytes_per_sequence if self._architecture else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def costing_gap(self) -> str | None:
        """Why the planner cannot cost this model yet; null when it can (or has no
        architecture: see architecture_absent)."""
        return self._architecture.costing_gap if self._architecture else None

    @property
    def costable(self) -> bool:
        """Whether the planner can cost this model today: an architecture, no costing gap."""
        return self._architecture is not None and self._architecture.costing_gap is None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def vision_params(self) -> int | None:
        """Weights of the vision encoder's blocks (a vision-language model only)."""
        return self.vision.params if self.vision else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def vision_share(self) -> float | None:
        """The vision encoder's share of all weights (encoder blocks and language tower)."""
        if self.vision is None or self._architecture is None:
            return None
        return self.vision.params / (self.vision.params + self._architecture.params_total)


class RuleExample(Strict):
    """A scenario on which a rule must fire (`fires: true`) or must stay silent.

    The rule fires on a scenario when it fires on at least one candidate plan of it; fix the
    plan fields the condition reads to make the example precise.
    """

    description: Text
    fires: bool
    scenario: Scenario


class Rule(Record, Cited):
    """A guideline: when it applies, what it asks of a plan, and what follows.

    `applies` and `condition` are expressions over scenario and plan facts. A `require` rule
    fires on a plan where it applies and the condition fails, and rejects it; a `prefer` rule
    fires where both hold and ranks that plan first among near-equal ones; an `advise` rule
    fires where both hold and adds its statement to the recommendation as a note.
    """

    kind: ClassVar[str] = "rule"
    title: Text
    statement: Text
    rationale: Text
    applies: Text = "true"
    condition: Text
    effect: Literal["require", "prefer", "advise"]
    lifecycle: Literal["preview", "stable", "deprecated"] = "stable"
    topic: Text
    techniques: list[Slug] = []
    """The taxonomy nodes the rule recommends or concerns; its page links them and the
    frameworks that claim them."""
    examples: Annotated[list[RuleExample], Field(min_length=2)]

    @model_validator(mode="after")
    def _both_kinds_of_example(self) -> Rule:
        if {e.fires for e in self.examples} != {True, False}:
            raise ValueError("a rule needs an example where it fires and one where it does not")
        return self


class MemorySetting(Strict):
    """What a memory measurement ran beyond its scenario's layout: the cost core's
    activation model is checked against it term by term (tests/test_memory_results.py)."""

    micro_batch_tokens: PositiveInt
    """Tokens of the measured micro-batch (micro-batch size x sequence length)."""
    code_path: Literal["megatron", "hugging-face"]
    """Megatron-Core's layers and loss, or the Hugging Face model code (FSDP, DeepSpeed)."""
    sequence_parallel: bool = True
    dropout: bool = False
    """The run kept dropout masks (Megatron's default hidden and attention dropout 0.1)."""
    layers_on_gpu: PositiveInt
    """Transformer layers on the measured GPU (its pipeline stage's)."""
    micro_batches_in_flight: PositiveInt = 1
    """Micro-batches whose activations the measured stage holds at its peak (1F1B)."""
    loss_on_gpu: bool = True
    """The measured GPU computes the logits and the loss (the last pipeline stage)."""


class Result(Record):
    """A published measurement, with the setting that lets the cost core predict it."""

    kind: ClassVar[str] = "result"
    source: Slug
    locator: Text
    framework: Slug | None = None
    description: Text
    metric: Literal[
        "step_seconds",
        "rollout_seconds",
        "assessment_seconds",
        "training_seconds",
        "weight_sync_seconds",
        "tokens_per_second",
        "speedup",
        "time_share",
        "expert_load_imbalance",
        "activation_memory_gb",
        "peak_memory_gb",
    ]
    """`time_share` is the fraction of wall-clock time the described stages take (0 to 1);
    `expert_load_imbalance` is the most loaded expert-parallel rank's tokens over the mean
    rank's in one MoE layer (at least 1; the inverse of EPLB's "balancedness")."""
    value: Positive
    unit: Text
    baseline: Text | None = None
    scenario: Scenario | None = None
    batch: Literal["stated", "largest-fitting"] = "stated"
    """How the run chose its batch. stated: the scenario's prompts_per_step. largest-fitting:
    the publication ran the largest per-GPU batch that fit in memory, up to prompts_per_step,
    as one micro-batch per data-parallel rank with no gradient accumulation (DeepSpeed-Chat's
    benchmark rule); the batch each run used is not published, so the prediction finds it."""
    memory: MemorySetting | None = None
    """For the memory metrics: the micro-batch and code path the measurement ran."""
    unordered_with: list[Slug] = []
    """Results of the same source whose published ordering against this one the source cannot
    support: the two runs differ in something the source does not publish or says moves the
    figure by more than the gap between them (the notes say what). The fidelity benchmark sets
    such a pair aside instead of scoring it as an ordering (rules.fidelity.Ordering)."""
    notes: Text | None = None

    def cited_sources(self) -> list[str]:
        return [self.source]

    @model_validator(mode="after")
    def _memory_metrics_have_their_setting(self) -> Result:
        if self.metric.endswith("_memory_gb") and (self.memory is None or self.scenario is None):
            raise ValueError(f"a {self.metric} result needs its scenario and memory setting")
        if self.batch == "largest-fitting" and self.scenario is None:
            raise ValueError("a largest-fitting batch needs the scenario that caps it")
        if self.metric == "time_share" and self.value > 1:
            raise ValueError("a time_share is a fraction of the time, at most 1")
        if self.metric == "expert_load_imbalance" and self.value < 1:
            raise ValueError("an expert_load_imbalance is a max over a mean, at least 1")
        return self


class Deployment(Record, Dated):
    """A published launch configuration: an expert's plan as a framework's authors ran it.

    The scenario states the cluster, models, workload and the complete plan in scenario terms,
    read from the file at the pinned commit; values the file leaves to the framework's
    defaults are filled with those defaults and listed in `defaults`."""

    kind: ClassVar[str] = "deployment"
    name: Text
    framework: Slug
    source: Slug
    """The repository (or documentation) source the file belongs to."""
    file: Text
    """Path of the launch script, recipe or config inside the repository."""
    commit: Commit
    url: Url
    description: Text
    scenario: Scenario
    defaults: list[Text] = []
    """Plan and workload values the file does not set, filled from the framework's defaults
    (each says which default and where it is read)."""
    step_seconds: Positive | None = None
    """A published step time for exactly this configuration, if any."""
    step_source: Slug | None = None
    step_locator: Text | None = None
    notes: Text | None = None

    def cited_sources(self) -> list[str]:
        return [self.source, *([self.step_source] if self.step_source else [])]

    @model_validator(mode="after")
    def _step_has_source(self) -> Deployment:
        if self.step_seconds is not None and self.step_source is None:
            raise ValueError("step_seconds needs step_source (where the time is published)")
        return self


class Constraint(Record, Dated):
    """What a framework refuses, read from the code path that refuses it at a pinned commit.

    `condition` is what a plan must satisfy for the framework to run it, in the rules'
    expression language over plan and scenario facts; `applies` narrows when it holds. With
    `component` set it binds only the framework's runs on that training backend or rollout
    engine (megatron-lm, pytorch-fsdp, deepspeed, vllm, sglang): a plan is runnable by a
    framework when, for some pair of its backend and engine, every constraint that binds
    that pair holds."""

    kind: ClassVar[str] = "constraint"
    framework: Slug | None = None
    """Unset for a refusal in a component's own code (DeepSpeed's asserts): it binds every
    framework on that component."""
    component: Slug | None = None
    title: Text
    statement: Text
    """What the code does, in one or two sentences of our own."""
    applies: Text = "true"
    condition: Text
    source: Slug
    file: Text
    """The file that accepts or refuses the value."""
    lines: Text | None = None
    """Where in the file (for example `L210-L218`, or the function name)."""
    commit: Commit
    url: Url
    versions: list[Slug] = []
    """The framework's mappings (kb/records/mappings ids) whose pinned code this refusal was
    read at or checked against: it binds launches of those versions only (`export` and
    `review` judge a launch by its mapping's version, the planner by the framework's newest
    mapping). Empty: every version, as for a refusal read at one commit and not yet checked
    against another."""
    checks: Literal["plan", "launch"] = "plan"
    """`plan`: a refusal the planner respects (its condition reads plan and scenario facts).
    `launch`: a start-up check on the values a launch writes, its condition reading the
    `launch.*` facts as well (layers per pipeline stage, token budgets, the engine's memory
    fraction); the planner does not judge it: `export` adapts the launch to it or refuses,
    naming the record, and `review` reports a launch that would trip it."""

    def cited_sources(self) -> list[str]:
        return [self.source]

    def in_scope(self, mapping: str | None) -> bool:
        """Whether the refusal binds a run of the framework at the version of mapping id
        `mapping` (None: no version is known, and every record binds)."""
        return mapping is None or not self.versions or mapping in self.versions

    @model_validator(mode="after")
    def _bound_to_something(self) -> Constraint:
        if self.framework is None and self.component is None:
            raise ValueError("a constraint names its framework, its component, or both")
        return self


Transform = Literal[
    "identity", "flag", "equals", "lookup", "nodes", "gpus_per_node", "divide", "multiply", "add",
    "constant", "list", "allocation", "devices",
]  # fmt: skip
"""How a fact becomes a config value: as is; as a boolean; whether it equals `argument`;
through `table`; a pool's GPUs as nodes or GPUs per node (whole nodes, or part of one);
divided by, multiplied by, or added to the fact named by `argument` (unit conversions such as
prompts -> samples); `argument` itself, written where `when` holds (a setting the plan
forces, such as sequence packing off under context parallelism); a list of the one value
(SkyRL's data fields, lists of files), or of it and the fact named by `argument` (OpenRLHF's
eps_clip_low_high: the clip below and above 1); or the pool `argument` (`train` or `rollout`) as an
allocation string of all its degrees, `<name>:d<dp>p<pp>t<tp>` with `c<cp>` and `e<ep>` above 1,
the name from `table` (component -> name: AReaL's `actor.backend`); or a pool's GPUs as the
device ids it takes, `list(range(first, first + gpus))` (ROLL's device_mapping), the first id 0,
or past the pool named by `argument` on a disaggregated plan."""

Value = bool | int | float | str | list[bool | int | float | str] | None
"""A config value; a list is several values of one flag (argparse `nargs`) or a Hydra list."""


class MappingEntry(Strict):
    """One config key and the fact it is computed from."""

    fact: Text
    """A scenario or plan fact, by the name rule conditions use (`plan.rollout.tp`)."""
    key: Text
    """The framework's key: a Hydra path (`+` prefix: a key the schema does not declare,
    added under an open mapping) or a command-line flag without its dashes."""
    transform: Transform = "identity"
    argument: Value = None
    table: dict[str, Value] | None = None
    """For `lookup`: the fact's value (`true`/`false` for booleans) -> the config value."""
    also_reads: dict[str, str] = {}
    """For `lookup`: other config values the framework runs alike -> the fact's value, as the
    table's keys write it (verl's `fsdp` strategy shards as fully as the `fsdp2` it writes):
    `review` reads them, export writes the table's value."""
    when: Text = "true"
    """A condition over the facts (the rules' expression language): the key is written only
    where it holds."""
    component: Slug | None = None
    """Only when the run uses this training backend or rollout engine."""
    objective: bool = False
    """The key sets the form of the policy loss an algorithm is defined by (its aggregation
    over tokens, a sequence-level ratio, a loss mode): review never names an algorithm whose
    objective keys a launch sets otherwise (DAPO's token-level loss left at slime's
    sequence mean is not DAPO), while its other keys only weigh (rlmguide.review.family)."""
    file: Text
    """Where the key is declared at the mapping's commit."""

    @model_validator(mode="after")
    def _arguments(self) -> MappingEntry:
        wants = {"equals": "argument", "divide": "argument", "multiply": "argument",
                 "add": "argument", "lookup": "table", "constant": "argument",
                 "allocation": "table"}  # fmt: skip
        needed = wants.get(self.transform)
        if needed and getattr(self, needed) is None:
            raise ValueError(f"transform {self.transform} needs {needed}")
        if self.also_reads and self.transform != "lookup":
            raise ValueError("also_reads is for the lookup transform")
        if unknown := set(self.also_reads.values()) - set(self.table or {}):
            raise ValueError(f"also_reads names {', '.join(sorted(unknown))}, not in the table")
        return self


class ForwardBudget(Strict):
    """The token budget that replaces a forward-only pass's count of sequences where the
    framework packs that pass by tokens (ROLL's load_balance packing)."""

    switch: Text
    """When the budget applies, written as a token_batching switch (conditions joined by
    ` and `: `KEY`, `KEY>0`, `KEY=VALUE`)."""
    key: Text
    """The key of the budget: tokens of one forward micro-batch over its context-parallel
    group."""


class Launch(Strict):
    """The entry point that runs one execution mode on one placement."""

    execution: Execution
    placement: Placement
    command: Text
    """What starts the trainer, such as `python3 -m verl.trainer.main_ppo`."""
    component: Slug | None = None
    """Only for runs on this training backend."""
    algorithms: list[Slug] = []
    """Only for these algorithms, and they take this entry point over the general one (verl
    runs DAPO's dynamic sampling through its recipe trainer); empty: any algorithm."""
    fixed: list[Text] = []
    """Arguments the entry point always needs, as the syntax writes them."""
    engine_kept: bool = False
    """The rollout engines keep their memory (weights, workspace, KV cache) on the trainer's
    GPUs while it trains: a colocated launch that leaves the engine's sleep off (OpenRLHF's
    colocate_all without vLLM's enable_sleep). Export never writes such a launch (the one of
    the same mode before it sleeps); review reads a launch as it and reports the memory the
    engine keeps from training."""
    asserted: Text | None = None
    """Where the entry point's code asserts its fixed options at start-up (file and lines at
    the mapping's commit): `review` names it for a launch of this command that lacks one, as
    the stop it would meet (verl's fully asynchronous rollouter asserts hybrid_engine off)."""
    preamble: list[Text] = []
    """Shell lines this entry point's script runs before the command, after the mapping's
    (verl's one-step-off and DAPO trainers start only from a checkout's root: the script
    checks it)."""
    lag_pool: Text | None = None
    """The key of the prompt groups per rollout engine that this entry point's asynchronous
    rollout keeps generating and queued, whatever the plan's lag (slime's fully-async worker:
    --sglang-server-concurrency x engines groups, each step draining --rollout-batch-size of
    them oldest first): review reads the versions a trained group lags as that pool over a
    step's prompts, rounded up, not as the mapping's implied max_staleness."""
    file: Text


class Departure(Strict):
    """A way a launch of the mapping runs otherwise than the algorithm's record or the scenario
    says, or a step it needs beyond the framework's image (verl's Megatron-Bridge), which no key
    of the framework can change at its commit, or none the export can change without leaving
    the plan it costed."""

    when: Text
    """A condition over the facts (the rules' expression language) where the departure holds."""
    note: Text
    """What runs instead and what the user must carry (slime has no overlong-penalty key: DAPO's
    shaping must be in the reward function), with the lines read."""


class OtherTraining(Strict):
    """A pipeline of the framework that no launch of the mapping reads and that review refuses
    by what it is: one that trains otherwise than RL (SFT, DPO, a reward model), or an RL-shaped
    loop the plan cannot cost (a teacher's logits), with the code that says so."""

    what: Text
    """What the launch is, as the refusal names it (`an SFT launch`)."""
    pipeline: Text
    """What the entry point builds, with the file and lines read at the mapping's commit."""
    keys: list[Text] = []
    """Config keys only this pipeline's config has (ROLL's sft_train, NeMo-RL's top-level sft
    section): a recipe or command line setting one (or a key under it) is this pipeline's,
    unless it sets a switch among them off."""
    commands: list[Text] = []
    """Entry points that build it (`python examples/start_sft_pipeline.py`): a shell launch
    running one is this pipeline's."""
    why: Text = "review reads RL launches"
    """Why review refuses it: not RL, or what the plan cannot cost in it."""


class Mapping(Record):
    """How a framework's launch spells a plan, for a range of its versions: entry points per
    execution mode and placement, and plan or scenario fact -> config key, each key with the
    file that declares it at the pinned commit. `export` writes launches with it."""

    kind: ClassVar[str] = "mapping"
    framework: Slug
    syntax: Literal["hydra", "argparse", "yaml"]
    """Hydra overrides (`key=value`), argparse flags (`--key value`, booleans as switches), or a
    YAML config file the entry point composes whole (ROLL's `--config_name`)."""
    versions: Text
    """The framework versions the mapping holds for, in words a user can check."""
    committed: Date
    """Commit date at `commit`: the newest mapping of a framework is its default."""
    source: Slug
    commit: Commit
    url: Url
    checked: Date
    """The day the mapping was read at `commit`."""
    components: Annotated[list[Slug], Field(min_length=1)]
    """Training backends and rollout engines the mapping covers, preferred first."""
    fixed: list[Text] = []
    """Arguments every launch needs whatever the plan, as the syntax writes them."""
    token_batching: list[Text] = []
    """Switches that turn micro-batching by tokens on (any one on): a key that is true (the
    launch's value, else the framework's default for it), `KEY>0` one whose value is positive
    (SkyRL's token budget that -1 disables), `KEY=VALUE` one set to that value, or several
    such conditions joined by ` and ` (ROLL packs by tokens only on Megatron, with packing on
    and its load_balance algorithm): a launch's token budget sizes its micro-batches only
    then."""
    token_budgets: dict[Text, list[Text]] = {}
    """token_batching switch -> the keys of the token budgets it turns on, the training
    micro-batch's first, where no entry writes them (exports never turn the switch on:
    NeMo-RL's dynamic batching, whose train_mb_tokens and logprob_mb_tokens replace the
    packing budgets): review reads the first the launch gives, of the switch that is on, as
    its training micro-batch over any entry's, as it reads entries of one fact."""
    forward_token_budgets: dict[Text, ForwardBudget] = {}
    """Key of a forward-only pass's micro-batch in sequences (one an entry reads as
    launch.forward_micro_batch_sequences) -> the token budget that sizes that pass instead
    where its switch is on (ROLL's max_packed_sequence_length_forward under load_balance
    packing): review costs the pass at the budget, not at that many longest sequences."""
    sequence_batching: dict[Text, PositiveInt | None] = {}
    """Key of the training micro-batch counted in sequences per GPU -> the framework's default
    for it at `commit` (None where it has none): the micro-batch the framework runs where no
    token_batching switch is on, costed as that many sequences at the launch's length caps."""
    global_batching: dict[Text, Text] = {}
    """Older global form of a micro-batch key -> the per-GPU key it stands for (verl's
    actor.ppo_micro_batch_size and ppo_micro_batch_size_per_gpu): a launch gives one form, not
    both (launch.micro_batch_forms counts them for the framework's start-up check)."""
    divides_global: bool = False
    """The framework's workers set each global_batching per-GPU key the launch leaves unset
    from its global form: the global value floor-divided by the trainer's data-parallel ranks,
    GPUs / (TP x PP x CP) (verl's legacy FSDP and Megatron workers); review reads the global
    value so. False: no worker reads the global form (verl 0.8's engine workers)."""
    repositories: dict[Text, Url] = {}
    """Path prefix -> where files under it are read when they belong to another repository the
    framework passes flags to (slime's `megatron/` at the Megatron-LM commit it pins)."""
    preamble: list[Text] = []
    """Shell lines the launch script runs before the command (slime sources the policy's
    architecture flags from its scripts/models/<model>.sh)."""
    implied: list[Text] = []
    """Plan facts the framework realises without a key (NeMo-RL always keeps the reference
    weights on the host): a plan may set them without a key accounting for them. A bare name
    is a switch it turns on; `fact=value` a value it holds (slime's `plan.max_staleness=1`)."""
    launches: Annotated[list[Launch], Field(min_length=1)]
    entries: Annotated[list[MappingEntry], Field(min_length=1)]
    fp32_gradients: bool = False
    """The framework's Megatron backend keeps fp32 gradient buffers by default (Megatron-LM
    turns accumulate_allreduce_grads_in_fp32 on with --bf16; verl's Megatron-Core DDP config
    sets grad_reduce_in_fp32): plans searched for it are costed so, as `review` reads a launch
    of it that does not say otherwise."""
    model_scripts: dict[Slug, Text] = {}
    """Model record id -> the framework's file of that model's architecture flags, where its
    launch takes them from a per-model file rather than the checkpoint (slime's
    scripts/models/<model>.sh, which its Megatron start-up checks against the Hugging Face
    config): a policy not listed is refused, with the reason."""
    sequence_parallel: bool = True
    """The framework's tensor-parallel training shards the activations outside the attention
    and MLP blocks along the sequence (Megatron's sequence parallelism, on wherever the
    framework's launch turns it on with TP). False: a tensor-parallel rank holds every token
    of its micro-batch (OpenRLHF's DeepSpeed AutoTP has no sequence parallelism): plans
    searched for it, and launches of it reviewed, are costed so."""
    colocated_phase_offload: bool = False
    """The framework parks a colocated trainer's state (weights, gradients, optimizer) on the
    host around every rollout whatever the launch says (NeMo-RL's refit offloads the
    optimizer and then the model when generation is colocated): plans searched for it, and
    its launches estimated, are costed with phase offload on colocated pools."""
    engine_starts_first: bool = False
    """The framework starts its rollout engines on GPUs the colocated trainer has not yet
    taken, and loads the trainer beside them afterwards (slime builds its SGLang servers
    before the Megatron actors): the memory an engine finds free when it starts is the whole
    GPU, so a fraction of that free memory (SGLang's mem_fraction_static) is converted over
    HBM, not over what the resident trainer leaves."""
    engine_max_seqs: PositiveInt | None = None
    """Sequences one rollout engine runs at once where no entry writes them: the engine's own
    default as every entry point of the framework creates it (OpenRLHF's vLLM AsyncLLMEngine).
    Plans searched for the framework are costed at no more; unset, the launch writes the plan's
    concurrency or the cost model's cap holds."""
    config_defaults: dict[Text, bool | int | float | Text | None] = {}
    """The value the framework's own config gives an entry's key at `commit` (in the entry's
    file): what a launch that leaves the key out runs with. `review` reads it back."""
    reads: dict[Text, Text] = {}
    """`launch.*` fact -> the config key the start-up checks read it from, for settings no
    entry computes from a fact (sequence packing): export and review take the launch's value,
    else `config_defaults`. A key written with Hydra's `+` is one the framework's config file
    lacks and a launch adds (verl's rollout.moe_tensor_parallel_size): no entry has it."""
    absent: dict[Text, Text] = {}
    """Fact -> why the framework has no key for it at `commit` (where the value lives
    instead): the reason export gives when a plan needs that fact and no entry writes it."""
    rollout_log_probs: Text | None = None
    """A condition over the facts where the launch trains on the rollout engine's log-probs
    and its trainer skips the old-log-prob forward pass (SkyRL's fully asynchronous launches):
    export and review cost those plans without it."""
    phase_offload: Text | None = None
    """A condition over the facts where the launch parks the trained state on the host
    between phases whatever the plan says (SkyRL's colocate_policy_ref, which export writes for
    a reference on the policy's GPUs, swaps the policy's weights and optimizer out before every
    reference forward and back to train): plans searched for it, and its launches estimated,
    are costed with phase offload where it holds, as review reads the launch back."""
    other_pipelines: dict[Text, Text] = {}
    """A recipe's top-level config key -> the pipeline of the framework a recipe setting it
    belongs to, which no launch here reads (its entry point and config class): review refuses
    such a recipe by name rather than cost it as the pipeline the launches map."""
    single_sample: dict[Slug, Text] = {}
    """Grouped algorithm -> where the framework's estimator, given one sample per prompt,
    takes each response's own score as its advantage (a zero baseline: REINFORCE), with no
    start-up check refusing it (verl's RLOO and GRPO estimators): review reads such a launch as
    reinforce, as the framework runs it, instead of refusing a group of one."""
    other_trainings: list[OtherTraining] = []
    """The framework's pipelines review refuses by what they are (OtherTraining), each with
    the keys and entry points that mark its launches."""
    departures: list[Departure] = []
    """Where a launch runs otherwise than the algorithm's record or the scenario, or needs more
    than the framework's image, with no key to say it: export writes each whose condition holds
    into the script's header (render.DEPARTURE_LINE) and its JSON, and review prints them, so
    the difference is never silent."""
    notes: Text | None = None

    def cited_sources(self) -> list[str]:
        return [self.source]

    def implied_facts(self) -> dict[str, Any]:
        """`implied` as fact -> value: true for a bare name, the parsed value of `fact=value`."""
        found: dict[str, Any] = {}
        for item in self.implied:
            name, sep, value = item.partition("=")
            found[name.strip()] = yaml.safe_load(value) if sep else True
        return found

    def costing(self) -> dict[str, Any]:
        """The options (rules.recommend.recommender_for) that cost a plan as this mapping's
        launch runs it: its engines' default concurrency, its gradient buffers, where it
        keeps the frozen models, whether it parks a colocated trainer's state, where else it
        parks it, and whether its tensor parallelism splits the sequence. Export
        and review cost one launch alike through these."""
        return {
            "engine_max_seqs": self.engine_max_seqs,
            "fp32_gradients": self.fp32_gradients,
            "frozen_on_host": "plan.train.offload_frozen" in self.implied_facts(),
            "phase_on_colocation": self.colocated_phase_offload,
            "rollout_log_probs": self.rollout_log_probs,
            "phase_offload": self.phase_offload,
            "sequence_parallel": self.sequence_parallel,
        }


class Direction(Record, Cited):
    """An open research direction or gap a source names (the survey's §7, and the gaps of its
    §1, §3 and §4), linked to what the knowledge base already has on it."""

    kind: ClassVar[str] = "direction"
    title: Text
    section: Text
    """Where the source states it (`§7`, `§3.6.1`)."""
    position: PositiveInt
    """Its place in the section's list, to show the directions in the source's order."""
    statement: Text
    """The direction in our words."""
    coverage: Literal["none", "partial", "substantial"]
    """How much of it the knowledge base, rules and planner already cover."""
    coverage_note: Text
    """What is covered and what is not."""
    techniques: list[Slug] = []
    frameworks: list[Slug] = []
    rules: list[Slug] = []


KINDS: dict[str, type[Record]] = {
    cls.kind: cls
    for cls in (
        Source,
        Technique,
        Algorithm,
        Component,
        Framework,
        Accelerator,
        Model,
        Result,
        Rule,
        Deployment,
        Constraint,
        Mapping,
        Direction,
    )
}
"""Record kinds by name; the folder of a kind under `records/` is its plural."""
