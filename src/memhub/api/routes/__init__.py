"""Route declarations, one module per memory layer."""
