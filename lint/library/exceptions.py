"""Stand-in for dbt's `exceptions` context object when sqlfluff renders Jinja."""


def raise_compiler_error(message: str) -> None:
    raise RuntimeError(message)
