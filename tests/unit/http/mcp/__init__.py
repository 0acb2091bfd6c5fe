"""Unit tests of the MCP endpoint (turnkeeper/http/mcp)."""
