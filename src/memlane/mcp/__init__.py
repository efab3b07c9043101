"""Model Context Protocol adapter: ``memlane mcp`` exposes a store's memory to MCP clients (``memlane[mcp]``)."""

from memlane.mcp.scope import McpScope

__all__ = ["McpScope"]
