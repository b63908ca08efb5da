"""Which (intra, inter) settings are worth measuring on this node: a short list, not a grid.

The probe says how many CPUs a process may really use (``effective_cpus``: the affinity mask cut
down by the tightest CFS quota) and how many it is allowed to run on (the affinity count, which is
what TensorFlow sizes its pools from). Good intra-op values cluster around the effective CPUs, so
the list holds its floor and ceiling, half of it, and the powers of two up to the affinity count.
Powers of two keep the list logarithmic in the core count, so a 256-CPU node costs a few more trials
than a 2-CPU one, not 128 times more.

"Never more threads than makes sense": intra-op is capped at twice the usable CPUs (beyond that,
threads only queue for quota and add context switches) and at the affinity count (TF's own default,
which the sweep measures anyway as the baseline). Inter-op runs independent ops side by side; its
useful width is bounded by sockets and by the requests in flight, so it goes from 1 up to a small
bound tied to those, never past the usable CPUs' reach. Where no quota binds, one wider inter-op
pool (``spare_inter_op``) is tried too, after the others, as far as ``MAX_CANDIDATES`` allows.

TF's own default (``tf_picks``: ``ThreadSetting.TF_DEFAULT`` as the node runs it) is never a
candidate: the baseline arm already runs exactly those
thread counts, and measuring them twice under two names would let the same setting be compared
with itself and "win" by noise.
"""

from __future__ import annotations

import math

from advisor.models import MAX_THREADS, Incumbent, NodeProfile, ThreadSetting

#: inter-op pools wider than this have not paid off on CPU inference servers: the graph rarely has
#: more independent branches, and each extra pool thread is one more to schedule under a quota.
MAX_INTER_OP = 8

#: the spare inter-op settings fill the list only up to this length: the most the default budget
#: measures at least once on a 256-CPU node in the scaling simulation (benchmarks/scaling.py), so
#: widening inter-op never costs a big node a setting it used to measure
MAX_CANDIDATES = 18


def tf_picks(node: NodeProfile) -> ThreadSetting:
    """The thread counts TensorFlow picks by itself on this node: both pools sized from the
    affinity mask (``ThreadSetting.tf_picks``). TF never reads the CFS quota, so this is what the
    baseline trial (no thread variables set) really runs; an advice that keeps the default spells
    these numbers out."""
    return ThreadSetting.tf_picks(len(node.affinity_cpus))


