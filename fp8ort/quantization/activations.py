"""The activations an FP8Conv / FP8MatMul absorbs, and how exporters write them.

Single ops (Relu, Clip with constant bounds, Sigmoid, HardSigmoid, HardSwish, Gelu) and the decompositions torch and
Hugging Face exports contain, in any operand order and association:

* SiLU: ``x * Sigmoid(x)``;
* HardSwish: ``x * HardSigmoid(x)`` (alpha 1/6, beta 0.5), ``x * Clip(x + 3, 0, 6) / 6``;
* HardSigmoid: ``Clip(x + 3, 0, 6) / 6``;
* GELU (erf): ``0.5 * x * (1 + Erf(x / sqrt(2)))``;
* GELU (tanh): ``0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.

Products are matched as a whole: a tree of Mul (and Div by a constant, Pow by 2 or 3) flattens into a constant and a
list of factors, so ``(x * 0.5) * g``, ``x * (g * 0.5)`` and ``(x * g) / 2`` are one pattern. A match is accepted only
when every tensor inside it has no consumer outside it (the input ``x`` included).
"""

from __future__ import annotations

import dataclasses
import math

import onnx_ir as ir

from .prepare import const_array, is_std

NAMES = ("", "Relu", "Clip", "Sigmoid", "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh")
HARD_SWISH_ALPHA = 1.0 / 6.0
HARD_SIGMOID_DEFAULTS = (0.2, 0.5)  # ONNX HardSigmoid's alpha, beta
CLIP_DEFAULTS = (0.0, 6.0)  # the contract's activation_alpha/beta defaults for Clip
_INNER_OPS = frozenset({"Mul", "Div", "Add", "Pow", "Erf", "Tanh", "Sigmoid", "HardSigmoid", "Clip"})
_SEARCH_NODES = 16  # nodes after the input that a decomposition may span (tanh-GELU has 9)
_RTOL = 1e-4


@dataclasses.dataclass(frozen=True)
class Activation:
    """One value of the ``activation`` attribute, with ``activation_alpha``/``activation_beta`` where it has them."""

    name: str = ""
    alpha: float | None = None
    beta: float | None = None

    def attributes(self) -> list[ir.Attr]:
        """The node attributes of this activation in the ``com.fp8ort`` contract."""
        attrs: list[ir.Attr] = [ir.AttrString("activation", self.name)]
        if self.alpha is not None:
            attrs.append(ir.AttrFloat32("activation_alpha", float(self.alpha)))
        if self.beta is not None:
            attrs.append(ir.AttrFloat32("activation_beta", float(self.beta)))
        return attrs

    def __str__(self) -> str:
        if self.alpha is None:
            return self.name
        return f"{self.name}({self.alpha:g}, {self.beta:g})"


NONE = Activation()


@dataclasses.dataclass(frozen=True)
class ActivationMatch:
    """An activation found after a value: the nodes it spans (graph order) and the value it produces."""

    activation: Activation
    nodes: tuple[ir.Node, ...]
    output: ir.Value


def _close(a: float | None, b: float) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=_RTOL, abs_tol=1e-7)


def _scalar(v: ir.Value | None) -> float | None:
    c = const_array(v)
    if c is None or c.size != 1 or c.dtype.kind not in "fiu":
        return None
    return float(c.reshape(()))


def _clip_bounds(node: ir.Node) -> tuple[float, float] | None:
    """Constant (min, max) of a Clip (inputs since opset 11, attributes before), missing ones as -inf/inf."""
    lo, hi = -math.inf, math.inf
    if "min" in node.attributes or "max" in node.attributes:
        lo = node.attributes.get_float("min", lo)
        hi = node.attributes.get_float("max", hi)
    for i in (1, 2):
        if len(node.inputs) > i and node.inputs[i] is not None:
            c = _scalar(node.inputs[i])
            if c is None:
                return None
            lo, hi = (c, hi) if i == 1 else (lo, c)
    return lo, hi


