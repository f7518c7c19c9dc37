{{ config(partition_by='region', retention='30 days',
          freshness={'build_after': {'count': 5, 'period': 'minute'}}) }}

SELECT c.region, COUNT(*) AS orders, SUM(o.amount) AS revenue
FROM {{ source('shop', 'orders') }} AS o
JOIN {{ source('shop', 'customers') }} AS c ON o.customer_id = c.customer_id
GROUP BY c.region
