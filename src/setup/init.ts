/**
 * `ehrbench init`: a working data directory, non-interactively. Creates what is missing and keeps
 * what exists (keys are never silently replaced: the audit trail's evidence depends on them):
 *   config.json                       the configuration (schemas/config.schema.json); it pins the store:
 *                                     database.backend "embedded" unless asked for "postgres" (URL from
 *                                     EHRBENCH_DATABASE_URL, named in database.urlEnv, never written)
 *   access-policies/endpoints.json    the endpoint allowlist, holding the loopback demo endpoint; with
 *                                     --test-endpoints also the test profile (src/setup/test-endpoints.ts),
 *                                     added to an existing file
 *   keys/dev-ca.pem, dev-ca.key.pem   a development CA (node-forge) for loopback TLS
 *   keys/demo-model-server.*.pem      the demo model server's certificate from that CA
 *   keys/audit-signing.key.pem/.pub   the Ed25519 key that signs audit checkpoints
 *   keys/audit-mac.key                the HMAC key that MACs every audit record
 *   keys/export-signing.key.pem/.pub  the Ed25519 key that signs released export bundles (separate from
 *                                     the audit key: a bundle's verifier needs only this public key)
 *   secrets/                          the only folder an endpoint's auth.file may name (mode 0700), empty:
 *                                     the demo endpoint needs no key
 *   lexicons/{staff,facilities,places,streets}.txt   the site's own de-identification lists, empty, with
 *                                     a header saying what goes in them (config deid.siteLexicons)
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { CONFIG_FILE_NAME, type ConfigFile, DEFAULT_DATABASE_URL_ENV, type DatabaseBackend } from '../config';
import { MAC_KEY_FILE, newMacKeyHex, WITNESS_FILE } from '../audit';
import { EXPORT_PUBLIC_KEY_FILE, EXPORT_SIGNING_KEY_FILE } from '../export';
import { createCa, issueCertificate } from '../identity';
import { reconcileSiteId } from './site-id';
import { addTestEndpoints, TEST_ENDPOINT_IDS } from './test-endpoints';
import { UserError } from '../errors';

export const DEMO_ENDPOINT_ID = 'demo-loopback';
export const DEFAULT_DEMO_PORT = 18443;

export interface InitOptions {
  home: string;
  siteId?: string;
  demoPort?: number;
  /** The store the configuration pins (default embedded). */
  database?: DatabaseBackend;
  /** Also write the test profile (src/setup/test-endpoints.ts) into the endpoint policy. */
  testEndpoints?: boolean;
  /** Write siteId into an existing config.json's site.id (without it, a different siteId is refused). */
  force?: boolean;
  /**
   * Make new audit keys on a site whose trail exists but whose keys are lost for good (deploy/README.md,
   * "A lost keys folder"). Without it, init refuses: new keys cannot vouch for the old trail.
   */
  newAuditKeys?: boolean;
}

export interface InitReport {
  home: string;
  created: string[];
  kept: string[];
  /** Existing files init changed, as asked: site.id (--force), test endpoints added. */
  updated: string[];
  /** The test endpoint ids in the policy (--test-endpoints). */
  testEndpoints?: string[];
}

/** The site lexicons `init` writes empty: file -> what one line holds. */
const SITE_LEXICON_EXAMPLES: Record<string, string> = {
  'staff.txt': 'one member of staff a line, as the roster writes them: "Ann Kowalski", "KOWALSKI, ANN", "Kwame Mensah-Boateng"',
  'facilities.txt': 'one facility, ward, clinic or unit name a line, yours and your neighbours\': "Bayview Medical Center", "the Pines", "BMC", "4 West"',
  'places.txt': 'one local town, neighbourhood or landmark a line: "Pell Harbor", "Dorchester", "Castle Island"',
  'streets.txt': 'one local street a line: "Tanager Road", "Mercer St"',
};

function lexiconHeader(what: string): string {
  return `# ehrbench site lexicon (config deid.siteLexicons): ${what}.\n# Every entry is de-identified wherever it occurs, in any case and with one-letter misspellings.\n# Lines starting with # are comments. This file holds identifiers: keep it mode 0600.\n`;
}

