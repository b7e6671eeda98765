"""The tasks of a round and where they run.

The functions the executor submits as Dask tasks (their names stay stable:
the task keys and the dashboard show them): :func:`_delayed` makes a delayed
call soft-pinned to a worker, the round's tasks chain ``(state, payload)``
pairs (:func:`_start`, :func:`_group_local_task`, :func:`_sent`,
:func:`_tree_node`, :func:`_combine_task`, ...), and :class:`_Placement`
groups the partitions in contiguous runs, one per worker thread.
"""

from __future__ import annotations

from daskdca.engine.clients import _thread_slots
from daskdca.methods.base import add_contributions, tree_reduce_within


def _delayed(func, *args, name, worker=None):
    """A delayed call, soft-pinned to ``worker`` when given (allow_other_workers=True).

    Hard pins hang after a nanny restart gives the worker a new address
    (docs/references.md, note N9); soft pins let the scheduler move the task instead.
    """
    import dask

    if worker is None:
        return dask.delayed(func, pure=False)(*args, dask_key_name=name)
    with dask.annotate(workers=[worker], allow_other_workers=True):
        return dask.delayed(func, pure=False)(*args, dask_key_name=name)


# --- the tasks of a round: outputs are (state, payload) pairs ---------------

def _start(make, *args):
    """Task: a fresh or loaded state, as the ``(state, None)`` pair the round tasks chain on."""
    return make(*args), None


def _held(value):
    """Task: a value that travels inside the task (the scheduler keeps it, so the task can rerun)."""
    return value


def _restart(state):
    """Task: a state copied through the driver, as a pair; the task itself holds the copy."""
    return state, None


def _state_of(out):
    return out[0]


def _group_start(make, ctxs, *parts):
    """Task: a group's fresh local states, as the ``(states, None)`` pair its round tasks chain on."""
    return tuple(make(part, ctx) for part, ctx in zip(parts, ctxs)), None


def _group_of(*outs):
    """Task: the states of single partitions' output pairs as one group's pair."""
    return tuple(out[0] for out in outs), None


def _member(group_out, j):
    """Task: the output pair of a group's ``j``-th partition."""
    return group_out[0][j], None


def _group_local_task(local, first, n_partitions, ctxs, G_out, L_out, *parts):
    """Task: the local steps of a group's partitions, in order, and the part of the reduction tree they decide.

    Returns ``(states', nodes)``: the new local states, and the largest nodes
    of the fixed-order reduction tree over all partitions whose partitions
    all lie in this group (:func:`~daskdca.methods.base.tree_reduce_within`),
    so the total has the bits of one task per partition.
    """
    states, contributions = [], []
    for part, state, ctx in zip(parts, L_out[0], ctxs):
        state, contribution = local(part, state, G_out[0], ctx)
        states.append(state)
        contributions.append(contribution)
    return tuple(states), tree_reduce_within(contributions, first, n_partitions, add_contributions)


def _sent(out):
    """Task, on the group's worker: the reduction nodes of a local output, so that only they travel on
    (the output also holds the partitions' local states, e.g. their duals)."""
    return out[1]


def _tree_node(combine, keys, *sources):
    """Task: one node of the reduction tree that spans groups; a child is ``sources[j][keys[j]]`` (a group's
    node) or ``sources[j]`` itself (another such node) where ``keys[j]`` is None."""
    return combine(*[source if key is None else source[key] for key, source in zip(keys, sources)])


def _combine_task(combine, G_out, key, total, ctx):
    """Task: the combine on the global state (``total[key]`` where ``key`` is a group's node); returns
    ``(G', report)``."""
    return combine(G_out[0], total if key is None else total[key], ctx)


def _dual_point_task(dual_point, part, L_out, G_out):
    return dual_point(part, L_out[0], G_out[0])


def _model_task(model, G_out):
    return model(G_out[0])


def _pinned(home):
    """``submit`` options that soft-pin a task to ``home`` (none while no worker is alive)."""
    return {"workers": [home], "allow_other_workers": True} if home else {}


def _no_combine(*children):
    """A combine that computes nothing: :func:`tree_reduce_within` on placeholders tells which nodes a group holds."""
    return None


def _merge_reports(first, *rest):
    """Task: the first round's report (from its combine's output) with the steps of every round."""
    report = first[1]
    return report._replace(steps=report.steps + sum(out[1].steps for out in rest))


class _Placement:
    """Which worker thread each partition runs on: contiguous runs of partitions, one per thread.

    Partition ``k`` is in group ``k * S // K`` (S worker threads at the start,
    K partitions); each round the groups are mapped onto the threads alive
    then (:func:`_thread_slots`), and each group's local steps run as one
    task, so a worker with several threads runs several groups at once.
    When the number of threads has changed, the executor regroups at the
    next copy of the states (every ``checkpoint_every`` rounds), so workers
    that join later (adaptive scaling, jobqueue jobs that start late) get
    partitions.  Placement and grouping only steer where and in which tasks
    the work runs: the reduction tree is fixed by partition order, so no bit
    depends on them.
    """

    def __init__(self, n_partitions, n_slots):
        self.n_slots = n_slots
        self.groups = [k * n_slots // n_partitions for k in range(n_partitions)]
        # the partitions of each (non-empty) group, in order: each round runs one task per group
        self.members = [[k for k in range(n_partitions) if self.groups[k] == g] for g in sorted(set(self.groups))]
        # the nodes of the reduction tree each group's task computes whole (placeholders: only the keys matter)
        self.held = [list(tree_reduce_within([None] * len(ks), ks[0], n_partitions, _no_combine))
                     for ks in self.members]

    def homes(self, client):
        """The worker of each partition now (None while no worker is alive)."""
        slots = _thread_slots(client)
        if not slots:
            return [None] * len(self.groups)
        return [slots[g % len(slots)] for g in self.groups]
