-- The audit rows of payouts, as `player|quest` (psql -tAF '|'): a `CompleteQuest <quest>` action
-- or a cutscene quest's ending (step key `cutscene/<quest>`), each written in the payout's own
-- transaction under its step key. The fault scripts compare them with `reward_ledger`.
SELECT player_id,
       CASE WHEN step_key LIKE 'cutscene/%' THEN substr(step_key, 10) ELSE substr(detail, 15) END
FROM audit_log
WHERE step_key IS NOT NULL
  AND (detail LIKE 'CompleteQuest %' OR step_key LIKE 'cutscene/%');
