"""What the tests of every tier share and no tier owns: waiting on facts, the encrypted dev
stack, a headless browser, an S3 server, telemetry read back, the worker and MCP server run as
processes, the console invoked in-process, hypothesis strategies, and the fast tier's time zone."""
