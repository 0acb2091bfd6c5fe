"""`python -m tests.mutation MODULE...`: the mutation check (docs/mutation-testing.md).

Exits 0 when every module checked keeps its threshold, 1 when one does not, 2 when the check
cannot be made (the tests fail without mutants, a module is not in modules.toml)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from tests.mutation import config
from tests.mutation.check import BaselineFailed, ModuleCheck, Score
from tests.mutation.warm_pytest import WarmPytest

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.chdir(ROOT)
    settings = _settings(args)
    names = _selected(args, settings)
    if names is None:
        return 2
    if not names:
        print("mutation check: no module under the check has changed")
        return 0
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so that the mutated module is put back.
    signal.signal(signal.SIGTERM, _interrupt)
    checker = ModuleCheck(ROOT, settings, WarmPytest(ROOT))
    try:
        seconds = checker.warm_up()
        print(f"fast tier {' '.join(settings.fast_tier)}: passes unmutated in {seconds:.0f} s")
        scores = [_check(checker, settings.modules[name]) for name in names]
    except BaselineFailed as err:
        print(f"mutation check not made: {err}")
        return 2
    _summary(scores)
    return 0 if all(score.passes for score in scores) else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__)
    parser.add_argument("modules", nargs="*", help="paths as in tests/mutation/modules.toml")
    parser.add_argument("--all", action="store_true", help="every module in modules.toml")
    parser.add_argument(
        "--changed-since",
        metavar="REV",
        help="the modules whose file differs between REV and HEAD (CI: HEAD^)",
    )
    # Every survivor costs one run of the whole fast tier (minutes on a shared machine, for each
    # equivalent mutant too): a module that only its own tests reach can be checked against them.
    parser.add_argument(
        "--fast-tier",
        nargs="+",
        metavar="PATH",
        help="test paths that stand for the fast tier in this run (default: modules.toml's)",
    )
    return parser


def _settings(args: argparse.Namespace) -> config.Config:
    """modules.toml, with the fast tier that `--fast-tier` names in its place."""
    settings = config.load()
    if args.fast_tier:
        settings = dataclasses.replace(settings, fast_tier=list(args.fast_tier))
    return settings


def _selected(args: argparse.Namespace, settings: config.Config) -> list[str] | None:
    gone = [name for name in settings.modules if not (ROOT / name).is_file()]
    if gone:
        print(f"in tests/mutation/modules.toml but not in the checkout: {', '.join(gone)}")
        return None
    if args.all:
        return list(settings.modules)
    if args.changed_since:
        return _changed(args.changed_since, settings)
    unknown = [name for name in args.modules if name not in settings.modules]
    if unknown or not args.modules:
        print(f"modules under the check: {', '.join(settings.modules)}; not: {unknown}")
        return None
    return list(args.modules)


def _changed(rev: str, settings: config.Config) -> list[str]:
    diff = subprocess.run(
        ["git", "diff", "--name-only", rev, "HEAD"], capture_output=True, text=True, check=False
    )
    if diff.returncode != 0:
        # No such commit (the first one, a shallow clone): what changed is unknown.
        print(f"cannot compare with {rev} ({diff.stderr.strip()}): checking every module")
        return list(settings.modules)
    changed = set(diff.stdout.split())
    return [name for name in settings.modules if name in changed]


def _check(checker: ModuleCheck, module: config.Module) -> Score:
    print(f"\n{module.path}: ", end="", flush=True)
    marks = 0

    def progress(mark: str) -> None:
        nonlocal marks
        marks += 1
        print(mark, end="\n" if marks % 80 == 0 else "", flush=True)

    score = checker.check(module, progress)
    print()
    _details(score)
    return score


def _details(score: Score) -> None:
    session = score.session
    assert session is not None
    for mutant in score.survived:
        print(f"  survived: {mutant.shown()}  [{mutant.spec.operator_name}]")
    for entry in session.unmatched:
        print(f"  listed as equivalent, but no such mutant: {entry.before} -> {entry.after}")
    print(
        f"  {score.counted} mutants counted, {len(score.killed)} killed "
        f"({len(score.timed_out)} by timeout), {len(score.survived)} survived; "
        f"not counted: {len(session.equivalent)} equivalent, "
        f"{len(session.in_annotations)} in annotations; {score.seconds:.0f} s"
    )


def _summary(scores: list[Score]) -> None:
    print("\nmutation score against the fast tier:")
    for score in scores:
        verdict = "ok" if score.passes else "BELOW THRESHOLD"
        print(
            f"  {score.module.path:40} {score.percent:5.1f}%  "
            f"(threshold {score.module.threshold:g}%)  {verdict}"
        )


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
