"""What a run reports: its artifacts, its restatement digest, the explanations of gold rows, its code version.

JSON and Markdown files written under the target path, the restatement
digest of a run (python_jobs.core.digest, with its optional webhook), the
explanations of one gold row and of its changes between versions
(python_jobs.core.explain), and the project's git commit the change manifest
records.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from dbt.adapters.base.meta import AdapterMeta, available
from dbt.adapters.latecomer.macro_values import _records
from dbt_common.exceptions import DbtRuntimeError

from python_jobs.core import digest, explain


class ReportingMixin(metaclass=AdapterMeta):
    """LatecomerAdapter's artifacts, digest and explanations."""

    @available
    def code_version(self) -> str | None:
        """The project's git commit (with ``-dirty`` for uncommitted changes), or None outside git."""
        root = Path(self.config.project_root)
        try:
            commit = subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        return f"{commit}-dirty" if dirty else commit

    @available
    def write_json_artifact(self, relative_path: str, payload: Any) -> str:
        """Write ``payload`` as JSON under the target path; returns the file written."""
        return self._write_artifact(relative_path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")

    def _write_artifact(self, relative_path: str, text: str) -> str:
        target = Path(self.config.project_root) / self.config.target_path
        path = (target / relative_path).resolve()
        if target.resolve() not in path.parents:
            raise DbtRuntimeError(f"{relative_path} is outside the target path")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    @available
    def restatement_digest(
        self, manifest_rows: Any, invocation_id: str, as_of: str | None, hold_rows: Any = None
    ) -> dict[str, Any]:
        """The run's restatement digest (python_jobs.core.digest) from its change
        manifest rows: written as Markdown and JSON under the target path
        (``restatement_digest.md``/``.json``, and per run under
        ``restatement_digests/``), and POSTed to the URL in
        ``LATECOMER_DIGEST_WEBHOOK`` when it is set; ``hold_rows``: the
        publication holds open after the run or closed by it. Returns
        ``{periods, holds, path, webhook}``; ``webhook`` is ``delivered``,
        ``not configured`` or why it failed: a failed delivery never fails the
        build.
        """
        run = digest.digest_of(
            _records(manifest_rows), invocation_id, as_of, holds=_records(hold_rows) if hold_rows is not None else ()
        )
        payload, markdown = digest.as_json(run), digest.as_markdown(run)
        path = self.write_json_artifact("restatement_digest.json", payload)
        self.write_json_artifact(f"restatement_digests/{invocation_id}.json", payload)
        self._write_artifact("restatement_digest.md", markdown)
        self._write_artifact(f"restatement_digests/{invocation_id}.md", markdown)
        url = os.environ.get(digest.WEBHOOK_ENV, "").strip()
        failure = digest.deliver(url, payload) if url else None
        webhook = "not configured" if not url else "delivered" if failure is None else f"failed ({failure})"
        return {"periods": len(run.periods), "holds": len(run.open_holds), "path": path, "webhook": webhook}

    @available
    def explain_row(self, model: str, row: Any) -> dict[str, Any]:
        """Where the steps of one row of a gold model are (python_jobs.core.explain):
        ``{causes, predicate, label}``, or ``{error}``."""
        try:
            request = explain.row_request(str(model), dict(row))
        except ValueError as error:
            return {"error": str(error)}
        return {"causes": request.causes, "predicate": request.predicate, "label": request.label}

    @available
    def explain_change(
        self, rows: Any, from_version: Any, to_version: Any, measure: str, label: str | None = None
    ) -> dict[str, Any]:
        """A gold row's change between two versions by cause (python_jobs.core.explain),
        from its rows of its causes model: ``{text, explained}`` (explained: the
        causes add up to the change), or ``{error}``."""
        try:
            found = explain.explain(
                _records(rows),
                None if from_version is None else int(from_version),
                None if to_version is None else int(to_version),
                label,
            )
            return {"text": explain.describe(found, measure), "explained": not any(found.remainder.values())}
        except ValueError as error:
            return {"error": str(error)}
