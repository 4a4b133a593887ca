"""Multi-worker bookkeeping without a cluster: each worker's rows of a global batch, the
cluster members' checkpoint directories, and the step a restarted cluster resumes at."""

import json
import types

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.data.errors import DataError
from mbert_lib.data.pipeline import make_pretraining_dataset
from mbert_lib.train.checkpointing import (
    RunCheckpoint,
    is_chief,
    peer_directories,
    worker_directory,
)
from mbert_lib.train.local_cluster import tf_config
from mbert_lib.train.strategy import cluster_workers
from mbert_lib.train.workers import WorkerShard, shard_rows, worker_shard
from tests.test_data_pipeline import _build
from tests.train_fixtures import tiny_batches


def fake_strategy(cluster: dict, task_type: str, task_id: int):
    """What the helpers read of a MultiWorkerMirroredStrategy: its cluster resolver."""
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id
    )
    return types.SimpleNamespace(cluster_resolver=resolver)


WORKERS = {"worker": ["localhost:1", "localhost:2", "localhost:3"]}
WITH_CHIEF = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}


@pytest.mark.parametrize(
    "cluster,task,expected",
    [
        (WORKERS, ("worker", 0), (0, 3)),
        (WORKERS, ("worker", 2), (2, 3)),
        (WITH_CHIEF, ("chief", 0), (0, 3)),
        (WITH_CHIEF, ("worker", 0), (1, 3)),
        ({"worker": ["localhost:1"]}, ("worker", 0), (0, 1)),
    ],
)
def test_worker_shard_numbers_the_chief_first(cluster, task, expected):
    shard = worker_shard(fake_strategy(cluster, *task))
    assert (shard.index, shard.count) == expected
    assert is_chief(fake_strategy(cluster, *task)) == (expected[0] == 0)


def test_one_process_is_one_worker():
    assert worker_shard(tf.distribute.get_strategy()) == WorkerShard(0, 1)


def test_worker_rows_tile_the_global_batch():
    assert [WorkerShard(i, 4).rows(8) for i in range(4)] == [(0, 2), (2, 4), (4, 6), (6, 8)]
    with pytest.raises(ValueError, match=r"trainer.batch_size \(6\).*number of workers \(4\)"):
        WorkerShard(0, 4).rows(6)


def test_synthetic_worker_batches_concatenate_to_the_global_batches():
    whole = list(tiny_batches().take(3).as_numpy_iterator())
    parts = [list(shard_rows(tiny_batches(), WorkerShard(i, 2)).take(3)) for i in range(2)]
    for step, batch in enumerate(whole):
        for key, value in batch.items():
            joined = np.concatenate([parts[0][step][key], parts[1][step][key]])
            np.testing.assert_array_equal(joined, value, err_msg=key)


def test_prepared_worker_batches_concatenate_to_the_global_batches(tmp_path):
    _build(tmp_path, {"seed": 1}, [])
    whole = list(make_pretraining_dataset(tmp_path, 8, seed=3).take(5).as_numpy_iterator())
    parts = [
        list(make_pretraining_dataset(tmp_path, 8, seed=3, rows=(4 * i, 4 * i + 4)).take(5))
        for i in range(2)
    ]
    for step, batch in enumerate(whole):
        for key, value in batch.items():
            joined = np.concatenate([parts[0][step][key], parts[1][step][key]])
            np.testing.assert_array_equal(joined, value, err_msg=key)
    with pytest.raises(DataError, match=r"rows must be \(start, stop\).*got \(4, 9\)"):
        make_pretraining_dataset(tmp_path, 8, rows=(4, 9))


def test_tf_config_names_every_worker_and_this_task():
    config = json.loads(tf_config([1111, 2222], 1))
    assert config == {
        "cluster": {"worker": ["localhost:1111", "localhost:2222"]},
        "task": {"type": "worker", "index": 1},
    }
    with pytest.raises(ValueError, match="worker index 2 is outside a cluster of 2"):
        tf_config([1111, 2222], 2)


def test_peer_directories_are_the_other_members_checkpoints():
    chief = fake_strategy(WORKERS, "worker", 0)
    second = fake_strategy(WORKERS, "worker", 1)
    assert worker_directory("ck", chief) == "ck"
    assert worker_directory("ck", second) == "ck/.worker_worker_1"
    assert peer_directories("ck", chief) == ["ck/.worker_worker_1", "ck/.worker_worker_2"]
    assert peer_directories("ck", second) == ["ck", "ck/.worker_worker_2"]
    assert peer_directories("ck", tf.distribute.get_strategy()) == []


def _saved(directory, steps):
    weights = tf.Variable(tf.zeros([4]))
    run = RunCheckpoint(directory, max_to_keep=5, weights=weights)
    for step in steps:
        weights.assign(tf.fill([4], float(step)))
        run.save(step)


def test_a_restarted_worker_resumes_at_the_newest_step_every_worker_saved(tmp_path):
    own, peer = tmp_path / "own", tmp_path / "peer"
    _saved(own, [10, 20, 30])
    _saved(peer, [10, 20])  # this worker died while saving step 30
    weights = tf.Variable(tf.zeros([4]))
    restored = RunCheckpoint(own, peers=[str(peer)], weights=weights).restore_latest(print)
    assert restored.endswith("ckpt-20") and float(weights[0]) == 20.0
    alone = RunCheckpoint(own, weights=weights).restore_latest(print)
    assert alone.endswith("ckpt-30")


def test_a_cluster_stopped_in_its_first_save_starts_afresh(tmp_path):
    own, peer = tmp_path / "own", tmp_path / "peer"
    _saved(own, [10])  # the other worker was killed before its ckpt-10 was written
    notes = []
    weights = tf.Variable(tf.zeros([4]))
    assert (
        RunCheckpoint(own, peers=[str(peer)], weights=weights).restore_latest(notes.append) is None
    )
    assert len(notes) == 1 and "starting afresh" in notes[0]
    assert RunCheckpoint(peer, peers=[str(own)], weights=weights).restore_latest(print) is None


def test_no_common_step_is_refused_instead_of_a_fresh_start(tmp_path):
    own, peer = tmp_path / "own", tmp_path / "peer"
    _saved(own, [10, 20])
    weights = tf.Variable(tf.zeros([4]))
    with pytest.raises(ValueError, match="no step that every other worker's directory holds"):
        RunCheckpoint(own, peers=[str(peer)], weights=weights).restore_latest(print)
    assert sorted(p.name for p in own.glob("*.index")) == ["ckpt-10.index", "ckpt-20.index"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "TF_CONFIG is not JSON"),
        ('{"cluster": {"worker": ["a:1"]}}', "TF_CONFIG needs a 'cluster' and a 'task'"),
        ('{"cluster": {}, "task": {"type": "worker", "index": 0}}', "lists no chief or worker"),
        (tf_config([1, 2], 1).replace('"index": 1', '"index": 5'), "is not one of its cluster"),
        (
            tf_config([1, 2], 0).replace('"type": "worker"', '"type": "ps"'),
            "is not one of its cluster",
        ),
    ],
)
def test_a_tf_config_that_names_no_cluster_is_refused_naming_it(text, message):
    with pytest.raises(ValueError, match=message):
        cluster_workers({"TF_CONFIG": text})


def test_cluster_workers_counts_the_chief_and_the_workers():
    assert cluster_workers({}) == 1
    assert cluster_workers({"TF_CONFIG": tf_config([1, 2, 3], 2)}) == 3
    with_chief = {"cluster": WITH_CHIEF, "task": {"type": "chief", "index": 0}}
    assert cluster_workers({"TF_CONFIG": json.dumps(with_chief)}) == 3
