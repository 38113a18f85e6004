"""What the file ingest and the streams agree on before anything lands: the
feeds (kinds of landing file, each with its bronze table and JSON fields), the
one spelling of a source name, where bronze is (:class:`IngestSettings`) and
the error that bad arguments or input raise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A canonical source name (after trimming and lower-casing).
SOURCE_NAME = re.compile(r"[a-z0-9_]{1,64}")


@dataclass(frozen=True)
class Feed:
    """A kind of landing file: its bronze table, JSON fields and time field."""

    name: str
    table: str
    fields: tuple[str, ...]
    ts_field: str


EVENTS = Feed(
    name="events",
    table="bronze_events",
    fields=(
        "event_id",
        "event_type",
        "user_id",
        "amount",
        "event_ts",
        "is_correction",
        "corrects_event_id",
        "is_deleted",
    ),
    ts_field="event_ts",
)
CUSTOMERS = Feed(
    name="customers",
    table="bronze_customer_changes",
    fields=("customer_id", "tier", "region", "updated_at", "is_deleted"),
    ts_field="updated_at",
)
FEEDS = {feed.name: feed for feed in (EVENTS, CUSTOMERS)}


class IngestError(ValueError):
    """Bad arguments or input files; the message says what to fix."""


@dataclass(frozen=True)
class IngestSettings:
    schema: str
    table_format: str
    max_future_skew_hours: float = 24.0

    @property
    def database(self) -> str:
        return f"{self.schema}_bronze"


def canonical_source(name: str) -> str:
    """``name`` trimmed and lower-cased; raises :class:`IngestError` unless it is ``[a-z0-9_]``, 1 to 64 long.

    One spelling per source: ``WEB``, `` web `` and ``web`` land as ``web``,
    so a file already landed under one of them is not landed again.
    """
    canonical = name.strip().lower()
    if not name.isascii() or not SOURCE_NAME.fullmatch(canonical):
        raise IngestError(
            f"--source {name!r}: a source name is 1 to 64 of a-z, 0-9 and _ ([a-z0-9_]), "
            "after trimming and lower-casing"
        )
    return canonical
