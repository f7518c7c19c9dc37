{#
  materialized='materialized_view', spelled as dbt-databricks spells it: the first run creates
  the view, later runs refresh it (incrementally where ivm can), --full-refresh recomputes it,
  and a model whose query or clauses changed is handled as on_configuration_change says
  (apply: ALTER where only the freshness, retention or refresh policy changed, else CREATE OR
  REPLACE; continue: a warning, the view left as it is; fail: an error).
#}
{% materialization materialized_view, adapter='ivm' %}
  {%- set existing = load_cached_relation(this) -%}
  {%- set target = this.incorporate(type=this.MaterializedView) -%}
  {%- set model_config = ivm_model_config() -%}
  {%- for name in adapter.left_out_configs(model_config) -%}
    {% do exceptions.warn(
      "ivm leaves out the config " ~ name ~ " of " ~ target ~ ", which only dbt-databricks uses;"
      ~ " a view with a freshness is kept fresh by ivm run, and each dbt run refreshes it") %}
  {%- endfor -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {%- set build_sql = ivm_materialized_view_sql(existing, target, model_config) -%}
  {% if build_sql == '' %}
    {% call noop_statement('main', 'left as it is') %}-- {{ target }} left as it is{% endcall %}
  {% else %}
    {% call statement('main') %}{{ build_sql }}{% endcall %}
  {% endif %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target]}) }}
{% endmaterialization %}


{% macro ivm_model_config() %}
  {{ return({
    'partition_by': config.get('partition_by'),
    'freshness': config.get('freshness'),
    'retention': config.get('retention'),
    'refresh_policy': config.get('refresh_policy'),
    'schedule': config.get('schedule'),
    'tblproperties': config.get('tblproperties'),
    'liquid_clustered_by': config.get('liquid_clustered_by'),
    'databricks_tags': config.get('databricks_tags'),
  }) }}
{% endmacro %}


{#- The statement that builds the model's view ('' where none does); ALTERs it needs first run here. -#}
{% macro ivm_materialized_view_sql(existing, target, model_config) %}
  {%- set clauses = adapter.materialized_view_clauses(model_config) -%}
  {%- set create -%}
    create materialized view {{ target }} {{ clauses }} as
{{ sql }}
  {%- endset -%}
  {%- if existing is none -%}
    {{ return(create) }}
  {%- elif not existing.is_materialized_view -%}
    {#- a table or view of another materialization: dropped once ivm has accepted the query -#}
    {% do adapter.check_materialized_view(target, sql, model_config) %}
    {% do adapter.drop_relation(existing) %}
    {{ return(create) }}
  {%- endif -%}
  {%- set changes = adapter.materialized_view_changes(target, sql, model_config) -%}
  {%- set refresh = 'refresh materialized view ' ~ target ~ (' full' if should_full_refresh() else '') -%}
  {%- if not changes.described -%}
    {{ return(refresh) }}
  {%- endif -%}
  {%- set described = target ~ " changes: " ~ changes.described | join("; ") -%}
  {%- set on_change = config.get('on_configuration_change', 'apply') -%}
  {%- if (should_full_refresh() or on_change == 'apply') and changes.replace -%}
    {{ log("Replacing " ~ described, info=True) }}
    {{ return('create or replace' ~ create.strip()[6:]) }}
  {%- elif should_full_refresh() or on_change == 'apply' -%}
    {#- a freshness, a retention or a refresh policy: altered, the rows kept -#}
    {{ log("Altering " ~ described, info=True) }}
    {%- for alter in changes.alters -%}
      {% call statement('alter_' ~ loop.index) %}{{ alter }}{% endcall %}
    {%- endfor -%}
    {{ return(refresh) }}
  {%- elif on_change == 'continue' -%}
    {% do exceptions.warn(described ~ "; on_configuration_change is continue: left as it is") %}
    {{ return('') }}
  {%- elif on_change == 'fail' -%}
    {% do exceptions.raise_fail_fast_error(
      described ~ "; on_configuration_change is fail (run with --full-refresh to apply it)") %}
  {%- else -%}
    {% do exceptions.raise_compiler_error(
      "on_configuration_change is " ~ on_change ~ ": give apply, continue or fail") %}
  {%- endif -%}
{% endmacro %}


{% macro ivm__drop_relation(relation) -%}
  {% call statement('drop_relation', auto_begin=False) -%}
    {%- if relation.is_materialized_view -%}
      drop materialized view if exists {{ relation }}
    {%- else -%}
      drop {{ relation.type }} if exists {{ relation }}
    {%- endif -%}
  {%- endcall %}
{% endmacro %}


{% macro ivm__drop_materialized_view(relation) -%}
  drop materialized view if exists {{ relation }}
{%- endmacro %}


{% macro ivm__refresh_materialized_view(relation) -%}
  refresh materialized view {{ relation }}
{%- endmacro %}
