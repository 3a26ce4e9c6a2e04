import type { CommandModule } from 'yargs';
import { loadConfig } from '../../config';
import { describeDatabase, listMigrations, openDatabase, pinnedDatabase, runMigrations } from '../../db';
import { upgradeNeeds } from '../../setup';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';

export function dbCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'db <command>',
    describe: 'The run store: migrations and status',
    builder: (y) =>
      y
        .command<GlobalArgs>({
          command: 'status',
          describe: 'Show where the store is, which migrations are applied, and what an upgrade still needs',
          handler: async (args) => {
            const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
            const opts = pinnedDatabase(config.database);
            const db = await openDatabase({ ...opts, migrate: false });
            try {
              const applied = await db.query<{ version: string; applied_at: Date }>('SELECT version, applied_at FROM schema_migrations ORDER BY version').catch(() => []);
              const rows = listMigrations().map((m) => {
                const a = applied.find((x) => x.version === m.version);
                return { version: m.version, name: m.name, applied: a ? a.applied_at.toISOString() : null };
              });
              // What an upgrade still needs (deploy/README.md, Upgrades), each with what does it.
              const upgrade = await upgradeNeeds(config, db);
              if (args.json) return printJson(io, { store: describeDatabase(opts), backend: db.backend, migrations: rows, upgrade });
              io.stdout(`store: ${describeDatabase(opts)}\n`);
              io.stdout(
                formatTable(
                  ['version', 'name', 'applied'],
                  rows.map((r) => [r.version, r.name, r.applied ?? 'pending']),
                ),
              );
              if (upgrade.length === 0) io.stdout('upgrade: nothing left to do\n');
              for (const n of upgrade) io.stdout(`upgrade: ${n.found}; ${n.todo}\n`);
            } finally {
              await db.close();
            }
          },
        })
        .command<GlobalArgs>({
          command: 'migrate',
          describe: 'Apply pending migrations',
          handler: async (args) => {
            const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
            const db = await openDatabase({ ...pinnedDatabase(config.database), migrate: false });
            try {
              const applied = await runMigrations(db);
              if (args.json) return printJson(io, { applied });
              io.stdout(applied.length ? applied.map((a) => `applied ${a}\n`).join('') : 'nothing to apply\n');
            } finally {
              await db.close();
            }
          },
        })
        .demandCommand(1, 'name a subcommand: status or migrate'),
    handler: () => undefined,
  };
}
