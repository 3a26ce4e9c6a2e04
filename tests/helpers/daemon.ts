/**
 * A real daemon for access tests: a site PKI made with node-forge, client certificates for the test
 * principals, the HTTPS server with mutual TLS on a free port, the loopback model server, and site
 * benchmarks of the approval-required and private tiers (synthetic records, no real data).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { type App, openApp } from '../../src/app';
import { type Behaviour, type ModelServer, startModelServer } from '../../src/demo/model-server';
import { IssuedCertificates } from '../../src/identity/issued';
import { initSitePki, issueClientCertificate, type IssuedClient } from '../../src/identity/site-pki';
import { type Daemon, startDaemon } from '../../src/server';
import type { Backend } from './db';
import { makeHome, type TestHome, TEST_PRINCIPALS } from './home';

export interface Identity {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

export interface TestDaemon {
  app: App;
  daemon: Daemon;
  server: ModelServer;
  home: TestHome;
  ca: string;
  caFile: string;
  ids: Record<string, Identity>;
  /** An HTTPS call to the daemon as `who` (a principal with a certificate, or explicit TLS material). */
  call(who: string | Identity, method: string, path: string, body?: unknown, raw?: { body: string; contentType?: string }): Promise<{ status: number; json: any }>;
  /** Another client certificate of the site CA for a principal, issued (and recorded) as `ehrbench pki issue` does. */
  issue(principal: string, opts?: { notBefore?: Date; days?: number }): Promise<Identity>;
  /** Stops the daemon, app and model server but keeps the data directory (logs, witnesses) to inspect. */
  stop(): Promise<void>;
  /** Stops (if not yet stopped) and removes the data directory and store. */
  close(): Promise<void>;
}

const SITE_BENCHMARKS = [
  { id: 'site_gated', tier: 'approval-required', displayName: 'Site gated test benchmark' },
  { id: 'site_private', tier: 'private', displayName: 'Site private test benchmark' },
];

/** Two site benchmarks on synthetic notes (no identifiers in them). */
function writeSiteBenchmarks(dir: string, rows: number): void {
  for (const b of SITE_BENCHMARKS) {
    const folder = join(dir, b.id);
    mkdirSync(folder, { recursive: true });
    const csv = ['id,context,label', ...Array.from({ length: rows }, (_, i) => `${i + 1},"Synthetic note ${i + 1}: stable vital signs, follow up in clinic.",${i % 2 ? 'yes' : 'no'}`)].join('\n');
    writeFileSync(join(folder, 'data.csv'), csv + '\n');
    writeFileSync(join(folder, 'prompt.txt'), '{{note}}\nIs follow-up needed?\n{{choices}}\nAnswer:');
    writeFileSync(
      join(folder, 'benchmark.json'),
      JSON.stringify({
        id: b.id,
        version: '1.0.0',
        displayName: b.displayName,
        category: 'Administration and Workflow',
        subcategory: 'Care Coordination and Planning',
        tier: b.tier,
        dataset: { origin: 'shipped', files: [{ path: 'data.csv' }], format: 'csv', adapter: 'columns', columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] } },
        prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
        references: 'label column',
        metrics: { main: 'exact_match' },
        split: 'test',
        lowerIsBetter: false,
      }),
    );
  }
}

export interface DaemonOptions {
  backend?: Backend;
  rows?: number;
  latencyMs?: number;
  behaviour?: (n: number, prompt: string) => Behaviour;
  rateLimitMax?: number;
  workers?: number;
  concurrency?: number;
  /** Last changes to the data directory (site data, configuration) before the app opens it. */
  prepare?: (home: TestHome, config: Record<string, any>) => void;
}

/**
 * Records a certificate issued with the site CA as `ehrbench pki issue` does (the daemon accepts only
 * recorded ones): the test certificates are made before the store is open, so they are recorded after.
 */
export async function recordIssued(app: App, issued: IssuedClient, principal: string): Promise<void> {
  await new IssuedCertificates(app.db).record({ certPem: readFileSync(issued.certFile, 'utf8'), issuerFingerprint: issued.issuerFingerprint }, principal, 'local:test-setup');
}

