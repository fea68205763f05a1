{#- The columns of an assignment epoch of a share or Streams group and its settling, as
    core/share_group_epochs and core/streams_group_epochs hold them (pipelines/warehouse/tables.py
    _GROUP_EPOCH), for the staging models and marts/group_epochs. -#}

{% macro group_epoch_columns() -%}
    group_id,
    assignment_epoch,
    offsets_partition,
    log_offset,
    target_at,
    members,
    members_settled,
    member_ids,
    settled,
    settled_at,
    settle_ms,
    is_transition
{%- endmacro %}
