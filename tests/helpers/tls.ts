/**
 * TLS fixtures for the egress tests: certificates made with node-forge (src/identity/pki.ts) and
 * small live HTTPS servers on loopback that count connections and HTTP requests, so a test can
 * assert that a refusal happened before any request byte reached the server.
 */
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Endpoint } from '../../src/egress';
import { createCa, issueCertificate, type KeyAndCert } from '../../src/identity/pki';
import { tempDir } from './db';

export interface Pki {
  dir: string;
  ca: KeyAndCert;
  caFile: string;
  /** A second CA the endpoints never trust. */
  rogueCa: KeyAndCert;
  rogueCaFile: string;
  /** Server certificate for `model.test` and 127.0.0.1 from the trusted CA. */
  server: KeyAndCert;
  client: KeyAndCert;
  clientCertFile: string;
  clientKeyFile: string;
  issue(opts: Partial<Parameters<typeof issueCertificate>[1]> & { by?: KeyAndCert }): KeyAndCert;
}

let cached: Pki | undefined;

/** One set of keys per test file (RSA key generation in forge is the slow part). */
export function testPki(): Pki {
  if (cached) return cached;
  const dir = tempDir('egress-pki');
  const ca = createCa('egress test CA');
  const rogueCa = createCa('rogue CA');
  const issue: Pki['issue'] = ({ by, ...opts }) => issueCertificate(by ?? ca, { commonName: 'model.test', dnsNames: ['model.test'], ipAddresses: ['127.0.0.1'], usage: 'server', days: 30, ...opts });
  const server = issue({});
  const client = issue({ commonName: 'ehrbench', usage: 'client', dnsNames: [], ipAddresses: [] });
  const write = (name: string, pem: string) => {
    const file = join(dir, name);
    writeFileSync(file, pem);
    return file;
  };
  cached = {
    dir,
    ca,
    caFile: write('ca.pem', ca.certPem),
    rogueCa,
    rogueCaFile: write('rogue-ca.pem', rogueCa.certPem),
    server,
    client,
    clientCertFile: write('client.pem', client.certPem),
    clientKeyFile: write('client.key.pem', client.keyPem),
    issue,
  };
  return cached;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export interface TlsServer {
  port: number;
  host: string;
  /** TLS handshakes the server completed. */
  connections(): number;
  /** HTTP requests whose head reached the server. */
  requests(): number;
  /** Bodies of the requests received (to assert a prompt did or did not arrive). */
  bodies: string[];
  authorizations: (string | undefined)[];
  /** Request lines and headers as received (paths and auth headers only, for assertions). */
  paths: string[];
  apiKeys: (string | undefined)[];
  close(): Promise<void>;
}

/** Answers like an OpenAI-compatible server: /models and /chat/completions. */
export const openAiHandler: Handler = (req, res) => {
  res.setHeader('content-type', 'application/json');
  if (req.method === 'GET' && /\/models(\?|$)/.test(req.url ?? '')) {
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'test-model', object: 'model', owned_by: 'test' }] }));
    return;
  }
  res.end(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'test-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'B' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    }),
  );
};

export async function startTlsServer(opts: { cert: KeyAndCert; host?: string; port?: number; clientCaPem?: string; handler?: Handler }): Promise<TlsServer> {
  let connections = 0;
  let requests = 0;
  const bodies: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const paths: string[] = [];
  const apiKeys: (string | undefined)[] = [];
  const handler = opts.handler ?? openAiHandler;
  const server = https.createServer(
    {
      cert: opts.cert.certPem,
      key: opts.cert.keyPem,
      ...(opts.clientCaPem ? { ca: opts.clientCaPem, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (req, res) => {
      requests++;
      authorizations.push(req.headers.authorization);
      paths.push(`${req.method} ${req.url}`);
      apiKeys.push((req.headers['api-key'] ?? req.headers['ocp-apim-subscription-key']) as string | undefined);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        bodies.push(body);
        handler(req, res, body);
      });
    },
  );
  server.on('secureConnection', () => connections++);
  server.on('tlsClientError', () => undefined);
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    host,
    connections: () => connections,
    requests: () => requests,
    bodies,
    authorizations,
    paths,
    apiKeys,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** An endpoint on a loopback test server, reached by the name `model.test` pinned to 127.0.0.1. */
export function loopbackEndpoint(port: number, overrides: Partial<Endpoint> = {}): Endpoint {
  const pki = testPki();
  return {
    id: 'test-model',
    provider: 'openai-compatible',
    url: `https://model.test:${port}/v1`,
    model: 'test-model',
    addresses: ['127.0.0.1'],
    allowedCidrs: ['127.0.0.1/32'],
    tls: { caFile: pki.caFile },
    auth: { type: 'none' },
    classification: { inVpc: true, baa: false, maxTier: 'public', development: true },
    policyFile: join(pki.dir, 'endpoints.json'),
    ...overrides,
  };
}
