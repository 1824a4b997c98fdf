mod mcp;
