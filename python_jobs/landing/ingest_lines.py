"""A landing file's physical lines, numbered without sorting the whole input.

File names are taken literally (never as glob patterns), and names Spark
cannot read are refused before anything lands. The lines are read in parallel
splits: :func:`count_lines` counts the lines of each split in a first pass, so
:func:`read_lines` can number every line (from 1, blank lines included) in the
second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from python_jobs.landing.feeds import IngestError

# Characters Hadoop reads as glob syntax in a path (backslash escapes them).
GLOB_SYNTAX = re.compile(r"([\\\[\]{}*?])")


def literal_path(path: Path) -> str:
    """``path`` for Spark's readers, taken literally.

    Hadoop expands ``[ ] { } * ?`` and ``\\`` in a path as a glob pattern, so
    ``a[1].ndjson`` would read ``a1.ndjson``; each is escaped with a backslash.
    """
    return GLOB_SYNTAX.sub(r"\\\1", str(path))


def unreadable_name(path: Path) -> str | None:
    """Why Spark cannot read ``path`` by its name, or None.

    Names are otherwise taken literally (:func:`literal_path`), but Spark
    skips a file whose name starts with ``_`` or ``.`` as hidden, even when
    named (it would land no line and count as landed), and Hadoop cannot open
    one whose name holds ``:`` (it reads the part before it as a URL scheme).
    """
    if path.name.startswith(("_", ".")):
        return "Spark skips a file whose name starts with '_' or '.'"
    if ":" in path.name:
        return "Hadoop cannot open a file whose name holds ':'"
    return None


def check_paths(paths: Sequence[Path]) -> None:
    """Raise :class:`IngestError`, before anything lands, unless every path is a file Spark can read."""
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise IngestError(f"no such file: {', '.join(missing)}")
    refused = [f"{path} ({why})" for path in paths if (why := unreadable_name(path))]
    if refused:
        raise IngestError(f"rename these files, nothing landed: {'; '.join(refused)}")


LINES_DDL = "raw_payload string, line_number int, source_file string, ingestion_id string"
# monotonically_increasing_id() is (partition index << 33) + position in the partition.
POSITION_IN_PARTITION = (1 << 33) - 1


def is_blank(raw: Column) -> Column:
    return F.trim(raw) == ""


def scan_lines(spark: SparkSession, path: Path, ingestion_id: str) -> DataFrame:
    """Every physical line of ``path``, with where it was read.

    ``_block`` is the byte offset of the split the line came from and
    ``_index`` its 0-based position in the split's Spark partition. A file read
    on its own gets one split per partition (:func:`count_lines` checks it), so
    ``_index`` is the line's position in its split.
    """
    return spark.read.text(literal_path(path)).select(
        F.col("value").alias("raw_payload"),
        F.lit(str(path)).alias("source_file"),
        F.lit(ingestion_id).alias("ingestion_id"),
        F.input_file_block_start().alias("_block"),
        F.monotonically_increasing_id().bitwiseAND(F.lit(POSITION_IN_PARTITION)).alias("_index"),
    )


@dataclass(frozen=True)
class LineCount:
    """Lines of one file, and how many lines precede each of its splits."""

    lines: int
    blank_lines: int
    lines_before: dict[int, int]


def count_lines(spark: SparkSession, files: Sequence[tuple[Path, str]]) -> dict[str, LineCount]:
    """Line and blank-line counts per ingestion id, in one pass over ``files``.

    Files without any line are absent.
    """
    splits = (
        reduce(DataFrame.unionByName, [scan_lines(spark, path, iid) for path, iid in files])
        .groupBy("ingestion_id", "_block")
        .agg(
            F.count("*").alias("lines"),
            F.count_if(is_blank(F.col("raw_payload"))).alias("blank_lines"),
            F.min("_index").alias("first_index"),
            F.max("_index").alias("last_index"),
        )
        .collect()
    )
    by_file: dict[str, list[Row]] = {}
    for split in sorted(splits, key=lambda s: (s.ingestion_id, s["_block"])):
        if split.first_index != 0 or split.last_index != split.lines - 1:
            raise RuntimeError(
                f"lines of ingestion {split.ingestion_id} at byte {split['_block']} share a Spark "
                "partition with other lines, so they cannot be numbered; is "
                "spark.sql.files.maxPartitionNum set?"
            )
        by_file.setdefault(split.ingestion_id, []).append(split)
    counts = {}
    for iid, file_splits in by_file.items():
        before, lines_before = 0, {}
        for split in file_splits:
            lines_before[split["_block"]] = before
            before += split.lines
        counts[iid] = LineCount(before, sum(s.blank_lines for s in file_splits), lines_before)
    return counts


def read_lines(spark: SparkSession, path: Path, ingestion_id: str, count: LineCount) -> DataFrame:
    """One row per physical line of ``path`` with its 1-based line number."""
    lines_before = F.create_map(*(F.lit(n).cast("bigint") for pair in count.lines_before.items() for n in pair))
    line_number = F.element_at(lines_before, F.col("_block")) + F.col("_index") + 1
    return scan_lines(spark, path, ingestion_id).select(
        "raw_payload",
        line_number.cast("int").alias("line_number"),
        "source_file",
        "ingestion_id",
    )
