/**
 * The deployment artefacts in deploy/ keep their security properties: the Kubernetes manifests are
 * valid API objects, deny egress by default and allow only the database and the endpoint CIDRs, run
 * non-root with a read-only root filesystem and no capabilities; the container image runs as a
 * non-root user without a shell; the systemd units carry the hardening directives; the configuration
 * examples validate against ehrbench's schemas and agree with the probes and the network rules. Docker
 * and a Kubernetes API server are not available here: what they would add is noted in deploy/README.md.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { validateOrThrow } from '../../src/schema/validate';
import { assertSafeEgressEnvironment } from '../../src/egress';
import { registry, startLocalListener } from '../../src/observability';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

const DEPLOY = join(ROOT, 'deploy');
const K8S = join(DEPLOY, 'kubernetes');
const read = (...p: string[]) => readFileSync(join(DEPLOY, ...p), 'utf8');

type Obj = Record<string, any>;

function k8sDocs(file: string): Obj[] {
  return YAML.parseAllDocuments(readFileSync(join(K8S, file), 'utf8')).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as Obj;
  });
}

const manifests = () =>
  readdirSync(K8S)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => k8sDocs(f).map((doc) => ({ file: f, doc })));

/** The files kustomization.yaml applies, as objects. */
function applied(): Obj[] {
  const k = YAML.parse(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  return k.resources.flatMap((f) => k8sDocs(f));
}

const byKind = (kind: string) => applied().filter((d) => d.kind === kind);
const deployment = (name: string) => byKind('Deployment').find((d) => d.metadata.name === name) as Obj;
const configFiles = () => (byKind('ConfigMap').find((c) => c.metadata.name === 'ehrbench-config') as Obj).data as Record<string, string>;

/** kubernetes-models class of an object, by apiVersion and kind (core group: "v1/Kind"). */
function modelClass(doc: Obj): new (o: Obj) => { validate(): void } {
  const path = `kubernetes-models/${doc.apiVersion}/${doc.kind}`;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(path) as Record<string, new (o: Obj) => { validate(): void }>;
  return mod[doc.kind] as new (o: Obj) => { validate(): void };
}

function validationError(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('Kubernetes manifests', () => {
  it('parse, and every object validates against the Kubernetes API schema', () => {
    const all = manifests();
    expect(all.length).toBeGreaterThanOrEqual(12);
    for (const { file, doc } of all) {
      const Model = modelClass(doc);
      expect([file, doc.kind, validationError(() => new Model(doc).validate())]).toEqual([file, doc.kind, undefined]);
      expect([file, doc.kind === 'Namespace' ? doc.metadata.name : doc.metadata.namespace]).toEqual([file, 'ehrbench']);
    }
  });

  it('apply every manifest but the Secret shapes and the optional DNS rule', () => {
    const k = YAML.parse(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    const all = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect(all.filter((f) => !k.resources.includes(f)).sort()).toEqual(['networkpolicy-dns.yaml', 'secrets.yaml']);
  });

  it('deny all ingress and egress by default in the namespace', () => {
    const denyAll = byKind('NetworkPolicy').filter((p) => Object.keys(p.spec.podSelector ?? {}).length === 0 && p.spec.ingress === undefined && p.spec.egress === undefined);
    expect(denyAll).toHaveLength(1);
    expect([...denyAll[0]?.spec.policyTypes].sort()).toEqual(['Egress', 'Ingress']);
  });

  it('allow egress only to the database and the endpoint CIDRs, by address, never DNS or the whole internet', () => {
    const endpoints = JSON.parse(configFiles()['endpoints.json'] as string).endpoints as { allowedCidrs: string[]; url: string }[];
    const endpointCidrs = new Set(endpoints.flatMap((e) => e.allowedCidrs));
    const rules = byKind('NetworkPolicy').flatMap((p) => (p.spec.egress ?? []) as Obj[]);
    expect(rules.length).toBeGreaterThan(0);
    const allowed: string[] = [];
    for (const rule of rules) {
      for (const peer of rule.to ?? []) {
        // Only addresses: no namespace or pod selectors (DNS, other workloads), no exceptions.
        expect(Object.keys(peer)).toEqual(['ipBlock']);
        expect(peer.ipBlock.cidr).not.toMatch(/^(0\.0\.0\.0|::)\/0$/);
        expect(Number(peer.ipBlock.cidr.split('/')[1])).toBeGreaterThanOrEqual(8);
      }
      expect(rule.to?.length).toBeGreaterThan(0);
      expect(rule.ports?.length).toBeGreaterThan(0);
      for (const port of rule.ports) expect([53, 5432, 443]).toContain(port.port);
      expect(rule.ports.some((p: Obj) => p.port === 53)).toBe(false);
      allowed.push(...rule.to.map((peer: Obj) => peer.ipBlock.cidr));
    }
    const database = new URL('postgres://ehrbench_app@10.10.5.20:5432/ehrbench');
    // And the OMOP CDM database of omop-note sources (the slot is described with its test below).
    const omop = new URL('postgres://ehrbench_omop_ro@10.10.5.30:5432/cdm');
    expect(allowed.filter((c) => !endpointCidrs.has(c))).toEqual([`${database.hostname}/32`, `${omop.hostname}/32`]);
    for (const cidr of endpointCidrs) expect(allowed).toContain(cidr);
    // Every endpoint port is open, and nothing else.
    const ports = new Set(endpoints.map((e) => Number(new URL(e.url).port || 443)));
    const open = new Set(rules.flatMap((r) => r.ports.map((p: Obj) => p.port)).filter((p) => p !== 5432));
    expect([...open].sort()).toEqual([...ports].sort());
  });

  it('take connections only on the API pods, on the mutual-TLS port', () => {
    const ingress = byKind('NetworkPolicy').filter((p) => p.spec.ingress);
    expect(ingress).toHaveLength(1);
    expect(ingress[0]?.spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe('api');
    for (const rule of ingress[0]?.spec.ingress as Obj[]) expect(rule.ports).toEqual([{ protocol: 'TCP', port: 8443 }]);
    const service = byKind('Service')[0] as Obj;
    expect(service.spec.type).toBe('ClusterIP');
    expect(service.spec.selector['app.kubernetes.io/component']).toBe('api');
  });

  it.each(['ehrbench-api', 'ehrbench-worker'])('run %s as non-root with a read-only root filesystem and no capabilities', (name) => {
    const d = deployment(name);
    const pod = d.spec.template.spec;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(pod.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(pod.automountServiceAccountToken).toBe(false);
    for (const hostAccess of ['hostNetwork', 'hostPID', 'hostIPC']) expect(pod[hostAccess]).toBeUndefined();
    expect((pod.volumes as Obj[]).filter((v) => v.hostPath)).toEqual([]);
    for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, privileged: false });
      expect(c.securityContext.capabilities).toEqual({ drop: ['ALL'] });
      expect(c.image).not.toMatch(/:latest$|^[^:]+$/);
      // Secrets and configuration are mounted read-only; only the data directory, /tmp and the witness are writable.
      const writable = (c.volumeMounts as Obj[])
        .filter((m) => !m.readOnly)
        .map((m) => m.mountPath)
        .sort();
      expect(writable).toEqual(['/tmp', '/var/lib/ehrbench', '/var/lib/ehrbench-witness']);
      // Nothing in the environment that the egress guard would refuse at start.
      const env = Object.fromEntries((c.env as Obj[]).map((e) => [e.name, e.value ?? 'from-secret']));
      expect(() => assertSafeEgressEnvironment(env, [])).not.toThrow();
    }
  });

  it('run the API without workers and the workers without the API', () => {
    expect(deployment('ehrbench-api').spec.template.spec.containers[0].args).toEqual(['serve', '--workers', '0']);
    expect(deployment('ehrbench-worker').spec.template.spec.containers[0].args).toEqual(['worker']);
    expect(deployment('ehrbench-worker').spec.template.spec.containers[0].ports).toBeUndefined();
  });

  it('give each pod its own witness directory on the compliance volume', () => {
    for (const name of ['ehrbench-api', 'ehrbench-worker']) {
      const c = deployment(name).spec.template.spec.containers[0];
      const witness = (c.volumeMounts as Obj[]).find((m) => m.name === 'witness') as Obj;
      expect(witness.subPathExpr).toBe('$(POD_NAME)');
      expect((c.env as Obj[]).find((e) => e.name === 'POD_NAME')?.valueFrom.fieldRef.fieldPath).toBe('metadata.name');
    }
  });

  it('keep no secret values in the repository, and mount every key Secret the daemon reads', () => {
    const secrets = k8sDocs('secrets.yaml');
    expect(secrets.map((s) => s.metadata.name).sort()).toEqual(['ehrbench-audit-keys', 'ehrbench-database', 'ehrbench-endpoint-keys', 'ehrbench-export-signing', 'ehrbench-omop', 'ehrbench-tls']);
    for (const s of secrets) {
      expect(s.data).toBeUndefined();
      for (const v of Object.values(s.stringData as Record<string, string>)) {
        expect(v).toMatch(/^REPLACE: /);
        expect(v).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY/);
      }
    }
    expect(Object.keys(secrets.find((s) => s.metadata.name === 'ehrbench-audit-keys')?.stringData).sort()).toEqual(['audit-mac.key', 'audit-signing.key.pem', 'audit-signing.pub.pem']);
    const keys = (deployment('ehrbench-worker').spec.template.spec.volumes as Obj[]).find((v) => v.name === 'keys') as Obj;
    expect(keys.projected.sources.map((s: Obj) => s.secret.name).sort()).toEqual(['ehrbench-audit-keys', 'ehrbench-export-signing']);
  });

  it('carry a configuration ehrbench accepts, whose paths match the mounts and whose health port matches the probes', () => {
    const files = configFiles();
    const config = validateOrThrow<Obj>('config.schema.json', JSON.parse(files['config.json'] as string), 'configmap config.json', 'config.invalid');
    validateOrThrow('endpoints.schema.json', JSON.parse(files['endpoints.json'] as string), 'configmap endpoints.json', 'policy.invalid');
    validateOrThrow('principals.schema.json', JSON.parse(files['principals.json'] as string), 'configmap principals.json', 'policy.invalid');
    expect(config.server.workers).toBe(0);
    expect(config.server.healthPortMetrics).toBe(false);
    // serve opens server.healthPort, a worker only worker.healthPort (issue 17, item 4).
    for (const [name, healthPort] of [
      ['ehrbench-api', config.server.healthPort],
      ['ehrbench-worker', config.worker.healthPort],
    ] as const) {
      const c = deployment(name).spec.template.spec.containers[0];
      const mounts = (c.volumeMounts as Obj[]).map((m) => m.mountPath as string);
      expect([name, typeof healthPort]).toEqual([name, 'number']);
      for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
        expect(probe.exec.command.slice(0, 3)).toEqual(['/nodejs/bin/node', '/app/dist/observability/probe-main.js', String(healthPort)]);
      }
      expect(mounts).toContain(config.keys.dir);
      for (const dir of config.audit.witnessDirs) expect(mounts).toContain(dir);
      expect(mounts).toContain('/etc/ehrbench/policies');
    }
    expect((deployment('ehrbench-api').spec.template.spec.containers[0].ports as Obj[])[0]?.containerPort).toBe(config.server.port);
  });

  it('let the Prometheus scraper in only as a principal with the auditor role', () => {
    const principals = JSON.parse(configFiles()['principals.json'] as string).principals as Obj[];
    expect(principals.find((p) => p.id === 'prometheus')?.roles).toEqual(['auditor']);
  });
});

