-- Records a run's dataset adapter left out when the run was planned (as HELM's loaders leave them
-- out: blank CLEAR labels, empty ENT-Referral labels, MEDEC rows without text), counted by the rule
-- that left them out, e.g. {"dataset.skip.blank-column": 3}. NULL until the run is planned.
ALTER TABLE runs ADD COLUMN skipped jsonb;