def _single_op(node: ir.Node) -> Activation | None:
    if node.domain not in ("", "ai.onnx") or len(node.outputs) != 1:
        return None
    op = node.op_type
    if op in ("Relu", "Sigmoid", "HardSwish"):
        return Activation(op)
    if op == "Clip":
        bounds = _clip_bounds(node)
        return None if bounds is None else Activation("Clip", *bounds)
    if op == "HardSigmoid":
        a, b = HARD_SIGMOID_DEFAULTS
        return Activation("HardSigmoid", node.attributes.get_float("alpha", a), node.attributes.get_float("beta", b))
    if op == "Gelu":
        approx = node.attributes.get_string("approximate", "none")
        return {"none": Activation("Gelu"), "tanh": Activation("GeluTanh")}.get(approx)
    return None


class _Walker:
    """Backward matching of one candidate root; collects the nodes a successful match spans."""

    def __init__(self, x: ir.Value) -> None:
        self.x = x
        self.nodes: list[ir.Node] = []

    def product(self, v: ir.Value) -> tuple[float, list[ir.Value]]:
        """``v`` as constant * prod(factors), flattening Mul, Div by a constant and Pow by 2 or 3."""
        if v is self.x:
            return 1.0, [v]
        if len(self.nodes) > _SEARCH_NODES:  # not an activation of x any more: stop walking up the graph
            return 1.0, [v]
        c = _scalar(v)
        if c is not None:
            return c, []
        p = v.producer()
        if is_std(p, "Mul"):
            self.nodes.append(p)
            c1, f1 = self.product(p.inputs[0])
            c2, f2 = self.product(p.inputs[1])
            return c1 * c2, f1 + f2
        if is_std(p, "Div"):
            d = _scalar(p.inputs[1])
            if d is not None and d != 0.0:
                self.nodes.append(p)
                c1, f1 = self.product(p.inputs[0])
                return c1 / d, f1
        if is_std(p, "Pow"):
            e = _scalar(p.inputs[1])
            if e in (2.0, 3.0):
                self.nodes.append(p)
                c1, f1 = self.product(p.inputs[0])
                return c1 ** int(e), f1 * int(e)
        return 1.0, [v]

    def op(self, v: ir.Value, op: str) -> ir.Node | None:
        p = v.producer()
        if not is_std(p, op):
            return None
        self.nodes.append(p)
        return p

    def add_constant(self, v: ir.Value, const: float) -> ir.Value | None:
        """For ``v = Add(const, t)`` (either order), ``t``."""
        p = self.op(v, "Add")
        if p is None:
            return None
        for i in (0, 1):
            if _close(_scalar(p.inputs[i]), const):
                return p.inputs[1 - i]
        return None

    def is_x_times(self, v: ir.Value, const: float) -> bool:
        c, f = self.product(v)
        return _close(c, const) and len(f) == 1 and f[0] is self.x

    def relu6_of_x_plus_3(self, v: ir.Value) -> bool:
        """``v = Clip(x + 3, 0, 6)``."""
        clip = self.op(v, "Clip")
        if clip is None or _clip_bounds(clip) != (0.0, 6.0):
            return False
        return self.add_constant(clip.inputs[0], 3.0) is self.x

    def erf_gate(self, g: ir.Value) -> bool:
        """``g = 1 + Erf(x / sqrt(2))``."""
        t = self.add_constant(g, 1.0)
        erf = None if t is None else self.op(t, "Erf")
        return erf is not None and self.is_x_times(erf.inputs[0], 1.0 / math.sqrt(2.0))

    def tanh_gate(self, g: ir.Value) -> bool:
        """``g = 1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3))`` (or ``sqrt(2/pi) * x * (1 + 0.044715 x^2)``)."""
        t = self.add_constant(g, 1.0)
        tanh = None if t is None else self.op(t, "Tanh")
        if tanh is None:
            return False
        c, f = self.product(tanh.inputs[0])
        if not _close(c, math.sqrt(2.0 / math.pi)):
            return False
        rest = [v for v in f if v is not self.x]
        if len(f) == 1 and not rest:  # x + k x^3 as one Add
            return False
        if len(f) == 1:  # sqrt(2/pi) * (x + k x^3)
            s = self.op(rest[0], "Add")
            if s is None:
                return False
            for i in (0, 1):
                if s.inputs[i] is self.x:
                    k, cube = self.product(s.inputs[1 - i])
                    return _close(k, 0.044715) and len(cube) == 3 and all(v is self.x for v in cube)
            return False
        if len(f) == 2 and len(rest) == 1:  # sqrt(2/pi) * x * (1 + k x^2)
            sq = self.add_constant(rest[0], 1.0)
            if sq is None:
                return False
            k, square = self.product(sq)
            return _close(k, 0.044715) and len(square) == 2 and all(v is self.x for v in square)
        return False

    def match(self, root: ir.Node) -> Activation | None:
        c, factors = self.product(root.outputs[0])
        n_x = sum(v is self.x for v in factors)
        rest = [v for v in factors if v is not self.x]
        if n_x == 1 and len(rest) == 1:
            g = rest[0]
            if _close(c, 1.0):
                if (sig := self.op(g, "Sigmoid")) is not None and sig.inputs[0] is self.x:
                    return Activation("Silu")
                self.nodes = self.nodes[: len(self.nodes) - (sig is not None)]
                hs = self.op(g, "HardSigmoid")
                if (
                    hs is not None
                    and hs.inputs[0] is self.x
                    and _close(hs.attributes.get_float("alpha", 0.2), HARD_SWISH_ALPHA)
                    and _close(hs.attributes.get_float("beta", 0.5), 0.5)
                ):
                    return Activation("HardSwish")
                return None
            if _close(c, HARD_SWISH_ALPHA):
                return Activation("HardSwish") if self.relu6_of_x_plus_3(g) else None
            if _close(c, 0.5):
                mark = len(self.nodes)
                if self.erf_gate(g):
                    return Activation("Gelu")
                del self.nodes[mark:]
                return Activation("GeluTanh") if self.tanh_gate(g) else None
        if n_x == 0 and len(rest) == 1 and _close(c, HARD_SWISH_ALPHA) and self.relu6_of_x_plus_3(rest[0]):
            return Activation("HardSigmoid", HARD_SWISH_ALPHA, 0.5)
        return None


