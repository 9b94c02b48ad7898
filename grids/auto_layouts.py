"""Automatic parallel layouts: the layouts worth evaluating for a grid (``parallelism = "auto"``).

A fixed list of layouts is either too short for some devices (a 70B model needs hundreds of
230 MB SRAM chips) or far too large for others (128 wafers for one batch-1 stream). ``auto``
generates, for every (device, model, precision) of the grid, a family of layouts around the
fewest devices that can hold the weights, and the grid evaluates their union; the analyses then
pick per point the feasible layout with the fewest devices or the best one on a comparison basis
(``sweep.analysis.basis``; docs/analysis.md, "Automatic layouts").

The family of one (device, model, precision), with ``n0`` the weights-only floor
``ceil(weight bytes / (usable fraction x device memory))``:

* ``tp``: powers of two up to the device's scale-up domain (at least 1, at most
  :data:`MAX_TP`) that divide the model's attention heads (tensor parallelism innermost, on the
  fastest links); a device whose domain is itself alone (PCIe cards, a single superchip) gets up
  to :data:`HOST_FABRIC_TP` over its host fabric (PCIe or the scale-out network), as engines run
  such servers;
* ``ep`` (mixture-of-experts models): 1 and the powers of two that divide the experts, with
  ``tp ep`` within the domain (or the host-fabric group above);
* ``pp``: the ladder :data:`PP_LADDER` up to the model's layers (pipeline stages across domains);
* kept when ``n0 <= tp ep pp <= max(HEADROOM n0, domain)`` and ``tp ep pp <= max_devices``: at
  least the weights fit, with room for the KV cache of larger batches and contexts, and every
  layout inside one scale-up domain.

The answers of the analyses are exact within this family (tests/test_auto_layouts.py checks them
against brute force over it); a layout outside it (a pp between two ladder steps, tp beyond the
domain) is not considered.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from grids.errors import SpecError
from grids.layouts import Layout, parse_layout

#: largest tensor-parallel degree generated
MAX_TP = 64
#: device budget of one replica when the spec gives none
DEFAULT_MAX_DEVICES = 1024
#: layouts up to this many times the weights-only floor (room for KV cache and activations)
HEADROOM = 4
#: largest tensor-parallel group offered over the host fabric (PCIe or scale-out) to a device whose
#: scale-up domain is one device: the cards of one PCIe server (8 L40S, H100 PCIe or RTX PRO
#: 6000 per server; vLLM and TensorRT-LLM run tp up to 8 over PCIe)
HOST_FABRIC_TP = 8
#: pipeline degrees generated: every degree up to 8, then steps of about 1.25x
PP_LADDER = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192,
             256)


def weights_floor(device, model, precision) -> int:
    """Fewest devices whose usable memory holds the weights alone (``n0``)."""
    cap = sum(t.capacity for t in device.tiers) * device.efficiency.capacity_fraction
    if cap <= 0:
        return 1
    dense = model.params_total - model.params_embed - model.params_lm_head * (not model.lm_head_tied)
    weight_bytes = (dense * precision.weight_bits
                    + model.params_attn * (precision.attn_weight_bits - precision.weight_bits)
                    + (model.params_embed + model.params_lm_head * (not model.lm_head_tied))
                    * precision.embed_bits) / 8.0
    return max(1, math.ceil(weight_bytes / cap))


def _powers_of_two(limit: int) -> list[int]:
    out, x = [], 1
    while x <= limit:
        out.append(x)
        x *= 2
    return out


def family(device, model, precision, max_devices: int = DEFAULT_MAX_DEVICES) -> list[Layout]:
    """The auto layouts of one (device, model, precision) (see the module docstring)."""
    n0 = weights_floor(device, model, precision)
    domain = max(1, int(device.domain_size))
    group = domain if domain > 1 else HOST_FABRIC_TP  # the largest tp x ep group
    top = max(HEADROOM * n0, group)
    tps = [t for t in _powers_of_two(min(group, MAX_TP)) if model.tp_divisor % t == 0] or [1]
    eps = [1]
    if model.n_experts:
        eps += [e for e in _powers_of_two(model.n_experts)[1:] if model.n_experts % e == 0]
    out = []
    for tp in tps:
        for ep in eps:
            if ep > 1 and tp * ep > group:
                continue
            for pp in PP_LADDER:
                if pp > model.n_layers:
                    break
                d = tp * ep * pp
                if d > top or d > max_devices:
                    break
                if d >= n0:
                    out.append(Layout(tp=tp, pp=pp, ep=ep))
    return out


def auto_layouts(devices: Iterable, models: Iterable, precisions: Iterable,
                 max_devices: int = DEFAULT_MAX_DEVICES) -> list[Layout]:
    """The union of :func:`family` over the grid, ordered by (devices, tp, ep, pp); each layout
    labelled with its normalised name."""
    if not (isinstance(max_devices, int) and not isinstance(max_devices, bool)
            and max_devices >= 1):
        raise SpecError(f"parallelism.max_devices must be a whole number >= 1, got "
                        f"{max_devices!r}")
    seen: dict[str, Layout] = {}
    for dev in devices:
        for model in models:
            for prec in precisions:
                for lay in family(dev, model, prec, max_devices):
                    seen.setdefault(lay.name, lay)
    ordered = sorted(seen.values(), key=lambda x: (x.devices, x.tp, x.ep, x.pp))
    return [parse_layout(x.name) for x in ordered]
