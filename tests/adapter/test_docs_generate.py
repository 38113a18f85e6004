"""dbt-tests-adapter's `dbt docs generate` suite: the catalog of a seed, a snapshot, a view and a table."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences

# Spark's names of the types and relation types the catalog reports.
SPARK_TYPES = {
    "id_type": "int",
    "text_type": "string",
    "time_type": "timestamp",
    "view_type": "view",
    "table_type": "table",
}


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any, profile_user: str) -> dict[str, Any]:
        return expected_catalog.base_expected_catalog(
            project, role=profile_user, model_stats=expected_catalog.no_stats(), **SPARK_TYPES
        )


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any, profile_user: str) -> dict[str, Any]:
        return expected_catalog.expected_references_catalog(
            project, role=profile_user, model_stats=expected_catalog.no_stats(), bigint_type="bigint", **SPARK_TYPES
        )