/** Writes a file only if it does not exist; records which happened. Private keys get mode 0600. */
function writeOnce(file: string, content: () => string, report: InitReport, mode = 0o644): void {
  if (existsSync(file)) {
    report.kept.push(file);
    return;
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, content(), { mode, flag: 'wx' });
  report.created.push(file);
}

export function demoEndpointPolicy(port: number): unknown {
  return {
    endpoints: [
      {
        id: DEMO_ENDPOINT_ID,
        description: 'Loopback demo model server (a deterministic stand-in, not a model). Development only: never receives EHR data.',
        provider: 'openai-compatible',
        url: `https://localhost:${port}/v1`,
        model: 'ehrbench-demo-standin',
        addresses: ['127.0.0.1'],
        allowedCidrs: ['127.0.0.1/32'],
        tls: { caFile: '../keys/dev-ca.pem' },
        auth: { type: 'none' },
        classification: { inVpc: true, baa: false, maxTier: 'public', development: true },
      },
    ],
  };
}

/**
 * The operating-system account running init becomes a local principal with the researcher and auditor
 * roles, so the embedded single-user setup can run public benchmarks and read its audit trail. It can
 * never approve its own runs; compliance officers and other people are added by hospital IT.
 */
export function localPrincipals(user = userInfo().username): unknown {
  const localUser = user
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '_')
    .replace(/^[^a-z_]/, '_')
    .slice(0, 32);
  const id = localUser.replace(/^[^a-z0-9]+/, '').replace(/_/g, '-') || 'local-operator';
  return {
    principals: [{ id, displayName: `local operator (${user})`, roles: ['researcher', 'auditor'], status: 'active', localUser }],
  };
}

