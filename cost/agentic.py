"""The rollout of agentic episodes: model turns interleaved with environment steps.

An episode of N turns (mean N, longest N_max) decodes r tokens per turn (longest turn L), and
after each turn waits e seconds for its environment (mean e, slowest e_max; setup u once per
episode); every observation but the last appends o tokens. Per engine (replica) with n
episodes, c of them in flight at once and b decoding at any moment:

- Context: a decoded token of turn j sits after S + (j-1)(r+o) tokens; over the episode's
  tokens the mean of (j-1) is m_N - 1/2, where m_N = E[N^2] / (2 E[N]) is cost.lengths'
  mean_position of the turn distribution, so decode reads KV at S + (m_N - 1/2)(r+o) + m_r.
- Prefill: with the context kept across turns (appended tokens and prefix caching: verl's
  sticky sessions, SkyRL's session routing) an episode prefills its prompt once (once per group
  with prefix caching) and then only its N - 1 observations; otherwise every turn prefills the
  whole context again, N S + N (m_N - 1/2)(r+o) tokens per episode.
- KV capacity: a kept context holds its KV while its environment step runs, so the episodes in
  flight are at most the engine's KV capacity for whole trajectories, c = min(n, capacity,
  episodes_per_engine); a re-prefilled one frees it, so only the decoding episodes need room.
- Decode batch (Little's law): an episode spends g(b) = N r tau(b) decoding and h = u + N e in
  its environment, so b = c g(b) / (g(b) + h), solved by fixed-point iteration from b = c
  (tau(b) is the decode step's latency at batch b, which grows with b, so the iteration falls
  monotonically to the fixed point). GPU time the episodes spend waiting is KV held or idle.
- Work: W_gpu = prefill + n N r tau(b) / b on the engine's GPUs; the environment pool is a
  resource of its own, W_env = n h / (slots per engine); W = max(W_gpu, W_env).
- Depth: the longest episode's chain, u + (N_max - 1)(r tau(b) + e) + e_max plus the drain of
  its longest turn at the shrinking batch (cost.rollout): turns x (decode + environment).
- Time, independent episodes: prefill + max((n - c) episodes of queued GPU work, their
  environment work) + the last wave's chain, held within Brent's max(W, D) <= T <= W + D.
  Lockstep (every turn waits for the batch's slowest decode and slowest environment step):
  n / c waves of N_max x (a turn's drain + max(e_max, c e / slots per engine)) + u.

With one turn, no observation and no environment time every term is the single-turn rollout's
(a test checks the two agree), which cost.evaluate runs in that case.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.batch import Batch
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.episode import Episode
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.lengths import mean_position
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.rollout import DecodeModel, RolloutExtras, Stream, length_grids
from rlmguide.cost.stage import StageCost

FORMULAS: tuple[tuple[str, str, str], ...] = (
    (
        "Mean context of a decoded token",
        "S + (m_N - 1/2)(r + o) + m_r",
        "m_N = E[N^2] / (2 E[N]) over the turn distribution (mean N, longest N_max), m_r the "
        "same over one turn's length (mean r, longest L)",
    ),
    (
        "Prefill per episode, context kept",
        "S + (N - 1) o",
        "the prompt once (once per group with prefix caching), then every observation",
    ),
    (
        "Prefill per episode, re-prefilled",
        "N S + N (m_N - 1/2)(r + o)",
        "every turn j prefills S + (j - 1)(r + o) again (context rebuilt, or no prefix caching)",
    ),
    (
        "Episodes in flight per engine",
        "c = min(n, KV capacity / (S + N r + (N - 1) o), episodes_per_engine)",
        "kept contexts hold their KV while their environment step runs; re-prefilled ones "
        "free it (c = n, the decode batch bounded by the KV room)",
    ),
    (
        "Decode batch",
        "b = c N r tau(b) / (N r tau(b) + u + N e)",
        "Little's law: episodes decode a share of their time; a fixed point from b = c, "
        "tau(b) the decode step's latency",
    ),
    ("GPU work", "W_gpu = prefill + n N r tau(b) / b", "every decoded token at batch b"),
    (
        "Environment work",
        "W_env = n (u + N e) / (slots / engines)",
        "the environment pool as a resource of its own: the bound is 'environment'",
    ),
    (
        "Depth: the longest episode's chain",
        "D = u + (N_max - 1)(r tau(b) + e) + e_max + drain(L)",
        "turns x (decode + environment), the longest turn draining at the shrinking batch",
    ),
    (
        "Rollout time, independent episodes",
        "T = prefill + max((n - c) N r tau(b) / b, (n - c)(u + N e) / (slots / engines)) + D",
        "held within max(W, D) <= T <= W + D, W = max(W_gpu, W_env)",
    ),
    (
        "Rollout time, lockstep",
        "T = prefill + (n / c)(N_max (drain_turn(c N / N_max) + max(e_max, c e / (slots / "
        "engines))) + u)",
        "every turn waits for the batch's slowest decode and slowest environment step",
    ),
)
"""The formulas above as the site states them (quantity, formula, how to read it)."""

FIXED_POINT_ITERATIONS = 12
"""Iterations of the decode batch's fixed point. From b = c the iteration falls monotonically
toward the fixed point (so a batch not yet converged is slightly too large, the optimistic
side); tests/test_cost_agentic.py checks the residual of Little's law within 0.1%."""


