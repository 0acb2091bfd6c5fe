"""Scoring of evaluation cases: pydantic-evals' evaluators, the turn's own facts, and the
application's `@turnkeeper.evaluator` functions, run on the worker."""
