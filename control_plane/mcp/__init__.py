"""The MCP endpoint for AI agents (spec 4.11, CONTRACT §7)."""
