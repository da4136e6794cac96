from verifier.engine.effects import Package

PACKAGE = Package("hegemony")
