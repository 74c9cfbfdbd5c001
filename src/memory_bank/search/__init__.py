"""Search: text analysis and the per-user index behind one interface."""