@dataclass(frozen=True, slots=True)
class Turns:
    """Scalars of the episode the formulas share."""

    turn: float
    """r: mean tokens of a model turn."""
    longest_turn: float
    """L: the longest turn."""
    offset: float
    """Mean context before a decoded token's turn: (m_N - 1/2)(r + o)."""
    last_offset: float
    """Context before the longest episode's last turn: (N_max - 1)(r + o)."""
    environment: float
    """h: environment seconds per episode, u + N e."""

    @classmethod
    def of(cls, episode: Episode, turn: float, longest_turn: float) -> Turns:
        step = turn + episode.observation_tokens
        m = mean_position(episode.turns, episode.max_turns)
        return cls(
            turn=turn,
            longest_turn=longest_turn,
            offset=(m - 0.5) * step,
            last_offset=(episode.max_turns - 1.0) * step,
            environment=episode.setup_seconds + episode.turns * episode.environment_seconds,
        )


def decode_batch(
    model: DecodeModel,
    in_flight: FloatArray,
    context: FloatArray,
    decode_seconds_per_step: float,
    environment: float,
) -> FloatArray:
    """b = c g(b) / (g(b) + h) with g(b) = (decode steps per episode) x tau(b): the sequences
    decoding at once when c episodes are in flight and each waits h seconds on its
    environment. Without environment time b = c."""
    if environment <= 0.0:
        return in_flight
    b = in_flight
    for _ in range(FIXED_POINT_ITERATIONS):
        decoding = decode_seconds_per_step * model.step_seconds(b[:, None], context[:, None])[:, 0]
        b = np.maximum(in_flight * decoding / (decoding + environment), 1.0)
    return np.minimum(b, in_flight)


