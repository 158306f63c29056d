"""The scenario file: cluster x models x workload x (partly fixed) plan x efficiency overrides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Discriminator, Field, StringConstraints, Tag, model_validator
from rlmguide.kb.schema.common import NonNegativeInt, Positive, PositiveInt, Slug, Strict, Text
from rlmguide.kb.schema.length_prior import prior_mean_tokens
from rlmguide.kb.schema.specs import AcceleratorFigures, Architecture

Placement = Literal["colocated", "disaggregated", "partially-colocated"]
"""Where the models run (survey §4.2): colocated, every stage on one pool; disaggregated,
rollout and training on pools of their own; partially-colocated, actor generation and
training share one pool while the reference and/or reward model sit on a small group of their
own (plan.pools), so their assessment runs beside the actor's."""
CriticForm = Literal["separate", "shared"]
"""survey §4.1: a critic network of its own, or a value head on the policy (shared
actor-critic)."""
Fusion = Literal["none", "inter-stage", "intra-stage", "both"]
"""survey §4.3: inter-stage, assessment streams behind the rollout's long tail; intra-stage,
the actor's and the critic's updates are pipelined together."""
Execution = Literal["sync", "one-step-off", "async", "partial-rollout"]
Recompute = Literal["none", "selective", "full"]
Precision = Literal["bf16", "fp8"]
Fraction = Annotated[float, Field(gt=0, le=1)]
Share = Annotated[float, Field(ge=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
"""An ISO 4217 currency code: USD, EUR, CNY."""


class InlineAccelerator(AcceleratorFigures):
    """An accelerator given in the scenario itself instead of by catalog id."""

    name: Text = "inline accelerator"


class InlineModel(Architecture):
    """A model given in the scenario itself instead of by catalog id."""

    name: Text = "inline model"


class Nodes(Strict):
    """Nodes (a host: its memory, NICs and PCIe) and the scale-up domain (the GPUs one NVLink
    fabric joins) are separate: an HGX board is a node of 8 and a domain of 8, a GB200 NVL72
    rack is 18 nodes (trays) of 4 GPUs and one domain of 72. What a whole cluster and each part
    of a mixed one give."""

    accelerator: Slug | InlineAccelerator
    nodes: PositiveInt = 1
    gpus_per_node: PositiveInt = 8
    scale_out_gbps_per_gpu: Positive | None = None
    scale_up_domain_gpus: PositiveInt | None = None
    """GPUs joined by one scale-up fabric; unset, the node (or the accelerator's own domain
    when that is smaller, as for PCIe cards)."""
    host_memory_gib_per_node: Positive | None = None
    """Host (CPU) memory of one node; unset, the accelerator's reference system's."""
    host_link_gbytes_per_s: Positive | None = None
    """Host-to-GPU copy bandwidth per GPU, one direction (PCIe Gen4 x16 32, Gen5 x16 64,
    NVLink-C2C on Grace parts more); unset, the accelerator record's."""
    price_per_gpu_hour: Positive | None = None
    """What one GPU-hour costs you; unset, the accelerator record's cited public on-demand
    price (labelled as a default in the output), or none where no public price exists."""
    currency: Currency | None = None
    """The currency of price_per_gpu_hour; unset, the default price's, else USD."""
    watts_per_gpu: Positive | None = None
    """Power drawn per GPU for the energy estimate; unset, the accelerator record's TDP (the
    GPU alone: hosts, NICs and switches come on top)."""

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @model_validator(mode="after")
    def _domain_tiles_nodes(self) -> Nodes:
        domain, node = self.scale_up_domain_gpus, self.gpus_per_node
        if domain is not None and domain % node and node % domain:
            raise ValueError(
                f"scale_up_domain_gpus ({domain}) must be a multiple of gpus_per_node ({node}) "
                "(NVLink racks of several nodes) or divide it (PCIe cards joined in pairs)"
            )
        return self


class ClusterPart(Nodes):
    """One part of a mixed cluster: nodes of one accelerator, with its own price."""

    name: Slug
    """How the output names this part (`a100`, `h100-pod`)."""


CrossVendorSync = Literal["host-staged", "rdma"]
MAX_PARTS = 6
"""Parts of a mixed cluster: each part alone and each ordered pair is searched (36 searches at
6 parts, about 6 s for a 7B model on two cores; 60 parts once took minutes)."""


class Cluster(Nodes):
    """One accelerator (`accelerator`, `nodes`, ...), or a mixed cluster: `parts` of different
    accelerators and the link between them."""

    accelerator: Slug | InlineAccelerator | None = None  # type: ignore[assignment]
    parts: Annotated[list[ClusterPart], Field(max_length=MAX_PARTS)] | None = None
    """A mixed cluster: two to six parts, each with its accelerator, nodes, GPUs per node
    and price. Plans run on one part, or put rollout on one part and training on another."""
    link_gbps_between_parts: Positive | None = None
    """Network bandwidth per GPU, Gbit/s one direction, between two parts (weight sync from
    the trainer's part to the rollout's); unset, the slower part's network per GPU."""
    cross_vendor_sync: CrossVendorSync = "host-staged"
    """How weights cross between parts of different vendors, where NCCL and RCCL cannot form
    one group: `host-staged` (copied to host memory, sent over the network, copied up again:
    the slowest of the link and the two host links sets the rate) or `rdma` (GPU to GPU over
    RDMA, as HetCCL does, at the link's rate)."""

    @model_validator(mode="after")
    def _one_form(self) -> Cluster:
        if self.parts is None:
            if self.accelerator is None:
                raise ValueError("give cluster.accelerator, or cluster.parts for a mixed cluster")
            stray = [
                n for n in ("link_gbps_between_parts", "cross_vendor_sync")
                if n in self.model_fields_set
            ]  # fmt: skip
            if stray:
                raise ValueError(f"{stray[0]} applies to a mixed cluster (cluster.parts) only")
            return self
        own = [n for n in self.model_fields_set if n in Nodes.model_fields]
        if own:
            raise ValueError(
                f"with cluster.parts each part gives its own {sorted(own)[0]}; move it into "
                "the parts"
            )
        if len(self.parts) < 2:
            raise ValueError(
                "cluster.parts lists at least two parts; for one accelerator give "
                "cluster.accelerator, nodes and gpus_per_node instead"
            )
        names = [p.name for p in self.parts]
        if len(set(names)) < len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"cluster.parts: the name {twice!r} is given twice")
        currencies = {p.currency for p in self.parts if p.currency}
        if len(currencies) > 1:
            raise ValueError(
                f"cluster.parts: prices in {' and '.join(sorted(currencies))}; give every "
                "part's price in one currency"
            )
        return self

    @property
    def gpus(self) -> int:
        if self.parts is not None:
            return sum(p.gpus for p in self.parts)
        return self.nodes * self.gpus_per_node


RewardKind = Literal["verifier", "reward-model", "llm-judge", "process-reward-model"]
JUDGE_FIELDS = ("verdict_tokens", "rubric_tokens", "calls_per_response")
PRM_FIELDS = ("steps_per_response", "scoring")


SEQUENTIAL_STEPS = 1_024
"""The most steps a sequential process reward model is costed for: each is a pass of its own
(the per-prefix scoring's one batched pass takes up to the field's general bound)."""


class Reward(Strict):
    """How responses are scored, by kind: `verifier` (rule-based, on CPUs, free of GPU
    time), `reward-model` (one forward pass per response), `llm-judge` (an LLM writes a
    verdict per response and call: a prefill of prompt + response + rubric and a decode of
    verdict_tokens, d-RLAIF) or `process-reward-model` (a score per reasoning step). The
    bare forms stay valid: `verifier`, or a model id (a reward model)."""

    kind: RewardKind
    model: Slug | InlineModel | None = None
    """The scoring model (every kind but verifier)."""
    calls_per_response: PositiveInt = 1
    """LLM judge: verdicts asked per response (several samples, several rubrics)."""
    verdict_tokens: PositiveInt | None = None
    """LLM judge: tokens the judge generates per verdict (its reasoning and its grade)."""
    rubric_tokens: NonNegativeInt = 0
    """LLM judge: tokens of rubric and instructions the judge reads beside prompt and
    response."""
    steps_per_response: PositiveInt | None = None
    """Process reward model: reasoning steps scored per response."""
    scoring: Literal["one-pass", "per-prefix", "sequential"] = "one-pass"
    """Process reward model: `one-pass` reads every step's score from one forward pass over
    the response (at the step-separator tokens, as Math-Shepherd's PRM does), the cost of a
    reward model; `per-prefix` runs one pass per step over the prompt and the steps so far
    (needs steps_per_response); `sequential` runs the same passes one after another, each
    step verified after the previous verdict (survey Table 2)."""

    @model_validator(mode="after")
    def _fields_of_kind(self) -> Reward:
        where = {"llm-judge": JUDGE_FIELDS, "process-reward-model": PRM_FIELDS}
        for kind, names in where.items():
            stray = [n for n in names if n in self.model_fields_set and self.kind != kind]
            if stray:
                raise ValueError(f"{', '.join(stray)} only apply to kind {kind}, not {self.kind}")
        if self.kind == "verifier" and self.model is not None:
            raise ValueError("a verifier is rule-based and runs no model: remove model")
        if self.kind != "verifier" and self.model is None:
            raise ValueError(f"kind {self.kind} needs the model that scores: give model")
        if self.kind == "llm-judge" and self.verdict_tokens is None:
            raise ValueError("kind llm-judge needs verdict_tokens, the tokens of one verdict")
        if self.scoring != "one-pass" and self.steps_per_response is None:
            raise ValueError(f"scoring {self.scoring} needs steps_per_response")
        if self.scoring == "sequential" and (self.steps_per_response or 0) > SEQUENTIAL_STEPS:
            raise ValueError(
                f"scoring sequential costs one pass per step in turn: at most "
                f"{SEQUENTIAL_STEPS:,} steps_per_response, not {self.steps_per_response:,}"
            )
        return self


class Reference(Strict):
    """The reference model of the KL term when it is not the policy's architecture in bf16:
    another model (a smaller one) and/or quantised weights and matmuls."""

    model: Slug | InlineModel | None = None
    """Unset, the policy's architecture."""
    precision: Precision = "bf16"
    """fp8: weights of one byte and matmuls at the accelerator's fp8 rate."""


def _form(value: object) -> str:
    """Which form a reward or reference takes, so that a mistake in one form is reported
    against that form alone (not against every member of the union)."""
    if isinstance(value, str):
        return "tagged-id"
    if isinstance(value, dict) and not {"kind", "model", "precision"} & value.keys():
        return "tagged-inline"
    return "tagged-spec"


RewardForm = Annotated[
    Annotated[Literal["verifier", "none"] | Slug, Tag("tagged-id")]
    | Annotated[InlineModel, Tag("tagged-inline")]
    | Annotated[Reward, Tag("tagged-spec")],
    Discriminator(_form),
]
ReferenceForm = Annotated[
    Annotated[Slug, Tag("tagged-id")]
    | Annotated[InlineModel, Tag("tagged-inline")]
    | Annotated[Reference, Tag("tagged-spec")],
    Discriminator(_form),
]


class Models(Strict):
    policy: Slug | InlineModel
    critic: Slug | InlineModel | None = None
    reward: RewardForm = "verifier"
    """`verifier`, a reward model's id (or inline architecture), or a `Reward` by kind;
    `none` for offline preference methods (DPO and its family), whose labels are in the data.
    Left out with such an algorithm, it is `none`."""
    reference: ReferenceForm | None = None
    """Unset, the policy's architecture in bf16; a model id (or inline architecture) for
    another one; or a `Reference` with a precision."""
    context_tokens: PositiveInt | None = None
    """The context the run configures, when a recipe overrides the model's
    (max_position_embeddings or RoPE scaling): beyond the model record's limit it is advice
    with a note, not an error."""


class EnvironmentTime(Strict):
    """Seconds of one environment step (a tool call, a sandboxed test run, a web request), as a
    distribution: its mean and its longest, with where the figure comes from."""

    mean_seconds: Seconds
    """Mean seconds of one step."""
    max_seconds: Seconds | None = None
    """The slowest step (unset: the mean); it sits on the longest episode's chain."""
    source: Text | None = None
    """Where the figure comes from (a measurement, a paper, a log): shown with the estimate."""

    @model_validator(mode="after")
    def _ordered(self) -> EnvironmentTime:
        if self.max_seconds is not None and self.max_seconds < self.mean_seconds:
            raise ValueError(
                f"max_seconds ({self.max_seconds:g}) is below mean_seconds ({self.mean_seconds:g})"
            )
        return self


class Agent(Strict):
    """A multi-turn episode: model turns interleaved with environment steps. With it,
    `response_tokens` and `max_response_tokens` are the tokens of one model turn (mean and
    longest). Left out, a rollout is one prompt and one response, as before."""

    turns: Annotated[float, Field(ge=1)] = 1.0
    """Mean model turns per episode (a distribution with max_turns, as response lengths are)."""
    max_turns: PositiveInt | None = None
    """The most turns an episode takes (the rollout's depth); unset, turns rounded up."""
    observation_tokens: NonNegativeInt = 0
    """Mean tokens an environment step appends to the context (tool output, test log, page)."""
    environment: EnvironmentTime | None = None
    """Seconds of one environment step, one after each model turn (the last one's is the final
    check); unset, no time."""
    setup_seconds: Seconds = 0.0
    """Once per episode before its first turn: a container or sandbox start-up."""
    environment_slots: PositiveInt | None = None
    """Environment steps that can run at once over the whole cluster (sandboxes, CPU workers);
    unset, no limit."""
    context: Literal["appended", "rebuilt"] = "appended"
    """appended: each turn extends the previous tokens, so with prefix caching (plan) the
    episode's KV is kept across turns and only the observation is prefilled; rebuilt: the
    history is re-rendered each turn (a template that drops earlier reasoning), so the whole
    context is prefilled again."""
    reward: Literal["episode", "turn"] = "episode"
    """Where the reward is given: once per episode, or after every turn (a reward model then
    scores every turn's prefix)."""

    @model_validator(mode="after")
    def _turns(self) -> Agent:
        if self.max_turns is not None and self.max_turns < self.turns:
            raise ValueError(
                f"max_turns ({self.max_turns}) is below the mean turns ({self.turns:g})"
            )
        return self


class Search(Strict):
    """Values or step rewards estimated from completions decoded out of each response's
    intermediate states (VinePPO's Monte Carlo values, a search over reasoning steps): more
    generation by the policy's engine after the responses, and more scoring where a model
    scores. The states are the prompt and the prompt with each step but the last, so a
    state k of `depth` is continued from k/depth of the response for (depth - k)/depth of it."""

    depth: PositiveInt
    """States searched from per response: its reasoning steps (the prompt's state included,
    the finished response's excluded, whose value is its reward)."""
    branching: PositiveInt | None = None
    """Completions decoded from each state; unset, the algorithm's value_rollouts_per_state."""
    sequential: bool = False
    """false: every state's completions are submitted at once, after the responses (VinePPO);
    true: a state is searched after the previous one's completions are scored, as a tree
    search that picks where to expand from what it has scored (MCTS): the levels run one
    after another, each a smaller batch."""


def _mean_from_cap(
    data: object, mean: str, of_cap: Callable[[int], int], source: Literal["prior", "cap"]
) -> object:
    """`data` with `mean` taken from its cap `max_<mean>` (and `<mean>_from` saying how) where
    the workload gives the cap and not the mean; otherwise unchanged."""
    if not isinstance(data, dict) or data.get(mean) is not None:
        return data
    cap = data.get(f"max_{mean}")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        return {**data, mean: of_cap(cap), f"{mean}_from": source}
    return data


class Workload(Strict):
    algorithm: Slug = "grpo"
    prompts_per_step: PositiveInt
    samples_per_prompt: PositiveInt | None = None
    prompt_tokens: PositiveInt
    """Mean prompt length. Left out where max_prompt_tokens is given (a launch states only its
    prompt cap), it is taken at the cap and prompt_tokens_from says so: no published
    measurement of prompt lengths against their cap is in the knowledge base to give a
    prior, as kb.schema.length_prior does for responses."""
    max_prompt_tokens: PositiveInt | None = None
    """The longest prompt: the cap a launch writes (verl data.max_prompt_length, OpenRLHF
    prompt_max_len, AReaL train_dataset.max_length, SkyRL trainer.max_prompt_length, ROLL
    prompt_length), which frameworks enforce by truncating or dropping longer prompts, and
    what memory and context lengths are sized at with max_response_tokens. Unset, every
    prompt is taken to have the mean length (Workload.longest_prompt), and the outputs say
    so."""
    prompt_tokens_from: Literal["stated", "cap"] = "stated"
    """stated: prompt_tokens is the run's own mean; cap: it was left out and taken at
    max_prompt_tokens (time is then that of prompts all at the cap: an upper bound)."""
    response_tokens: PositiveInt
    """Mean response length. Left out where max_response_tokens is given (a launch states
    only its cap), it is the published runs' median share of the cap (kb.schema.length_prior)
    and response_tokens_from says so."""
    max_response_tokens: PositiveInt | None = None
    response_tokens_from: Literal["stated", "prior"] = "stated"
    """stated: response_tokens is the run's own; prior: it was left out and the length prior
    filled it from max_response_tokens (memory is then sized at the cap: a step whose
    responses all run long must still fit)."""
    reasoning_budget: PositiveInt | None = None
    """A cap on the tokens of one response (one model turn in an episode), as a thinking budget
    or s1's budget forcing sets it (arXiv 2501.19393: the end-of-thinking delimiter is appended
    at the cap). `response_tokens` and `max_response_tokens` are then the lengths the model
    would write without it; every response that would run past the budget ends at it, so the
    rollout's longest response is the budget and its mean falls by the tokens cut off
    (cost.lengths.budgeted). The answer written after a forced end of thinking is counted in
    the budget. Unset, no cap beyond max_response_tokens."""
    minibatches_per_step: PositiveInt = 1
    epochs: PositiveInt = 1
    max_staleness: Annotated[int, Field(ge=0, le=16)] | None = None
    """Policy versions a trained sample may lag behind the trainer: 0 is strictly on-policy
    (only synchronous plans), k admits one-step-off and partial rollouts (k >= 1) and
    asynchronous plans up to staleness k. Whether the algorithm tolerates off-policy data is
    the run's decision; unset, the algorithm record's tolerance, else what a plan fixing a
    lagging execution states, else 0: on-policy, with the lagging plans shown as what-ifs."""
    steps: PositiveInt | None = None
    """RL steps of the whole run; with it every plan reports run GPU-hours, days and cost."""
    trained_samples: PositiveInt | None = None
    """The run's length as responses trained instead of steps (prompts_per_step x
    samples_per_prompt a step)."""
    trained_tokens: Positive | None = None
    """The run's length as prompt and response tokens trained instead of steps (at the mean
    response length over the run's length schedule)."""
    recompute_old_logprobs: bool = True
    """The trainer recomputes the behaviour policy's log-probs in the assessment (verl and
    OpenRLHF by default); false trusts the rollout engine's log-probs (verl's
    use_rollout_log_probs), which saves a forward pass but keeps the engine's numerical
    mismatch with the trainer in the importance ratio."""
    no_reference: bool = False
    """The launch switches off every KL to the reference that the algorithm's record keeps,
    so the framework builds no reference (verl with algorithm.use_kl_in_reward and
    actor.use_kl_loss both false: verl/trainer/ppo/utils.py L72-L76 at b178a3cd). The run is
    costed without the reference and without a KL; an algorithm that has none is unchanged."""
    reference_kl: Literal["reward", "loss"] | None = None
    """The launch keeps a KL to the reference, on this side, where the algorithm's record has
    none (verl's RLOO estimator on groups of one runs REINFORCE, and its use_kl_in_reward
    still loads the reference: verl/trainer/ppo/utils.py L75-L79 at 7aed6b23): the reference
    is built and its pass costed. Unset, the record's reference stands."""
    agent: Agent | None = None
    """A multi-turn agentic episode (turns, observations, environment time); unset, one prompt
    and one response."""
    search: Search | None = None
    """Completions decoded from each response's intermediate states to value them (VinePPO)
    or to search over steps; unset, nothing but the responses is generated."""

    @model_validator(mode="before")
    @classmethod
    def _means_from_caps(cls, data: object) -> object:
        """Only a cap is given: the mean response from the length prior, the mean prompt at
        its cap (no prior for prompts)."""
        data = _mean_from_cap(data, "response_tokens", prior_mean_tokens, "prior")
        return _mean_from_cap(data, "prompt_tokens", lambda cap: cap, "cap")

    @property
    def longest_prompt(self) -> int:
        """max_prompt_tokens, or the mean where the workload gives no cap."""
        return self.max_prompt_tokens or self.prompt_tokens

    @model_validator(mode="after")
    def _one_length(self) -> Workload:
        given = [n for n in ("steps", "trained_samples", "trained_tokens") if getattr(self, n)]
        if len(given) > 1:
            raise ValueError(f"give the run's length once: {' and '.join(given)} are both set")
        return self

    @model_validator(mode="after")
    def _lengths(self) -> Workload:
        if self.max_prompt_tokens is not None and self.max_prompt_tokens < self.prompt_tokens:
            raise ValueError(
                f"max_prompt_tokens ({self.max_prompt_tokens}) is below the mean "
                f"prompt_tokens ({self.prompt_tokens})"
            )
        if self.max_response_tokens is not None and self.max_response_tokens < self.response_tokens:
            raise ValueError(
                f"max_response_tokens ({self.max_response_tokens}) is below the mean "
                f"response_tokens ({self.response_tokens})"
            )
        longest = self.max_response_tokens or self.response_tokens
        if self.reasoning_budget is not None and self.reasoning_budget > longest:
            given = "max_response_tokens" if self.max_response_tokens else "response_tokens"
            raise ValueError(
                f"reasoning_budget ({self.reasoning_budget}) is above the longest response "
                f"({given}, {longest}): it would cut nothing; give a smaller budget or leave "
                "it out"
            )
        return self


class RolloutPlan(Strict):
    gpus: PositiveInt | None = None
    tp: PositiveInt | None = None
    """GPUs of one inference engine's tensor group (vLLM/SGLang tensor_parallel_size); it may
    span nodes, at the cost of per-decode-step collectives over the network."""
    pp: PositiveInt | None = None
    ep: PositiveInt | None = None
    attention_dp: PositiveInt | None = None
    """SGLang's DP attention: the engine's tp GPUs run attention as attention_dp data-parallel
    groups of tp / attention_dp (each with its own sequences and KV cache) while the experts
    stay spread over ep; unset means 1."""
    cp: PositiveInt | None = None
    """Decode context parallelism: each sequence's KV cache is split by tokens over cp of the
    engine's tensor ranks (vLLM's decode_context_parallel_size, which reuses the TP ranks
    instead of adding GPUs). It removes the KV copies tensor parallelism keeps where the
    model has fewer KV heads than tp (MLA keeps one latent per rank), at the price of two
    collectives per attention layer and decode step (the queries gathered, the partial
    outputs combined). It must divide tp / attention_dp; unset means 1. Never searched: a
    long-context feasibility switch (survey §3.4.1) that no exporter's framework sets."""
    prefix_caching: bool | None = None
    precision: Precision | None = None
    """Weights and matmuls of the rollout engine: bf16, or fp8 quantised during weight sync
    (NeMo-RL, slime); unset means bf16. Never searched: it changes the sampled policy."""
    stepping: Literal["independent", "lockstep"] | None = None
    """Agentic episodes: independent (each episode steps its environment on its own, as the
    agent loops of verl, SkyRL and ROLL do) or lockstep (every turn waits for the whole batch's
    decode and environment steps). Unset means independent; never searched."""
    episodes_per_engine: PositiveInt | None = None
    """Agentic episodes one engine keeps in flight at most (AReaL max_concurrent_rollouts,
    prime-rl max_inflight, per engine); unset, as many as its KV cache holds."""
    cuda_graphs: bool | None = None
    """Decode steps replay captured CUDA graphs, the vLLM and SGLang default; false is eager
    mode (vLLM `enforce_eager`, SGLang `disable_cuda_graph`), where the host launches every
    layer's kernels each step. Unset means true. Never searched: eager mode only adds time."""
    memory_fraction: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    """Share of a GPU's memory the engine takes for its weights, workspace and KV cache, in
    vLLM's unit (gpu_memory_utilization: a share of the GPU's total memory); what is left of it
    after the weights and workspace is the KV cache. Unset, the engine takes the usable memory
    that a colocated trainer's state leaves (what `recommend` reports as the plan's
    memory_fraction). Never searched: a launch's own value, as `review` reads it."""
    max_seqs: PositiveInt | None = None
    """Sequences one engine runs at once at most (vLLM max_num_seqs, SGLang
    max_running_requests); unset, the cost model's cap. Never searched."""
    per_tensor_sync: bool | None = None
    """New weights reach the engine one checkpoint tensor at a time, a broadcast and an engine
    `load_weights` call per tensor (verl's fully-async trainer with
    async_training.checkpoint_engine.enable false), instead of in buckets. Unset means false.
    Never searched: it only adds time."""


class Offload(Strict):
    """Where model state lives off the GPU, as frameworks offer it; fields left out are off."""

    phase: bool = False
    """Phase offload: the trained models' weights, gradients and optimizer states are parked
    in host memory outside the phase that uses them and reloaded before it (verl's
    param_offload, grad_offload, optimizer_offload). Adam still runs on the GPU, so the
    training peak is unchanged; the rollout and assessment peaks drop."""
    optimizer: Share = 0.0
    """Share of the Adam states and step held and run on the CPU (DeepSpeed adam_offload = 1;
    Megatron optimizer_cpu_offload with optimizer_offload_fraction): the fp32 master weights
    and moments leave the GPU, gradients go down and updated weights come back every step."""
    params: bool = False
    """Streamed parameters: weights and gradients live on the host and stream to the GPU
    layer by layer (FSDP2 offload_policy, ZeRO-3 offload_param); needs zero 3 and implies a
    CPU optimizer."""
    frozen: bool = False
    """The reference and reward models' weights are parked on the host while training and
    loaded for the assessment (verl always does this for the reference)."""


class TrainPlan(Strict):
    gpus: PositiveInt | None = None
    tp: PositiveInt | None = None
    pp: PositiveInt | None = None
    virtual_stages: PositiveInt | None = None
    """Megatron's interleaved 1F1B schedule (virtual pipeline parallelism, Narayanan et al.,
    arXiv 2104.04473 §2.2.2): each of the pp ranks holds this many non-contiguous chunks of
    its layers, so the pipeline's fill and drain shrink from (pp - 1) to (pp - 1) / v
    micro-batch times while every micro-batch crosses v times as many stage boundaries
    (v times the point-to-point traffic), and the first stage warms up more chunks
    (Megatron's schedules.py). Needs pp > 1; unset means 1 (the plain 1F1B schedule).
    Never searched."""
    first_stage_layers: PositiveInt | None = None
    """Decoder layers of the first pipeline stage, which also holds the embedding
    (Megatron's num_layers_in_first_pipeline_stage); unset, the stages are even (ceil(layers
    / pp) each is costed). With last_stage_layers, the middle stages share the other layers
    evenly. Megatron's account_for_embedding_in_pipeline_split and
    account_for_loss_in_pipeline_split are the split (layers + 2) / pp - 1 at both ends
    (transformer_config.py). Needs pp > 1. Searched only for a framework whose export
    mapping writes the key (the account-for split where it divides)."""
    last_stage_layers: PositiveInt | None = None
    """Decoder layers of the last pipeline stage, which also holds the output layer and
    the loss (Megatron's num_layers_in_last_pipeline_stage); see first_stage_layers."""
    cp: PositiveInt | None = None
    """Context parallelism: each sequence is split over cp ranks (Megatron context_parallel,
    verl/OpenRLHF ring attention, DeepSpeed-Ulysses sequence parallelism alike); the
    sequence parallelism that accompanies tensor parallelism is implied by tp, not a degree."""
    ep: PositiveInt | None = None
    etp: PositiveInt | None = None
    """Expert tensor parallelism (Megatron's expert_tensor_parallel_size); unset means tp."""
    expert_layout: Literal["folded", "isolated"] | None = None
    """How the ep ranks share the dense (attention and shared) layers' work. folded (unset):
    each ep rank is a data-parallel rank with its own tokens, and the experts fold over the
    dense layers' ranks (Megatron-Core's MoE parallel folding: its expert grid etp x ep x
    expert-dp x pp re-factors the same ranks as tp x cp x dp x pp, parallel_state.py at
    core_v0.15.0). isolated: the survey's isolated EP (Tables 7-8, B.3.6): the ep ranks of a
    group run the same tokens through the whole dense path and split only the experts, so
    the dense work is replicated ep times and the experts' outputs are summed over the group
    instead of dispatched all-to-all. No framework in the knowledge base runs it: a what-if,
    never searched as a plan to launch. Needs ep > 1 dividing dp, and etp = tp."""
    zero: Annotated[int, Field(ge=0, le=3)] | None = None
    """What is sharded over the data-parallel ranks: 0 nothing (DDP); 1 the optimizer states
    (DeepSpeed ZeRO-1, Megatron's distributed optimizer, whose gradients stay whole); 2 also
    the gradients (ZeRO-2, FSDP SHARD_GRAD_OP); 3 also the weights (ZeRO-3, FSDP FULL_SHARD,
    FSDP2)."""
    shard_group: PositiveInt | None = None
    """Hybrid sharding: ZeRO shards over groups of this many of the dp x cp ranks, each group
    a replica of the others (verl's, SkyRL's and ROLL's fsdp_size: a ddp x fsdp device
    mesh). Weights, gradients and Adam states per GPU are those of one group; the gathers
    and reduce-scatters run inside a group, and the gradient shards are all-reduced across
    the replicas (every micro-batch under ZeRO-3, as FSDP's HYBRID_SHARD runs it; every
    optimizer step under ZeRO-1/2). Must divide dp x cp, so it is given with the training
    layout; unset means one group of every rank. Never searched."""
    frozen_shard_group: PositiveInt | None = None
    """The group ZeRO-3 shards the frozen models (reference, reward model) over where the
    framework builds their FSDP mesh from a key of their own: SkyRL's trainer.ref.fsdp_config
    .fsdp_size and ROLL's reference fsdp_size, whose defaults shard over every rank whatever
    the trained models' shard_group. Unset means the trained models' group, as verl 0.7's
    reference worker builds its mesh from the actor's fsdp_size. Weights per GPU and gathers
    of the frozen models follow it. Must divide dp x cp. Never searched."""
    recompute: Recompute | None = None
    """Activation checkpointing: none (every activation kept, attention by FlashAttention-style
    kernels that store no score matrix, as every framework runs it), selective (Megatron's
    core-attention recompute) or full (each layer's input only)."""
    precision: Precision | None = None
    """Matmul precision of training: bf16, or fp8 (Transformer Engine) with bf16 weights and
    fp32 master copies kept; unset means bf16. Never searched."""
    lora_rank: PositiveInt | None = None
    """Train LoRA adapters of this rank instead of every weight: the base stays frozen (and is
    the reference model), gradients and Adam states exist for the adapters only, and weight
    sync moves the adapters. Unset is full fine-tuning. Never searched."""
    micro_batch_tokens: PositiveInt | None = None
    """Tokens of one training micro-batch over its context-parallel group (the frameworks'
    per-GPU token budget times cp), as a launch fixes it; unset, the search takes the largest
    budget whose activations fit. Set, the activations are costed at it whether or not they
    fit. Never searched."""
    forward_micro_batch_tokens: PositiveInt | None = None
    """Tokens of one micro-batch of the forward-only passes (old log-probs, reference, values)
    over the context-parallel group, where a launch sizes them apart from training's (ROLL's
    infer_batch_size); unset, they run at the training micro-batch's budget. Never searched."""
    fp32_gradients: bool | None = None
    """Gradient buffers in fp32 beside bf16 weights: Megatron-LM with --bf16 unless
    --grad-reduce-in-bf16 (megatron/training/arguments.py), Megatron-Core DDP's
    grad_reduce_in_fp32 (verl sets it, NeMo-RL's recipes do not). Two more bytes per
    parameter wherever gradients are kept whole or ZeRO-2-sharded; ZeRO-3/FSDP's fp32
    gradient shard is already counted. The data-parallel gradient sync then runs in fp32 too
    (cost.training.gradient_sync_bytes). Unset means bf16 gradients. Never searched."""
    sequence_parallel: bool | None = None
    """Megatron's sequence parallelism inside the tensor group (Korthikanti et al., arXiv
    2205.05198): the norms and dropout between the tensor-parallel regions are split over
    the tp ranks instead of kept whole on each. The same bytes move (a reduce-scatter and an
    all-gather in place of each all-reduce), so only memory differs. Unset means on wherever
    tp > 1 (verl's Megatron default; slime passes --sequence-parallel); NeMo-RL's base
    config leaves it off. Never searched: off only adds memory."""
    offload: Offload | None = None
    """Unset, the search tries none and, where no layout fits without it, phase offload of
    state and frozen models and a CPU optimizer."""

    @model_validator(mode="after")
    def _shard_group_needs_zero(self) -> TrainPlan:
        if self.shard_group and self.zero == 0:
            raise ValueError("shard_group groups the ranks ZeRO shards over: it needs zero >= 1")
        if self.frozen_shard_group and self.zero is not None and self.zero < 3:
            raise ValueError(
                "frozen_shard_group groups the ranks ZeRO-3 shards the frozen models' weights "
                "over: it needs zero 3"
            )
        return self

    @model_validator(mode="after")
    def _interleaving_needs_stages(self) -> TrainPlan:
        if (self.virtual_stages or 1) > 1 and self.pp == 1:
            raise ValueError("virtual_stages > 1 interleaves pipeline stages: it needs pp > 1")
        if (self.first_stage_layers or self.last_stage_layers) and self.pp == 1:
            raise ValueError(
                "first_stage_layers and last_stage_layers split pipeline stages: they need pp > 1"
            )
        return self


class ModelPools(Strict):
    """GPUs of a model's own pool, as OpenRLHF places critic, reference and reward model
    (--critic_num_gpus_per_node and the like); a model without one shares the actor's
    training pool. The pools reuse the training layout's tp, pp, cp and ZeRO stage (the frozen
    models: plan.assessment's where given). A size left out is searched (rules.search
    .pool_variants): powers of two up to half the cluster, or none."""

    critic: PositiveInt | None = None
    reference: PositiveInt | None = None
    reward: PositiveInt | None = None

    @property
    def total(self) -> int:
        return (self.critic or 0) + (self.reference or 0) + (self.reward or 0)


class AssessmentPlan(Strict):
    """The layout of the frozen forward-only models (reference and reward model) wherever
    they run, on the trainer's GPUs or on their own pools (survey §3.1.1, Table 9's hybrid
    row: "TP/PP for Assessment, ZeRO-3 for Training"): tp x pp GPUs hold one replica, the
    rest of the pool runs data-parallel replicas of it, with no ZeRO sharding, gathers or
    optimizer state. Left out, they run in the training layout (tp, pp, cp, ZeRO) as
    before. On the trainer's GPUs a layout other than the training one re-lays the frozen
    weights for each assessment (a resharding buffer, M_reshard)."""

    tp: PositiveInt | None = None
    """GPUs of one replica's tensor group; unset (with the block given), 1."""
    pp: PositiveInt | None = None
    """Pipeline stages of one replica; unset (with the block given), 1."""


class Plan(Strict):
    """What the user fixes; every field left out is searched."""

    placement: Placement | None = None
    execution: Execution | None = None
    max_staleness: Annotated[int, Field(ge=0, le=16)] | None = None
    """Policy versions a trained sample may lag. 0 only with execution async: the on-policy
    stream (verl fully_async_policy with staleness_threshold 0), one batch per step that the
    trainer takes mini-batch by mini-batch as it completes."""
    critic: CriticForm | None = None
    """Unset, separate (a shared critic changes the trained model: never searched, only shown
    as a what-if)."""
    fusion: Fusion | None = None
    """Unset, none (fusion is offered as a variant where a framework in the KB runs it)."""
    fusion_chunk: PositiveInt | None = None
    """Inter-stage fusion's granularity (survey §4.3, takeaway 23): finished samples handed
    from the rollout to the assessment per hand-off, over the whole step's batch. Finer
    chunks hide more of the assessment behind the rollout's tail (all but the last chunk's
    share) and pay one hand-off latency per chunk; coarser ones hold more of the streamed
    assessment's activations beside the rollout engine (up to one micro-batch per rank).
    Unset with inter-stage fusion, the search tries a few (`cost.plans.FUSION_HANDOFFS`) and
    an estimate hands off one assessment micro-batch per data-parallel rank. Only with
    fusion inter-stage or both."""
    rollout: RolloutPlan = RolloutPlan()
    train: TrainPlan = TrainPlan()
    pools: ModelPools = ModelPools()
    assessment: AssessmentPlan | None = None
    """The frozen models' own layout (`AssessmentPlan`); unset, the training layout's."""


class Efficiency(Strict):
    """Overrides of the achieved fractions of peak; unset ones take the cost core's defaults."""

    prefill_compute: Fraction | None = None
    decode_hbm: Fraction | None = None
    expert_decode_hbm: Fraction | None = None
    """Share of HBM peak at which a decode step streams the routed experts' weights (the
    fused-MoE kernel's rate, beside its fixed per-layer time)."""
    decode_compute: Fraction | None = None
    forward_compute: Fraction | None = None
    train_compute: Fraction | None = None
    expert_compute: Fraction | None = None
    """Share of the training and forward matmul rate the routed experts reach at an expert FFN
    width of 768; other widths w reach w / (w + w0) with w0 = 768 x (1 / share - 1)."""
    scale_up_link: Fraction | None = None
    scale_out_link: Fraction | None = None


class Run(Strict):
    """Overrides of the run-level terms (cost.run.RunTerms); unset ones take its defaults,
    each cited or marked there as an assumption."""

    response_growth: Positive | None = None
    """Mean response length at the last step over the first, growing linearly (capped at
    max_response_tokens)."""
    oversampling: Annotated[float, Field(ge=1)] | None = None
    """Responses generated per response trained (dynamic sampling)."""
    checkpoint_every_steps: PositiveInt | None = None
    storage_gbytes_per_s_per_node: Positive | None = None
    """Checkpoint write bandwidth of one training node, decimal GB/s."""
    evaluation_every_steps: PositiveInt | None = None
    evaluation_seconds: NonNegative | None = None
    startup_seconds: NonNegative | None = None
    """Start-up of the run, paid again at every restart."""
    failures_per_gpu_hour: NonNegative | None = None
    pue: Annotated[float, Field(ge=1)] | None = None
    """Power usage effectiveness of the data centre."""


class Scenario(Strict):
    cluster: Cluster
    models: Models
    workload: Workload
    plan: Plan = Plan()
    efficiency: Efficiency = Efficiency()
    run: Run = Run()
