-- ORDER BY has no meaning in a view: ivm refuses it, and the rest of the project runs
SELECT order_id, amount FROM {{ source('shop', 'orders') }} ORDER BY amount
