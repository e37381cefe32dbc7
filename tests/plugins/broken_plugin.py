"""A module that forgot its register function."""
