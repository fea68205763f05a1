{#- The rows of `relation` (records of `__consumer_offsets`) with one copy of each record: a
    record read twice (the same segment copied into two inputs) has the same
    (offsets_partition, log_offset); the copy of the first segment file by name is kept. -#}
{% macro kaudit_first_copy(relation) %}
    select *
    from (
        select
            *,
            row_number() over (
                partition by offsets_partition, log_offset
                order by segment_file
            ) as copy_number
        from {{ relation }}
    )
    where copy_number = 1
{% endmacro %}
