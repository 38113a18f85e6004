"""Error of the completeness estimate by hours after the day ended (python_jobs.core.completeness)."""

import json

from python_jobs.core.completeness import backtest, live_arrival_values, parse_as_of


def model(dbt, session):
    dbt.config(materialized="recomputed")
    horizons = dbt.config.meta_get("completeness_backtest_horizons_hours")
    return backtest(
        live_arrival_values(dbt.ref("silver_arrival_values")),
        parse_as_of(dbt.config.meta_get("as_of")),
        horizon_hours=float(dbt.config.meta_get("completeness_horizon_hours")),
        window_days=int(dbt.config.meta_get("completeness_window_days")),
        backtest_days=int(dbt.config.meta_get("completeness_backtest_days")),
        horizons_hours=[float(k) for k in (json.loads(horizons) if isinstance(horizons, str) else horizons)],
        interval=float(dbt.config.meta_get("completeness_interval")),
    )
