"""On-disk result cache (sqlite) so repeated evaluations are deterministic and free.

Key: sha256 over a canonical JSON encoding of (harness version, code, tests,
setup, entry point, limits, isolation). Any change to one of them, a different
time limit included, is a different key. The isolation is the pool's
(isolation_identity: jailed or unsafe, namespaces, network, users, filesystem and
the seccomp filters' own bytes): a verdict reached outside the jail, or under
another filter, is never served to a pool that runs programs differently (a
program that passed unjailed may fail in the jail). The first verdict stored for
a key wins (INSERT OR IGNORE), so every later lookup returns that same verdict
even when several processes race to evaluate the same program.

Concurrency: WAL journal (readers never block the writer), a busy timeout for
concurrent writers across processes, and one lock per cache object for threads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time

from mtrl.envs.sandbox.types import (ExecutionResult, Limits, Program, SyntaxErrorInfo,
                                     TestResult)

HARNESS_VERSION = "mtrl-sandbox-7"  # bump when verdict semantics change (7: calls counted as run)
BUSY_TIMEOUT_MS = 30_000


def isolation_identity(summary: str, filters: tuple[bytes, ...]) -> str:
    """What of a pool's isolation decides verdicts: its IsolationReport.summary()
    (jail or UNSAFE, namespaces, network, users, filesystem) and the sha256 of its
    seccomp filters' BPF bytes (b"" where none is built)."""
    digest = hashlib.sha256()
    for program in filters:
        digest.update(len(program).to_bytes(8, "big") + program)
    return f"{summary}; filter={digest.hexdigest()}"


def cache_key(program: Program, limits: Limits, isolation: str) -> str:
    """Hex sha256 of the canonical encoding of everything that decides a verdict.

    isolation: the pool's isolation_identity (a verdict holds only under the
    isolation that reached it)."""
    if not isinstance(program, Program) or not isinstance(limits, Limits):
        raise ValueError("cache_key expects a Program and a Limits")
    if not isinstance(isolation, str) or not isolation:
        raise ValueError("cache_key expects the pool's isolation identity")
    canonical = json.dumps({
        "isolation": isolation,
        "harness": HARNESS_VERSION,
        "code": program.code,
        "tests": list(program.tests),
        "setup": program.setup,
        "entry_point": program.entry_point,
        "candidate_names": list(program.candidate_names),
        "helper_code": program.helper_code,
        "helper_names": list(program.helper_names),
        "limits": dataclasses.asdict(limits),
    }, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def result_to_json(result: ExecutionResult) -> str:
    return json.dumps({
        "tests": [[t.source, t.status, t.error_type, t.message, t.helper_calls,
                   t.derived_answers]
                  for t in result.tests],
        "syntax_error": None if result.syntax_error is None else [
            result.syntax_error.line, result.syntax_error.column, result.syntax_error.message],
        "stdout": result.stdout, "stderr": result.stderr, "wall_s": result.wall_s,
        "error": result.error, "isolation": result.isolation,
    }, separators=(",", ":"))


def result_from_json(text: str, cached: bool) -> ExecutionResult:
    data = json.loads(text)
    syntax = data["syntax_error"]
    return ExecutionResult(
        tests=tuple(TestResult(*entry) for entry in data["tests"]),
        syntax_error=None if syntax is None else SyntaxErrorInfo(*syntax),
        stdout=data["stdout"], stderr=data["stderr"], wall_s=data["wall_s"],
        cached=cached, error=data["error"], isolation=data.get("isolation", ""))


class ResultCache:
    """sqlite-backed map from cache_key to ExecutionResult, safe across processes."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        # Owner-only: expected verdicts readable by a candidate are a lookup table
        # (sqlite gives its -wal and -shm files the database file's mode).
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None, check_same_thread=False)
        self._retry(lambda: self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}"))
        self._retry(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        self._retry(lambda: self._db.execute(
            "CREATE TABLE IF NOT EXISTS results "
            "(key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"))

    @staticmethod
    def _retry(operation, attempts: int = 50):
        # Switching to WAL needs a moment of exclusive access; when several
        # processes open a fresh file at once, one of them may see "locked".
        for attempt in range(attempts):
            try:
                return operation()
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or attempt == attempts - 1:
                    raise
                time.sleep(0.02 * (attempt + 1))

    def get(self, key: str) -> ExecutionResult | None:
        with self._lock:
            row = self._retry(lambda: self._db.execute(
                "SELECT value FROM results WHERE key = ?", (key,)).fetchone())
        return None if row is None else result_from_json(row[0], cached=True)

    def put(self, key: str, result: ExecutionResult) -> None:
        value = result_to_json(result)
        with self._lock:
            self._retry(lambda: self._db.execute(
                "INSERT OR IGNORE INTO results (key, value, created) VALUES (?, ?, ?)",
                (key, value, time.time())))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
