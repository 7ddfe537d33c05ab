"""The language-neutral facts a parser extracts (defined with the store's records, re-exported here)."""

from memhub.store.graph_records import Binding, FileFacts, Import, Reference, RefKind, Symbol, SymbolKind

__all__ = ["Binding", "FileFacts", "Import", "RefKind", "Reference", "Symbol", "SymbolKind"]
