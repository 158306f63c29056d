"""The rlmguide knowledge base: record schema, loader, validator and DuckDB store."""
