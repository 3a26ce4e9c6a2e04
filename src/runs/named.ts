/**
 * The benchmark and the endpoint a request names, from the catalog and the allowlist in force (both
 * re-read live). When the site's own file is what is wrong (its data binding, a broken site data file
 * or allowlist), the requester is told which benchmark or endpoint cannot be served now, never where
 * the file is; the daemon's log names the file and the field (src/server/faults.ts).
 */
import type { Benchmark, Catalog } from '../catalog';
import type { Endpoint } from '../contracts';
import type { EndpointPolicy } from '../egress';
import { SITE_FAULTS, siteFaultFor, UserError } from '../errors';

/** An id as the requester sent it, safe to repeat in an answer. */
export function shownId(id: string): string {
  return id.replace(/[^A-Za-z0-9._:-]/g, '_').slice(0, 64);
}

/** What a requester is told of a benchmark whose site configuration cannot be used now. */
export function benchmarkUnavailable(id: string, why: string): string {
  return `benchmark ${shownId(id)} cannot be run here right now: ${why}; the site's operators have been told`;
}

/** Rethrows a site fault met on the way to `what` as one that names it to the requester. */
function naming<T>(read: () => T, forRequester: string): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof UserError && SITE_FAULTS.has(err.code) && !err.forRequester) throw siteFaultFor(err, forRequester);
    throw err;
  }
}

export function benchmarkNamed(catalog: () => Catalog, id: string): Benchmark {
  return naming(() => catalog().get(id), benchmarkUnavailable(id, "the site's benchmark catalog or data bindings are broken"));
}

export function endpointNamed(endpoints: () => EndpointPolicy, id: string): Endpoint {
  return naming(() => endpoints().get(id), `endpoint ${shownId(id)} cannot be used right now: the site's endpoint allowlist is broken; the site's operators have been told`);
}
