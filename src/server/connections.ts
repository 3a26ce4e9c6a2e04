/**
 * How many connections the daemon holds open: in total (server.maxConnections) and with one client
 * certificate (server.maxConnectionsPerCertificate). A client that opens sockets and never finishes
 * a request holds each one until a timeout closes it; the caps bound how many it can hold at once, so
 * one certificate (a stolen one, a revoked one, a runaway script) cannot take the daemon's sockets
 * from everyone else.
 *
 * The total is Node's own: past server.maxConnections a new TCP connection is closed on accept,
 * before the TLS handshake, and reported as 'drop'. The per-certificate count is kept here, on
 * 'secureConnection' after the handshake verified the certificate, keyed by the certificate's sha256
 * fingerprint; a socket over the cap is destroyed before HTTP reads a byte from it. Either refusal is
 * counted (ehrbench_connection_refusals_total{rule}) and logged, at most 100 lines a minute per rule
 * (address, common name and issuer fingerprint; no request was read). They are not audited, like the
 * handshake refusals (src/server/handshake.ts): a flood of sockets must not become a flood of events.
 */
import type { Server as HttpsServer } from 'node:https';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import type { Logger } from '../log';
import { type ConnectionRefusalRule, observeConnectionRefusal } from '../observability';
import { firstName, logAddress } from './handshake';
import { normalizeFingerprint } from './identity';
import { refusalLogger } from './refusal-log';

export interface ConnectionLimits {
  /** TCP connections open at once, TLS handshakes included. */
  maxConnections: number;
  /** Connections open at once with one client certificate. */
  maxConnectionsPerCertificate: number;
}

/** Open sockets per certificate fingerprint; an entry lives as long as one of its sockets. */
class CertificateConnections {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts the socket and true, or false when the certificate already holds `max` sockets. */
  admit(fingerprint: string, socket: TLSSocket): boolean {
    const held = this.open.get(fingerprint) ?? 0;
    if (held >= this.max) return false;
    this.open.set(fingerprint, held + 1);
    socket.once('close', () => this.release(fingerprint));
    return true;
  }

  private release(fingerprint: string): void {
    const held = (this.open.get(fingerprint) ?? 1) - 1;
    if (held > 0) this.open.set(fingerprint, held);
    else this.open.delete(fingerprint);
  }
}

/**
 * Installs both caps on the daemon's HTTPS server. Call it before refuseUnverifiedClients: both
 * prepend their 'secureConnection' listener, so that one runs first (an unverified socket is gone
 * before it is counted) and this one second, both before the HTTP layer's.
 */
export function limitConnections(server: HttpsServer, limits: ConnectionLimits, logger: Logger): void {
  const logLine = refusalLogger(logger, 'server.connection-refused');
  const refused = (rule: ConnectionRefusalRule, fields: Record<string, string>) => {
    observeConnectionRefusal(rule);
    logLine(rule, { rule, ...fields }, 'warn');
  };

  server.maxConnections = limits.maxConnections;
  server.on('drop', (data?: { remoteAddress?: string }) => refused('daemon.connections-total', { address: logAddress(data?.remoteAddress) }));

  const perCertificate = new CertificateConnections(limits.maxConnectionsPerCertificate);
  server.prependListener('secureConnection', (socket: TLSSocket) => {
    if (socket.destroyed || !socket.authorized) return;
    let fields: Record<string, string> = { address: 'unknown' };
    try {
      const cert = socket.getPeerCertificate(true);
      // A verified socket without a readable certificate cannot be counted under any key: refused.
      if (cert?.fingerprint256 && perCertificate.admit(normalizeFingerprint(cert.fingerprint256), socket)) return;
      fields = describePeer(socket, cert);
    } catch {
      // A socket that cannot be described or counted is refused all the same.
    }
    socket.destroy();
    refused('identity.connections-per-certificate', fields);
  });
}

/** What the log may say of a verified certificate refused for its connections: names and the issuer's fingerprint. */
function describePeer(socket: TLSSocket, cert: DetailedPeerCertificate | undefined): Record<string, string> {
  const commonName = firstName(cert?.subject?.CN);
  const issuer = cert?.issuerCertificate?.fingerprint256;
  return {
    address: logAddress(socket.remoteAddress),
    ...(commonName ? { commonName } : {}),
    ...(issuer ? { issuerFingerprint: normalizeFingerprint(issuer) } : {}),
  };
}
