"""Parallel layouts: short names such as ``tp8``, ``tp2-pp2``, ``ep8``, ``tp4-ep2``, ``tp4-dp2``,
``tp8-off0.25``.

A name is ``-``-separated parts, each a degree ``tp<N>``, ``pp<N>``, ``ep<N>``, ``dp<N>`` (tensor,
pipeline, expert, data parallel; default 1), an offload fraction ``off<f>`` / ``offload<f>`` with
0 <= f < 1 (fraction of the weights held in the host tier; default 0), or ``spill`` (what does not
fit the device's memory may spill to the host tier; without it such a point does not fit).
``tp1`` is the single-device layout. One replica spans ``tp x pp x ep`` devices; ``dp`` replicas
make ``devices = tp x pp x ep x dp``. A layout keeps the spelling it was given as its ``label``
(``ep4`` stays ``ep4``, the coordinate a result is selected by); ``name`` is the normalised form
(``tp1-ep4``), used to tell two spellings of the same layout apart.

Meaning in the model (see ``docs/model.md``): attention and dense layers are tensor-split ``tp``
ways inside each of ``ep`` attention groups, each group serving ``batch / ep`` sequences; routed
experts are split ``ep`` ways (and each expert ``tp`` ways); layers are split into ``pp`` stages.
Whether a layout suits a *model* (``tp`` divides the attention heads, ``ep`` divides the experts,
``ep > 1`` needs a MoE model, ``pp`` at most the layers) is checked per (model, layout) pair: a
mismatch makes those grid points infeasible, not an error, unless it fits no model of the grid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from grids.errors import SpecError

_PART = re.compile(r"^(?P<key>tp|pp|ep|dp|offload|off)(?P<val>\d+(?:\.\d*)?|\.\d+)$")
SPILL = "spill"
MAX_DEGREE = 65536


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    offload: float = 0.0
    spill: bool = False
    label: str = field(default="", compare=False)  # the spelling given (name when empty)

    @property
    def devices_per_replica(self) -> int:
        return self.tp * self.pp * self.ep

    @property
    def devices(self) -> int:
        return self.devices_per_replica * self.dp

    @property
    def name(self) -> str:
        parts = [f"{k}{getattr(self, k)}" for k in ("tp", "pp", "ep", "dp")
                 if getattr(self, k) != 1 or k == "tp"]
        if self.offload:
            parts.append(f"off{self.offload:g}")
        if self.spill:
            parts.append(SPILL)
        return "-".join(parts)

    @property
    def display(self) -> str:
        """The label the layout was given, else its normalised name."""
        return self.label or self.name

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "label": self.display, "tp": self.tp, "pp": self.pp,
                "ep": self.ep, "dp": self.dp, "offload": self.offload, "spill": self.spill,
                "devices": self.devices}

    def problems_for_model(self, model, pads_heads: bool = False) -> list[str]:
        """Why this layout cannot run ``model`` (empty when it can); ``pads_heads``: some engine
        of the grid pads attention heads, so tp need not divide them."""
        out = []
        if model.tp_divisor % self.tp and not pads_heads:
            out.append(f"tp{self.tp} does not divide the {model.tp_divisor} attention heads of "
                       f"{model.id}")
        if self.ep > 1 and model.n_experts == 0:
            out.append(f"ep{self.ep} needs a mixture-of-experts model; {model.id} is dense")
        elif self.ep > 1 and model.n_experts % self.ep:
            out.append(f"ep{self.ep} does not divide the {model.n_experts} experts of {model.id}")
        if self.pp > model.n_layers:
            out.append(f"pp{self.pp} exceeds the {model.n_layers} layers of {model.id}")
        return out


def parse_layout(name: str) -> Layout:
    """Parse a layout name; raise SpecError saying what is wrong and the accepted form."""
    label = str(name).strip()
    text = label.lower()
    if not text:
        raise SpecError("empty layout name (write e.g. 'tp1', 'tp4-ep2', 'tp8-off0.25')")
    values: dict[str, float] = {}
    problems = []
    spill = False
    for part in text.split("-"):
        if part == SPILL:
            if spill:
                problems.append(f"layout {name!r}: spill given twice")
            spill = True
            continue
        m = _PART.match(part)
        if not m:
            problems.append(f"layout {name!r}: cannot read part {part!r} (parts are tp<N>, pp<N>, "
                            f"ep<N>, dp<N>, off<fraction>, spill, e.g. 'tp4-ep2' or "
                            f"'tp8-off0.25')")
            continue
        key = "offload" if m.group("key") in ("off", "offload") else m.group("key")
        if key in values:
            problems.append(f"layout {name!r}: {key} given twice")
        val = float(m.group("val"))
        if key == "offload":
            if not 0.0 <= val < 1.0:
                problems.append(f"layout {name!r}: offload fraction must be in [0, 1), got {val:g}")
        elif val != int(val) or not 1 <= val <= MAX_DEGREE:
            problems.append(f"layout {name!r}: {key} must be a whole number >= 1 and <= "
                            f"{MAX_DEGREE:,}, got {m.group('val')}")
        values[key] = val
    if problems:
        raise SpecError(problems)
    return Layout(tp=int(values.get("tp", 1)), pp=int(values.get("pp", 1)),
                  ep=int(values.get("ep", 1)), dp=int(values.get("dp", 1)),
                  offload=float(values.get("offload", 0.0)), spill=spill, label=label)


def expand_degrees(tp=(1,), pp=(1,), ep=(1,), dp=(1,), offload=(0.0,)) -> list[Layout]:
    """Cartesian product of degree lists (the spec's list form of ``parallelism``)."""
    out = []
    for t in tp:
        for p in pp:
            for e in ep:
                for d in dp:
                    for o in offload:
                        out.append(parse_layout(Layout(int(t), int(p), int(e), int(d),
                                                       float(o)).name))
    return out


CATALOG_LAYOUTS = ("tp1", "tp2", "tp4", "tp8", "tp2-pp2", "tp4-pp2", "pp4", "ep4", "ep8",
                   "tp4-ep2", "tp2-ep4", "tp4-dp2", "tp1-dp8", "tp8-off0.25", "tp1-off0.5")
