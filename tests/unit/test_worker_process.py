"""Pool worker processes: the rotation of their logs. (Their environment: test_task_env.py.)"""

from __future__ import annotations

from corral.runtime.pool.worker_process import rotate_log


def test_a_log_at_its_size_limit_is_copied_aside_and_truncated(tmp_path):
    """log -> log.1 -> log.2; the live file starts empty; older copies past backups are gone."""
    log = tmp_path / "slot-1.log"
    for n in range(3):
        log.write_text(f"round {n}\n" * 200)
        assert rotate_log(str(log), max_bytes=1024, backups=2)
    assert "" == log.read_text()
    assert (tmp_path / "slot-1.log.1").read_text().startswith("round 2")
    assert (tmp_path / "slot-1.log.2").read_text().startswith("round 1")
    assert not (tmp_path / "slot-1.log.3").exists()


def test_a_log_under_its_limit_is_left_alone(tmp_path):
    """No rotation below max_bytes."""
    log = tmp_path / "slot-1.log"
    log.write_text("short\n")
    assert not rotate_log(str(log), max_bytes=1024, backups=2)
    assert "short\n" == log.read_text()
