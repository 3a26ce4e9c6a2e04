import { Catalog, instancesOf, type Instance } from '../../src/catalog';

const catalog = Catalog.load();

/** The first instances of a built-in benchmark matching `pick`, read from the shipped data. */
export async function findInstances(benchmarkId: string, pick: (i: Instance) => boolean, max = 1): Promise<Instance[]> {
  const found: Instance[] = [];
  for await (const instance of instancesOf(catalog.get(benchmarkId))) {
    if (pick(instance)) found.push(instance);
    if (found.length >= max) break;
  }
  return found;
}

export async function instanceByKey(benchmarkId: string, key: string): Promise<Instance> {
  const [instance] = await findInstances(benchmarkId, (i) => i.key === key);
  if (!instance) throw new Error(`no instance ${key} in ${benchmarkId}`);
  return instance;
}

export async function countInstances(benchmarkId: string): Promise<number> {
  let n = 0;
  for await (const _ of instancesOf(catalog.get(benchmarkId))) n += 1;
  return n;
}

export { catalog };
