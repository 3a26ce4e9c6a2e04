/**
 * The verifier's clock warning (recorded_at earlier than the row before): processes that share a trail
 * (the daemon, its workers, a CLI on the host) stamp events with their own clocks before the store
 * orders them, so rows a few hundred milliseconds out of order are normal; a clock set back by a second
 * or more is what the warning is for. On both stores.
 */
import { startTestApp, type TestApp } from '../helpers/app';
import { verifyApp } from '../helpers/audit';
import { backends } from '../helpers/db';

jest.setTimeout(120_000);

/** The clock warnings only (a home without a checkpoint yet also warns of its unwritten witness). */
const clockWarnings = (report: { warnings: { problem: string }[] }) => report.warnings.map((w) => w.problem).filter((p) => p.startsWith('recorded_at'));

describe.each(backends())('audit verify clock warning on %s', (backend) => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp({ backend });
  });
  afterEach(async () => {
    jest.useRealTimers();
    await t.close();
  });

  /** Records one event with the clock at `at` (only Date is faked: timers and I/O run as usual). */
  async function recordAt(at: number): Promise<void> {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'], now: at });
    try {
      await t.app.audit.record({ type: 'config.load', action: 'E', outcome: 'success', rule: 'daemon.start', actor: { principal: 'service:test', role: 'service', authMethod: 'service' } });
    } finally {
      jest.useRealTimers();
    }
  }

  it('tolerates sub-second reordering between processes, and warns when the clock moved back a second or more', async () => {
    const now = Date.now() + 60_000;
    await recordAt(now);
    await recordAt(now - 400); // another process, its event ordered after ours
    await recordAt(now + 100);
    let report = await verifyApp(t.app);
    expect(report.ok).toBe(true);
    expect(clockWarnings(report)).toEqual([]);

    await recordAt(now - 1500);
    report = await verifyApp(t.app);
    expect(report.ok).toBe(true);
    expect(clockWarnings(report)).toHaveLength(1);
    expect(clockWarnings(report)[0]).toMatch(/^recorded_at \S+ is 1\.6 s earlier than a row before \(clock moved back\)$/);
  });
});
