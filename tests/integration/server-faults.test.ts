/**
 * A fault of the site is a 5xx, and its detail is for the operators (issue 17, item 10): a principals
 * file broken while the daemon runs answers every request 503 service.unavailable with a generic
 * message (no server path, no field), and the daemon's log names the file and the field.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERRORS, SITE_FAULTS, UserError } from '../../src/errors';
import { errorReply } from '../../src/server';
import { faultLocation } from '../../src/server/faults';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(120_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a principals file broken while the daemon serves', () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ workers: 0 });
  });
  afterAll(() => t?.close());

  it('answers 503 service.unavailable without any path, and logs the file and the field', async () => {
    expect((await t.call('alice', 'GET', '/v1/whoami')).status).toBe(200);
    const file = join(t.home.home, 'access-policies', 'principals.json');
    const principals = JSON.parse(readFileSync(file, 'utf8'));
    principals.principals[0].roles = ['superuser'];
    writeFileSync(file, JSON.stringify(principals, null, 2));
    // The file is looked at once a second.
    let answer = await t.call('alice', 'GET', '/v1/whoami');
    for (let i = 0; i < 40 && answer.status === 200; i++) {
      await sleep(100);
      answer = await t.call('alice', 'GET', '/v1/whoami');
    }
    expect(answer.status).toBe(503);
    expect(answer.json).toEqual({ error: 'service.unavailable', message: 'the daemon cannot serve requests right now; its operators have been told' });
    const body = JSON.stringify(answer.json);
    expect(body).not.toContain(t.home.home);
    expect(body).not.toContain('principals');
    // Every request, not only identification.
    expect((await t.call('carol', 'GET', '/v1/runs')).status).toBe(503);

    await t.stop();
    const log = readFileSync(join(t.home.home, 'logs', 'ehrbench.log'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const fault = log.find((l) => l.message === 'server.site-fault');
    expect(fault).toMatchObject({ level: 'error', errorCode: 'policy.invalid', file, field: '/principals/0/roles/0' });
  });
});

describe('the catalogue decides what a client is told of a site fault', () => {
  it('answers every site fault 503 service.unavailable with the generic message', () => {
    expect(ERRORS['service.unavailable'].status).toBe(503);
    for (const code of SITE_FAULTS) {
      expect([code, ERRORS[code].status >= 500]).toEqual([code, true]);
      const reply = errorReply(new UserError(code, '/etc/ehrbench/principals.json: /principals/3/roles: must be array'));
      expect(reply).toEqual({ status: 503, body: { error: 'service.unavailable', message: 'the daemon cannot serve requests right now; its operators have been told' } });
    }
  });

  it('keeps the message of faults that are not the configuration (a disk failing during a release)', () => {
    expect(errorReply(new UserError('export.write-failed', 'writing export x failed (ENOSPC)'))).toMatchObject({ status: 500, body: { error: 'export.write-failed' } });
  });

  it('finds the file and the field an error message names', () => {
    expect(faultLocation('/etc/ehrbench/principals.json: /principals/3/roles: must be array')).toEqual({ file: '/etc/ehrbench/principals.json', field: '/principals/3/roles' });
    expect(faultLocation('/etc/ehrbench/principals.json: not valid JSON near character 12; fix the syntax')).toEqual({ file: '/etc/ehrbench/principals.json' });
    expect(faultLocation('no path here')).toEqual({});
  });
});
