-- An IRB approval may name clinician raters: the clinicians who may rate the blinded items of a rating
-- study on the approval's runs (they read de-identified prompts and answers). A rater holds no other role
-- on the approval (PI, personnel): the operations refuse it (sod.rater-holds-other-role).
ALTER TABLE approvals ADD COLUMN raters text[] NOT NULL DEFAULT '{}';
