"""Hand-made landing rows for the scenario tests: orders of March 2024 at 10:00 UTC."""

from __future__ import annotations

from typing import Any


def event(event_id: str, day: str, amount: int, **extra: Any) -> dict[str, Any]:
    """An order of 2024-03-<day>; ``extra`` adds or replaces fields."""
    return {
        "event_id": event_id,
        "event_type": "order_placed",
        "user_id": "u-" + event_id,
        "amount": amount,
        "event_ts": f"2024-03-{day}T10:00:00+00:00",
        **extra,
    }


def correction(event_id: str, corrects: str, day: str, amount: int) -> dict[str, Any]:
    """A correction of ``corrects``, moving it to 2024-03-<day> with a new amount."""
    return event(event_id, day, amount, is_correction=True, corrects_event_id=corrects)
