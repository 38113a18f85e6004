"""Typed core shared by the dbt Python models, the adapter plugin and the tools.

Importing it starts no Spark session and no JVM.
"""
