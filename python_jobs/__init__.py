"""latecomer's Python product code, by role.

``core``
    Typed code the dbt Python models, the adapter plugin and the command-line
    tools share: Spark configuration, constants, the sessionize and
    completeness transforms, the in-process dbt runner.
``landing``
    Command-line tools that bring data in: ``ingest``, ``steward``.
``operations``
    Command-line tools that run the project: ``thrift_server``, ``run_sample``.

Each tool has a ``main()`` behind ``python -m python_jobs.<role>.<tool>``.
Tooling (benchmark, generator) imports this package, never the other way round.
"""
