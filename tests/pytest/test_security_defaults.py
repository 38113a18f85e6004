"""Hostile input and security defaults that need no Spark (docs/guarantees.md).

Source names, private state folders, the Thrift server's bind address,
terminal-safe steward output, `make restore` without shell text, restore
limited to the restated gold models, and no run var pasted into a SQL string.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dbt.adapters.latecomer.impl import LatecomerAdapter
from dbt.clients.yaml_helper import load_yaml_text

from python_jobs.core import spark_config
from python_jobs.core.versions.records import VersionsError
from python_jobs.core.versions.restore import restore_request
from python_jobs.landing import feeds, steward
from python_jobs.operations import restore, run_operation, thrift_server

ROOT = Path(__file__).resolve().parents[2]
GOLD = ["gold_daily_revenue", "gold_hourly_revenue"]


# ------------------------------------------------------------ source names


@pytest.mark.parametrize(("given", "canonical"), [("web", "web"), (" WEB ", "web"), ("Partner_2", "partner_2")])
def test_source_names_are_trimmed_and_lower_cased(given: str, canonical: str) -> None:
    assert feeds.canonical_source(given) == canonical


@pytest.mark.parametrize("given", ["", "  ", "we-b", "w\u00e9b", "\u212aey", "web;drop", "a" * 65, "web\x1b"])
def test_source_names_outside_the_safe_pattern_are_refused(given: str) -> None:
    with pytest.raises(feeds.IngestError, match=r"\[a-z0-9_\]"):
        feeds.canonical_source(given)


# ---------------------------------------------------------- state folders


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_dir_creates_every_missing_folder_owner_only(tmp_path: Path) -> None:
    existing = tmp_path / "shared"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    spark_config.private_dir(existing / "a" / "b")
    assert [mode(existing / "a"), mode(existing / "a" / "b")] == [0o700, 0o700]
    assert mode(existing) == 0o755, "a folder that was there is left as it was"


def test_state_folders_are_created_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_STATE_DIR", str(tmp_path / "new" / "state"))
    monkeypatch.delenv("LATECOMER_WAREHOUSE", raising=False)
    conf = spark_config.spark_conf("iceberg")
    spark_config.create_state_dirs(conf)
    state = tmp_path / "new" / "state"
    for folder in (tmp_path / "new", state, state / "warehouse", state / "hive_scratch", state / "hive_resources"):
        assert mode(folder) == 0o700, folder
    assert conf["spark.sql.warehouse.dir"] == str(state / "warehouse")
    # Hive's session folders live in the state dir, not in a world-readable /tmp.
    assert conf["spark.hadoop.hive.exec.local.scratchdir"].startswith(str(state))
    assert conf["spark.hadoop.hive.downloaded.resources.dir"].startswith(str(state / "hive_resources") + "/")


def test_a_remote_warehouse_is_not_created_locally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LATECOMER_WAREHOUSE", "hdfs://namenode/latecomer")
    spark_config.create_state_dirs(spark_config.spark_conf("iceberg"))
    assert mode(tmp_path / "state") == 0o700
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


# ----------------------------------------------------------- thrift server


@pytest.fixture
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LATECOMER_STATE_DIR", str(tmp_path))
    for name in ("LATECOMER_THRIFT_BIND_HOST", "LATECOMER_THRIFT_SERVER_AUTH"):
        monkeypatch.delenv(name, raising=False)

    def must_not_start(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the server must not be started")

    monkeypatch.setattr(thrift_server.subprocess, "Popen", must_not_start)
    return tmp_path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("thrift_server: error: "), stderr
    return lines[0]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_thrift_server_refuses_a_non_loopback_bind_without_authentication(
    own_state: Path, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert thrift_server.main(["start", "--host", host, "--port", str(free_port())]) == 1
    error = one_line_error(capsys.readouterr().err)
    assert f"listen on {host}" in error and "authentication" in error and "--auth" in error
    assert not (own_state / thrift_server.PID_FILE).exists()


def test_thrift_server_bind_host_from_the_environment_is_checked_too(
    own_state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LATECOMER_THRIFT_BIND_HOST", "0.0.0.0")
    monkeypatch.setenv("LATECOMER_THRIFT_SERVER_AUTH", "NOSASL")
    assert thrift_server.main(["start", "--port", str(free_port())]) == 1
    assert "authentication" in one_line_error(capsys.readouterr().err)


def test_thrift_server_listens_on_loopback_by_default(own_state: Path) -> None:
    assert (thrift_server.default_host(), thrift_server.default_auth()) == ("127.0.0.1", "NONE")
    command = thrift_server.submit_command(10321, "iceberg")
    pairs = list(zip(command, command[1:], strict=False))
    assert ("--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1") in pairs
    assert ("--hiveconf", "hive.server2.authentication=NONE") in pairs
    open_bind = thrift_server.submit_command(10321, "iceberg", host="0.0.0.0", auth="LDAP")
    pairs = list(zip(open_bind, open_bind[1:], strict=False))
    assert ("--hiveconf", "hive.server2.thrift.bind.host=0.0.0.0") in pairs
    assert ("--hiveconf", "hive.server2.authentication=LDAP") in pairs


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("::", False)],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert thrift_server.is_loopback(host) is loopback


def test_thrift_server_with_authentication_may_listen_beyond_loopback() -> None:
    thrift_server.check_bind("0.0.0.0", "LDAP")
    thrift_server.check_bind("127.0.0.1", "NONE")
    with pytest.raises(thrift_server.ThriftServerError, match="authentication"):
        thrift_server.check_bind("0.0.0.0", "NONE")


# ---------------------------------------------------------------- steward


def test_steward_escapes_control_characters() -> None:
    hostile = 'id\x1b]0;owned\x07\x1b[2J\r\n\t\x00\x9b\u202e\u2028end \u00e9 \\ "q"'
    shown = steward.printable(hostile)
    assert shown == 'id\\x1b]0;owned\\x07\\x1b[2J\\r\\n\\t\\x00\\x9b\\u202e\\u2028end \u00e9 \\ "q"'
    assert steward.printable(None) == "null"


def test_steward_table_holds_no_control_character() -> None:
    rows = [
        {"bronze_row_id": "x:1", "raw_payload": "\x1b[31m{" + "a" * 300},
        {"bronze_row_id": None, "raw_payload": ""},
    ]
    text = steward.format_table(["bronze_row_id", "raw_payload"], rows)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
    assert "\\x1b[31m{" in text and max(len(line) for line in text.splitlines()) < 200


# ------------------------------------------- make restore, gold-versions, maintain


HOSTILE_REASON = "x'; touch {sentinel}; echo '\" $(shell touch {sentinel}) `touch {sentinel}` $$HOME \\ \u00e9"


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """A bin folder whose python and dbt record their arguments and environment."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("python", "dbt"):
        script = folder / name
        record = str(tmp_path / f"{name}.json")
        script.write_text(
            f"#!{sys.executable}\nimport json, os, sys\n"
            f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ)}}, open({record!r}, 'w'))\n"
        )
        script.chmod(0o755)
    return folder


