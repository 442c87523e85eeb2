"""DuckDB's SQL in Spark's dialect, and a query cut into the steps Spark is handed.

The run figures are written once, in DuckDB's SQL (`runs.py`); `to_spark` renders that
text for Spark. Each rewrite spells one DuckDB-only construct Spark's way (a list of
them is in docs/store.md, "The run figures on Spark"). The few that are one place's
shape (the runs of a row taken apart, the events before a run's window, the count of
`lead_times`, the first copy of each delivery, the rows read for their files alone) are
replaced whole. A text that no longer has the shape a rewrite expects is refused rather
than rendered half (a `QueryError` naming what is left), so a change to the DuckDB text
that needs a new rewrite fails the test, not a user's cluster.

`cte_steps` cuts a query into its CTEs, each a step of its own (`spark.py` says why).
"""

from __future__ import annotations

import re

from toolkit.errors import QueryError

__all__ = ["cte_steps", "to_spark"]


def to_spark(text: str) -> str:
    """DuckDB's text in Spark's dialect, its comments left out."""
    text = re.sub(r"--[^\n]*", "", text)
    for old, new in _WHOLE.items():
        if old in text:
            text = text.replace(old, new)
    for pattern, replacement in _REWRITES:
        text = re.sub(pattern, replacement, text)
    text = _windows(text)
    text = _star_replace(text)
    text = _star_exclude(text)
    text = _literals(text)
    left = [word for word in _DUCKDB_ONLY if re.search(word, text)]
    if left:
        raise QueryError(
            f"the Spark text still has DuckDB's {', '.join(left)}: a rewrite of "
            "toolkit/analysis/sql/dialect.py needs updating for the DuckDB text"
        )
    return text


def cte_steps(text: str) -> list[tuple[str | None, str]]:
    """The CTEs of `text` as (name, SELECT), in order, those of a CTE that has its own
    `WITH` before it, then (None, the last SELECT)."""
    text = text.strip()
    opening = re.match(r"WITH(\s+RECURSIVE)?\s+", text)
    if opening is None:
        return [(None, text)]
    steps: list[tuple[str | None, str]] = []
    rest = text[opening.end() :]
    while (cte := re.match(r"(\w+)\s+AS\s+\(", rest)) is not None:
        name = cte.group(1)
        close = _closing(rest, cte.end() - 1)
        *inner, (_, select) = cte_steps(rest[cte.end() : close])
        steps += inner
        if re.search(rf"\b{name}\b", select):  # a recursive CTE: a step of its own
            select = f"WITH RECURSIVE {name} AS ({select})\nSELECT * FROM {name}"
        steps.append((name, select.strip()))
        rest = rest[close + 1 :].lstrip().removeprefix(",").lstrip()
    return [*steps, (None, rest)]


def _whole(old: str, new: str) -> tuple[str, str]:
    return old, new


