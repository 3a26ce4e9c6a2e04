-- Annotators whose work must not be observable by any model endpoint (EHRSQL runs the model's SQL on
-- the site's database: how long that takes would show in when the next request is made). Their
-- instances are stored done with these annotators pending, and annotated once the run has made all
-- of its model calls (src/runs/deferred.ts). NULL: nothing pending.
ALTER TABLE run_items ADD COLUMN pending_annotators jsonb;
