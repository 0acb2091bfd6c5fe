"""The mutation check: cosmic-ray's mutants of the core modules, tested against the fast tier by
a runner that forks one warm pytest process per mutant. See docs/mutation-testing.md."""
