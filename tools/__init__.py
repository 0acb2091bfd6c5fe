"""Developer tools, run from a checkout as `python -m tools.<name>`; not part of the package."""
