"""Real MCP servers for the tests, and a way to run one over streamable HTTP as a process."""
