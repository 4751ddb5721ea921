"""Backends run an ELF and return one result schema (see embedded.run)."""
