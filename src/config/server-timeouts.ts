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

/**
 * How often the server looks for connections past their header or request timeout. Node looks every
 * 30 s by default, so a headersSeconds of 2 held a dripping client for 30 s: a connection is closed at
 * the first look after its timeout, at most one interval late. Half the header timeout keeps that
 * under half of it, and at most a second keeps every timeout within a second of its setting; at least
 * 100 ms keeps the look (a walk over the open requests) cheap. headersSeconds is at most
 * requestSeconds, so it is the smaller of the two.
 */
export function connectionsCheckingIntervalMs(t: ServerTimeouts): number {
  const half = (Math.min(t.headersSeconds, t.requestSeconds) * 1000) / 2;
  return Math.min(1000, Math.max(100, half));
}
