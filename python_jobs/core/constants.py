"""Constants of the landing contract shared by ingest, the transforms and the generator.

Watermark tiers and partition statuses are dbt vars (``dbt_project.yml``),
read by the SQL macros; they are not repeated here.
"""

from __future__ import annotations

from typing import Final

# Event types a landing line may carry; any other is quarantined.
EVENT_TYPES: Final = ("page_view", "add_to_cart", "order_placed", "payment_confirmed", "refund")
# The event type that counts as an order (orders, gross revenue, converted sessions).
ORDER_EVENT_TYPE: Final = "order_placed"
# The event type whose amount net revenue takes off.
REFUND_EVENT_TYPE: Final = "refund"
# Event types that must carry an amount.
MONEY_EVENT_TYPES: Final = ("order_placed", "refund")
# Customer tiers a customer change may carry (lower-cased).
CUSTOMER_TIERS: Final = ("bronze", "silver", "gold", "platinum")
# The measures of the revenue gold models (daily, hourly, rollups, by tier),
# which the restatement digest and the explanations of a change sum.
REVENUE_MEASURES: Final = ("orders", "gross_revenue", "refunds", "net_revenue")
# Spark SQL type of money amounts in bronze, silver and sessions.
MONEY: Final = "decimal(18,2)"
