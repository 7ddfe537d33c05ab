"""The language-neutral facts a parser extracts (defined with the store's records, re-exported here)."""

from memhub.model.graph import Binding, FileFacts, Import, Reference, RefKind, Symbol, SymbolKind

# A Binding of this name in a function's own scope is its declared return type (no identifier is spelled so).
RETURNS = "()"

__all__ = ["RETURNS", "Binding", "FileFacts", "Import", "RefKind", "Reference", "Symbol", "SymbolKind"]
