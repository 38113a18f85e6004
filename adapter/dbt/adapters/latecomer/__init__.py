"""latecomer's dbt adapter: dbt-spark, extended the way dbt-databricks extends it."""

from dbt.adapters.base import AdapterPlugin
from dbt.adapters.latecomer import template_cache
from dbt.adapters.latecomer.connections import LatecomerConnectionManager, LatecomerCredentials
from dbt.adapters.latecomer.impl import LatecomerAdapter
from dbt.include import latecomer

# A process running many builds compiles each node's SQL template once.
template_cache.install()

Plugin = AdapterPlugin(
    adapter=LatecomerAdapter,  # type: ignore[arg-type]
    credentials=LatecomerCredentials,
    include_path=latecomer.PACKAGE_PATH,
    dependencies=["spark"],
)

__all__ = ["LatecomerAdapter", "LatecomerConnectionManager", "LatecomerCredentials", "Plugin"]
