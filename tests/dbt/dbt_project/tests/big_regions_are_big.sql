-- a singular test: no region at or under the threshold in big_regions
SELECT * FROM {{ ref('big_regions') }} WHERE revenue <= 50
