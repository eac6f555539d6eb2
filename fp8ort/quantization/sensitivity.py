"""Accuracy-target mode: keep the fewest MACs in float that bring the model's output SQNR up to a target.

The search runs on one ORT session of the *sensitivity model* (the QDQ emulation with an FP8 on/off input per
layer, ``rewrite.QdqEmitter``), so each candidate set of FP8 layers costs one inference over the search samples,
not a model rebuild:

0. if the all-FP8 model misses the target, residual inputs (Z) stay in high precision: their rounding noise lands
   on the skip path and saves no MACs;
1. measure each layer's output noise alone (only that layer in FP8, on ``RANKING_SAMPLES`` samples) — its
   sensitivity;
2. rank layers by noise per MAC (what keeping the layer in float buys for what it costs) and keep layers in float in
   that order until the additive noise model (per-layer noise powers add, scaled to the measured all-FP8 noise)
   predicts the target;
3. measure that choice; keep more layers while it falls short, then give back to FP8 the kept layers whose return
   still meets the target (``_give_back``: cheapest measured noise per MAC first);
4. check the result on the real (non-switch) QDQ build and keep more layers if that falls short.

Search samples (``SEARCH_SAMPLES``) are spread over all calibration batches and split into batches of
``SEARCH_BATCH``; a choice meets the target only when it does on *every* batch (the worst batch decides, not the pool),
so that held-out data like any one calibration batch meets it too. Outputs produced by a Softmax/LogSoftmax are
scored on the logits in front of it (``scored_outputs``): probabilities saturate, and their SQNR on a few samples is
dominated by the one step whose top class flips.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from . import model_io as mio

if TYPE_CHECKING:
    from .api import Plan

SEARCH_SAMPLES = 32  # samples on which candidate choices are measured
RANKING_SAMPLES = 8  # samples on which each layer's noise alone is measured (a ranking, not a decision)
SEARCH_BATCH = 8  # samples per search batch: the target must hold on every batch, not only on their pool
MAX_FINAL_CHECKS = 4
SEARCH_MARGIN_DB = 0.05
GIVE_BACK_MIN_SHARE = 0.002  # kept layers with a smaller share of the candidate MACs are not tried back in FP8
ESTIMATE_TOLERANCE_DB = 0.1  # switch model vs real build: equal up to float32 rounding
SHAPE_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")  # between a Softmax and the graph output


def scored_outputs(plan: Plan) -> list[str]:
    """The values whose SQNR the target is about: each graph output, or the logits in front of it when the output
    is a Softmax/LogSoftmax (probabilities saturate: a confident class hides its logit noise, a flipped one shows
    all of it, so their SQNR on a few samples is noisy and does not predict held-out data)."""
    producer = {o.name: n for n in plan.float_model.graph for o in n.outputs}
    names = []
    for v in plan.float_model.graph.outputs:
        node = producer.get(v.name)
        while node is not None and node.op_type in SHAPE_OPS and node.inputs and node.inputs[0] is not None:
            node = producer.get(node.inputs[0].name)  # opset < 13 exports: Flatten -> Softmax -> Reshape
        if node is None or node.op_type not in ("Softmax", "LogSoftmax"):
            names.append(v.name)
            continue
        logits = node.inputs[0]
        flat = producer.get(logits.name)
        if flat is not None and flat.op_type in ("Flatten", "Reshape") and flat.inputs[0] is not None:
            logits = flat.inputs[0]  # the same logits with their leading sample axis (the search slices samples)
        names.append(logits.name)
    return names


def _worst(noise: list[dict[str, float]], signal: list[dict[str, float]], outs: list[str]) -> float:
    """Largest noise/signal ratio over outputs and batches."""
    return max((n[o] / s[o] if s[o] > 0 else 0.0) for n, s in zip(noise, signal) for o in outs)


def _db(ratio: float) -> float:
    return float("inf") if ratio <= 0 else -10.0 * math.log10(ratio)


class _Evaluator:
    """Noise-to-signal ratio of the model outputs for any set of FP8 layers, through the switch model."""

    def __init__(self, plan: Plan, cands: list[str]) -> None:
        self.cands = cands
        self.feeds = _spread_feeds(plan, SEARCH_SAMPLES)
        self.outs = scored_outputs(plan)
        self.sess = mio.Session(mio.with_outputs(plan.build("qdq", keep_float=set(), switches=True), self.outs))
        first = self.feeds[0] if self.feeds else {}
        self.small = [{k: v[:RANKING_SAMPLES] for k, v in first.items()}]
        self.ref = [self._run(f, set()) for f in self.feeds]  # all switches 0: the float model
        self.small_ref = [self._run(self.small[0], set())] if self.ref else []
        self.runs = 0

    def _run(self, feed: dict, fp8: set[str]) -> dict[str, np.ndarray]:
        sw = {f"{c}.fp8_switch": np.array(1.0 if c in fp8 else 0.0, np.float32) for c in self.cands}
        return self.sess.run({**feed, **sw}, self.outs)

    def ratio(self, fp8: set[str], small: bool = False) -> float:
        """max over outputs and search batches of noise power / signal power with the layers ``fp8`` in FP8 (the
        rest float); ``small``: on the first ``RANKING_SAMPLES`` samples only (pooled)."""
        self.runs += 1
        noise, signal = [], []
        for feed, ref in zip(*((self.small, self.small_ref) if small else (self.feeds, self.ref))):
            got = self._run(feed, fp8)
            noise.append(
                {o: float(np.sum(np.square(got[o].astype(np.float64) - ref[o].astype(np.float64)))) for o in self.outs}
            )
            signal.append({o: float(np.sum(np.square(ref[o].astype(np.float64)))) for o in self.outs})
        return _worst(noise, signal, self.outs)


def _spread_feeds(plan: Plan, samples: int) -> list[dict]:
    """About ``samples`` samples taken evenly across all calibration batches, in batches of 8 (so that the search
    sees every kind of calibration input, not only the first files); the first batches when the batch is static."""
    feeds = plan.feeds
    static = any(s.shape and isinstance(s.shape[0], int) for s in plan.input_specs())
    if static or len(feeds) < 2 or any(set(f) != set(feeds[0]) for f in feeds):
        return plan.eval_feeds(samples)
    data = {k: np.concatenate([f[k] for f in feeds]) for k in feeds[0]}
    n = len(next(iter(data.values())))
    idx = np.unique(np.linspace(0, n - 1, min(samples, n)).round().astype(int))
    idx = np.concatenate([idx[i::RANKING_SAMPLES] for i in range(RANKING_SAMPLES)])  # first batch spans the data too
    return [{k: v[idx[i : i + SEARCH_BATCH]] for k, v in data.items()} for i in range(0, len(idx), SEARCH_BATCH)]


def search_float_layers(plan: Plan) -> None:
    """Fill ``plan.sensitivity`` (output SQNR in dB with only that layer in FP8), ``plan.kept_for_target`` and
    possibly ``plan.float_residuals``; notes go to ``plan.notes`` (and from there into the report)."""
    target = float(plan.config.accuracy_target_db)
    # the search aims SEARCH_MARGIN_DB above the target so that the final (non-switch) build, equal up to float32
    # rounding, does not miss it by a hair and force another layer into float
    budget = 10.0 ** (-(target + SEARCH_MARGIN_DB) / 10.0)
    final_budget = 10.0 ** (-target / 10.0)
    cands = [g.name for g in plan.groups if g.name not in plan.float_reason]
    if not cands or not plan.feeds:
        return
    ev = _Evaluator(plan, cands)
    all_fp8 = set(cands)
    r_all = ev.ratio(all_fp8)
    plan.notes.append(
        f"accuracy target {target:g} dB: all {len(cands)} candidate layers in FP8 give {_db(r_all):.1f} dB"
    )
    if r_all <= final_budget:
        return
    residual = frozenset(g.name for g in plan.groups if g.residual is not None and g.name in all_fp8)
    if residual and plan.config.fp8_activations:
        # An FP8 residual input adds its rounding noise straight onto the skip path and saves no MACs: below the
        # target, residual inputs stay in high precision (FP8 activations still flow into every X input).
        plan.float_residuals = residual
        ev = _Evaluator(plan, cands)
        r_all = ev.ratio(all_fp8)
        plan.notes.append(
            f"accuracy target {target:g} dB: residual inputs of {len(residual)} layer(s) kept in "
            f"high precision: {_db(r_all):.1f} dB with every candidate layer in FP8"
        )
        if r_all <= final_budget:
            return
    alone = {c: ev.ratio({c}, small=True) for c in cands}
    plan.sensitivity = {c: _db(r) for c, r in alone.items()}
    macs = {g.name: max(g.macs or 0, 1) for g in plan.groups}
    order = sorted(cands, key=lambda c: alone[c] / macs[c], reverse=True)
    scale = r_all / max(sum(alone.values()), 1e-30)  # additive model, fitted to the all-FP8 measurement

    keep: list[str] = []
    predicted = r_all
    for c in order:
        if predicted <= budget:
            break
        keep.append(c)
        predicted -= scale * alone[c]
    rest = [c for c in order if c not in keep]
    measured = ev.ratio(all_fp8 - set(keep))
    while measured > budget and rest:  # the model was optimistic: keep the next layers of the ranking
        keep.append(rest.pop(0))
        measured = ev.ratio(all_fp8 - set(keep))
    total = sum(macs[c] for c in cands)
    keep, measured, returned = _give_back(ev, all_fp8, keep, measured, budget, macs, total)
    rest = returned + rest
    checks = 0
    while True:  # the real build (FP8 residual inputs only where every consumer is FP8) decides
        final = _final_ratio(plan, keep)
        checks += 1
        if final <= final_budget or not rest or checks >= MAX_FINAL_CHECKS:
            break
        keep.append(rest.pop(0))
    plan.kept_for_target = [c for c in cands if c in keep]
    # the switch model's own estimate of the final choice: it must be what the real build gives (same samples)
    plan.search_estimate_db = _db(ev.ratio(all_fp8 - set(keep)))
    if abs(plan.search_estimate_db - _db(final)) > ESTIMATE_TOLERANCE_DB:
        plan.notes.append(
            f"internal inconsistency: the sensitivity model estimates {plan.search_estimate_db:.2f} dB for the final "
            f"choice, its real build gives {_db(final):.2f} dB; please report it with the model"
        )
    kept_macs = sum(macs[c] for c in keep)
    plan.notes.append(
        f"accuracy target {target:g} dB: {len(keep)} layer(s) ({100 * kept_macs / max(total, 1):.1f}% of candidate "
        f"MACs) kept in float give {_db(final):.1f} dB on {sum(len(next(iter(f.values()))) for f in ev.feeds)} "
        f"calibration samples ({ev.runs} sensitivity-model runs, {checks} full build(s))"
    )
    if final > final_budget:
        plan.notes.append(f"accuracy target {target:g} dB not reached: the closest found is {_db(final):.1f} dB")


def _give_back(
    ev: _Evaluator,
    all_fp8: set[str],
    keep: list[str],
    measured: float,
    budget: float,
    macs: dict[str, int],
    total: int,
) -> tuple[list[str], float, list[str]]:
    """Return to FP8 the kept layers the target does not need: measure each one's return alone (layer noise is far
    from additive in real models), then try them back in order of measured noise per MAC, cheapest first, each try
    measured on the current choice. Layers under ``GIVE_BACK_MIN_SHARE`` of the MACs are not worth the runs.
    Returns the new kept list, its noise ratio and the layers returned."""
    tries = [c for c in keep if macs[c] >= GIVE_BACK_MIN_SHARE * total]
    if len(keep) < 2 or not tries:
        return keep, measured, []
    alone_back = {c: ev.ratio(all_fp8 - (set(keep) - {c})) for c in tries}
    order = sorted(tries, key=lambda c: max(alone_back[c] - measured, 0.0) / macs[c])
    returned: list[str] = []
    changed = False  # alone_back holds until the first return
    for c in order:
        if len(keep) == 1:
            break
        trial = [k for k in keep if k != c]
        r = ev.ratio(all_fp8 - set(trial)) if changed else alone_back[c]
        if r <= budget:
            keep, measured, changed = trial, r, True
            returned.append(c)
    return keep, measured, returned


def _final_ratio(plan: Plan, keep: list[str]) -> float:
    outs = scored_outputs(plan)
    qs = mio.Session(mio.with_outputs(plan.build("qdq", keep_float=set(keep)), outs))
    fs = mio.Session(mio.with_outputs(plan.float_model, outs))
    noise, signal = [], []
    for feed in _spread_feeds(plan, SEARCH_SAMPLES):
        ref, got = fs.run(feed, outs), qs.run(feed, outs)
        noise.append({o: float(np.sum(np.square(got[o].astype(np.float64) - ref[o].astype(np.float64)))) for o in outs})
        signal.append({o: float(np.sum(np.square(ref[o].astype(np.float64)))) for o in outs})
    return _worst(noise, signal, outs)
