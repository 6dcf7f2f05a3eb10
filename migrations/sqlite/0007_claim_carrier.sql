-- Which game-server credential's channel holds a player's claim (issue 34, PROTOCOL.md section
-- 16.5); '' for a direct WebSocket. A live claim of a channel refuses a claim by the player's
-- own WebSocket or by another credential's channel on any instance (a revoked credential's
-- claims refuse nothing).
ALTER TABLE session_claims ADD COLUMN carrier TEXT NOT NULL DEFAULT '';
