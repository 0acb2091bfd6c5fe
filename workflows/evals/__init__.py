"""Evaluation runs: `EvalRunWorkflow` runs a dataset's cases as child turns and scores them."""