/**
 * An OMOP CDM source (site-data.json, `"connection": { "env": "EHRBENCH_OMOP_URL" }`, the name
 * `ehrbench benchmarks show` suggests) needs its URL in the environment of the processes that plan
 * runs, its password from a credential, and a way through both network layers to its database.
 */
describe('the OMOP database connection slot', () => {
  const OMOP_ENV = 'EHRBENCH_OMOP_URL';

  it('is an environment variable in the systemd environment example, without a password, verifying TLS', () => {
    const slot = read('systemd', 'ehrbench.env.example')
      .split('\n')
      .find((l) => l.replace(/^#\s*/, '').startsWith(`${OMOP_ENV}=`)) as string;
    const url = new URL(slot.replace(/^#\s*/, '').slice(OMOP_ENV.length + 1));
    expect(url.protocol).toBe('postgres:');
    expect(url.password).toBe('');
    expect(url.searchParams.get('sslmode')).toBe('verify-full');
    expect(read('systemd', 'ehrbench.env.example')).toMatch(/pgpass/);
  });

  it.each(['ehrbench.service', 'ehrbench-worker@.service'])('has a network slot in %s next to the database', (file) => {
    expect(read('systemd', file)).toMatch(new RegExp(`# .*${OMOP_ENV}.*\n(#.*\n)*#IPAddressAllow=10\\.10\\.5\\.30/32`));
  });

  it('reaches the workers from an optional Secret, and the OMOP database through the NetworkPolicy', () => {
    const c = deployment('ehrbench-worker').spec.template.spec.containers[0];
    expect((c.env as Obj[]).find((e) => e.name === OMOP_ENV)?.valueFrom).toEqual({ secretKeyRef: { name: 'ehrbench-omop', key: 'url', optional: true } });
    const secret = k8sDocs('secrets.yaml').find((s) => s.metadata.name === 'ehrbench-omop') as Obj;
    expect(Object.keys(secret.stringData).sort()).toEqual(['ca.pem', 'url']);
    expect(new URL((secret.stringData.url as string).replace(/^REPLACE: /, '')).searchParams.get('sslrootcert')).toBe('/etc/ehrbench/omop-db-ca/ca.pem');
    expect((c.volumeMounts as Obj[]).find((m) => m.mountPath === '/etc/ehrbench/omop-db-ca')?.readOnly).toBe(true);
    const rules = byKind('NetworkPolicy').flatMap((p) => (p.spec.egress ?? []) as Obj[]);
    expect(rules.some((r) => r.to.some((p: Obj) => p.ipBlock.cidr === '10.10.5.30/32') && r.ports.some((p: Obj) => p.port === 5432))).toBe(true);
    // The API runs no workers, so it never reads OMOP data and gets no URL.
    expect((deployment('ehrbench-api').spec.template.spec.containers[0].env as Obj[]).some((e) => e.name === OMOP_ENV)).toBe(false);
  });
});

describe('container image definition', () => {
  const text = read('container', 'Containerfile');
  const stages = text.split(/^FROM /m).slice(1);
  const runtime = stages[stages.length - 1] as string;

  it('runs as a numeric non-root user on a base without a shell', () => {
    expect(runtime).toMatch(/^\$\{NODE_RUNTIME_IMAGE\}/);
    expect(text).toMatch(/ARG NODE_RUNTIME_IMAGE=gcr\.io\/distroless\/nodejs20-debian12:nonroot/);
    const users = [...runtime.matchAll(/^USER (\S+)/gm)].map((m) => m[1] as string);
    expect(users).toHaveLength(1);
    expect(users[0]).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    // No shell at run time: nothing may RUN in the final stage, and entry points are exec form.
    expect(runtime).not.toMatch(/^RUN /m);
    expect(runtime).toMatch(/^ENTRYPOINT \["\/nodejs\/bin\/node", "--max-old-space-size=256", "\/app\/bin\/ehrbench\.js"\]$/m);
  });

  it('installs production dependencies exactly from the lock file', () => {
    expect(text).toMatch(/COPY package\.json package-lock\.json/);
    expect(text).toMatch(/npm ci --omit=dev/);
    expect(text).not.toMatch(/npm install/);
    expect(runtime).toMatch(/COPY src\/db\/migrations/);
  });

  it('keeps the data directory as a volume and checks health through the loopback probe', () => {
    expect(runtime).toMatch(/^VOLUME \["\/var\/lib\/ehrbench"\]$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*\n\s+CMD \["\/nodejs\/bin\/node", "\/app\/dist\/observability\/probe-main\.js", "8081", "\/ready"\]$/m);
    const env = Object.fromEntries([...runtime.matchAll(/(\w+)=(\S+)/g)].filter((m) => /^[A-Z_]+$/.test(m[1] as string)).map((m) => [m[1], m[2]]));
    expect(() => assertSafeEgressEnvironment(env, [])).not.toThrow();
  });

  it('sends no data directory, key or test into the build context', () => {
    const ignore = read('container', 'Containerfile.dockerignore')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(ignore[0]).toBe('**');
    for (const excluded of ['**/.ehrbench', '**/*.key', '**/*.key.pem']) expect(ignore).toContain(excluded);
    expect(ignore).not.toContain('!tests/**');
  });
});

/** A unit file as (key, value) pairs of its [Service] section, comments dropped. */
function serviceSection(file: string): [string, string][] {
  const text = read('systemd', file);
  const service = (text.split(/^\[Service\]$/m)[1] as string).split(/^\[/m)[0] as string;
  return service
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]);
}

const HARDENING = [
  'ProtectSystem',
  'ReadWritePaths',
  'ProtectHome',
  'PrivateTmp',
  'PrivateDevices',
  'PrivateMounts',
  'ProtectKernelTunables',
  'ProtectKernelModules',
  'ProtectKernelLogs',
  'ProtectControlGroups',
  'ProtectClock',
  'ProtectHostname',
  'ProtectProc',
  'NoNewPrivileges',
  'CapabilityBoundingSet',
  'AmbientCapabilities',
  'RestrictSUIDSGID',
  'LockPersonality',
  'RestrictRealtime',
  'RestrictNamespaces',
  'RemoveIPC',
  'KeyringMode',
  'SystemCallArchitectures',
  'SystemCallFilter',
  'SystemCallErrorNumber',
  'RestrictAddressFamilies',
  'IPAddressDeny',
  'IPAddressAllow',
  'UMask',
  'User',
  'Group',
];

describe.each(['ehrbench.service', 'ehrbench-worker@.service'])('systemd unit %s', (file) => {
  const entries = serviceSection(file);
  const all = (key: string) => entries.filter(([k]) => k === key).map(([, v]) => v);
  const one = (key: string) => {
    const values = all(key);
    expect([key, values.length]).toEqual([key, 1]);
    return values[0];
  };

  it('runs as the dedicated account with no privileges and no way to gain any', () => {
    expect(one('User')).toBe('ehrbench');
    expect(one('Group')).toBe('ehrbench');
    expect(one('NoNewPrivileges')).toBe('yes');
    expect(one('CapabilityBoundingSet')).toBe('');
    expect(one('AmbientCapabilities')).toBe('');
    expect(one('RestrictSUIDSGID')).toBe('yes');
    expect(all('DynamicUser')).toEqual([]);
  });

  it('sees the file system read-only except for the data directory', () => {
    expect(one('ProtectSystem')).toBe('strict');
    expect(all('ReadWritePaths')).toEqual(['/var/lib/ehrbench']);
    expect(one('ProtectHome')).toBe('yes');
    expect(one('PrivateTmp')).toBe('yes');
    expect(one('PrivateDevices')).toBe('yes');
    expect(one('UMask')).toBe('0077');
    // Where the example configuration writes: inside the data directory; keys and policies outside it.
    const config = validateOrThrow<Obj>('config.schema.json', JSON.parse(read('systemd', 'config.example.json')), 'config.example.json', 'config.invalid');
    for (const dir of [...config.audit.witnessDirs, config.logging.file]) expect(dir.startsWith('/var/lib/ehrbench/')).toBe(true);
    expect(config.keys.dir.startsWith('/var/lib/ehrbench')).toBe(false);
  });

  it('filters system calls and address families, and denies every IP address not allowed', () => {
    expect(one('SystemCallArchitectures')).toBe('native');
    expect(all('SystemCallFilter')[0]).toBe('@system-service');
    expect(all('SystemCallFilter')[1]).toMatch(/^~@privileged /);
    expect(one('RestrictAddressFamilies')).toBe('AF_INET AF_INET6 AF_UNIX');
    expect(one('IPAddressDeny')).toBe('any');
    // Only loopback is allowed by default; the site adds its endpoint, database and client networks.
    expect(all('IPAddressAllow')).toEqual(['localhost']);
    expect(read('systemd', file)).toMatch(/^#IPAddressAllow=10\.20\.0\.0\/16$/m);
  });

  it('leaves MemoryDenyWriteExecute off (V8 JIT) and says why', () => {
    expect(all('MemoryDenyWriteExecute')).toEqual([]);
    expect(read('systemd', file)).toMatch(/# .*MemoryDenyWriteExecute.*\n?.*JIT/);
  });

  it('takes secrets as credentials, never in the environment', () => {
    expect(all('LoadCredential')).toContain('pgpass:/etc/ehrbench/credentials/pgpass');
    expect(all('Environment')).toContain('PGPASSFILE=%d/pgpass');
    const env = Object.fromEntries(all('Environment').map((e) => e.split('=', 2) as [string, string]));
    expect(Object.keys(env).filter((k) => /PASSWORD|SECRET|KEY/.test(k))).toEqual([]);
    expect(() => assertSafeEgressEnvironment(env, [])).not.toThrow();
    expect(read('systemd', 'ehrbench.env.example')).not.toMatch(/:[^@/]+@/);
  });

  it('has the same hardening as the daemon unit', () => {
    const daemon = serviceSection('ehrbench.service').filter(([k]) => HARDENING.includes(k));
    expect(entries.filter(([k]) => HARDENING.includes(k))).toEqual(daemon);
  });

  const analyze = spawnSync('systemd-analyze', ['--version']).status === 0 ? it : it.skip;
  analyze('passes systemd-analyze verify without a warning, with a low exposure score', () => {
    const name = file.replace('@.', '@1.');
    const path = copyAs(file, name);
    const verify = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
    expect(verify.status).toBe(0);
    expect(verify.stderr.split('\n').filter((l) => l.includes(name))).toEqual([]);
    const security = spawnSync('systemd-analyze', ['security', '--offline=true', path], { encoding: 'utf8' });
    const exposure = Number(/Overall exposure level for \S+: (\d+\.\d+)/.exec(security.stdout + security.stderr)?.[1]);
    expect(exposure).toBeLessThanOrEqual(2);
  });
});

describe('the daemon and its workers on one host (systemd)', () => {
  it("leave the daemon's health port to the daemon: worker instances open none unless each is given its own", () => {
    const config = validateOrThrow<Obj>('config.schema.json', JSON.parse(read('systemd', 'config.example.json')), 'config.example.json', 'config.invalid');
    expect(config.server.healthPort).toBe(8081);
    // One worker.healthPort would be shared by every ehrbench-worker@N instance: they would clash.
    expect(config.worker?.healthPort).toBeUndefined();
    const exec = serviceSection('ehrbench-worker@.service').find(([k]) => k === 'ExecStart')?.[1];
    expect(exec).toMatch(/ehrbench\.js worker$/);
  });
});

describe('the benches measure the daemon as it is deployed', () => {
  it('bench:run runs with the Node flags the units and the image start the daemon with', () => {
    const flagsOf = (command: string) => command.split(/\s+/).filter((w) => w.startsWith('--'));
    const units = ['ehrbench.service', 'ehrbench-worker@.service'].map((u) => flagsOf(serviceSection(u).find(([k]) => k === 'ExecStart')?.[1] ?? ''));
    const image = /^ENTRYPOINT (\[.*\])$/m.exec(read('container', 'Containerfile'))?.[1];
    const entry = (JSON.parse(image ?? '[]') as string[]).filter((w) => w.startsWith('--'));
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const benchRun = flagsOf((scripts['bench:run'] ?? '').replace(/ dist\/bench\/run\.js.*$/, ''));
    expect(units[0]).toEqual(['--max-old-space-size=256']);
    expect(units[1]).toEqual(units[0]);
    expect(entry).toEqual(units[0]);
    expect(benchRun).toEqual(units[0]);
  });
});

/** A copy of a unit under another name (verify wants a concrete instance name for a template unit). */
function copyAs(file: string, name: string): string {
  const tmp = join(tempDir('unit'), name);
  writeFileSync(tmp, read('systemd', file));
  return tmp;
}

describe('Prometheus examples', () => {
  it('alert only on metrics ehrbench exports', async () => {
    const rules = YAML.parse(read('prometheus', 'alerts.yml')) as { groups: { rules: { alert: string; expr: string }[] }[] };
    const exported = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const used = rules.groups.flatMap((g) => g.rules.flatMap((r) => r.expr.match(/\behrbench_[a-z_]+/g) ?? []));
    expect(used.length).toBeGreaterThan(8);
    for (const name of used) expect([name, exported.has(name)]).toEqual([name, true]);
  });

  it('scrape the daemon over mutual TLS with a client certificate, or the loopback port', () => {
    const scrape = YAML.parse(read('prometheus', 'scrape.yml')) as { scrape_configs: Obj[] };
    const remote = scrape.scrape_configs.filter((s) => !s.static_configs[0].targets[0].startsWith('127.0.0.1:'));
    for (const s of remote) {
      expect(s.scheme).toBe('https');
      expect(s.tls_config).toEqual(expect.objectContaining({ cert_file: expect.any(String), key_file: expect.any(String), ca_file: expect.any(String) }));
      expect(s.tls_config.insecure_skip_verify).toBeUndefined();
    }
    const local = scrape.scrape_configs.filter((s) => s.scheme === 'http');
    for (const s of local) expect(s.static_configs[0].targets).toEqual(['127.0.0.1:8081']);
  });
});

describe('the health probe the image and the manifests run', () => {
  const probe = join(ROOT, 'dist', 'observability', 'probe-main.js');

  it('is built, exits 0 when the listener is ready and 1 when it is not or is absent', async () => {
    expect(existsSync(probe)).toBe(true);
    let ready = true;
    const listener = await startLocalListener({ port: 0, metrics: false, ready: async () => ready });
    const port = String((listener.address() as { port: number }).port);
    const run = (args: string[]) =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [probe, ...args], { stdio: 'ignore' });
        child.on('exit', (code: number | null) => resolve(code));
      });
    try {
      expect(await run([port, '/ready'])).toBe(0);
      expect(await run([port, '/health'])).toBe(0);
      ready = false;
      expect(await run([port, '/ready'])).toBe(1);
      expect(await run([port, '/metrics'])).toBe(2);
    } finally {
      listener.close();
    }
    expect(await run([port, '/health'])).toBe(1);
  });
});
