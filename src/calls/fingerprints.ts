/**
 * What each endpoint said it served (src/models/served.ts), aggregated: per endpoint and fingerprint
 * the first and last time it was seen and how many calls saw it; per run the same, for its results.
 * No row per call. A fingerprint new to an endpoint that had another before is a change of the model
 * behind it: the gateway reports it (GatewayPorts.fingerprintChanged) so that the canaries of the
 * approvals on that endpoint re-run (src/runs/canary.ts).
 */
import type { Database } from '../db';
import { fingerprintOf, type ServedBy } from '../models';

/** A fingerprint as a run's results show it: ids and days, never times (a day does not pin a call). */
export interface SeenFingerprint {
  endpointId: string;
  fingerprint: string;
  model: string | null;
  systemFingerprint: string | null;
  deployment: string | null;
  apiVersion: string | null;
  modelsSha256: string | null;
  headers: Record<string, string>;
  firstSeenDay: string;
  lastSeenDay: string;
}

export interface RecordedFingerprint {
  fingerprint: string;
  /** First seen now, and the endpoint had answered with another fingerprint before. */
  changed: boolean;
}

export class FingerprintStore {
  constructor(private readonly db: Database) {}

  /** Counts one call of `runId` to `endpointId` that was served as `served`. */
  async record(runId: string, endpointId: string, served: ServedBy): Promise<RecordedFingerprint> {
    const fingerprint = fingerprintOf(served);
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<{ inserted: boolean }>(
        `INSERT INTO endpoint_fingerprints (endpoint_id, fingerprint, served, calls) VALUES ($1, $2, $3::jsonb, 1)
         ON CONFLICT (endpoint_id, fingerprint) DO UPDATE SET last_seen = now(), calls = endpoint_fingerprints.calls + 1
         RETURNING (xmax = 0) AS inserted`,
        [endpointId, fingerprint, JSON.stringify(served)],
      );
      await tx.query(
        `INSERT INTO run_fingerprints (run_id, endpoint_id, fingerprint, calls) VALUES ($1::uuid, $2, $3, 1)
         ON CONFLICT (run_id, endpoint_id, fingerprint) DO UPDATE SET last_seen = now(), calls = run_fingerprints.calls + 1`,
        [runId, endpointId, fingerprint],
      );
      if (!rows[0]?.inserted) return { fingerprint, changed: false };
      const others = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM endpoint_fingerprints WHERE endpoint_id = $1 AND fingerprint <> $2', [endpointId, fingerprint]);
      return { fingerprint, changed: Number(others[0]?.n ?? 0) > 0 };
    });
  }

  /** The fingerprints a run's calls saw, oldest first. */
  async ofRun(runId: string): Promise<SeenFingerprint[]> {
    const rows = await this.db.query<{ endpoint_id: string; fingerprint: string; served: ServedBy; first_day: string; last_day: string }>(
      `SELECT r.endpoint_id, r.fingerprint, e.served, to_char(r.first_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS first_day,
              to_char(r.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS last_day
         FROM run_fingerprints r JOIN endpoint_fingerprints e USING (endpoint_id, fingerprint)
        WHERE r.run_id = $1::uuid ORDER BY r.first_seen, r.endpoint_id, r.fingerprint`,
      [runId],
    );
    return rows.map((r) => ({
      endpointId: r.endpoint_id,
      fingerprint: r.fingerprint,
      model: r.served.model ?? null,
      systemFingerprint: r.served.systemFingerprint ?? null,
      deployment: r.served.deployment ?? null,
      apiVersion: r.served.apiVersion ?? null,
      modelsSha256: r.served.modelsSha256 ?? null,
      headers: r.served.headers ?? {},
      firstSeenDay: r.first_day,
      lastSeenDay: r.last_day,
    }));
  }

  /** The fingerprint of the endpoint's latest answer (a model put back counts as a change too), or undefined when none is known. */
  async newest(endpointId: string): Promise<string | undefined> {
    const rows = await this.db.query<{ fingerprint: string }>('SELECT fingerprint FROM endpoint_fingerprints WHERE endpoint_id = $1 ORDER BY last_seen DESC, fingerprint LIMIT 1', [endpointId]);
    return rows[0]?.fingerprint;
  }
}
