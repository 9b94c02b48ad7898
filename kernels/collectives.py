"""Collective communication by algorithm: all-reduce, all-to-all and pipeline hops on the
interconnect level a group of devices spans  [docs/model.md section 5].

Numba scalar helpers inlined into :mod:`kernels.roofline`. Each function reads the platform row
``hw`` (hardware x engine, :data:`kernels.params.HW_FIELDS`): the hardware gives each level's
bandwidth and per-step latency, the achievable fraction of a link in collectives
(``link_efficiency``), the direct links the scale-up bandwidth splits over (``peer_links``, 0 = a
switched fabric) and the in-switch reduction (``switch_efficiency``, 0 = none); the engine gives
its collective library's per-call cost, its custom all-reduce (size and group limits, cost,
bandwidth share, one-shot/two-shot thresholds) and whether it picks the fastest algorithm.

Algorithms of an all-reduce of ``M`` bytes over ``n`` devices, with ``B`` the achievable
bandwidth per device the group can use, ``a`` the link's per-step latency, ``s = ceil(log2 n)``,
``r`` the ring's steps (:func:`ring_steps`: ``2 (n-1)``, fewer on a torus):

====================  ==========================  ===========================================
algorithm             latency                     bytes over ``B`` per device
====================  ==========================  ===========================================
ring                  ``o + r a``                 ``2 (n-1)/n M``
tree (scale-out)      ``o + 2 s a``               ``2 M``
one-shot (custom)     ``o_c + s a``               ``(n-1) M``           (at ``B e_c``)
two-shot (custom)     ``o_c + 2 s a``             ``2 (n-1)/n M``       (at ``B e_c``)
in-switch (NVLS)      ``o_s + 2 a``               ``(n+1)/n M``         (at ``bw e_s``)
====================  ==========================  ===========================================

Units: bytes [B], bandwidth [B/s], time [s]; counts are plain numbers.
"""

from __future__ import annotations

import math

from kernels.accelerate import scalar_jit
from kernels.params import HW

H_PKG, H_PBW, H_PLAT = HW["package_size"], HW["package_bandwidth"], HW["package_latency"]
H_DOM, H_LBW, H_LLAT = HW["domain_size"], HW["link_bandwidth"], HW["link_latency"]
H_SBW, H_SLAT = HW["scaleout_bandwidth"], HW["scaleout_latency"]
H_LEFF, H_PEERS, H_SWEFF = HW["link_efficiency"], HW["peer_links"], HW["switch_efficiency"]
H_COV, H_SWOV = HW["collective_overhead"], HW["in_switch_overhead"]
H_CARB, H_CARG = HW["custom_ar_max_bytes"], HW["custom_ar_max_group"]
H_CAROV, H_CAREFF = HW["custom_ar_overhead"], HW["custom_ar_efficiency"]
H_OS4, H_OS8, H_FAST = (HW["oneshot_max_bytes"], HW["oneshot_max_bytes_large"],
                        HW["fastest_collective"])

#: interconnect levels, innermost first
LEVEL_PACKAGE, LEVEL_DOMAIN, LEVEL_SCALEOUT = 0, 1, 2
#: all-reduce algorithms (the second value :func:`allreduce_time` returns); -1 = no collective
ALG_NONE, ALG_RING, ALG_TREE, ALG_ONESHOT, ALG_TWOSHOT, ALG_SWITCH = -1, 0, 1, 2, 3, 4


@scalar_jit
def link_for(hw, n):
    """(level, bandwidth [B/s], per-step latency [s], direct links) of the innermost interconnect
    level holding ``n`` contiguous devices: the package (its devices fully connected), the
    scale-up domain (``peer_links`` direct links, 0 = switched), or scale-out (switched)."""
    if hw[H_PKG] > 1.0 and n <= hw[H_PKG]:
        return LEVEL_PACKAGE, hw[H_PBW], hw[H_PLAT], 0.0
    if n <= hw[H_DOM]:
        return LEVEL_DOMAIN, hw[H_LBW], hw[H_LLAT], hw[H_PEERS]
    return LEVEL_SCALEOUT, hw[H_SBW], hw[H_SLAT], 0.0


@scalar_jit
def group_bandwidth(bw, peers, n):
    """Bandwidth per direction [B/s] a device can use in a group of ``n``: all of ``bw`` on a
    switched fabric (``peers`` = 0); on direct links, the ``min(n - 1, peers)`` of its ``peers``
    links that lead to other members (a full mesh gives a group of n its n - 1 peer links)."""
    if peers <= 0.0:
        return bw
    return bw * min(n - 1.0, peers) / peers


@scalar_jit
def fully_connected(hw, level):
    """Whether a group on ``level`` is directly connected: in one node, every device one hop from
    every other (a package, a switched domain or a full mesh), as one-shot and two-shot
    all-reduces need."""
    if level == LEVEL_PACKAGE:
        return True
    if level == LEVEL_DOMAIN:
        peers = hw[H_PEERS]
        return peers <= 0.0 or peers >= hw[H_DOM] - 1.0
    return False


