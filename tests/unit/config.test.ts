import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectionsCheckingIntervalMs, loadConfig } from '../../src/config';
import { UserError } from '../../src/errors';
import { initHome } from '../../src/setup/init';
import { tempDir } from '../helpers/db';

function writeConfig(content: unknown): string {
  const dir = tempDir('cfg');
  const file = join(dir, 'config.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function errorOf(fn: () => unknown): UserError {
  try {
    fn();
  } catch (err) {
    if (err instanceof UserError) return err;
    throw err;
  }
  throw new Error('expected a UserError');
}

describe('configuration', () => {
  it('accepts the file written by init and applies defaults', () => {
    const home = tempDir('init');
    initHome({ home });
    const config = loadConfig({ file: join(home, 'config.json'), env: {} });
    expect(config.site.id).toBe('local-site');
    expect(config.database.url).toBeUndefined();
    expect(config.database.embeddedDir).toBe(join(home, 'db'));
    expect(config.runs.concurrencyPerEndpoint).toBe(16);
  });

  it('takes the database URL from EHRBENCH_DATABASE_URL, never from the file', () => {
    const file = writeConfig({ configVersion: 1, site: { id: 's1' } });
    expect(loadConfig({ file, env: { EHRBENCH_DATABASE_URL: 'postgres://x@h/db' } }).database.url).toBe('postgres://x@h/db');
    const err = errorOf(() => loadConfig({ file: writeConfig({ configVersion: 1, site: { id: 's1' }, database: { url: 'postgres://a' } }), env: {} }));
    expect(err.message).toContain('/database: unknown key "url"');
  });

  it('rejects an unknown key naming the file, the JSON path and the allowed keys', () => {
    const file = writeConfig({ configVersion: 1, site: { id: 's1' }, runs: { concurency: 4 } });
    const err = errorOf(() => loadConfig({ file, env: {} }));
    expect(err.code).toBe('config.invalid');
    expect(err.message).toContain(file);
    expect(err.message).toContain('/runs: unknown key "concurency"');
    expect(err.message).toContain('allowed: concurrencyPerEndpoint');
  });

  it('names the path and the expectation for a wrong type or value', () => {
    const file = writeConfig({ configVersion: 1, site: { id: 's1' }, runs: { maxAttempts: 0 }, logging: { level: 'loud' } });
    const err = errorOf(() => loadConfig({ file, env: {} }));
    expect(err.message).toContain('/runs/maxAttempts: must be >= 1');
    expect(err.message).toContain('/logging/level: must be one of "debug", "info", "warn", "error"');
  });

  it('reports a missing required key and a missing file with what to do', () => {
    expect(errorOf(() => loadConfig({ file: writeConfig({ configVersion: 1 }), env: {} })).message).toContain('/: missing required key "site"');
    const missing = errorOf(() => loadConfig({ file: '/nonexistent/config.json', env: {} }));
    expect(missing.code).toBe('config.missing');
    expect(missing.message).toContain('ehrbench init');
  });

  it('reports invalid JSON by position without quoting the file', () => {
    const file = writeConfig('{"configVersion": 1, "site": {"id": "secret-value"},,}');
    const err = errorOf(() => loadConfig({ file, env: {} }));
    expect(err.message).toMatch(/not valid JSON near character \d+/);
    expect(err.message).not.toContain('secret-value');
  });

  it('caps the API server connections, 512 in total and 32 per client certificate unless configured', () => {
    expect(loadConfig({ file: writeConfig({ configVersion: 1, site: { id: 's1' } }), env: {} }).server).toMatchObject({ maxConnections: 512, maxConnectionsPerCertificate: 32 });
    const file = writeConfig({ configVersion: 1, site: { id: 's1' }, server: { maxConnections: 64, maxConnectionsPerCertificate: 4 } });
    expect(loadConfig({ file, env: {} }).server).toMatchObject({ maxConnections: 64, maxConnectionsPerCertificate: 4 });
    const zero = errorOf(() => loadConfig({ file: writeConfig({ configVersion: 1, site: { id: 's1' }, server: { maxConnectionsPerCertificate: 0 } }), env: {} }));
    expect(zero.message).toContain('/server/maxConnectionsPerCertificate: must be >= 1');
  });

  it('looks for expired headers and requests every half header timeout, at most every second', () => {
    const timeouts = (headersSeconds: number, requestSeconds: number) => ({ headersSeconds, requestSeconds, keepAliveSeconds: 5, idleSeconds: 60 });
    expect(connectionsCheckingIntervalMs(timeouts(1, 2))).toBe(500);
    expect(connectionsCheckingIntervalMs(timeouts(2, 30))).toBe(1000);
    expect(connectionsCheckingIntervalMs(timeouts(10, 30))).toBe(1000);
    expect(connectionsCheckingIntervalMs(timeouts(0.1, 1))).toBe(100);
  });

  it('keeps existing files and keys when init runs again', () => {
    const home = tempDir('init2');
    const first = initHome({ home });
    const second = initHome({ home });
    expect(first.created.length).toBeGreaterThan(5);
    expect(second.created).toEqual([]);
  });
});
