"""`sgs-verify bridge`: follow a FreeKill server's log and verify each room live (docs/freekill-bridge.md)."""
