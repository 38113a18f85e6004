"""Publication: how a run's writes reach readers, and the gate that can hold them back.

Staged publication on Iceberg (writes to tables with ``write.wap.enabled`` go
to the run's branch, published or not at the end: python_jobs.core.publication),
Delta publication (the run's commits tagged with its name, and the notes the
restated models' commits carry: ``commit_notes``), the readers' views moved
to the published versions (python_jobs.core.reader_views), and the
publication gate with the holds it opens and closes (python_jobs.core.gate
and .holds).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dbt.adapters.base.meta import AdapterMeta, available
from dbt.adapters.latecomer import commit_notes
from dbt.adapters.latecomer.macro_values import _records
from dbt_common.exceptions import DbtDatabaseError
from dbt_common.invocation import get_invocation_id

from python_jobs.core import catalog_reads, commit_metadata, gate, holds, publication, reader_views, run_lock


def _wap_branch_sql(branch: str | None) -> str:
    """The statement that points a Spark session's writes of WAP tables at ``branch`` (None: at main)."""
    return f"set spark.wap.branch = {branch}" if branch else "reset spark.wap.branch"


class PublicationMixin(metaclass=AdapterMeta):
    """LatecomerAdapter's publication methods, on the adapter's ``_run_branches``,
    ``_staged``, ``_delta_runs`` and ``_branch_told``.

    ``super().execute`` here is dbt-spark's: the statements that point a
    session at a branch or tag its commits bypass ``LatecomerAdapter.execute``
    (its table write lock, and telling the session its run branch).
    """

    # Staged publication (Iceberg's write-audit-publish branches).

    def _tell_run_branch(self) -> None:
        """On a Thrift target, give this thread's session the run branch (each
        connection is a session of its own there; on a session target the one
        Spark session was told by ``begin_staged_publication``)."""
        if self.runs_python:
            return
        connection = self.connections.get_if_exists()
        if connection is None or connection.handle is None:
            return
        wanted = self._run_branches.get(get_invocation_id())
        key = id(connection.handle)
        if self._branch_told.get(key) != wanted:
            super().execute(_wap_branch_sql(wanted))
            self._branch_told[key] = wanted

    @available
    def begin_staged_publication(self) -> str:
        """Send this invocation's writes to tables with ``write.wap.enabled`` to its
        run branch (``spark.wap.branch``); returns the branch's name."""
        branch = publication.run_branch(get_invocation_id())
        self._run_branches[get_invocation_id()] = branch
        self._staged[get_invocation_id()] = set()
        self._branch_told.clear()
        super().execute(_wap_branch_sql(branch))
        return branch

    @available
    def run_branch(self) -> str | None:
        """The branch this invocation stages on, or None when it publishes directly."""
        return self._run_branches.get(get_invocation_id())

    @available
    def record_staged_write(self, relation: Any) -> str:
        """Note that ``relation`` is about to be written on the run branch."""
        self._staged.setdefault(get_invocation_id(), set()).add(str(relation).replace("`", "").lower())
        return ""

    @available
    def staged_relations(self) -> list[str]:
        """The tables this invocation wrote on its run branch, in name order."""
        return sorted(self._staged.get(get_invocation_id(), ()))

    @available
    def is_staged(self, relation: Any) -> bool:
        return str(relation).replace("`", "").lower() in self._staged.get(get_invocation_id(), ())

    @available
    def publication_decision(self, results: Any) -> dict[str, Any]:
        """Whether the run's staged tables are published (python_jobs.core.publication.decide),
        from on-run-end's ``results``."""
        decision = publication.decide(
            (getattr(result.node, "name", "?"), getattr(result.status, "value", result.status)) for result in results
        )
        return {"publish": decision.publish, "summary": decision.summary}

    @available
    def stale_run_branches(self, ref_names: Any) -> list[str]:
        """The run branches among ``ref_names`` that no run will publish (python_jobs.core.publication)."""
        return publication.stale_branches((str(name) for name in ref_names), self.run_branch())

    @available
    def end_staged_publication(self) -> str:
        """Writes go to ``main`` again, in this session and every connection's."""
        self._run_branches.pop(get_invocation_id(), None)
        self._staged.pop(get_invocation_id(), None)
        super().execute(_wap_branch_sql(None))
        return ""

    # Delta publication: the run's commits tagged, the restated models' commits noted.

    def _session(self) -> Any:
        """This process's Spark session on a session target, else None (a Thrift server's sessions are its own)."""
        if not self.runs_python:
            return None
        wrapper = getattr(self.connections.get_if_exists(), "handle", None)  # connections.SessionConnectionWrapper
        return getattr(getattr(wrapper, "handle", None), "spark", None)

    @available
    def begin_delta_publication(self) -> str:
        """Tag every Delta commit of this invocation with its run name
        (publication.DELTA_RUN_TAG); returns the name."""
        run = publication.run_branch(get_invocation_id())
        self._delta_runs[get_invocation_id()] = run
        spark = self._session()
        if spark is not None:
            # with the restated models' notes (commit_notes); a failed write's is gone
            commit_notes.clear(spark)
            commit_notes.set_run(spark, run)
        else:
            super().execute(f"set {publication.DELTA_RUN_TAG} = {run}")
        return run

    @available
    def end_delta_publication(self) -> str | None:
        """Stop tagging commits; returns the run's name (None when it tagged none)."""
        run = self._delta_runs.pop(get_invocation_id(), None)
        spark = self._session()
        if spark is not None:
            commit_notes.clear(spark)
            commit_notes.set_run(spark, None)
        elif run is not None:
            super().execute(f"reset {publication.DELTA_RUN_TAG}")
        return run

    @available
    def version_before_run(self, history: Any, run: str) -> int | None:
        """publication.version_before_run over a DESCRIBE HISTORY result (an agate table)."""
        columns = list(history.column_names)
        version, tag = columns.index("version"), columns.index("userMetadata")
        return publication.version_before_run(((row[version], row[tag]) for row in history.rows), run)

    @available
    def note_delta_commits(self, relation: Any, fingerprint: str) -> bool:
        """Carry ``fingerprint`` on the Delta commits made until ``end_delta_commit_note``
        (dbt.adapters.latecomer.commit_notes); False where it cannot (a Thrift target)."""
        spark = self._session()
        if spark is None:
            return False
        commit_notes.add(spark, relation, fingerprint)
        return True

    @available
    def end_delta_commit_note(self, relation: Any = None) -> str:
        """Stop carrying ``relation``'s note on Delta commits; every note when ``relation`` is none."""
        spark = self._session()
        if spark is not None:
            if relation is None:
                commit_notes.clear(spark)
            else:
                commit_notes.drop(spark, relation)
        return ""

    @available
    def delta_last_commit(self, relation: Any) -> list[dict[str, Any]] | None:
        """``relation``'s last commit as the one row of DESCRIBE HISTORY ... LIMIT 1,
        read from its log (commit_metadata.last_commit) on a session target;
        None elsewhere, or when its log cannot be read so."""
        spark = self._session()
        commit = commit_metadata.last_commit(spark, str(relation)) if spark is not None else None
        return None if commit is None else [commit]

    @available
    def iceberg_current_snapshot(self, relation: Any, branch: str | None = None) -> str | None:
        """The snapshot id at the head of ``relation``'s ``branch`` (``main`` when none; ``""``:
        no snapshot there), read from the session's catalog
        (catalog_reads.iceberg_current_snapshot) on a session target; None elsewhere, or
        when it cannot be read so."""
        spark = self._session()
        return catalog_reads.iceberg_current_snapshot(spark, str(relation), branch) if spark is not None else None

    @available
    def table_properties(self, relation: Any) -> dict[str, str] | None:
        """``relation``'s properties as SHOW TBLPROPERTIES lists them, read from the session's
        catalog (catalog_reads.table_properties) on a session target; None elsewhere, or
        when they cannot be read so."""
        spark = self._session()
        return catalog_reads.table_properties(spark, str(relation)) if spark is not None else None

    @available
    def delta_commit_note(self, history_rows: Any, relation: Any) -> str | None:
        """The note ``relation``'s last commit carries (DESCRIBE HISTORY ... LIMIT 1 rows), if that commit wrote it."""
        return commit_metadata.note_of_last_commit(_records(history_rows), relation)

    # Readers' views of the published tables.

    @available
    def reader_views_enabled(self) -> bool:
        """Whether builds publish readers' views (python_jobs.core.reader_views):
        on a shared catalog, where readers query while builds publish."""
        return run_lock.shared_catalog()

    @available
    def publish_reader_views(self, relations: Any, invocation_id: str) -> str:
        """Move the readers' slots of ``relations`` (the published tables) to their
        current versions, then the pointer (python_jobs.core.reader_views), for the
        run of ``invocation_id``; returns what was done, for the log."""
        table_format = self.config.credentials.table_format
        schema = self.config.credentials.schema
        sources = {str(relation.identifier).lower(): str(relation) for relation in relations}
        versions = {}
        for table, source in sources.items():
            version = self._current_version(source, table_format)
            if version is not None:
                versions[table] = version
        if not versions:
            return "Reader views: no published table"
        published = reader_views.published_schema(schema)
        self.execute(f"create schema if not exists {published}")
        self.execute(reader_views.pointer_table_sql(schema, table_format))
        _, rows = self.execute(reader_views.last_publication_sql(schema), fetch=True)
        current = reader_views.parse_pointer([dict(zip(rows.column_names, row, strict=True)) for row in rows.rows])
        # Queries that may still read the slots this publication reuses read a
        # publication before the last one: they were planned before it took effect.
        time.sleep(reader_views.seconds_to_wait_before_slots(current, time.time()))
        new = reader_views.next_publication(current, publication.run_branch(invocation_id), versions)
        narrowed = []
        for table in sorted(new.versions):
            source, version = sources[table], new.versions[table]
            is_new = current is None or table not in current.versions
            if table_format != "delta":
                if is_new:
                    # Both slots hold the table as it is now, so a query naming the
                    # current publication reads it too.
                    self.execute(reader_views.tag_sql(source, new.seq - 1, version))
                self.execute(reader_views.tag_sql(source, new.seq, version))
                self.execute(reader_views.iceberg_view_sql(schema, table, source))
                continue
            table_slots = reader_views.slots(current, new, table)
            try:
                self.execute(reader_views.delta_view_sql(schema, table, source, table_slots))
            except DbtDatabaseError:
                if len(table_slots) == 1:
                    raise
                # The columns changed since the current publication: the new slot only.
                self.execute(
                    reader_views.delta_view_sql(schema, table, source, reader_views.fallback_slots(table_slots))
                )
                narrowed.append(table)
        # It takes effect once every query that loaded a slot before it moved has been planned.
        now = time.time()
        moved = reader_views.Publication(new.seq, new.run, now, new.versions, now + reader_views.lag_seconds())
        self.execute(reader_views.pointer_sql(schema, moved))
        return f"Reader views: publication {moved.seq} ({len(moved.versions)} table(s)) readable in {published}" + (
            f"; columns changed, new slot only: {', '.join(narrowed)}" if narrowed else ""
        )

    def _current_version(self, relation: str, table_format: str) -> str | None:
        """The version readers are pinned to: Iceberg's ``main`` snapshot id, Delta's latest version."""
        if table_format == "delta":
            _, table = self.execute(f"describe history {relation} limit 1", fetch=True)
            column = list(table.column_names).index("version")
        else:
            _, table = self.execute(f"select snapshot_id from {relation}.refs where name = 'main'", fetch=True)
            column = 0
        return str(table.rows[0][column]) if table.rows else None

    # The publication gate and its holds.

    @available
    def publication_gate_holds(
        self,
        group_figures: Any,
        open_holds: Any,
        measure: str,
        limits: Mapping[str, Any],
        model: str,
        count: str | None = None,
        override: str | None = None,
        actor: str | None = None,
    ) -> dict[str, Any]:
        """The publication gate on per-partition, per-group figures (python_jobs.core.gate),
        and what it does to the model's holds (python_jobs.core.holds).

        Returns ``{checks, breaches, summary, events, held_partitions,
        events_summary}``: ``checks`` the figures and limits as logged,
        ``breaches`` a list of ``{figure, partition, group, observed,
        allowed: [low, high], message}``, ``events`` the hold log's rows,
        ``held_partitions`` the partitions this write leaves as published.
        ``{error}`` when the ``publication_gate`` var cannot be used.
        """
        try:
            checked = gate.GateLimits.from_mapping(limits)
            judgement = gate.judge(
                measure, [gate.GroupFigures.from_mapping(row) for row in _records(group_figures)], checked, count=count
            )
            decision = holds.decide(
                judgement,
                [holds.OpenHold.from_mapping(row) for row in _records(open_holds)],
                str(model),
                get_invocation_id(),
                override=override,
                actor=actor,
            )
        except (gate.GateConfigError, ValueError) as error:
            return {"error": str(error)}
        return {
            "checks": judgement.figures.checks(checked),
            "breaches": [breach.as_dict() for breach in judgement.breaches],
            "summary": judgement.summary,
            "events": [event.as_dict() for event in decision.events],
            "held_partitions": decision.held_partitions,
            "events_summary": decision.summary,
            "error": None,
        }
