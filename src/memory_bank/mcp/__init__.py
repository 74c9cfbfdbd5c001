"""MCP: the tool manifest generated from the spec, its executor, and the stdio and HTTP servers."""
