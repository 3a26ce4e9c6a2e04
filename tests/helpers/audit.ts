/** Verifying the audit trail of a test app exactly as `ehrbench audit verify` does. */
import type { App } from '../../src/app';
import { loadCheckpoints, loadMacKeysIfPresent, loadWitnesses, streamRecordPages, trustedKeys, verifyAudit, type VerifyReport } from '../../src/audit';

export async function verifyApp(app: App, opts: { mac?: boolean } = {}): Promise<VerifyReport> {
  const { witnesses, problems } = loadWitnesses(app.config.audit.witnessDirs);
  const macKeys = opts.mac === false ? undefined : loadMacKeysIfPresent(app.config.keysDir);
  return verifyAudit({
    records: streamRecordPages(app.db),
    checkpoints: await loadCheckpoints(app.db),
    witnesses,
    witnessProblems: problems,
    trustedKeys: trustedKeys(app.config.keysDir),
    ...(macKeys ? { macKeys } : {}),
  });
}

export function problems(report: VerifyReport): string[] {
  return report.findings.map((f) => `${f.seq ?? '-'}: ${f.problem}`);
}
