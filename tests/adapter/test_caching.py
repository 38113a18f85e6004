"""dbt-tests-adapter's relation cache suite.

Spark names relations in two parts (schema.identifier): dbt-spark's relations
have no database, so the base class's case-insensitive comparison of the two
runs' cached relations, which lower-cases the database too, compares the two
parts there are.
"""

from __future__ import annotations

from typing import Any

from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingTest,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.util import run_dbt


class TwoPartNames(BaseCachingTest):
    def run_and_inspect_cache(self, project: Any, run_args: list[str] | None = None) -> None:
        # The base class's checks, with the database compared as Spark has it (none).
        run_dbt(run_args)
        relations = list(project.adapter.cache.relations)
        assert len(relations) == 1
        relation = relations.pop()
        assert relation.schema == project.test_schema
        assert relation.schema == project.test_schema.lower()

        run_dbt(run_args)
        relations = list(project.adapter.cache.relations)
        assert len(relations) == 1
        second_relation = relations.pop()
        assert relation.database is None and second_relation.database is None
        for key in ["schema", "identifier"]:
            assert getattr(relation, key).lower() == getattr(second_relation, key).lower()


class TestCachingLowercaseModel(TwoPartNames, BaseCachingLowercaseModel):
    pass


class TestCachingUppercaseModel(TwoPartNames, BaseCachingUppercaseModel):
    pass


class TestCachingSelectedSchemaOnly(TwoPartNames, BaseCachingSelectedSchemaOnly):
    pass


class TestNoPopulateCache(TwoPartNames, BaseNoPopulateCache):
    pass
