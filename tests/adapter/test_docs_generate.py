"""dbt-tests-adapter's `dbt docs generate` suite: the catalog of seeds, views and tables.

Spark's names for the types and relation types; a seed's integers are bigint
(dbt-spark's type for a whole-number CSV column). A table's statistics are the
metastore's byte (and row) counts of its files, which differ from run to run,
so a table's stats are not compared; a view has none.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences

SPARK_TYPES = {
    "id_type": "bigint",
    "text_type": "string",
    "time_type": "timestamp",
    "view_type": "view",
    "table_type": "table",
}


class AnyTableStats(dict):
    """Equal to any stats a table has (a dict)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any, profile_user: str) -> dict[str, Any]:
        return expected_catalog.base_expected_catalog(
            project,
            role=profile_user,
            model_stats=expected_catalog.no_stats(),
            seed_stats=AnyTableStats(),
            **SPARK_TYPES,
        )


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any, profile_user: str) -> dict[str, Any]:
        return expected_catalog.expected_references_catalog(
            project,
            role=profile_user,
            model_stats=AnyTableStats(),
            seed_stats=AnyTableStats(),
            view_summary_stats=expected_catalog.no_stats(),
            bigint_type="bigint",
            **SPARK_TYPES,
        )