MAKE_OPERATIONS = {
    "restore": (
        ["-m", "python_jobs.operations.restore"],
        "restore_table",
        {"MODEL": "gold_daily_revenue", "VERSION": "12'3", "REASON": HOSTILE_REASON},
    ),
    "gold-versions": (
        ["-m", "python_jobs.operations.run_operation", "gold_versions"],
        "gold_versions",
        {"EVENT_DATE": "2024-01-03'}; " + HOSTILE_REASON},
    ),
    "maintain": (
        ["-m", "python_jobs.operations.run_operation", "maintain_tables"],
        "maintain_tables",
        {"DRY_RUN": "true}' " + HOSTILE_REASON},
    ),
}


@pytest.mark.parametrize("target", sorted(MAKE_OPERATIONS))
def test_make_operations_pass_values_without_shell(target: str, tmp_path: Path, fake_bin: Path) -> None:
    argv, macro, given = MAKE_OPERATIONS[target]
    sentinel = tmp_path / "injected"
    variables = {name: value.replace("{sentinel}", str(sentinel)) for name, value in given.items()}
    stamp = tmp_path / "stamp"
    stamp.touch()
    result = subprocess.run(
        ["make", "-s", target, f"BIN={fake_bin}", f"STAMP={stamp}", *(f"{k}={v}" for k, v in variables.items())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={key: value for key, value in os.environ.items() if not key.startswith("MAKE")},
    )
    assert not sentinel.exists(), "a value ran as shell or make text"
    assert result.returncode == 0, result.stderr
    call = json.loads((tmp_path / "python.json").read_text())
    assert call["argv"] == argv
    # Each make variable reached its environment variable as written; the
    # ones not given are empty (the macro's defaults apply).
    env = run_operation.OPERATIONS[macro]
    expected = {
        "restore": {"model": "MODEL", "version": "VERSION", "as_of_time": "AS_OF_TIME",
                    "invocation_id": "INVOCATION_ID", "reason": "REASON"},
        "gold-versions": {"model": "MODEL", "event_date": "EVENT_DATE"},
        "maintain": {"dry_run": "DRY_RUN"},
    }[target]  # fmt: skip
    assert {name: call["env"].get(variable) for name, variable in env.items()} == {
        name: variables.get(make_name, "") for name, make_name in expected.items()
    }


def test_restore_hands_values_to_dbt_as_quoted_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []

    class Result:
        success = True

    def invoke(self: Any, *args: str, **kwargs: Any) -> Result:
        calls.append(args)
        return Result()

    monkeypatch.setattr(run_operation.DbtRunner, "invoke", invoke)
    reason = 'it\'s "odd": {a: b}, [x] # not a comment \\ $(id) `id` \n\t\x85\x9f \u00e9 \U0001f600'
    monkeypatch.setenv(restore.ENV["reason"], reason)
    monkeypatch.setenv(restore.ENV["model"], "gold_daily_revenue")
    monkeypatch.setenv(restore.ENV["version"], "")
    monkeypatch.setenv(restore.ENV["invocation_id"], "  ")
    assert restore.main(["--as-of-time", "2024-01-22T00:00:00+00:00"]) == 0
    ((operation, macro, flag, document),) = calls
    assert (operation, macro, flag) == ("run-operation", "restore_table", "--args")
    assert load_yaml_text(document) == {
        "model": "gold_daily_revenue",
        "as_of_time": "2024-01-22T00:00:00+00:00",
        "reason": reason,
    }


def test_run_operation_hands_gold_versions_and_maintain_their_values(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    calls: list[tuple[str, ...]] = []

    class Result:
        success = True

    monkeypatch.setattr(run_operation.DbtRunner, "invoke", lambda self, *args, **kwargs: calls.append(args) or Result())
    monkeypatch.setenv("LATECOMER_GOLD_VERSIONS_EVENT_DATE", "2024-01-03'}); drop table x; --")
    monkeypatch.setenv("LATECOMER_GOLD_VERSIONS_MODEL", "")
    monkeypatch.setenv("LATECOMER_MAINTAIN_DRY_RUN", "")
    assert run_operation.main(["gold_versions"]) == 0
    assert run_operation.main(["maintain_tables", "--dry-run", "true"]) == 0
    (_, gold, _, gold_args), (_, maintain, _, maintain_args) = calls
    assert (gold, load_yaml_text(gold_args)) == ("gold_versions", {"event_date": "2024-01-03'}); drop table x; --"})
    assert (maintain, load_yaml_text(maintain_args)) == ("maintain_tables", {"dry_run": "true"})
    assert run_operation.main(["drop_everything"]) == 2
    assert "usage:" in capsys.readouterr().err and len(calls) == 2


def test_restore_refuses_text_that_is_not_utf8(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(run_operation.DbtRunner, "invoke", lambda *a, **k: pytest.fail("dbt must not run"))
    assert restore.main(["--model", "gold_daily_revenue", "--version", "1", "--reason", "bad \udcff byte"]) == 2
    assert "reason" in capsys.readouterr().err


# ------------------------------------------------- restore: gold models only


@pytest.mark.parametrize("model", ["late_arrival_audit", "silver_event_arrivals", "silver_events", "table_restores"])
def test_restore_refuses_models_other_than_the_restated_gold_ones(model: str) -> None:
    with pytest.raises(VersionsError) as error:
        restore_request(model, version="1", reason="x", allowed_models=GOLD)
    assert str(error.value).startswith(
        f"restore_table restores the restated gold models only (gold_daily_revenue, gold_hourly_revenue), not {model}"
    )
    answer = LatecomerAdapter.restore_request(None, model, "1", None, None, "x", GOLD)
    assert answer["error"] == str(error.value)


def test_restore_accepts_a_restated_gold_model() -> None:
    assert restore_request("gold_hourly_revenue", version="1", reason="x", allowed_models=GOLD).model == (
        "gold_hourly_revenue"
    )


# ------------------------------------------------- no var pasted into SQL


def test_no_var_is_pasted_into_a_sql_string_literal() -> None:
    """Run vars reach SQL through latecomer__sql_string(), which escapes quotes and backslashes."""
    pasted = re.compile(r"""['"]\{\{-?\s*var\(""")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("macros", "adapter/dbt/include/latecomer/macros", "models", "snapshots", "tests", "analyses")
        for path in sorted((ROOT / folder).rglob("*.sql"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pasted.search(line)
    ]
    assert offenders == []
