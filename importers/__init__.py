"""Importers: other engines' game records turned into logs of our contract (sgsverify.v1).

An importer parses another engine's data formats and never reaches into the engine (it
may read the deck tables, which are part of the contract): what it cannot know from the
record it leaves out or marks, never invents.
"""