def _forward(x: ir.Value, claimed: set[int]) -> list[ir.Node]:
    """Nodes reachable from ``x`` through ops that decompositions use, nearest first (at most ``_SEARCH_NODES``)."""
    seen: dict[int, ir.Node] = {}
    frontier = [x]
    while frontier and len(seen) < _SEARCH_NODES:
        nxt = []
        for v in frontier:
            for use in v.uses():
                n = use.node
                if id(n) in seen or id(n) in claimed or n.op_type not in _INNER_OPS or n.domain not in ("", "ai.onnx"):
                    continue
                seen[id(n)] = n
                nxt.extend(n.outputs)
        frontier = nxt
    return list(seen.values())


def _self_contained(x: ir.Value, nodes: list[ir.Node], root: ir.Node) -> bool:
    """Every value the nodes read from each other, and ``x``, is read by these nodes only."""
    ids = {id(n) for n in nodes}
    if x.is_graph_output() or any(id(u.node) not in ids for u in x.uses()):
        return False
    for n in nodes:
        if n is root:
            continue
        for out in n.outputs:
            if out.is_graph_output() or any(id(u.node) not in ids for u in out.uses()):
                return False
    return True


def match_activation(x: ir.Value, claimed: set[int]) -> ActivationMatch | None:
    """The activation applied to ``x`` and nothing else, if there is one (nodes in ``claimed`` are taken)."""
    if x.is_graph_output() or x.dtype not in (ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16):
        return None
    users = {id(u.node): u.node for u in x.uses()}
    if not users or any(i in claimed for i in users):
        return None
    if len(users) == 1:
        node = next(iter(users.values()))
        act = _single_op(node)
        if act is not None and node.inputs[0] is x and all(v is not x for v in node.inputs[1:]):
            return ActivationMatch(act, (node,), node.outputs[0])
    candidates = [n for n in _forward(x, claimed) if n.op_type in ("Mul", "Div")]
    for root in reversed(candidates):  # the farthest root first: the largest decomposition wins
        walker = _Walker(x)
        act = walker.match(root)
        if act is None:
            continue
        nodes = list({id(n): n for n in [root, *walker.nodes]}.values())
        if not _self_contained(x, nodes, root) or any(id(n) in claimed for n in nodes):
            continue
        graph = root.graph
        order = {id(n): i for i, n in enumerate(graph)} if graph is not None else {}
        nodes.sort(key=lambda n: order.get(id(n), 0))
        return ActivationMatch(act, tuple(nodes), root.outputs[0])
    return None