export function initHome(opts: InitOptions): InitReport {
  const home = opts.home;
  const report: InitReport = { home, created: [], kept: [], updated: [] };
  mkdirSync(home, { recursive: true, mode: 0o700 });
  // Before anything is written: a refused --site-id leaves the directory as it was.
  if (reconcileSiteId(join(home, CONFIG_FILE_NAME), opts.siteId, opts.force ?? false)) report.updated.push(join(home, CONFIG_FILE_NAME));
  const keys = join(home, 'keys');

  const config: ConfigFile = {
    configVersion: 1,
    site: { id: opts.siteId ?? 'local-site', name: 'ehrbench site' },
    database: opts.database === 'postgres' ? { backend: 'postgres', urlEnv: DEFAULT_DATABASE_URL_ENV } : { backend: 'embedded', embeddedDir: 'db' },
    policies: { endpoints: 'access-policies/endpoints.json', principals: 'access-policies/principals.json' },
    keys: { dir: 'keys' },
    secrets: { dir: 'secrets' },
    logging: { level: 'info', file: 'logs/ehrbench.log' },
    runs: { concurrencyPerEndpoint: 16, maxAttempts: 3, leaseSeconds: 300, claimBatch: 32 },
    models: { timeoutMs: 120000, maxRetries: 4, maxBackoffMs: 30000 },
    audit: { checkpointEvery: 1000, witnessDirs: [], retentionYears: 6 },
    deid: { siteLexicons: { staff: 'lexicons/staff.txt', facilities: 'lexicons/facilities.txt', places: 'lexicons/places.txt', streets: 'lexicons/streets.txt' } },
  };
  writeOnce(join(home, CONFIG_FILE_NAME), () => JSON.stringify(config, null, 2) + '\n', report, 0o600);
  const endpointsFile = join(home, 'access-policies', 'endpoints.json');
  writeOnce(endpointsFile, () => JSON.stringify(demoEndpointPolicy(opts.demoPort ?? DEFAULT_DEMO_PORT), null, 2) + '\n', report);
  if (opts.testEndpoints) {
    const added = addTestEndpoints(endpointsFile, DEMO_ENDPOINT_ID, DEFAULT_DEMO_PORT, opts.demoPort);
    if (added && !report.created.includes(endpointsFile)) report.updated.push(endpointsFile);
    report.testEndpoints = [...TEST_ENDPOINT_IDS];
  }
  writeOnce(join(home, 'access-policies', 'principals.json'), () => JSON.stringify(localPrincipals(), null, 2) + '\n', report);

  const caCert = join(keys, 'dev-ca.pem');
  const caKey = join(keys, 'dev-ca.key.pem');
  if (!existsSync(caCert) || !existsSync(caKey)) {
    const ca = createCa('ehrbench development CA');
    writeOnce(caKey, () => ca.keyPem, report, 0o600);
    writeOnce(caCert, () => ca.certPem, report);
  } else report.kept.push(caCert, caKey);

  const serverCert = join(keys, 'demo-model-server.pem');
  const serverKey = join(keys, 'demo-model-server.key.pem');
  if (!existsSync(serverCert) || !existsSync(serverKey)) {
    const ca = { certPem: readFileSync(caCert, 'utf8'), keyPem: readFileSync(caKey, 'utf8') };
    const issued = issueCertificate(ca, { commonName: 'localhost', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usage: 'server', days: 825 });
    writeOnce(serverKey, () => issued.keyPem, report, 0o600);
    writeOnce(serverCert, () => issued.certPem, report);
  } else report.kept.push(serverCert, serverKey);

  const macKey = join(keys, MAC_KEY_FILE);
  const auditKey = join(keys, 'audit-signing.key.pem');
  refuseNewKeysOverATrail(home, [macKey, auditKey], opts.newAuditKeys ?? false);
  writeOnce(macKey, () => newMacKeyHex() + '\n', report, 0o600);

  const auditPub = join(keys, 'audit-signing.pub.pem');
  if (!existsSync(auditKey)) {
    const pair = generateKeyPairSync('ed25519');
    writeOnce(auditKey, () => pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), report, 0o600);
    writeOnce(auditPub, () => pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(), report);
  } else report.kept.push(auditKey);

  const exportKey = join(keys, EXPORT_SIGNING_KEY_FILE);
  if (!existsSync(exportKey)) {
    const pair = generateKeyPairSync('ed25519');
    writeOnce(exportKey, () => pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), report, 0o600);
    writeOnce(join(keys, EXPORT_PUBLIC_KEY_FILE), () => pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(), report);
  } else report.kept.push(exportKey);

  for (const [file, what] of Object.entries(SITE_LEXICON_EXAMPLES)) writeOnce(join(home, 'lexicons', file), () => lexiconHeader(what), report, 0o600);

  for (const dir of ['logs', ...(opts.database === 'postgres' ? [] : ['db']), 'audit']) mkdirSync(join(home, dir), { recursive: true, mode: 0o700 });
  // Endpoint keys (auth.file) go here, readable by the daemon's account only.
  const secrets = join(home, 'secrets');
  if (existsSync(secrets)) report.kept.push(secrets);
  else {
    mkdirSync(secrets, { mode: 0o700 });
    report.created.push(secrets);
  }
  return report;
}

/**
 * A site whose witness already holds checkpoints has a trail its audit keys vouch for. Keys missing
 * there were lost, not never made: new ones would sign on as if nothing happened, and every row
 * before stays unverifiable. So init refuses, names the files and the way back (the key escrow),
 * unless IT says the keys are gone for good (--new-audit-keys).
 */
function refuseNewKeysOverATrail(home: string, keyFiles: string[], allowed: boolean): void {
  const missing = keyFiles.filter((f) => !existsSync(f));
  const witness = join(home, 'audit', WITNESS_FILE);
  if (missing.length === 0 || allowed || !existsSync(witness) || statSync(witness).size === 0) return;
  throw new UserError(
    'audit.key-missing',
    `${missing.join(' and ')} missing, and ${witness} shows this site has an audit trail: restore the keys folder from the site's key escrow (deploy/README.md, "A lost keys folder"); only if the keys are lost for good, run init --new-audit-keys`,
  );
}
