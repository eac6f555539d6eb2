"""Accuracy-target mode: keep the fewest, most sensitive layers in float until the model meets a target SQNR."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import model_io as mio

if TYPE_CHECKING:
    from .api import Plan

SEARCH_SAMPLES = 8


def search_float_layers(plan: Plan) -> None:
    """Fill ``plan.sensitivity`` (SQNR of the outputs with only that layer in FP8) and ``plan.kept_for_target``.

    Layers are ranked by the output noise each causes alone; the smallest prefix of that ranking kept in float
    that meets ``accuracy_target_db`` on the calibration data is found by doubling, then bisection.
    """
    target = float(plan.config.accuracy_target_db)
    feeds = plan.eval_feeds(SEARCH_SAMPLES)
    out_names = [v.name for v in plan.float_model.graph.outputs]
    fs = mio.Session(mio.with_outputs(plan.float_model, out_names))
    cache = [fs.run(f, out_names) for f in feeds]
    scores: dict[frozenset, float] = {}

    def score(keep: set[str]) -> float:
        key = frozenset(keep)
        if key not in scores:
            acc = plan.output_sqnr(plan.build("qdq", keep_float=set(keep)), out_names, feeds, cache)
            scores[key] = min(acc.db(o) for o in out_names)
        return scores[key]

    cands = [g.name for g in plan.groups if g.name not in plan.float_reason]
    full = score(set())
    plan.notes.append(f"accuracy target {target} dB: all candidate layers in FP8 give {full:.1f} dB")
    if full >= target or not cands:
        return
    everything = set(cands)
    plan.sensitivity = {name: score(everything - {name}) for name in cands}
    order = sorted(cands, key=lambda name: plan.sensitivity[name])
    lo, k = 0, 1
    while k < len(order) and score(set(order[:k])) < target:
        lo, k = k, 2 * k
    hi = min(k, len(order))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if score(set(order[:mid])) >= target:
            hi = mid
        else:
            lo = mid
    plan.kept_for_target = order[:hi]
    plan.notes.append(f"accuracy target {target} dB: {hi} layer(s) kept in float give "
                      f"{score(set(order[:hi])):.1f} dB on the calibration data ({len(scores)} evaluations)")