# Shapes replaced whole, each in one place of the DuckDB text.
_WHOLE = dict(
    [
        # The rows read for their files alone have no next row: Spark's UNION is by
        # position, so the columns the other side has are spelled null.
        _whole(
            """    UNION ALL BY NAME
    SELECT chapter_id, idx, segment, known, first, added, rest, cleared, may_retry,
           pages_before, started_before, exported, files_only,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0) ELSE 0
           END AS held_alone
    FROM m_read WHERE files_only""",
            """    UNION ALL
    SELECT chapter_id, idx, segment, known, first, added, rest, cleared, may_retry,
           pages_before, started_before, exported, files_only,
           CASE WHEN started_before THEN greatest(pages_before - known - first, 0) ELSE 0
           END AS held_alone,
           NULL AS next_segment, NULL AS next_known, NULL AS next_first,
           NULL AS next_added, NULL AS next_rest, NULL AS next_pages_before,
           NULL AS next_started_before, NULL AS next_cleared
    FROM m_read WHERE files_only""",
        ),
        # The first copy of each delivery (Spark has no QUALIFY).
        _whole(
            """FROM (SELECT * FROM events
      QUALIFY row_number() OVER (PARTITION BY webhook_id ORDER BY received_at, "timestamp") = 1)""",
            """FROM (SELECT * FROM (SELECT *, row_number() OVER (
                         PARTITION BY webhook_id ORDER BY received_at, `timestamp`) AS copy_
                     FROM events) WHERE copy_ = 1)""",
        ),
        # A row's runs, one per slot and ordinal: explode twice.
        _whole(
            """SELECT * EXCLUDE (x, runs_of_row),
           x.from + unnest(range(x.n)) AS ordinal, x.slot AS slot, x.pages AS run_pages
    FROM (SELECT *, unnest(runs_of_row) AS x FROM row_ends)""",
            """SELECT `(x|runs_of_row|k_)?+.+`,
           x.from_ + k_ AS ordinal, x.slot AS slot, x.pages AS run_pages
    FROM (SELECT *, explode(runs_of_row) AS x FROM row_ends)
    LATERAL VIEW explode(sequence(0, greatest(x.n, 1) - 1)) AS k_
    WHERE k_ < x.n""",
        ),
        # The events before a run's window: the latest number at or before its start.
        _whole(
            """FROM (SELECT w.chapter_id, w.idx, w.ordinal, w.window_high,
                 coalesce(b.n, 0) + w.skip + 1 AS wanted
          FROM windows w ASOF LEFT JOIN numbered_events b
            ON b.chapter_id = w.chapter_id AND w.window_low >= b.at_us) w""",
            """FROM (SELECT w.chapter_id, w.idx, w.ordinal, w.window_high,
                 coalesce(max(b.n), 0) + w.skip + 1 AS wanted
          FROM windows w LEFT JOIN numbered_events b
            ON b.chapter_id = w.chapter_id AND w.window_low >= b.at_us
          GROUP BY w.chapter_id, w.idx, w.ordinal, w.window_high, w.skip) w""",
        ),
        # `lead_times`: a chapter's runs up to its first finish, counted in the list.
        _whole(
            """                   list(struct_pack(started_at, outcome)) AS all_runs
            FROM runs GROUP BY chapter_id HAVING count(*) FILTER (kind = 'first') > 0
        ), LATERAL (
            SELECT count(*) AS runs,
                   count(*) FILTER (x.outcome IN ('failed', 'stalled')) AS failed_runs
            FROM (SELECT unnest(all_runs) AS x) WHERE x.started_at <= reviewable_at
        )""",
            """                   collect_list(struct(started_at, outcome)) AS all_runs
            FROM runs GROUP BY chapter_id HAVING count(*) FILTER (WHERE kind = 'first') > 0
        ) LATERAL VIEW inline(array(struct(
            size(filter(all_runs, x -> x.started_at <= reviewable_at)),
            size(filter(all_runs, x -> x.started_at <= reviewable_at
                                    AND x.outcome IN ('failed', 'stalled')))
        ))) counted AS runs, failed_runs""",
        ),
    ]
)

_FAR = "9223372036854775807"
_REWRITES: list[tuple[str, str]] = [
    (r"::VARCHAR\b", "::STRING"),
    (r"\bround_even\(", "bround("),
    (r"\bepoch_us\(", "unix_micros("),
    (r"\bjson_extract_string\(", "get_json_object("),
    (r'"timestamp"', "`timestamp`"),
    (r"\bmake_timestamp\(", "timestamp_micros("),
    (r"\bregexp_matches\(([^,()]+(?:\.[^,()]+)?), '([^']*)'\)", r"(\1 RLIKE r'\2')"),
    (rf", \((coalesce\(started_at, {_FAR}\)), number\)\)", r", struct(\1, number))"),
    (r"\barg_max_null\(", "max_by("),
    (r"\barg_max\(", "max_by("),
    (r"\bfirst\((\w+) ORDER BY n DESC, price\)", r"min_by(\1, struct(-n, price))"),
    (
        r"\bfirst\(([^()]*(?:\([^()]*\))?[^()]*) ORDER BY started_at NULLS LAST\)",
        rf"min_by(\1, coalesce(started_at, {_FAR}))",
    ),
    (r"FILTER \((?!WHERE)", "FILTER (WHERE "),
    (r"\blen\(", "size("),
    (r"\b(\w+)\[1\]", r"element_at(\1, 1)"),
    (r"\b(\w+)\[-1\]", r"element_at(\1, -1)"),
    (r"\[('[^\]]+')\]\[([^\]]+)\]", r"element_at(array(\1), \2)"),
    (r"AS MATERIALIZED \(", "AS ("),
    (r"(\w+) IS NOT false", r"coalesce(\1, true)"),
    (r"'from': ", "'from_': "),
]

