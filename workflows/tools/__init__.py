"""The tool calls of one model response, each settled into one `tool_result`: the arguments
checked against the tool's schema, when a worker tool may run again, MCP tools, and skills (their
tools and their part of the system prompt).
"""
