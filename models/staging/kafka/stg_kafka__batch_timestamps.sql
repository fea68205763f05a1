-- One row per batch header of a data-topic partition (raw/batch_timestamps): its offsets and
-- the timestamps a consumer sees. Under LogAppendTime every record carries the batch's
-- maxTimestamp, so first_timestamp is the append time too (the extractor sets it so).
select
    topic,
    `partition`,
    segment_base_offset,
    size_bytes,
    base_offset,
    last_offset,
    is_control,
    timestamp_type,
    first_timestamp,
    max_timestamp,
    {{ kaudit_run_id() }} as run_id
from {{ source('kafka', 'batch_timestamps') }}