def agentic_rollout_stage(
    fig: ModelFigures,
    layout: RolloutLayout,
    batch: Batch,
    episode: Episode,
    turn_tokens: float,
    longest_turn: float,
    capacity: FloatArray,
    decode_caps: FloatArray,
    prefix_caching: BoolArray,
    hw: Hardware,
    fabric: Fabric,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> tuple[StageCost, RolloutExtras, dict[str, FloatArray]]:
    """The rollout stage of agentic episodes, its extras and the agentic terms per plan
    (episodes in flight, decode batch, environment work, chain, KV kept)."""
    model = DecodeModel(fig, layout, hw, fabric, eff, overheads)
    t = Turns.of(episode, turn_tokens, longest_turn)
    prompt, N, r = batch.prompt_tokens, episode.turns, t.turn
    n = np.ceil(batch.generated_sequences / layout.dp)
    kept = prefix_caching & episode.appended
    # Kept contexts hold their KV across environment steps: the memory capacity (sized for
    # whole trajectories) bounds the episodes in flight; dropped ones bound only the decoding.
    in_flight = np.minimum(n, np.maximum(capacity, 1.0))
    in_flight = np.minimum(in_flight, episode.episodes_per_engine)
    turn_end = prompt + t.offset + r
    room_decoding = np.maximum(capacity, 1.0) * batch.sequence_tokens / turn_end
    room_decoding = np.minimum(room_decoding, layout.seq_cap(overheads.max_seqs_per_replica))
    in_flight = np.where(kept, in_flight, np.minimum(n, episode.episodes_per_engine))

    # One turn's length distribution; partial rollouts cap the whole chain by the same share.
    turn_batch = replace(batch, response_tokens=r, longest_response=t.longest_turn)
    widths, survival, position = length_grids(
        turn_batch, np.minimum(decode_caps, t.longest_turn), overheads.length_segments
    )
    tail_per_sequence = (widths * survival).sum(axis=1)
    turn_context = prompt + (widths * survival * position).sum(axis=1) / tail_per_sequence
    context = turn_context + t.offset
    share = np.minimum(decode_caps / batch.longest_response, 1.0)

    b = decode_batch(model, in_flight, context, N * r, t.environment)
    b = np.where(kept, b, np.minimum(b, room_decoding))
    at_b = model.step(b[:, None], context[:, None])
    per_token = at_b.seconds[:, 0] / b
    tau = at_b.seconds[:, 0]

    # The longest episode's last turn drains from the decode batch at its full context.
    last = prompt + t.last_offset + position
    drain_seconds, drain_hbm, drain_sent = model.drain(
        np.maximum(b[:, None] * survival, 1.0), last, widths
    )
    env_chain = episode.setup_seconds + (episode.max_turns - 1.0) * episode.environment_seconds
    env_chain += episode.environment_max_seconds
    chain = share * (env_chain + (episode.max_turns - 1.0) * r * tau) + drain_seconds

    decode_tokens = n * N * r
    wave_tokens = in_flight * ((N - 1.0) * r + tail_per_sequence)
    queued_tokens = np.maximum(decode_tokens - wave_tokens, 0.0)
    slots = episode.environment_slots / layout.dp  # the pool's share of one engine
    env_work = n * t.environment / slots
    queued_env = np.maximum(n - in_flight, 0.0) * t.environment / slots

    # Prefill: the prompt (once per group with prefix caching), then the observations (kept
    # contexts) or every turn's whole context again.
    prompts = np.where(prefix_caching, np.maximum(n / batch.generated_per_prompt, 1.0), n)
    rate = hw.matmul_rate(layout.fp8) * eff.prefill_compute
    first = model.prefill_token(prompt, rate)
    later = model.prefill_token(2.0 * turn_end, rate)
    redone = (N - 1.0) * prompt + N * t.offset
    later_per_episode = np.where(kept, (N - 1.0) * episode.observation_tokens, redone)
    later_tokens = n * later_per_episode
    prompt_stage = prompt * first.seconds
    prefill_seconds = (prompts + layout.pp - 1.0) * prompt_stage + later_tokens * later.seconds
    prefill_work = prompts * prompt_stage + later_tokens * later.seconds
    # The longest episode's later turns: its observations, or sum over j = 2..N_max of the
    # context S + (j - 1)(r + o).
    longest = episode.max_turns
    redone_longest = (longest - 1.0) * prompt + t.last_offset * longest / 2.0
    longest_later = np.where(kept, (longest - 1.0) * episode.observation_tokens, redone_longest)
    prefill_depth = layout.pp * prompt_stage + share * longest_later * later.seconds

    gpu_work = prefill_work + decode_tokens * per_token
    work = np.maximum(gpu_work, env_work)
    if episode.lockstep:
        # Each turn: the batch decodes together (shrinking as episodes end), then waits for
        # its slowest environment step (or the pool's queue); a wave is as large as the KV
        # cache lets its episodes decode together.
        c = np.where(kept, in_flight, np.minimum(in_flight, room_decoding))
        mean_batch = np.maximum(c * N / episode.max_turns, 1.0)
        turn_drain, _, _ = model.drain(
            np.maximum(mean_batch[:, None] * survival, 1.0), prompt + t.offset + position, widths
        )
        queue = c * episode.environment_seconds / slots
        env_turn = np.maximum(episode.environment_max_seconds, queue)
        wave = episode.max_turns * (turn_drain + env_turn) + episode.setup_seconds
        at_c = model.step(c[:, None], context[:, None])
        gpu_work = prefill_work + decode_tokens * at_c.seconds[:, 0] / c
        work = np.maximum(gpu_work, env_work)
        chain = share * wave
        seconds = prefill_seconds + (n / c) * chain
    else:
        seconds = prefill_seconds + np.maximum(queued_tokens * per_token, queued_env) + chain
    depth = prefill_depth + chain
    seconds = np.clip(seconds, np.maximum(work, depth), work + depth)

    # FLOPs do not depend on the layout: every decoded token at its mean context, every
    # prefilled token once.
    episodes = float(batch.generated_sequences)
    params_flop, attention_flop = 2.0 * fig.params_active, fig.attention_flops_per_context
    decode_context = prompt + t.offset + mean_position(r, t.longest_turn)
    decode_flop = episodes * N * r * (params_flop + attention_flop * decode_context)
    first_prompts = np.where(prefix_caching, episodes / batch.generated_per_prompt, episodes)
    prefill_flop = first_prompts * prompt * (params_flop + attention_flop * prompt / 2.0)
    prefill_flop = prefill_flop + episodes * later_per_episode * (
        params_flop + attention_flop * turn_end
    )

    full_steps = decode_tokens / b
    prefill_tokens = prompts * prompt + later_tokens
    gpus = layout.gpus
    queued_steps = queued_tokens / b
    stage = StageCost(
        seconds=seconds,
        work_seconds=work,
        depth_seconds=depth,
        work_flop=decode_flop + prefill_flop,
        hbm_bytes=gpus * (queued_steps * at_b.hbm_bytes[:, 0] + drain_hbm),
        link_bytes=gpus
        * (queued_steps * at_b.link_bytes[:, 0] + drain_sent + prefill_tokens * first.link_bytes),
        gpus=gpus,
        compute_seconds=prompts * prompt * first.compute
        + later_tokens * later.compute
        + full_steps * at_b.compute[:, 0],
        hbm_seconds=full_steps * at_b.hbm[:, 0],
        scale_up_seconds=prefill_tokens * first.scale_up + full_steps * at_b.scale_up[:, 0],
        scale_out_seconds=prefill_tokens * first.scale_out + full_steps * at_b.scale_out[:, 0],
        environment_seconds=env_work,
    )
    lone = model.step_seconds(np.ones((len(n), 1)), np.full((len(n), 1), prompt))[:, 0]
    extras = RolloutExtras(
        sequences_per_replica=n,
        concurrency=np.where(kept, in_flight, b),
        min_token_seconds=lone,
        decode_cap_tokens=decode_caps,
        # Streamed, episodes are admitted as others end: the pool is busy for its work, and
        # the longest episode's chain is what k steps must last where it must finish in them.
        stream=Stream(np.where(kept, in_flight, b), work, depth),
    )
    parts = {
        "episodes_in_flight_per_engine": in_flight,
        "decode_batch": b,
        "kv_kept": kept.astype(np.float64),
        "prefill_seconds": prefill_seconds,
        "gpu_work_seconds": gpu_work,
        "environment_work_seconds": env_work,
        "episode_chain_seconds": chain,
        "gpu_wait_seconds": np.maximum(seconds - gpu_work, 0.0),
    }
    return stage, extras, parts
