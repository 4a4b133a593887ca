"""One training step and one evaluation, as every trainer runs them (pre-training,
distillation, fine-tuning; `run_loop` in loop.py repeats the step).

One train step on a global batch, under any tf.distribute strategy with R
replicas:
    1. each replica counts its denominators (e.g. real MLM predictions);
       they are summed over replicas, so every replica divides by global counts;
    2. each replica computes its share of the loss and the gradient of that
       share (this part is what `jit_compile=True` compiles with XLA);
    3. gradients are summed over replicas: Σ_r ∇share_r = ∇L, the gradient of
       the global-batch loss, identical to the one-device gradient;
    4. the optimizer clips (global norm) and applies them; the global gradient
       norm before clipping is reported as `grad_norm`.

An objective (the protocol of `mbert_lib.train.objectives`) supplies the loss
and the held-out sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from mbert_lib.train.workers import worker_shard

SUM = tf.distribute.ReduceOp.SUM
MEAN = tf.distribute.ReduceOp.MEAN


def step_counter(name: str = "global_step") -> tf.Variable:
    """The int64 step a run checkpoints; create it in `strategy.scope()` (one copy is
    kept, not one per replica)."""
    return tf.Variable(
        0,
        dtype=tf.int64,
        trainable=False,
        name=name,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
    )


def step_value(step: tf.Variable) -> int:
    """The step counter's value (int() cannot read a distributed variable)."""
    return int(step.read_value())


def distribute_batch(strategy: tf.distribute.Strategy, batch):
    """This worker's batch split along axis 0 into equal slices, one per local replica.

    The trainers read batches from a plain tf.data iterator on the host and
    split them here, instead of iterating a distributed dataset, because a
    plain iterator is checkpointable (a `DistributedIterator` is not): the
    data position survives a restart under every strategy. With one worker
    the batch is the global batch; under MultiWorkerMirroredStrategy each
    worker reads only its own rows of it (mbert_lib.train.workers), and its
    replicas are numbered after the previous workers' (worker-major).
    """
    replicas = strategy.num_replicas_in_sync
    if replicas == 1:
        return batch
    local = replicas // worker_shard(strategy).count

    def replica_slice(context):
        index = context.replica_id_in_sync_group % local
        return tf.nest.map_structure(lambda t: tf.split(t, local)[index], batch)

    return strategy.experimental_distribute_values_from_function(replica_slice)


def make_train_step(
    strategy: tf.distribute.Strategy,
    objective,
    optimizer,
    variables: Sequence[tf.Variable],
    jit_compile: bool = False,
) -> Callable:
    """train_step(iterator) -> {"loss", <objective metrics>, "grad_norm", "learning_rate"}.

    `iterator` is a plain (checkpointable) iterator over global batches whose
    size is a multiple of the number of replicas. The optimizer's variables
    must exist (`optimizer.build(variables)` under `strategy.scope()`) before
    the first call.
    """
    variables = list(variables)

    def forward_backward(batch, denominators):
        with tf.GradientTape() as tape:
            loss, metrics = objective.loss(batch, denominators, training=True)
        grads = tape.gradient(loss, variables)
        missing = [v.name for v, g in zip(variables, grads) if g is None]
        if missing:
            raise ValueError(f"no gradient reaches these trained variables: {missing}")
        return loss, metrics, [tf.convert_to_tensor(g) for g in grads]

    if jit_compile:
        forward_backward = tf.function(forward_backward, jit_compile=True)

    def replica_step(batch):
        context = tf.distribute.get_replica_context()
        denominators = context.all_reduce(SUM, objective.denominators(batch))
        loss, metrics, grads = forward_backward(batch, denominators)
        grads = context.all_reduce(SUM, grads)  # ∇L = Σ_r ∇share_r
        grad_norm = tf.linalg.global_norm(grads)
        optimizer.apply_gradients(zip(grads, variables), skip_gradients_aggregation=True)
        return {"loss": loss, **metrics}, grad_norm

    @tf.function
    def train_step(iterator):
        batch = distribute_batch(strategy, next(iterator))
        shares, grad_norm = strategy.run(replica_step, args=(batch,))
        out = {k: strategy.reduce(SUM, v, axis=None) for k, v in shares.items()}
        out["grad_norm"] = strategy.reduce(MEAN, grad_norm, axis=None)
        out["learning_rate"] = tf.identity(optimizer.learning_rate)
        return out

    return train_step


def make_evaluator(
    strategy: tf.distribute.Strategy,
    objective,
    dataset: tf.data.Dataset | None,
    max_steps: int | None = None,
) -> Callable[[], dict] | None:
    """evaluate() -> objective.eval_metrics over `dataset` (its first `max_steps` batches)."""
    if dataset is None:
        return None
    distributed = strategy.experimental_distribute_dataset(dataset)

    @tf.function(reduce_retracing=True)  # the last held-out batch may be smaller
    def eval_step(batch):
        sums = strategy.run(objective.eval_sums, args=(batch,))
        return {k: strategy.reduce(SUM, v, axis=None) for k, v in sums.items()}

    def evaluate() -> dict:
        totals: dict[str, float] = {}
        for i, batch in enumerate(distributed):
            if max_steps is not None and i >= max_steps:
                break
            for k, v in eval_step(batch).items():
                totals[k] = totals.get(k, 0.0) + float(v)
        if not totals:
            raise ValueError("the held-out dataset is empty")
        return objective.eval_metrics(totals)

    return evaluate
