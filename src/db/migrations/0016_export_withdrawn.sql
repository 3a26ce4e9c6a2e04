-- An export request can be withdrawn (by its requester or a compliance officer) while it waits: one
-- whose preview no longer matches (runs or disclosure settings changed, or an upgrade changed the
-- preview's format) could otherwise never be closed. A withdrawn export is final, as a released one is.
ALTER TABLE exports DROP CONSTRAINT exports_state_check;
ALTER TABLE exports ADD CONSTRAINT exports_state_check CHECK (state IN ('requested', 'released', 'withdrawn'));

CREATE OR REPLACE FUNCTION export_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.state IN ('released', 'withdrawn') THEN
    RAISE EXCEPTION 'a released or withdrawn export is final: % on % refused', TG_OP, TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;
