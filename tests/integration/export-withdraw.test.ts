/**
 * An export whose preview went stale (its runs, the disclosure settings, or after an upgrade the
 * preview's format changed) can no longer be released; its requester withdraws it (issue 29): the
 * release refusal says so, `export withdraw` records it and makes it final, and a withdrawn export is
 * neither released nor withdrawn again. Local mode, where the operating-system account is the requester.
 */
import { openApp } from '../../src/app';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { Operations } from '../../src/operations';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { startTestApp } from '../helpers/app';

jest.setTimeout(180_000);

it('a stale export is withdrawn by its requester, audited, and final', async () => {
  const t = await startTestApp();
  await t.app.close();
  const env = t.home.env;
  const cli = async (args: string[]) => {
    let stdout = '';
    let stderr = '';
    const io: Io = { stdout: (s) => void (stdout += s), stderr: (s) => void (stderr += s), env };
    process.exitCode = undefined;
    const code = await main(args, io);
    process.exitCode = undefined;
    return { code, stdout, stderr };
  };
  /** carol, a compliance officer, through the operation the daemon runs. */
  const asCarol = async <T>(fn: (ops: Operations, caller: Parameters<Operations['releaseExport']>[0]) => Promise<T>): Promise<T> => {
    const app = await openApp({ file: t.home.configFile, env });
    try {
      const carol = app.principals().get('carol');
      return await fn(new Operations(app), { principal: carol as NonNullable<typeof carol>, authMethod: 'mtls' });
    } finally {
      await app.close();
    }
  };
  try {
    const run = await cli(['run', '--benchmark', 'medec', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '30', '--json']);
    expect(run.code).toBe(0);
    const requested = await cli(['export', 'request', '--runs', JSON.parse(run.stdout).runId, '--json']);
    expect(requested.code).toBe(0);
    const exportId = JSON.parse(requested.stdout).exportId as string;

    // What an upgrade that changed the preview's format leaves: the reviewed preview no longer matches.
    const app = await openApp({ file: t.home.configFile, env });
    await app.db.query("UPDATE exports SET content_sha256 = repeat('0', 64) WHERE export_id = $1::uuid", [exportId]);
    await app.close();
    await expect(asCarol((ops, carol) => ops.releaseExport(carol, exportId, 'bundle'))).rejects.toThrow(
      new RegExp(`differ from the preview that was reviewed .*; withdraw it \\("(npx )?ehrbench export withdraw ${exportId} --reason \\.\\.\\."\\) and request a new export`),
    );

    const withdrawn = await cli(['export', 'withdraw', exportId, '--reason', 'preview stale after the upgrade']);
    expect(withdrawn.stderr).toBe('');
    expect(withdrawn.code).toBe(0);
    expect(withdrawn.stdout).toBe(`export ${exportId} withdrawn; request a new export of its runs if they are still to be released\n`);
    const shown = await cli(['export', 'show', exportId, '--json']);
    expect(JSON.parse(shown.stdout).state).toBe('withdrawn');

    // Final: neither released nor withdrawn again.
    await expect(asCarol((ops, carol) => ops.releaseExport(carol, exportId, 'bundle'))).rejects.toThrow(/denied by rule export\.withdrawn/);
    const again = await cli(['export', 'withdraw', exportId, '--reason', 'again']);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/^ehrbench: denied by rule export\.not-waiting: export \S+ is withdrawn; only an export that waits for release can be withdrawn\n$/);

    const trail = await openApp({ file: t.home.configFile, env });
    const events = await trail.db.query<{ rule: string; outcome: string; actor_principal: string }>(
      "SELECT rule, outcome, actor_principal FROM audit_events WHERE export_id = $1 AND event_type = 'export.deny' ORDER BY seq",
      [exportId],
    );
    await trail.close();
    expect(events.map((e) => [e.rule, e.outcome])).toEqual([
      ['export.preview-stale', 'denied'],
      ['export.withdrawn', 'success'],
      ['export.withdrawn', 'denied'],
      ['export.not-waiting', 'denied'],
    ]);
  } finally {
    // (Its app was closed above: the commands open the data directory themselves.)
    await t.server.close();
    await t.home.cleanup();
  }
});
