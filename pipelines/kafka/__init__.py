"""Kafka log segments: the ``__consumer_offsets`` decoder and the data-topic log-end scanner.

Modules, from bytes up: ``kernels`` (numba byte walks; their constants in ``kernel_tables``,
the build a run calls - ahead of time or JIT - chosen by ``native``), ``batches`` (framing, CRCs, codecs),
``records`` (versioned key/value field tables + one decoder), ``flexible`` (message schemas as
data and the flexible-struct decoder, shared with ``pipelines.kraft``), ``groups`` (KIP-848,
share and streams group records), ``consumer_protocol``,
``segment`` (one segment -> Arrow tables), ``transactions`` (txn states),
``offsets`` (one partition's segments), ``paths``, ``log_end``, ``batch_times`` (data-topic batch
timestamps, log-start checkpoints), ``extract`` (CLI steps).
Nothing here imports Spark.
"""
