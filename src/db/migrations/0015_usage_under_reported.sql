-- Calls whose usage the endpoint did not report truthfully (missing, negative, beyond what the request
-- allows, or implausibly low for the text): their worst case was charged instead (src/calls/cost.ts),
-- and `runs show` and the console warn of them. Existing rows were charged as reported.
ALTER TABLE run_items ADD COLUMN usage_under_reported boolean NOT NULL DEFAULT false;
ALTER TABLE judge_spend ADD COLUMN usage_under_reported boolean NOT NULL DEFAULT false;
