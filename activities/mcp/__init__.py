"""MCP servers as tools of a turn: configuration, connections, and the two activities."""
