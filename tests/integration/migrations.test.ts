import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { listMigrations, runMigrations } from '../../src/db';
import { backends, freshStore, tempDir } from '../helpers/db';

describe.each(backends())('migrations on %s', (backend) => {
  it('apply every migration once to an empty store and are a no-op the second time', async () => {
    const store = await freshStore(backend);
    const db = await store.open(false);
    try {
      const applied = await runMigrations(db);
      expect(applied).toEqual(listMigrations().map((m) => `${m.version}_${m.name}`));
      expect(await runMigrations(db)).toEqual([]);
      const tables = await db.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name");
      expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['runs', 'run_items', 'run_results', 'schema_migrations']));
    } finally {
      await db.close();
      await store.drop();
    }
  });

  it('refuse to run when an applied migration file was edited afterwards', async () => {
    const store = await freshStore(backend);
    const db = await store.open(false);
    try {
      await runMigrations(db);
      const dir = tempDir('mig');
      const [first] = listMigrations();
      writeFileSync(join(dir, `${first?.version}_${first?.name}.sql`), `${first?.sql}\n-- edited\n`);
      await expect(runMigrations(db, listMigrations(dir))).rejects.toThrow(/differs from the one applied to this database/);
    } finally {
      await db.close();
      await store.drop();
    }
  });

  it('let two openers race on an empty store without applying anything twice', async () => {
    if (backend !== 'postgres') return; // one process owns an embedded store
    const store = await freshStore(backend);
    const [a, b] = await Promise.all([store.open(false), store.open(false)]);
    try {
      const results = await Promise.all([runMigrations(a), runMigrations(b)]);
      expect([...results[0], ...results[1]].sort()).toEqual(
        listMigrations()
          .map((m) => `${m.version}_${m.name}`)
          .sort(),
      );
    } finally {
      await a.close();
      await b.close();
      await store.drop();
    }
  });
});
