-- configs as dbt-databricks' materialized views take them: ivm warns that it leaves them out
{{ config(schedule={'cron': '0 0 * * * ? *', 'time_zone_value': 'Etc/UTC'},
          tblproperties={'owner': 'shop'}) }}

SELECT order_id, customer_id, amount, updated_at
FROM (
  SELECT o.*,
         ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY updated_at DESC, order_id DESC) AS rn
  FROM {{ source('shop', 'orders') }} AS o
)
WHERE rn = 1
