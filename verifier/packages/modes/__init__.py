"""Game modes as packages: each module sets a game up from a header and gives the core its ``Mode``
(verifier/engine/mode.py). verifier/setup.py picks the module by the header's ``mode``."""
