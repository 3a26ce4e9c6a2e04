/**
 * The API server's timeouts (server.timeouts). Node's own defaults let a client hold a socket for
 * minutes (5 min for a request, none at all for an idle socket); a daemon on a hospital network gets
 * short ones, since its requests are small JSON bodies and its answers come from the store.
 */
import { UserError } from '../errors';

export interface ServerTimeoutsFile {
  headersSeconds?: number;
  requestSeconds?: number;
  keepAliveSeconds?: number;
  idleSeconds?: number;
}

export interface ServerTimeouts {
  /** The TLS handshake and the request headers, each. */
  headersSeconds: number;
  /** The whole request, body included. */
  requestSeconds: number;
  /** An idle keep-alive connection between requests. */
  keepAliveSeconds: number;
  /** A socket with no traffic at all, whatever it is doing. */
  idleSeconds: number;
}

export function serverTimeouts(raw: ServerTimeoutsFile | undefined, file: string): ServerTimeouts {
  const t = {
    headersSeconds: raw?.headersSeconds ?? 10,
    requestSeconds: raw?.requestSeconds ?? 30,
    keepAliveSeconds: raw?.keepAliveSeconds ?? 5,
    idleSeconds: raw?.idleSeconds ?? 60,
  };
  // Node refuses to start a server whose header timeout exceeds its request timeout; say it here, by field.
  if (t.headersSeconds > t.requestSeconds) {
    throw new UserError(
      'config.invalid',
      `${file}: server.timeouts.headersSeconds (${t.headersSeconds}) exceeds server.timeouts.requestSeconds (${t.requestSeconds}); the headers are part of the request, make it at most that`,
    );
  }
  return t;
}
