{#- Generic test `kaudit_key`: `columns` form the model's key - no two rows share it and no
    part of it is null, except the parts listed in `nullable` (e.g. broker_id, null for the
    0.8+ ZooKeeper layout; nulls then compare equal, as in a composite key). One query per
    model does the work of a `unique` and the `not_null`s. -#}
{% test kaudit_key(model, columns, nullable=[]) %}
with keyed as (
    select
        {%- for column in columns %}
        `{{ column }}`,
        {%- endfor %}
        count(*) as rows_with_key
    from {{ model }}
    group by
        {%- for column in columns %}
        `{{ column }}`{{ ',' if not loop.last }}
        {%- endfor %}
)

select *
from keyed
where rows_with_key > 1
    {%- for column in columns if column not in nullable %}
    or `{{ column }}` is null
    {%- endfor %}
{% endtest %}
