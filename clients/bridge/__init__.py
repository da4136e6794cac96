"""`sgs-verify bridge` (docs/freekill-bridge.md). What the command's options need, without the bridge's imports."""

# Rooms followed at once by default: one bridge and one `sgs-verify serve` on 2 cores follow about 150 rooms at
# game speed (docs/freekill-bridge.md, Measured); a room opened beyond the limit is reported and not followed.
DEFAULT_MAX_ROOMS = 300