def intra_op_values(node: NodeProfile) -> list[int]:
    """Intra-op thread counts around the usable CPUs, ascending."""
    affinity = len(node.affinity_cpus)
    usable = node.effective_cpus
    ceiling = max(1, math.ceil(usable - 1e-9))
    cap = max(1, min(affinity, 2 * ceiling, MAX_THREADS))
    values = {max(1, math.floor(usable + 1e-9)), ceiling, max(1, ceiling // 2)}
    power = 1
    while power <= cap:
        values.add(power)
        power *= 2
    return sorted(v for v in values if 1 <= v <= cap)


def inter_op_values(node: NodeProfile, concurrency: int = 1) -> list[int]:
    """Inter-op thread counts from 1 up to a small bound tied to sockets and concurrency."""
    affinity = len(node.affinity_cpus)
    sockets = node.topology.sockets or 1
    reach = max(2, math.ceil(node.effective_cpus - 1e-9))
    bound = min(max(2, sockets, concurrency), MAX_INTER_OP, reach, affinity)
    bound = max(1, bound)
    values = {1, bound}
    power = 2
    while power < bound:
        values.add(power)
        power *= 2
    return sorted(values)


def spare_inter_op(node: NodeProfile, concurrency: int = 1) -> int | None:
    """One inter-op thread more than ``inter_op_values`` allows, where no quota binds; else None.

    Without a quota an inter-op thread that waits (for its op's intra-op work, or for the next
    ready op) costs no CPU time, so one thread past the sockets/requests bound, even one past the
    CPU count, can shorten the tail; we have measured that it does, not why. On CI's 2-CPU
    machine the benchmark's grid put the best setting at inter-op 3 or 4 in 10 of 16 no-quota
    scenarios (two full runs), and in two latency ones no setting with fewer inter-op threads came
    within 5% of it. Under a quota every extra runnable thread is one more to throttle.
    """
    affinity = len(node.affinity_cpus)
    if affinity < 2 or node.effective_cpus < affinity:
        return None
    spare = max(inter_op_values(node, concurrency)) + 1
    return spare if spare <= min(affinity + 1, MAX_INTER_OP) else None


def coverage_order(values: list[int], usable: float) -> list[int]:
    """``values`` reordered so that any prefix spreads over the whole range.

    First the value closest to the usable CPUs (by ratio, so 3 is as far from 6 as 12 is), then
    each next one as far as possible (on a log scale) from those already taken, ties to fewer
    threads. A budget that fits only the first few still sees the small and the large end: a
    small model on a big unquota'd node is often fastest far below the CPU count.
    """
    left = sorted(set(values))
    if not left:
        return []

    def distance(v: float, w: float) -> float:
        return abs(math.log2(v) - math.log2(w))

    first = min(left, key=lambda v: (round(distance(v, usable), 6), v))
    order = [first]
    left.remove(first)
    while left:
        far = max(left, key=lambda v: (round(min(distance(v, w) for w in order), 6), -v))
        order.append(far)
        left.remove(far)
    return order


#: how many intra-op steps down the coverage order one more inter-op step is worth: the intra
#: pool does most of the work, so its range is covered before inter-op variants are tried
INTER_WEIGHT = 2.0


def candidate_configs(node: NodeProfile, concurrency: int = 1) -> list[ThreadSetting]:
    """Every setting worth a trial, in the order the search should take them.

    The order matters when the budget cannot fit them all in the first round: the search takes
    them from the front. Intra-op values go in coverage order (closest to the usable CPUs first,
    then spreading out), each first with one inter-op thread; more inter-op threads come in
    ``INTER_WEIGHT`` steps later. Where no quota binds, the spare inter-op width comes last, one
    intra value after another, while the list is shorter than ``MAX_CANDIDATES``. The TF
    default's thread counts are left out (the baseline is that arm); on a one-CPU affinity mask
    that leaves nothing to try.
    """
    intras = coverage_order(intra_op_values(node), node.effective_cpus)
    inters = inter_op_values(node, concurrency)

    def place(c: ThreadSetting) -> tuple[float, int, int]:
        assert c.intra is not None and c.inter is not None  # every candidate sets both
        rank = intras.index(c.intra) + INTER_WEIGHT * inters.index(c.inter)
        return (rank, c.intra + c.inter, c.intra)

    picks = tf_picks(node)
    settings = (ThreadSetting(i, j) for i in intras for j in inters)
    ordered = sorted((c for c in settings if c != picks), key=place)
    spare = spare_inter_op(node, concurrency)
    if spare is not None:
        extra = [c for c in (ThreadSetting(i, spare) for i in intras) if c != picks]
        ordered += extra[: max(0, MAX_CANDIDATES - len(ordered))]
    return ordered


def incumbent_key(incumbent: Incumbent | None, picks: ThreadSetting) -> ThreadSetting:
    """The incumbent as the search names settings: TF's default numbers are the baseline arm
    (one setting is never measured under two names)."""
    if incumbent is None or incumbent.setting == picks:
        return ThreadSetting.TF_DEFAULT
    return incumbent.setting


def with_incumbent(candidates: list[ThreadSetting], held: ThreadSetting) -> list[ThreadSetting]:
    """The incumbent first (screened right after the baseline), whether or not the list had it:
    a stored advice from another sweep's list is still the reference."""
    if held.is_default:
        return candidates
    return [held, *(c for c in candidates if c != held)]
