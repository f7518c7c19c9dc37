SELECT SUM(amount) AS total FROM {{ source('shop', 'payments') }}
