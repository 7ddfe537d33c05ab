"""Code-Graph: repositories parsed with tree-sitter into symbols and resolved edges."""
