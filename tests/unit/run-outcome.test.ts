/**
 * A run's outcome (src/runs/outcome.ts): the words the CLI, the API, the console and the report show,
 * and the README's table of them. A run whose every instance failed is never a success.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OUTCOME_LABELS, runOutcome, type RunCause } from '../../src/runs';

const counts = (done: number, failed: number, blocked = 0) => ({ done, failed, blocked, pending: 0, claimed: 0 });
const cause: RunCause = { code: 'model.connection', state: 'failed', instances: 10, meaning: 'the endpoint could not be reached' };

describe('runOutcome', () => {
  it('calls a run failed when the store ended it with no instance finished, with no results to export', () => {
    const o = runOutcome({ status: 'failed', errorCode: 'run.no-instance-finished', counts: counts(0, 10), causes: [cause] });
    expect(o).toMatchObject({ kind: 'failed', label: 'failed', success: false, hasResults: false, causes: [cause] });
    expect(o.summary).toMatch(/^no instance finished \(10 failed, 0 blocked\): there are no results/);
  });

  it('says "completed with failures" when some instances failed, and has results', () => {
    const o = runOutcome({ status: 'completed', errorCode: null, counts: counts(7, 3), causes: [{ ...cause, instances: 3 }] });
    expect(o).toMatchObject({ kind: 'completed-with-failures', label: 'completed with failures', success: false, hasResults: true });
    expect(o.summary).toMatch(/^7 of 10 instances done, 3 failed for good/);
  });

  it('is a success only when completed with no failed instance; blocked ones are counted apart', () => {
    expect(runOutcome({ status: 'completed', errorCode: null, counts: counts(10, 0), causes: [] })).toMatchObject({ kind: 'completed', success: true, hasResults: true });
    const blocked = runOutcome({ status: 'completed', errorCode: null, counts: counts(9, 0, 1), causes: [] });
    expect(blocked).toMatchObject({ kind: 'completed', success: true });
    expect(blocked.summary).toContain('1 instance blocked by policy and never sent');
  });

  it('never shows a stopped or unknown status as a success', () => {
    for (const status of ['halted', 'cancelled', 'running', 'approved', 'requested', 'no-such-status']) {
      const o = runOutcome({ status, errorCode: null, counts: counts(5, 0), causes: [] });
      expect([o.success, o.hasResults]).toEqual([false, false]);
    }
    expect(runOutcome({ status: 'no-such-status', errorCode: null, counts: counts(5, 0), causes: [] }).kind).toBe('failed');
  });
});

describe("the README's table of outcomes", () => {
  it('has a row for every label, in the words the product shows', () => {
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
    const rows = new Set([...readme.matchAll(/^\| ([a-z ,]+) \| /gm)].map((m) => m[1]));
    for (const label of Object.values(OUTCOME_LABELS)) expect(rows).toContain(label);
  });
});
