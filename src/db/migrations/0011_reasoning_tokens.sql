-- Of an instance's output tokens, those a reasoning model spent reasoning (where the API reports
-- them). They are counted in completion_tokens too, which is what the provider bills; the reasoning
-- text itself is never stored.
ALTER TABLE run_items ADD COLUMN reasoning_tokens integer;
