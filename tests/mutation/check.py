"""The mutation check of one module: every counted mutant written into the file in turn, the
module's own tests run against it, then the whole fast tier if those miss it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cosmic_ray.mutating import use_mutation
from cosmic_ray.plugins import get_operator
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

from tests.mutation.config import Config, Module
from tests.mutation.mutants import Mutant, Session, new_session
from tests.mutation.warm_pytest import Run, WarmPytest

# The work databases (`cr-report .mutation/workflows-budgets.sqlite`), and the backup of the
# module while a mutant is written in its place.
SESSIONS: Final = ".mutation"
# A mutant may loop forever: a run gets this many times the unmutated run's time, plus slack.
_TIMEOUT_FACTOR: Final = 3
_TIMEOUT_SLACK_S: Final = 10.0

Progress = Callable[[str], None]


@dataclass
class Score:
    module: Module
    killed: list[Mutant] = field(default_factory=list)
    survived: list[Mutant] = field(default_factory=list)
    timed_out: list[Mutant] = field(default_factory=list)
    session: Session | None = None
    seconds: float = 0.0

    @property
    def counted(self) -> int:
        return len(self.killed) + len(self.survived)

    @property
    def percent(self) -> float:
        return 100.0 * len(self.killed) / self.counted if self.counted else 100.0

    @property
    def passes(self) -> bool:
        stale = self.session is not None and self.session.unmatched
        return self.percent >= self.module.threshold and not stale


class BaselineFailed(Exception):
    """The tests fail without any mutant: every mutant would count as killed."""


class ModuleCheck:
    def __init__(self, root: Path, config: Config, pytest: WarmPytest) -> None:
        self._root = root
        self._config = config
        self._pytest = pytest
        self._tier_timeout = 0.0

    def warm_up(self) -> float:
        """Runs the fast tier once unmutated (it must pass), warming the runner; its seconds."""
        run = self._pytest.warm_up(self._config.fast_tier, timeout=1800)
        if not run.passed:
            raise BaselineFailed(f"the fast tier fails without mutants:\n{run.output}")
        self._tier_timeout = _TIMEOUT_FACTOR * run.seconds + _TIMEOUT_SLACK_S
        return run.seconds

    def check(self, module: Module, progress: Progress) -> Score:
        started = time.monotonic()
        path = self._root / module.path
        backup = self._sessions(module, ".unmutated")
        _recover(path, backup)
        own = self._pytest.run(module.tests, timeout=self._tier_timeout)
        if not own.passed:
            raise BaselineFailed(f"{module.path}'s tests fail without mutants:\n{own.output}")
        own_timeout = _TIMEOUT_FACTOR * own.seconds + _TIMEOUT_SLACK_S
        score = Score(module)
        with use_db(str(self._sessions(module, ".sqlite")), WorkDB.Mode.create) as db:
            score.session = new_session(Path(module.path), db, module.equivalent)
            for mutant in score.session.to_test:
                run = self._test(path, backup, mutant, module.tests, own_timeout)
                _record(db, score, mutant, run)
                progress("S" if run.passed else ("T" if run.timed_out else "."))
        score.seconds = time.monotonic() - started
        return score

    def _sessions(self, module: Module, suffix: str) -> Path:
        folder = self._root / SESSIONS
        folder.mkdir(exist_ok=True)
        return folder / (module.path.replace("/", "-").removesuffix(".py") + suffix)

    def _test(
        self, path: Path, backup: Path, mutant: Mutant, own_tests: list[str], own_timeout: float
    ) -> Run:
        operator = get_operator(mutant.spec.operator_name)(**(mutant.spec.operator_args or {}))
        backup.write_bytes(path.read_bytes())
        try:
            with use_mutation(Path(mutant.spec.module_path), operator, mutant.spec.occurrence):
                run = self._pytest.run(own_tests, own_timeout) if own_tests else None
                if run is None or run.passed:
                    run = self._pytest.run(self._config.fast_tier, self._tier_timeout)
        finally:
            backup.unlink()
        return run


def _record(db: WorkDB, score: Score, mutant: Mutant, run: Run) -> None:
    if run.passed:
        score.survived.append(mutant)
    else:
        score.killed.append(mutant)
        if run.timed_out:
            score.timed_out.append(mutant)
    outcome = TestOutcome.SURVIVED if run.passed else TestOutcome.KILLED
    db.set_result(
        mutant.job_id,
        WorkResult(worker_outcome=WorkerOutcome.NORMAL, test_outcome=outcome, output=run.output),
    )


def _recover(path: Path, backup: Path) -> None:
    """Puts back a module that a killed run left mutated (cosmic-ray restores it on any exit
    that runs Python's cleanup; SIGKILL does not)."""
    if backup.exists():
        path.write_bytes(backup.read_bytes())
        backup.unlink()
        print(f"restored {path} from {backup}: a mutation run was killed while it was mutated")
