SELECT region, revenue
FROM {{ ref('revenue_by_region') }}
WHERE revenue > 100
