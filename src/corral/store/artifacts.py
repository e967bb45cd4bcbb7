"""Store operations of run artifacts (corral.model.artifacts): record a run's, read them.

Recorded after the run ended, in rows of their own (a finished run's row never changes):
by its runner, under the run's id; over HTTP only the records travel, the files stay on
the runner's host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.store.operations import VIEWER, WORKER, Repository, served

if TYPE_CHECKING:  # built where read: every command imports the store, few read artifacts
    from corral.model.artifacts import Artifact


class Artifacts(Repository):
    """Record and read the files kept from a run."""

    NAME = "artifacts"

    @served(WORKER, owns="run_id")
    def record_artifacts(self, run_id: str, artifacts: list[Artifact]) -> None:
        """Record `artifacts` on run `run_id`, in one transaction (a path recorded already
        is left as it was); NotFound for a run of no task of this namespace."""
        with self._driver.write() as tx:
            if tx.one("get_run", run_id=run_id) is None:
                raise errors.NotFound("run", run_id)
            for artifact in artifacts:
                tx.run(
                    "insert_artifact",
                    run_id=run_id,
                    path=artifact.path,
                    size_bytes=artifact.size_bytes,
                    sha256=artifact.sha256,
                    skipped=artifact.skipped,
                )

    @served(VIEWER)
    def run_artifacts(self, run_id: str) -> list[Artifact]:
        """The artifacts recorded on run `run_id`, by path."""
        from corral.model.artifacts import Artifact  # noqa: PLC0415 - see the import above

        with self._driver.read() as tx:
            found = tx.all("artifacts_of_run", run_id=run_id)
        return [
            Artifact(
                path=r["path"], size_bytes=r["size_bytes"], sha256=r["sha256"], skipped=r["skipped"]
            )
            for r in found
        ]
