"""The seed systems' own APIs as thin adapters over Paddock's core: their documented examples run with only
the import changed (docs/PYTHON.md)."""