@scalar_jit
def log_steps(n):
    """ceil(log2 n): rounds of a recursive-doubling barrier or tree over n >= 2 devices."""
    return math.ceil(math.log2(n))


@scalar_jit
def ring_steps(hw, level, n):
    """Dependent steps of a ring all-reduce over n devices: 2 (n-1) on a switched fabric or a full
    mesh; on a torus of ``d = floor(peer_links / 2)`` dimensions, a ring along each dimension in
    turn over a block as even as possible: the log2(n) bits of the group shared out over the d
    dimensions, extents ``n_i = 2^bits_i``, ``2 sum (n_i - 1)`` steps (a 2 x 4 block of a 2-D
    torus: 8 instead of 14; a 1-D ring, d = 1: 2 (n-1))."""
    if level == LEVEL_DOMAIN and not fully_connected(hw, level):
        d = max(1.0, math.floor(hw[H_PEERS] / 2.0))
        bits = math.log2(n)
        q = math.floor(bits / d)
        rest = bits - q * d  # in [0, d): that many dimensions get one bit more (the last in part)
        whole = math.floor(rest)
        return 2.0 * (whole * (2.0 ** (q + 1.0) - 1.0) + (2.0 ** (q + rest - whole) - 1.0)
                      + (d - whole - 1.0) * (2.0 ** q - 1.0))
    return 2.0 * (n - 1.0)


@scalar_jit
def ring_allreduce(nbytes, n, bw, lat, overhead, steps):
    """Ring: reduce-scatter then all-gather in ``steps`` dependent steps, moving 2 (n-1)/n M per
    device (on a torus the rings of the dimensions run on all links at once, chunk by chunk)."""
    return overhead + steps * lat + 2.0 * (n - 1.0) / n * nbytes / bw


@scalar_jit
def tree_allreduce(nbytes, n, bw, lat, overhead):
    """(Double binary) tree: reduce up and broadcast down, 2 ceil(log2 n) steps, pipelined so
    that each device sends and receives about 2 M."""
    return overhead + 2.0 * log_steps(n) * lat + 2.0 * nbytes / bw


@scalar_jit
def oneshot_allreduce(nbytes, n, bw, lat, overhead):
    """One-shot: every device reads the whole message from each of the n - 1 others and reduces
    locally; one barrier of ceil(log2 n) link steps."""
    return overhead + log_steps(n) * lat + (n - 1.0) * nbytes / bw


@scalar_jit
def twoshot_allreduce(nbytes, n, bw, lat, overhead):
    """Two-shot: a direct reduce-scatter then a direct all-gather, each moving (n-1)/n M per
    device, with a barrier each."""
    return overhead + 2.0 * log_steps(n) * lat + 2.0 * (n - 1.0) / n * nbytes / bw


@scalar_jit
def switch_allreduce(nbytes, n, bw, lat, overhead):
    """In-switch reduction (NVLink SHARP): each device owns 1/n of the message, loads it reduced
    from the switch (sending its whole message up, M, and receiving M/n) and stores it multicast
    (sending M/n, receiving M): (n+1)/n M each way, two link traversals."""
    return overhead + 2.0 * lat + (n + 1.0) / n * nbytes / bw


@scalar_jit
def allreduce_time(hw, n, nbytes):
    """(time [s], algorithm) of an all-reduce of ``nbytes`` over ``n`` contiguous devices, chosen
    as the engine does  [model.md section 5, eq. (9)].

    The collective library (NCCL-like) runs the fastest of its algorithms by its cost model: a
    ring (on a torus, one ring per dimension); across nodes NCCL's double binary tree; an
    in-switch reduction where the switch has one and the engine's library uses it. Where the
    engine has a custom all-reduce and it applies (a directly connected group: a package, a
    switched domain or a full mesh; at most ``custom_ar_max_group`` devices and
    ``custom_ar_max_bytes``), it runs instead: one-shot below the engine's threshold for the group
    (2 devices: always), else two-shot. With ``fastest_collective`` (the ideal engine) the fastest
    of every algorithm available is taken."""
    if n <= 1.0:
        return 0.0, ALG_NONE
    level, bw, lat, peers = link_for(hw, n)
    eff = hw[H_LEFF]
    b_n = group_bandwidth(bw, peers, n) * eff
    overhead = hw[H_COV]
    t = ring_allreduce(nbytes, n, b_n, lat, overhead, ring_steps(hw, level, n))
    alg = ALG_RING
    if level == LEVEL_SCALEOUT:
        t_tree = tree_allreduce(nbytes, n, b_n, lat, overhead)
        if t_tree < t:
            t, alg = t_tree, ALG_TREE
    if level == LEVEL_DOMAIN and peers <= 0.0 and hw[H_SWEFF] > 0.0 \
            and not math.isinf(hw[H_SWOV]):
        t_sw = switch_allreduce(nbytes, n, bw * hw[H_SWEFF], lat, hw[H_SWOV])
        if t_sw < t:
            t, alg = t_sw, ALG_SWITCH
    if fully_connected(hw, level) and n <= hw[H_CARG] and nbytes <= hw[H_CARB]:
        b_c = b_n * hw[H_CAREFF]
        t_one = oneshot_allreduce(nbytes, n, b_c, lat, hw[H_CAROV])
        t_two = twoshot_allreduce(nbytes, n, b_c, lat, hw[H_CAROV])
        if hw[H_FAST] > 0.5:
            if t_one < t:
                t, alg = t_one, ALG_ONESHOT
            if t_two < t:
                t, alg = t_two, ALG_TWOSHOT
        else:
            if n <= 2.0:
                limit = math.inf
            elif n <= 4.0:
                limit = hw[H_OS4]
            else:
                limit = hw[H_OS8]
            if nbytes < limit:
                t, alg = t_one, ALG_ONESHOT
            else:
                t, alg = t_two, ALG_TWOSHOT
    return t, alg


