-- Burrow's partition status (LinkedIn Burrow, core/internal/evaluator; FORMATS 6) for every
-- partition with an offset, of both stores (source: kafka commits, zookeeper offset-znode
-- writes of the replayed txn logs), over its last 10 effective commits (int_lag_window), at
-- the run's clock (int_run_clock). First rule that holds:
--   NOTFOUND  the log end is unknown, so lag is unknown
--   OK        current lag <= lag_allowed (0)
--   STOP      time since the last commit > the window's span, and lag never 0 in the window
--   REWIND    the last offset is lower than the first (went back, did not recover)
--   STALL     lag never 0 in the window and every offset equal
--   WARN      lag never 0 in the window and lag never decreased
--   OK        otherwise
-- group_status: the worst partition status of the group (Burrow's severity order).
with window_rows as (
    select
        *,
        lag < lag(lag) over (
            partition by source, group_id, topic, broker_id, `partition`
            order by commit_seq
        ) as lag_decreased
    from {{ ref('int_lag_window') }}
),

windows as (
    select
        run_id,
        source,
        group_id,
        topic,
        broker_id,
        `partition`,
        count(*) as window_commits,
        min_by(committed_offset, commit_seq) as first_offset,
        max_by(committed_offset, commit_seq) as last_offset,
        min_by(committed_at, commit_seq) as window_start_at,
        max_by(committed_at, commit_seq) as window_end_at,
        max_by(log_end_offset, commit_seq) as log_end_offset,
        max_by(lag, commit_seq) as current_lag,
        coalesce(bool_or(lag = 0), false) as lag_reached_zero,
        -- (the window's offsets are never null: min = max is one distinct offset, without the
        -- second aggregation a distinct count costs)
        min(committed_offset) = max(committed_offset) as offsets_unchanged,
        not coalesce(bool_or(lag_decreased), false) as lag_never_decreased
    from window_rows
    group by run_id, source, group_id, topic, broker_id, `partition`
),

judged as (
    select
        windows.*,
        clock.evaluated_at,
        coalesce(
            unix_millis(clock.evaluated_at) - unix_millis(windows.window_end_at)
            > unix_millis(windows.window_end_at) - unix_millis(windows.window_start_at),
            false
        ) as stopped
    from windows
    cross join {{ ref('int_run_clock') }} as clock
),

statused as (
    select
        *,
        case
            when current_lag is null then 'NOTFOUND'
            when current_lag <= {{ var('lag_allowed') }} then 'OK'
            when stopped and not lag_reached_zero then 'STOP'
            when last_offset < first_offset then 'REWIND'
            when not lag_reached_zero and offsets_unchanged then 'STALL'
            when not lag_reached_zero and lag_never_decreased then 'WARN'
            else 'OK'
        end as status
    from judged
),

ranked as (
    select
        *,
        case status
            when 'NOTFOUND' then 0 when 'OK' then 1 when 'WARN' then 2
            when 'STOP' then 4 when 'STALL' then 5 when 'REWIND' then 6
        end as severity
    from statused
)

select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    broker_id,
    status,
    max_by(status, severity) over (partition by source, group_id) as group_status,
    current_lag,
    log_end_offset,
    window_commits,
    window_commits >= {{ var('lag_window_commits') }} as window_complete,
    first_offset,
    last_offset,
    window_start_at,
    window_end_at,
    evaluated_at
from ranked
