/** Verifying the audit trail of a test app exactly as `ehrbench audit verify` does. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from '../../src/app';
import { loadCheckpoints, loadMacKeysIfPresent, readWitness, streamRecordPages, trustedKeys, verifyAudit, type VerifyReport, WITNESS_FILE } from '../../src/audit';

export async function verifyApp(app: App, opts: { mac?: boolean } = {}): Promise<VerifyReport> {
  const witnessFiles = app.config.audit.witnessDirs.map((d) => join(d, WITNESS_FILE)).filter((f) => existsSync(f));
  const macKeys = opts.mac === false ? undefined : loadMacKeysIfPresent(app.config.keysDir);
  return verifyAudit({
    records: streamRecordPages(app.db),
    checkpoints: await loadCheckpoints(app.db),
    witnesses: witnessFiles.map((f) => ({ source: f, checkpoint: readWitness(f) })),
    trustedKeys: trustedKeys(app.config.keysDir),
    ...(macKeys ? { macKeys } : {}),
  });
}

export function problems(report: VerifyReport): string[] {
  return report.findings.map((f) => `${f.seq ?? '-'}: ${f.problem}`);
}
