"""Retrieval engines: tokenization and full-text query building (vectors come later)."""