@scalar_jit
def allreduce_bytes(alg, n, nbytes):
    """Bytes [B] one device sends in an all-reduce of ``nbytes`` over ``n`` devices by algorithm
    ``alg`` (of :func:`allreduce_time`): the bandwidth term of the table above, which the
    interconnect's energy per byte prices  [model.md section 9]."""
    if alg == ALG_NONE or n <= 1.0:
        return 0.0
    if alg == ALG_TREE:
        return 2.0 * nbytes
    if alg == ALG_ONESHOT:
        return (n - 1.0) * nbytes
    if alg == ALG_SWITCH:
        return (n + 1.0) / n * nbytes
    return 2.0 * (n - 1.0) / n * nbytes  # ring, two-shot


@scalar_jit
def alltoall_time(hw, span, ranks, nbytes):
    """All-to-all among ``ranks`` devices of a group spanning ``span`` contiguous devices, each
    sending ``nbytes`` in total to the others  [model.md eq. (10)]: one round of concurrent sends
    where every member is one hop away (``ranks - 1`` pairwise rounds on a torus), over the links
    that lead to the other members."""
    if ranks <= 1.0:
        return 0.0
    level, bw, lat, peers = link_for(hw, span)
    b = group_bandwidth(bw, peers, ranks) * hw[H_LEFF]
    steps = 1.0 if fully_connected(hw, level) or level == LEVEL_SCALEOUT else ranks - 1.0
    return hw[H_COV] + steps * lat + nbytes / b


@scalar_jit
def hop_time(hw, level, nbytes):
    """One point-to-point transfer of ``nbytes`` between two devices on ``level``: one call, one
    step, over the one link between them (a switched fabric gives the whole link)."""
    if level == LEVEL_PACKAGE:
        bw, lat, peers = hw[H_PBW], hw[H_PLAT], 0.0
    elif level == LEVEL_DOMAIN:
        bw, lat, peers = hw[H_LBW], hw[H_LLAT], hw[H_PEERS]
    else:
        bw, lat, peers = hw[H_SBW], hw[H_SLAT], 0.0
    return hw[H_COV] + lat + nbytes / (group_bandwidth(bw, peers, 2.0) * hw[H_LEFF])


@scalar_jit
def hops_leaving(pp, span, block):
    """How many of the pp - 1 pipeline hops leave a block of ``block`` contiguous devices, when a
    stage spans ``span`` devices: hop q crosses iff q span mod block = 0  [model.md eq. (11)]."""
    if block <= 1.0:
        return pp - 1.0
    g = math.gcd(int(span), int(block))
    return math.floor((pp - 1.0) / (block / g))


@scalar_jit
def hops_time(hw, pp, span, nbytes):
    """Total time of the pp - 1 pipeline hops of ``nbytes`` each, every hop on the level it
    crosses  [model.md eq. (11)]."""
    if pp <= 1.0:
        return 0.0
    n_out = hops_leaving(pp, span, hw[H_DOM])  # leave the scale-up domain: scale-out
    t = n_out * hop_time(hw, LEVEL_SCALEOUT, nbytes)
    if hw[H_PKG] > 1.0:
        n_pkg = hops_leaving(pp, span, hw[H_PKG])
        t += (n_pkg - n_out) * hop_time(hw, LEVEL_DOMAIN, nbytes)
        t += (pp - 1.0 - n_pkg) * hop_time(hw, LEVEL_PACKAGE, nbytes)
    else:
        t += (pp - 1.0 - n_out) * hop_time(hw, LEVEL_DOMAIN, nbytes)
    return t
