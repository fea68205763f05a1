"""Transaction state of transactional offset commits (TxnOffsetCommit), per
``__consumer_offsets`` partition, in log order across its segments.

A commit in a transactional batch of producer P at log offset o is resolved by the first
control marker of P after o: COMMIT -> 'committed', ABORT -> 'aborted'; no marker yet ->
'pending' (``GroupMetadataManager`` / ``OffsetMetadataManager``: pending transactional
offsets are held per producer until its marker is replayed).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipelines import arrow

NONE, COMMITTED, ABORTED, PENDING = -1, 0, 1, 2
STATES = arrow.strings(["committed", "aborted", "pending"])


def resolve(
    log_offset: np.ndarray,
    producer_id: np.ndarray,
    is_transactional: np.ndarray,
    marker_offset: np.ndarray,
    marker_producer: np.ndarray,
    marker_commit: np.ndarray,
) -> np.ndarray:
    """State code per commit (NONE for non-transactional ones); inputs of one partition."""
    state = np.full(len(log_offset), NONE, dtype=np.int8)
    txn = np.flatnonzero(is_transactional)
    if not len(txn):
        return state
    state[txn] = PENDING
    for pid in np.unique(producer_id[txn]):
        rows = txn[producer_id[txn] == pid]
        mine = marker_producer == pid
        if not mine.any():
            continue
        order = np.argsort(marker_offset[mine], kind="stable")
        offs = marker_offset[mine][order]
        commit = marker_commit[mine][order]
        idx = np.searchsorted(offs, log_offset[rows], side="right")
        found = idx < len(offs)
        state[rows[found]] = np.where(commit[idx[found]], COMMITTED, ABORTED)
    return state


def state_array(state: np.ndarray) -> pa.Array:
    """'committed' | 'aborted' | 'pending' | null, as a dictionary-encoded Arrow string array."""
    indices = arrow.array(state.astype(np.int32), mask=state < 0)
    return pa.DictionaryArray.from_arrays(indices, STATES)
