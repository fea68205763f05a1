"""Dev-time generator of kaudit's demo cluster (``pipelines/demo/data/`` + ``faults.json``),
run by ``scripts/make_demo_data.py``; the output is committed.

- :mod:`.spec`: the cluster (topics, brokers, groups, planted faults); everything derives from it.
- :mod:`.zookeeper`: drives a real ZooKeeper 3.8 into the Kafka-shaped tree, then crashes it.
- :mod:`.kafka`: ``__consumer_offsets-<N>`` and data-topic segments (kafka-python encoders).
- :mod:`.generate`: runs both and writes ``faults.json``, every planted fault and expected
  figure computed by :mod:`testkit.oracle` (shares nothing with ``pipelines/``).

Deterministic except for what the ZooKeeper server decides itself (zxids, session ids, times,
where it rolls snapshots).
"""
