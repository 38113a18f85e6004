"""Tooling around the product: the restatement benchmark and its synthetic data.

Tooling imports the product (``python_jobs``, the dbt project); the product
never imports tooling.
"""
