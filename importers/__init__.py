"""Importers: other engines' game records turned into logs of our contract (sgsverify.v1).

An importer parses another engine's data formats and never reaches into the engine
(DESIGN.md §6): what it cannot know from the record it leaves out or marks, never invents.
"""
