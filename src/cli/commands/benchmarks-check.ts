/**
 * `ehrbench benchmarks check ID`: the site data file, then the catalog's pre-flight of one benchmark
 * (src/catalog/check.ts) with the endpoint allowlist its judges must be in, one line per check. It
 * creates no run and opens no store. The allowlist is loaded here, only for a jury benchmark, so that
 * the catalog commands load no egress code (tests/integration/catalog-modules.test.ts).
 */
import { commandPrefix } from '../../command-prefix';
import { existsSync } from 'node:fs';
import { type Catalog, type CheckReport, type CheckResult, checkBenchmark } from '../../catalog';
import type { Config } from '../../config';
import { UserError } from '../../errors';
import type { Io } from '../output';

export interface SiteCheckInput {
  config: Config | undefined;
  /** The catalog with its site data, or without (to name an unknown id when the site data is broken). */
  catalog: (withSiteData: boolean) => Catalog;
  id: string;
  pin: boolean;
  io: Io;
}

export async function siteCheck(input: SiteCheckInput): Promise<CheckReport> {
  const siteFile = input.config?.catalogSiteData;
  let catalog: Catalog;
  try {
    catalog = input.catalog(true);
  } catch (err) {
    if (!(err instanceof UserError && err.code === 'site-data.invalid')) throw err;
    input.catalog(false).get(input.id); // an unknown id is still refused as such
    return { benchmark: input.id, ok: false, checks: [{ check: 'site-data', status: 'problem', detail: err.message, code: err.code }] };
  }
  const b = catalog.get(input.id);
  const site: CheckResult = {
    check: 'site-data',
    status: 'ok',
    detail: siteFile && existsSync(siteFile) ? siteFile : `${siteFile ?? `no configuration yet ("${commandPrefix()} init")`}: no site data file; nothing is bound`,
  };
  const report = await checkBenchmark(b, { env: input.io.env, endpoints: () => allowlist(input.config), pin: input.pin });
  return { ...report, checks: [site, ...report.checks] };
}

/** The ids in the endpoint allowlist, or why it cannot be read. */
function allowlist(config: Config | undefined): { file: string; ids: string[] } | UserError {
  if (!config) return new UserError('config.missing', `no configuration, so no endpoint allowlist to check the judges against; run "${commandPrefix()} init" first`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { loadEndpointPolicy } = require('../../egress') as typeof import('../../egress');
  try {
    const policy = loadEndpointPolicy(config.policies.endpoints, { secrets: config.secrets, allowlistWidth: config.egress.allowlistWidth });
    return { file: policy.file, ids: policy.endpoints.map((e) => e.id) };
  } catch (err) {
    if (err instanceof UserError) return err;
    throw err;
  }
}

const STATUS = { ok: 'ok', problem: 'PROBLEM', skipped: '-' } as const;

/** One line per check (status, check, what it found, the rule of a problem), the values to pin, and the verdict. */
export function checkText(report: CheckReport, siteFile: string | undefined): string {
  const width = Math.max(...report.checks.map((c) => c.check.length));
  const lines = report.checks.map((c) => `${STATUS[c.status].padEnd(7)}  ${c.check.padEnd(width)}  ${c.detail}${c.code ? ` [${c.code}]` : ''}`);
  for (const [place, value] of Object.entries(report.pins ?? {})) {
    const at = place.lastIndexOf('.');
    lines.push(`pin: "${place.slice(at + 1)}": "${value}" in ${place.slice(0, at)} of ${siteFile ?? 'the site data file'}`);
  }
  const problems = report.checks.filter((c) => c.status === 'problem').length;
  lines.push(`${report.benchmark}: ${problems ? `${problems} problem${problems === 1 ? '' : 's'}` : 'ready to run'} (nothing was run)`);
  return lines.join('\n') + '\n';
}
