"""Run the turnkeeper worker: `python worker.py [--dev]`.

The worker itself is `turnkeeper.worker.run` (installed with the package, and behind
`turnkeeper.run_worker`); this script only runs it from a checkout, as the card's entry point.
"""

from turnkeeper.console.worker_cli import main

if __name__ == "__main__":
    main()