export async function startTestDaemon(opts: DaemonOptions = {}): Promise<TestDaemon> {
  const home = await makeHome(opts.backend ?? 'pglite');
  const configFile = home.configFile;
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  const siteDir = join(home.home, 'site-benchmarks');
  writeSiteBenchmarks(siteDir, opts.rows ?? 6);
  config.catalog = { dirs: [siteDir] };
  config.server = { port: 8443, workers: opts.workers ?? 1, pollSeconds: 0.1, rateLimit: { max: opts.rateLimitMax ?? 1000, windowSeconds: 60 } };
  config.runs = { ...config.runs, concurrencyPerEndpoint: opts.concurrency ?? 2 };
  opts.prepare?.(home, config);
  writeFileSync(configFile, JSON.stringify(config, null, 2));

  // Endpoints classified for EHR tiers, on the same loopback server as the demo endpoint.
  const policyFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
  const demo = policy.endpoints[0];
  policy.endpoints.push(
    { ...demo, id: 'vpc-private', description: 'test: in VPC, BAA, private', classification: { inVpc: true, baa: true, maxTier: 'private' } },
    { ...demo, id: 'vpc-gated', description: 'test: in VPC, no BAA', classification: { inVpc: true, baa: false, maxTier: 'approval-required' } },
  );
  writeFileSync(policyFile, JSON.stringify(policy, null, 2));

  const pkiDir = join(home.home, 'pki');
  initSitePki(pkiDir);
  const principalsFile = join(home.home, 'access-policies', 'principals.json');
  const principals = JSON.parse(readFileSync(principalsFile, 'utf8'));
  const ids: Record<string, Identity> = {};
  const issuedToRecord: [IssuedClient, string][] = [];
  for (const p of TEST_PRINCIPALS) {
    const issued = issueClientCertificate(pkiDir, p.id, p.roles[0] as string);
    issuedToRecord.push([issued, p.id]);
    const entry = principals.principals.find((x: { id: string }) => x.id === p.id);
    entry.certificates = [{ commonName: p.id, issuerFingerprint: issued.issuerFingerprint }];
    ids[p.id] = { cert: readFileSync(issued.certFile, 'utf8'), key: readFileSync(issued.keyFile, 'utf8'), certFile: issued.certFile, keyFile: issued.keyFile };
  }
  writeFileSync(principalsFile, JSON.stringify(principals, null, 2));

  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    ...(opts.latencyMs ? { latencyMs: opts.latencyMs } : {}),
    ...(opts.behaviour ? { behaviour: opts.behaviour } : {}),
  });
  const app = await openApp({ file: configFile, env: home.env });
  for (const [issued, principal] of issuedToRecord) await recordIssued(app, issued, principal);
  const daemon = await startDaemon(app, { port: 0 });
  const caFile = join(pkiDir, 'ca.pem');
  const ca = readFileSync(caFile, 'utf8');
  const agents = new Map<string, Agent>();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await daemon.close();
    await Promise.all([...agents.values()].map((a) => a.close()));
    await app.close();
    await server.close();
  };

  return {
    app,
    daemon,
    server,
    home,
    ca,
    caFile,
    ids,
    async call(who, method, path, body, raw) {
      const id = typeof who === 'string' ? ids[who] : who;
      if (!id) throw new Error(`no identity ${String(who)}`);
      const cacheKey = id.cert;
      let agent = agents.get(cacheKey);
      if (!agent) {
        agent = new Agent({ connect: { ca, cert: id.cert, key: id.key, servername: 'localhost' } });
        agents.set(cacheKey, agent);
      }
      const res = await fetch(`https://localhost:${daemon.port}${path}`, {
        method,
        dispatcher: agent,
        ...(raw
          ? { body: raw.body, headers: { 'content-type': raw.contentType ?? 'application/json' } }
          : body === undefined
            ? {}
            : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = text;
      }
      return { status: res.status, json };
    },
    async issue(principal, issueOpts = {}) {
      const role = TEST_PRINCIPALS.find((p) => p.id === principal)?.roles[0] ?? 'researcher';
      const issued = issueClientCertificate(pkiDir, principal, role, issueOpts.days ?? 365, issueOpts.notBefore);
      await recordIssued(app, issued, principal);
      return { cert: readFileSync(issued.certFile, 'utf8'), key: readFileSync(issued.keyFile, 'utf8'), certFile: issued.certFile, keyFile: issued.keyFile };
    },
    stop,
    async close() {
      await stop();
      await home.cleanup();
    },
  };
}