# What no rewrite may leave behind.
_DUCKDB_ONLY = (
    r"\bEXCLUDE\b",
    r"\bREPLACE \(",
    r"\bunnest\(",
    r"\bASOF\b",
    r"\blist_sum\(",
    r"\bstruct_pack\(",
    r"\bround_even\(",
    r"\bepoch_us\(",
    r"\bQUALIFY\b",
    r"\bBY NAME\b",
    r"\bjson_extract_string\(",
    r"\bregexp_matches\(",
    r"\barg_max",
    r"\bMATERIALIZED\b",
    r"\{'",
    r"OVER \(\s*\w+\s+ROWS",
    r"\bWINDOW \w+ AS",
)


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at `start`."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[start]]]
    i = start + 1
    quoted = False
    while stack:
        c = text[i]
        if c == "'":
            quoted = not quoted
        elif not quoted and c in pairs:
            stack.append(pairs[c])
        elif not quoted and c == stack[-1]:
            stack.pop()
        i += 1
    return i - 1


def _split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split at the separators outside brackets and quotes."""
    parts, depth, quoted, current = [], 0, False, ""
    for c in text:
        if c == "'":
            quoted = not quoted
        elif not quoted and c in "([{":
            depth += 1
        elif not quoted and c in ")]}":
            depth -= 1
        if c == sep and depth == 0 and not quoted:
            parts.append(current)
            current = ""
        else:
            current += c
    parts.append(current)
    return parts


def _windows(text: str) -> str:
    """Named windows written out where they are used (Spark refines none: `OVER (w
    ROWS ...)`); each `WINDOW name AS (...)` serves the text since the one before."""
    done, rest = "", text
    clause = re.compile(r"\s+WINDOW (\w+) AS \(")
    while (found := clause.search(rest)) is not None:
        name = found.group(1)
        close = _closing(rest, found.end() - 1)
        spec = rest[found.end() : close]
        before = rest[: found.start()]
        before = re.sub(rf"OVER \(\s*{name}\s", f"OVER ({spec} ", before)
        before = re.sub(rf"OVER \(\s*{name}\)", f"OVER ({spec})", before)
        before = re.sub(rf"OVER {name}\b", f"OVER ({spec})", before)
        done += before
        rest = rest[close + 1 :]
    return done + rest


def _star_replace(text: str) -> str:
    """`SELECT * REPLACE (e AS a, ...)`: every other column, then the new ones."""
    while (at := text.find("SELECT * REPLACE (")) >= 0:
        open_ = at + len("SELECT * REPLACE ")
        close = _closing(text, open_)
        items = _split_top(text[open_ + 1 : close])
        names = [item.strip().rsplit(" AS ", 1)[1].strip() for item in items]
        columns = ",".join(item.strip() for item in items)
        text = f"{text[:at]}SELECT `({'|'.join(names)})?+.+`, {columns}{text[close + 1 :]}"
    return text


def _star_exclude(text: str) -> str:
    """`t.* EXCLUDE (a, b)`: a regex of every other column (`quotedRegexColumnNames`)."""
    pattern = re.compile(r"(\b\w+\.)?\* EXCLUDE \(")
    while (found := pattern.search(text)) is not None:
        close = _closing(text, found.end() - 1)
        names = [name.strip() for name in text[found.end() : close].split(",")]
        prefix = found.group(1) or ""
        text = f"{text[: found.start()]}{prefix}`({'|'.join(names)})?+.+`{text[close + 1 :]}"
    return text


def _literals(text: str) -> str:
    """DuckDB's struct and list literals and list comprehensions, in Spark's functions."""
    summed = re.compile(r"list_sum\(\[")
    while (found := summed.search(text)) is not None:
        close = _closing(text, found.end() - 1)
        body, _, source = text[found.end() : close].rpartition(" FOR ")
        variable, _, listed = source.partition(" IN ")
        end = close + 1  # the list's `]`, then the call's `)`
        text = (
            f"{text[: found.start()]}aggregate(transform({listed.strip()}, "
            f"{variable.strip()} -> {body.strip()}), CAST(0 AS DOUBLE), (a_, b_) -> a_ + b_)"
            f"{text[end + 1 :]}"
        )
    while (at := text.find("{'")) >= 0:
        close = _closing(text, at)
        fields = []
        for item in _split_top(text[at + 1 : close]):
            key, _, value = item.partition(":")
            fields.append(f"{key.strip()}, {value.strip()}")
        text = f"{text[:at]}named_struct({', '.join(fields)}){text[close + 1 :]}"
    lists = re.compile(r"\[\s*named_struct\(")
    while (found := lists.search(text)) is not None:
        close = _closing(text, found.start())
        inner = text[found.start() + 1 : close]
        text = f"{text[: found.start()]}array({inner.strip()}){text[close + 1 :]}"
    return text.replace("x.from ", "x.from_ ")
