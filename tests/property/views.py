"""Fixed view definitions over the sources of :mod:`strategies`, grouped in families.

A family's views are created over the same generated sources and checked together after every
refresh. Together the families cover each supported operator alone and in combination; the
comment above a view says what it is there for.

Names are written as a user might: some view names in mixed case or backticks (the harness
refreshes each by its name in the other case), tables and columns in another case than their
CREATE TABLE, string literals with backslash escapes. Views read the sources' high-precision
decimals (``r.b`` DECIMAL(18,8), ``t.x`` DECIMAL(38,18), ``t.`größe``` DECIMAL(38,0)), doubles
(``r.Rate``) and a timestamp (``s.`order```) through CAST(… AS DATE) and hour().
"""

from tests.property.harness import Approximate, Rewritten

FAMILIES: dict[str, dict[str, str | Rewritten]] = {
    "rows": {
        # filter only, a literal with an escaped quote, the table named in another case
        "Filtered": "SELECT * FROM R WHERE a > 0 OR s IS NULL OR s = 'it\\'s'",
        # projection with expressions: arithmetic, CASE, COALESCE, CAST, IS NULL, <=>
        "projected": (
            "SELECT k, a * 2 + 1 AS a2, "
            "CASE WHEN b > 1 THEN 'big' WHEN b IS NULL THEN 'none' ELSE 'small' END AS size, "
            "COALESCE(s, 'none') AS label, CAST(a AS STRING) AS a_text, "
            "CAST(b AS INT) AS b_int, a IS NULL AS no_a, CAST(RATE AS STRING) AS rate_text "
            "FROM r WHERE NOT (k <=> 2)"
        ),
        # duplicate rows: no DISTINCT, the key projected away
        "`repeated`": "SELECT s, a % 2 AS parity FROM r",
        # SELECT DISTINCT, with NULLs among the distinct rows; a reserved word as its name
        "`distinct`": "SELECT DISTINCT k, s FROM r",
        # DISTINCT over a join; a date that depends on the time zone
        "distinct_join": (
            "SELECT DISTINCT r.s, s.d, CAST(s.`ORDER` AS DATE) AS day FROM r JOIN s ON r.k = s.k"
        ),
    },
    "joins": {
        # inner join with a residual (non-equi) predicate
        "join_residual": (
            "SELECT r.k, r.a, s.c, s.d FROM r JOIN s ON r.k = s.k AND r.a <= s.c + 1"
        ),
        # three-way join
        "join3": ("SELECT r.a, r.s, s.d, t.e FROM r JOIN s ON r.k = s.k JOIN t ON s.c = t.c"),
        # a filter over a join, the join condition itself in WHERE
        "join_filtered": (
            "SELECT r.k, r.b, s.d FROM r, s WHERE r.k = s.k "
            "AND s.d IS NOT NULL AND (r.b > 0 OR r.a IS NULL)"
        ),
        # joins under aggregates, grouped and global
        "join_by_key": (
            "SELECT r.k, COUNT(*) AS n, SUM(s.c) AS sum_c, AVG(r.b) AS avg_b "
            "FROM r JOIN s ON r.k = s.k GROUP BY r.k"
        ),
        "join3_by_d": Approximate(
            "SELECT s.d, COUNT(*) AS n, SUM(r.b) AS sum_b, AVG(t.e) AS avg_e, "
            "SUM(t.x) AS sum_x, SUM(r.rate) AS sum_rate "
            "FROM r JOIN s ON r.k = s.k JOIN t ON s.c = t.c GROUP BY s.d",
            ("sum_rate",),
        ),
        "join_global": "SELECT COUNT(*) AS n, SUM(r.a * t.e) AS dot FROM r JOIN t ON r.k = t.c",
        # a float sum per key under a join: a state table, whose stored sums the join reads
        "join_rate_totals": Approximate(
            "SELECT s.d, q.total FROM s JOIN "
            "(SELECT k, SUM(Rate) AS total FROM r GROUP BY k) q ON s.k = q.k",
            ("total",),
        ),
    },
    "aggregates": {
        # every aggregate, NULL group keys, groups whose argument is all NULL (SUM is NULL)
        "ByKey": (
            "SELECT k, COUNT(*) AS n, COUNT(a) AS n_a, SUM(a) AS sum_a, "
            "SUM(b) AS sum_b, AVG(a) AS avg_a, AVG(b) AS avg_b FROM r GROUP BY k"
        ),
        # GROUP BY an expression; float sums that retract 1e16, NaN and ±Infinity
        "by_expr": Approximate(
            "SELECT a % 2 AS parity, COUNT(*) AS n, SUM(b) AS sum_b, SUM(Rate) AS sum_rate, "
            "AVG(rate) AS avg_rate FROM r GROUP BY a % 2",
            ("sum_rate", "avg_rate"),
        ),
        # a float sum under HAVING: the groups a change touches leave, come back, and replace
        # their stored rows, whose sums were added in another order than a recomputation's
        "heavy_rates": Approximate(
            "SELECT k, COUNT(*) AS n, SUM(Rate) AS total FROM r GROUP BY k HAVING COUNT(*) > 1",
            ("total",),
        ),
        # GROUP BY keys that are not selected (the view repeats rows), under a filter
        "keys_hidden": (
            "SELECT COUNT(*) AS n, SUM(a) AS sum_a FROM r WHERE b IS NOT NULL GROUP BY k, s"
        ),
        # expressions over aggregates
        "agg_exprs": (
            "SELECT k, SUM(a) * 2 + COUNT(*) AS score, SUM(b) / COUNT(*) AS mean_b, "
            "COUNT(a) - COUNT(*) AS missing_a FROM r GROUP BY k"
        ),
        # global aggregates: one row always, also over an empty source
        "totals": (
            "SELECT COUNT(*) AS n, COUNT(b) AS n_b, SUM(a) AS sum_a, SUM(b) AS sum_b, "
            "AVG(a) AS avg_a, AVG(b) AS avg_b, SUM(a) * 2 + COUNT(*) AS score FROM r"
        ),
        # DECIMAL(38,18) and DECIMAL(38,0): every digit of scale, and a change whose own sum
        # overflows while the total does not
        "filtered_totals": (
            "SELECT COUNT(*) AS n, SUM(e) AS sum_e, SUM(x) AS sum_x, "
            "AVG(x) AS avg_x, SUM(`GRÖßE`) AS sum_g "
            "FROM t WHERE e > 0"
        ),
    },
    "keyed_joins": {
        # outer joins: NULL-padded rows come and go as matches do
        "left_join": (
            "SELECT r.k, r.a, s.c, s.d, hour(s.`order`) AS h FROM r LEFT JOIN s ON r.k = s.k"
        ),
        "right_join": ("SELECT r.a, s.k, s.d FROM r RIGHT JOIN s ON r.k = s.k AND r.a <= s.c"),
        "full_join": "SELECT s.c AS sc, t.c AS tc, t.e FROM s FULL OUTER JOIN t ON s.c = t.c",
        # and without ON: every row of r while t has a row, or none
        "semi_anti": (
            "SELECT r.k, r.s FROM r LEFT SEMI JOIN t ON r.k = t.c "
            "UNION ALL SELECT r.k, r.s FROM r LEFT ANTI JOIN t ON r.k = t.c "
            "UNION ALL SELECT r.k, r.s FROM r LEFT SEMI JOIN s "
            "UNION ALL SELECT r.k, r.s FROM r LEFT ANTI JOIN s"
        ),
        # an outer join under an inner join and a filter
        "left_then_inner": (
            "SELECT r.a, s.d, t.e FROM r LEFT JOIN s ON r.k = s.k "
            "JOIN t ON r.k = t.c WHERE t.e IS NOT NULL OR s.d IS NULL"
        ),
        # filters of an outer and an anti join's inputs: in ON, on either input; in WHERE, on
        # the preserved input and on the NULL-padded one (which must stay above the join)
        "left_join_filtered": (
            "SELECT r.k, r.a, s.d FROM r LEFT JOIN s ON r.k = s.k "
            "AND r.a > 0 AND s.c IS NOT NULL "
            "WHERE r.s IS NOT NULL AND (s.d IS NULL OR s.d <> 'p')"
        ),
        "anti_join_filtered": (
            "SELECT r.k, r.a FROM r LEFT ANTI JOIN t ON r.k = t.c "
            "AND r.a > 0 AND t.e > 0 WHERE r.b IS NOT NULL"
        ),
    },
    "pushed_filters": {
        # filters that move onto an input of a join nested left of a join that pads it: an
        # inner join's, a left join's preserved input's, a semi join's (their SQL must apply
        # them before the padding)
        "inner_then_right": (
            "SELECT r.a, s.d, t.e FROM r JOIN s ON r.k = s.k AND r.a > 0 "
            "RIGHT JOIN t ON t.c = s.c AND r.s <> 'x' AND s.d IS NOT NULL "
            "WHERE t.e > 0"
        ),
        "left_then_right": (
            "SELECT r.a, s.d, t.e FROM r LEFT JOIN s ON r.k = s.k "
            "RIGHT JOIN t ON t.c = s.c AND r.a > 0 WHERE t.e IS NOT NULL"
        ),
        "semi_then_full": (
            "SELECT r.a, s.d FROM r LEFT SEMI JOIN t ON r.k = t.c AND r.a > 0 "
            "AND t.e <> 0 FULL OUTER JOIN s ON s.k = r.k AND r.s = 'x'"
        ),
    },
    "keyed_aggregates": {
        # aggregates without accumulators: recomputed per affected group
        "min_max": Approximate(
            "SELECT k, MIN(a) AS lo, MAX(b) AS hi, COUNT(DISTINCT s) AS kinds, "
            "SUM(a) FILTER (WHERE b > 0) AS positive_a, MAX(rate) AS top_rate "
            "FROM r GROUP BY k",
            ("top_rate",),
        ),
        "having": "SELECT s, COUNT(*) AS n, SUM(a) AS sum_a FROM r GROUP BY s HAVING COUNT(*) > 1",
        "global_max": "SELECT MAX(e) AS hi, MIN(e) AS lo FROM t",
        # MIN and MAX beside counts and exact sums, of a string and a decimal, under a filter
        # (inserted rows fold into the stored groups: ivm.rules.append)
        "min_max_counted": (
            "SELECT k, MIN(a) AS lo, MAX(s) AS last_s, MAX(b) AS hi_b, "
            "COUNT(*) AS n, COUNT(b) AS n_b, SUM(a) AS sum_a, SUM(b) AS sum_b "
            "FROM r WHERE a IS NULL OR a <> 3 GROUP BY k"
        ),
        "join_max": ("SELECT s.d, MAX(r.a) AS hi FROM r JOIN s ON r.k = s.k GROUP BY s.d"),
    },
    "nested": {
        # an aggregate of an aggregate, DISTINCT in a subquery (a column named with a dot),
        # a CTE read twice
        "agg_of_agg": (
            "SELECT n, COUNT(*) AS groups FROM "
            "(SELECT k, COUNT(*) AS n FROM r GROUP BY k) g GROUP BY n"
        ),
        "distinct_sub": (
            "SELECT d.`s.text`, COUNT(*) AS n FROM "
            "(SELECT DISTINCT k, s AS `s.text` FROM r) d GROUP BY d.`s.text`"
        ),
        "cte_twice": (
            "WITH big AS (SELECT k, SUM(a) AS total FROM r GROUP BY k) "
            "SELECT x.k, x.total, y.total AS other FROM big x JOIN big y "
            "ON x.k = y.k"
        ),
        "agg_join": (
            "SELECT s.d, g.total FROM (SELECT k, SUM(b) AS total FROM r GROUP BY k) g "
            "JOIN s ON g.k = s.k"
        ),
        # a filter over groups: on their keys (it may filter the rows grouped), on a count
        "filtered_groups": (
            "SELECT g.k, g.n FROM (SELECT k, s, COUNT(*) AS n FROM r "
            "GROUP BY k, s) g WHERE g.k = 1 AND g.s <> 'x' AND g.n > 1"
        ),
    },
    "windows": {
        # the latest row per key (ties broken by every selected column, so the oracle agrees)
        "latest": (
            "SELECT k, a, b, s FROM (SELECT k, a, b, s, ROW_NUMBER() OVER "
            "(PARTITION BY k ORDER BY a DESC, b, s) AS rn FROM r) x WHERE rn <= 1"
        ),
        # the same with QUALIFY, which Spark does not parse: its oracle is the subquery form
        "qualify": Rewritten(
            "SELECT r.k, s.d, r.a FROM r JOIN s ON r.k = s.k "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY s.d ORDER BY r.a, r.k) <= 2",
            "SELECT k, d, a FROM (SELECT r.k, s.d, r.a, ROW_NUMBER() OVER "
            "(PARTITION BY s.d ORDER BY r.a, r.k) AS rn FROM r JOIN s ON r.k = s.k) x "
            "WHERE rn <= 2",
        ),
        # running sums and ranks over two different partitionings
        "running": (
            "SELECT k, a, SUM(a) OVER (PARTITION BY k ORDER BY a) AS running, "
            "RANK() OVER (PARTITION BY k ORDER BY b) AS rk, "
            "DENSE_RANK() OVER (PARTITION BY s ORDER BY a DESC) AS drk FROM r"
        ),
        "lag": (
            "SELECT k, a, b, LAG(a) OVER (PARTITION BY k ORDER BY a, b) AS prev, "
            "COUNT(*) OVER (PARTITION BY k) AS in_key FROM r"
        ),
        # a filter over numbered rows: on the partition (it may filter the rows numbered), on
        # another column (it may not)
        "filtered_partitions": (
            "SELECT k, a, rn FROM (SELECT k, a, ROW_NUMBER() OVER "
            "(PARTITION BY k ORDER BY a, b, s) AS rn FROM r) x "
            "WHERE k IS NOT NULL AND a > 0"
        ),
        # the two lowest values per group, ties kept (DENSE_RANK), NULLs among them
        "lowest_two": (
            "SELECT s, a, k FROM (SELECT s, a, k, DENSE_RANK() OVER "
            "(PARTITION BY s ORDER BY a) AS dr FROM r) x WHERE dr <= 2"
        ),
        # global top-N, of rows and of groups; a window over groups
        "top3": "SELECT k, a FROM r ORDER BY a DESC, k LIMIT 3",
        "top_groups": (
            "SELECT k, SUM(a) AS total FROM r GROUP BY k ORDER BY total DESC NULLS LAST, k LIMIT 2"
        ),
        # a float sum over each partition, beside every row of it
        "rate_per_key": Approximate(
            "SELECT k, a, SUM(Rate) OVER (PARTITION BY k) AS key_rate FROM r", ("key_rate",)
        ),
        "rank_groups": (
            "SELECT k, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS rk FROM r GROUP BY k"
        ),
    },
    "subqueries": {
        # EXISTS with a residual condition; NOT EXISTS correlated by an equality and more
        "exists": (
            "SELECT r.k, r.a FROM r WHERE r.b IS NOT NULL AND EXISTS "
            '(SELECT 1 FROM s WHERE s.k = r.k AND s.c > 0 AND s.d <> "dq\\"x")'
        ),
        "not_exists": (
            "SELECT r.k, r.s FROM r WHERE NOT EXISTS "
            "(SELECT 1 FROM t WHERE t.c = r.k AND t.e >= r.a)"
        ),
        "exists_anywhere": "SELECT k, a FROM r WHERE EXISTS (SELECT 1 FROM t WHERE e > 1)",
        # IN over a grouped subquery; NOT IN against a column with NULLs (SQL's NULL rules)
        "in_grouped": (
            "SELECT r.k, r.b FROM r WHERE r.k IN (SELECT k FROM s GROUP BY k HAVING COUNT(*) > 1)"
        ),
        "not_in": "SELECT r.k, r.a FROM r WHERE r.a NOT IN (SELECT c FROM t)",
        # scalar subqueries: uncorrelated, correlated in WHERE, correlated COUNT in SELECT
        # (0, not NULL, for a key without rows), and in HAVING
        "scalar": "SELECT k, a FROM r WHERE a > (SELECT AVG(e) FROM t)",
        "correlated": (
            "SELECT r.k, r.a FROM r WHERE r.a >= (SELECT MAX(t.e) FROM t WHERE t.c = r.k)"
        ),
        "correlated_count": "SELECT r.k, (SELECT COUNT(*) FROM s WHERE s.k = r.k) AS n FROM r",
        "having_scalar": (
            "SELECT s, COUNT(*) AS n FROM r GROUP BY s "
            "HAVING COUNT(*) >= (SELECT COUNT(*) FROM t) / 2"
        ),
    },
    "grouping_sets": {
        # subtotals: every accumulator per ROLLUP level, grouping() and grouping_id()
        "rollup": (
            "SELECT k, s, grouping(s) AS s_total, grouping_id() AS level, COUNT(*) AS n, "
            "SUM(a) AS sum_a, AVG(b) AS avg_b FROM r GROUP BY ROLLUP(k, s)"
        ),
        # CUBE over a join, recomputed per affected group (MAX), HAVING on grouping()
        "cube_max": (
            "SELECT r.k, s.d, MAX(r.a) AS hi, COUNT(DISTINCT s.c) AS cs "
            "FROM r JOIN s ON r.k = s.k GROUP BY CUBE(r.k, s.d) "
            "HAVING grouping(s.d) = 0 OR COUNT(*) > 1"
        ),
        # a key crossed with explicit sets, one of them an expression, one empty
        "sets": (
            "SELECT c, e % 2 AS parity, grouping_id() AS gid, SUM(x) AS sum_x, "
            "COUNT(*) AS n FROM t GROUP BY c, GROUPING SETS ((e % 2), ())"
        ),
        # MySQL's spelling
        "with_rollup": "SELECT k, a, COUNT(*) AS n FROM r GROUP BY k, a WITH ROLLUP",
    },
    "arrays": {
        # an array column's elements grouped
        "tag_counts": (
            "SELECT tag, COUNT(*) AS n FROM s LATERAL VIEW explode(tags) g AS tag GROUP BY tag"
        ),
        # OUTER: a row with an empty or NULL array is kept once; positions
        "outer_rows": (
            "SELECT s.k, g.pos, g.tag FROM s "
            "LATERAL VIEW OUTER posexplode(s.tags) g AS pos, tag WHERE s.c > 0"
        ),
        # a generator in the SELECT list, over a join
        "select_explode": "SELECT r.a, explode(s.tags) AS tag FROM r JOIN s ON r.k = s.k",
        # arrays collected per group: sorted or counted, so the order rows come in is lost
        "collected": (
            "SELECT k, array_sort(collect_set(tag)) AS tag_set, "
            "size(collect_list(tag)) AS n_tags "
            "FROM s LATERAL VIEW explode(tags) g AS tag GROUP BY k"
        ),
        # inline of an array of structs built from columns
        "inline_pairs": (
            "SELECT g.kk, g.dd, COUNT(*) AS n FROM s LATERAL VIEW inline(array("
            "named_struct('kk', s.k, 'dd', s.d), "
            "named_struct('kk', s.c, 'dd', 'const'))) g AS kk, dd "
            "GROUP BY g.kk, g.dd"
        ),
        # a lateral view over a derived table, and a second one over the first's column
        "chained": (
            "SELECT x.k, v, w FROM (SELECT k, tags FROM s WHERE c IS NOT NULL) x "
            "LATERAL VIEW explode(x.tags) a AS v "
            "LATERAL VIEW explode(array(v, upper(v))) b AS w"
        ),
    },
    "set_operations": {
        "intersect": "SELECT k AS x FROM r INTERSECT SELECT c FROM t",
        "except_all": "SELECT k AS x FROM r EXCEPT ALL SELECT c FROM s",
        "union_all": "SELECT k AS x FROM r UNION ALL SELECT c FROM s UNION ALL SELECT c FROM t",
        "union": "SELECT k AS x, s AS y FROM r UNION SELECT k, d FROM s",
        "union_grouped": (
            "SELECT u.x, COUNT(*) AS n FROM (SELECT k AS x FROM r UNION ALL "
            "SELECT c FROM t) u GROUP BY u.x"
        ),
        # a filter over a union, of each branch's rows
        "union_filtered": (
            "SELECT u.x, u.y FROM (SELECT k AS x, s AS y FROM r UNION ALL "
            "SELECT c, d FROM s) u WHERE u.x = 1 AND u.y <> 'p'"
        ),
        # branches of different types, which Spark casts to the wider: r.b's DECIMAL(18, 8)
        # rounded to t's DECIMAL(38, 0) (0.12345678 to 0, -1.5 to -2), then compared, filtered
        # on and grouped by (a change read in its branch's own type compares otherwise)
        "union_widened": (
            "SELECT u.v = 0 AS zero, u.v = -2 AS minus_two, u.w FROM (SELECT b AS v, k AS w "
            "FROM r UNION ALL SELECT `größe`, c FROM t) u"
        ),
        "union_widened_filtered": (
            "SELECT u.w FROM (SELECT b AS v, k AS w FROM r UNION ALL SELECT `größe`, c FROM t) u "
            "WHERE u.v = 0"
        ),
        "union_widened_grouped": (
            "SELECT u.v, COUNT(*) AS n, SUM(u.w) AS w FROM (SELECT b AS v, k AS w FROM r "
            "UNION ALL SELECT `größe`, x FROM t) u GROUP BY u.v"
        ),
        "intersect_widened": "SELECT b AS v FROM r INTERSECT ALL SELECT `größe` FROM t",
    },
}
