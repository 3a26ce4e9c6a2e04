/**
 * One error catalogue (src/error-codes.ts): every error code written in src/ is in it with an HTTP
 * status and an exit code, nothing in it is dead, and the daemon answers with the catalogue's status
 * (never one guessed from the code's spelling): a missing run 404, a policy refusal 403, a disk that
 * fails during an export release 500, a rate limit 429. The CLI exits with the catalogue's code.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditUnavailable } from '../../src/audit/trail';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { DatabaseUnavailable } from '../../src/db/errors';
import { type ErrorCode, ERRORS, errorEntry, isErrorCode, PolicyDenied, UserError } from '../../src/errors';
import { errorReply } from '../../src/server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { scanSource, sourceFiles, where } from '../helpers/source-scan';

jest.setTimeout(180_000);

const scan = scanSource();

describe('the error catalogue', () => {
  it('holds every error code written in src/', () => {
    // The scan must see the places codes are written, or this test proves nothing.
    expect(scan.codes.length).toBeGreaterThan(150);
    for (const file of ['src/catalog/index.ts', 'src/export/service.ts', 'src/server/index.ts', 'src/audit/trail.ts', 'src/cli/client.ts']) {
      expect(scan.codes.some((f) => f.file === file)).toBe(true);
    }
    expect(scan.codes.filter((f) => !f.dynamic && !isErrorCode(f.value)).map(where)).toEqual([]);
  });

  it('has no error code built at run time', () => {
    expect(scan.codes.filter((f) => f.dynamic).map(where)).toEqual([]);
  });

  it('has no dead entries', () => {
    const text = sourceFiles()
      .filter((f) => !f.endsWith(join('src', 'error-codes.ts')))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const unused = Object.keys(ERRORS).filter((code) => !text.includes(`'${code}'`));
    expect(unused).toEqual([]);
  });

  it('gives every code an HTTP status, an exit code and a one-line meaning', () => {
    for (const [code, entry] of Object.entries(ERRORS)) {
      expect([code, Number.isInteger(entry.status) && entry.status >= 400 && entry.status <= 599]).toEqual([code, true]);
      expect([code, [1, 2, 3, 4, 5, 70, 130].includes(entry.exit)]).toEqual([code, true]);
      expect(entry.meaning.length).toBeGreaterThan(10);
      expect(entry.meaning).not.toMatch(/\n/);
    }
  });

  it('keeps the exit codes scripts rely on', () => {
    expect(errorEntry('cli.usage').exit).toBe(2);
    expect(errorEntry('policy.denied').exit).toBe(3);
    expect(errorEntry('audit.unavailable').exit).toBe(4);
    expect(errorEntry('internal').exit).toBe(70);
    // 130: a local run interrupted (Ctrl-C); 5: a run whose instances failed for good, or that failed.
    expect(ERRORS['cli.interrupted'].exit).toBe(130);
    expect(ERRORS['run.instances-failed'].exit).toBe(5);
    expect(ERRORS['run.failed'].exit).toBe(5);
    const others = Object.entries(ERRORS).filter(([c]) => !['cli.usage', 'policy.denied', 'audit.unavailable', 'internal', 'cli.interrupted', 'run.instances-failed', 'run.failed'].includes(c));
    expect(others.filter(([, e]) => e.exit !== 1).map(([c]) => c)).toEqual([]);
    expect(new PolicyDenied('tier.public', 'x').exitCode).toBe(3);
    expect(new AuditUnavailable('test').exitCode).toBe(4);
  });

  it('treats a code that is not in the catalogue as internal', () => {
    expect(errorEntry('no.such-code')).toBe(ERRORS.internal);
    expect(errorEntry('toString')).toBe(ERRORS.internal);
  });
});

describe('errorReply: the status is the catalogue entry of the code', () => {
  const computed = (code: string) => new UserError(code as ErrorCode, 'a code computed at run time (not in the catalogue)');
  it.each([
    ['a missing run', 404, 'run.not-found', new UserError('run.not-found', 'run x does not exist')],
    ['an unknown benchmark', 404, 'benchmark.unknown', new UserError('benchmark.unknown', 'unknown benchmark "nope"')],
    ['a policy refusal', 403, 'policy.denied', new PolicyDenied('rbac.compliance-required', 'needs the compliance role')],
    ['a run that already ended', 409, 'run.not-active', new UserError('run.not-active', 'run x is already completed')],
    ['a disk failure during a release', 500, 'export.write-failed', new UserError('export.write-failed', 'writing export x failed (ENOSPC)')],
    ['the audit trail down', 503, 'audit.unavailable', new AuditUnavailable('test')],
    ['the database gone', 503, 'db.unavailable', new DatabaseUnavailable('test', 'ECONNRESET')],
    ['a model endpoint failing', 502, 'model.http-error', new UserError('model.http-error', 'endpoint x: HTTP 500')],
    ['bad input', 400, 'approval.invalid', new UserError('approval.invalid', 'an approval must cover a benchmark or a tier')],
    ['a rate limit', 429, 'request.rate-limited', new UserError('request.rate-limited', 'slow down')],
    ['an unregistered code', 500, 'not.registered', computed('not.registered')],
  ] as const)('%s -> %i %s', (_what, status, code, err) => {
    const reply = errorReply(err);
    expect(reply.status).toBe(status);
    expect(reply.body.error).toBe(code);
    expect(reply.body.message).toBe(err.message);
  });

  it('names the rule of a refusal', () => {
    expect(errorReply(new PolicyDenied('sod.releaser-is-requester', 'x')).body.rule).toBe('sod.releaser-is-requester');
  });

  it('answers a foreign error as internal without its message', () => {
    const reply = errorReply(Object.assign(new Error('duplicate key (Jane Roe)'), { code: '23505' }));
    expect(reply).toEqual({ status: 500, body: { error: 'internal', message: expect.stringMatching(/^unexpected Error 23505 \(details withheld/) } });
    expect(JSON.stringify(reply)).not.toContain('Jane');
  });

  it("answers fastify's own refusals with the catalogue's request codes", () => {
    expect(errorReply({ validation: [{ instancePath: '/x', keyword: 'type', message: 'must be integer', params: {} }], validationContext: 'body' }).status).toBe(400);
    expect(errorReply({ statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' })).toMatchObject({ status: 413, body: { error: 'request.too-large' } });
    expect(errorReply({ statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })).toMatchObject({ status: 415, body: { error: 'request.media-type' } });
    expect(errorReply({ statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' })).toMatchObject({ status: 400, body: { error: 'request.invalid', message: 'body is not valid JSON' } });
  });
});

describe('the CLI exits with the catalogue code', () => {
  it('exits 2 on a usage error', async () => {
    const err: string[] = [];
    const io: Io = { stdout: () => undefined, stderr: (s) => err.push(s), env: {} };
    expect(await main(['no-such-command'], io)).toBe(errorEntry('cli.usage').exit);
    expect(err.join('')).toMatch(/^ehrbench: /);
  });
});

describe('the daemon answers with the catalogue status', () => {
  let t: TestDaemon;
  let limited: TestDaemon;
  let exportId: string;

  beforeAll(async () => {
    t = await startTestDaemon({
      workers: 1,
      // The export folder sits under a regular file: writing a released bundle fails (ENOTDIR), as a full or broken disk would.
      prepare: (home, config) => {
        writeFileSync(join(home.home, 'not-a-folder'), '');
        config.export = { ...config.export, dir: join(home.home, 'not-a-folder', 'exports') };
      },
    });
    const run = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: DEMO_ENDPOINT_ID, maxInstances: 12 });
    expect(run.status).toBe(200);
    for (let i = 0; i < 600; i++) {
      const r = await t.call('alice', 'GET', `/v1/runs/${run.json.runId}`);
      if (r.json.status === 'completed') break;
      expect(['approved', 'running']).toContain(r.json.status);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const requested = await t.call('alice', 'POST', '/v1/exports', { runIds: [run.json.runId] });
    expect(requested.status).toBe(200);
    exportId = requested.json.exportId;
  });
  afterAll(async () => {
    await t?.close();
    await limited?.close();
  });

  it('a run that does not exist: 404 run.not-found', async () => {
    const r = await t.call('alice', 'GET', '/v1/runs/00000000-0000-0000-0000-000000000000');
    expect(r.status).toBe(404);
    expect(r.json.error).toBe('run.not-found');
  });

  it('a route that does not exist: 404 route.not-found', async () => {
    const r = await t.call('alice', 'GET', '/v1/nothing-here');
    expect(r).toEqual({ status: 404, json: { error: 'route.not-found', message: 'no such route' } });
  });

  it('a refusal by a rule: 403 naming the rule', async () => {
    const r = await t.call('alice', 'POST', `/v1/exports/${exportId}/release`, { format: 'bundle' });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: 'policy.denied', rule: 'rbac.compliance-required' });
  });

  it('a disk failure while an export is released: 500 export.write-failed, not a 4xx', async () => {
    const r = await t.call('carol', 'POST', `/v1/exports/${exportId}/release`, { format: 'bundle' });
    expect(r.status).toBe(500);
    expect(r.json.error).toBe('export.write-failed');
    expect(r.json.message).toMatch(/ENOTDIR.*nothing partial was left/);
  });

  it('too many requests: 429 request.rate-limited, with its message', async () => {
    limited = await startTestDaemon({ workers: 0, rateLimitMax: 2 });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await limited.call('alice', 'GET', '/v1/whoami'));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429, 429]);
    expect(answers[2]?.json).toEqual({ error: 'request.rate-limited', message: expect.stringMatching(/^more than 2 requests in 60 s; slow down$/) });
  });
});
