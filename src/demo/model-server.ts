/**
 * A loopback model server for the demo, the tests and the benchmarks. It speaks the OpenAI chat
 * completions API over HTTPS (OpenAI-compatible `/v1/...` and Azure `/openai/deployments/...` paths)
 * and answers deterministically. It is a DEMO STAND-IN, not a model: its answers are chosen from a hash
 * of the prompt, so its scores mean nothing beyond "the pipeline works end to end".
 *
 * Tests can make it misbehave (status codes, Retry-After, latency, oversized or endless bodies,
 * redirects) and can inspect every prompt it received.
 */
import { createHash } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export const DEMO_MODEL_ID = 'ehrbench-demo-standin';

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  prompt: string;
  /** The request body as received (tests search all of it, not only the prompt). */
  body: string;
}

/** What the server does with one request; the default answers like a (silly) model. */
export type Behaviour =
  /** usage: the reported token counts as given (`omit`: no usage at all, as several OpenAI-compatible servers answer). */
  /** model, systemFingerprint, headers: what it says it served (default: DEMO_MODEL_ID, the stand-in's own fingerprint, no headers). */
  | { kind: 'answer'; text?: string; latencyMs?: number; usage?: 'omit' | Record<string, number>; model?: string; systemFingerprint?: string; headers?: Record<string, string> }
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'redirect'; location: string }
  | { kind: 'huge'; bytes: number }
  | { kind: 'hang' };

export interface ModelServerOptions {
  certPem: string;
  keyPem: string;
  host?: string;
  port?: number;
  /** Fixed latency added to every answer (benchmarks). */
  latencyMs?: number;
  /** Keep the prompts received (tests). */
  record?: boolean;
  /** Per-request behaviour; called with the request number (1-based) and the prompt. */
  behaviour?: (n: number, prompt: string) => Behaviour;
  /** Require this client certificate CA (mTLS tests). */
  clientCaPem?: string;
}

export interface ModelServer {
  port: number;
  url: string;
  received: ReceivedRequest[];
  requestCount(): number;
  /** The most chat requests that were in progress at once, by the request's `model` (tests of endpoint limits). */
  peakInFlight(): Record<string, number>;
  close(): Promise<void>;
}

function hashInt(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

/** The stand-in's answer: a letter for lettered options, CORRECT or a sentence id for MEDEC, else a number. */
export function standInAnswer(prompt: string): string {
  const h = hashInt(prompt);
  const letters = [...prompt.matchAll(/^([A-Z])\. /gm)].map((m) => m[1] as string);
  if (letters.length >= 2) return letters[h % letters.length] as string;
  if (prompt.includes('return the following output: CORRECT')) {
    const ids = [...prompt.matchAll(/^(\d+) /gm)].map((m) => m[1] as string);
    return h % 2 === 0 || ids.length === 0 ? 'CORRECT' : `${ids[h % ids.length]} The sentence should be revised.`;
  }
  if (/M\/D\/Y/.test(prompt)) return `0${1 + (h % 9)}/1${h % 10}/20${10 + (h % 15)}`;
  if (/weeks?.*days?/i.test(prompt) && /gestational/i.test(prompt)) return `('${h % 40} weeks', '${h % 7} days')`;
  // A number mentioned in the note, so some answers land in range by chance.
  const numbers = [...prompt.matchAll(/\b\d+(\.\d+)?\b/g)].map((m) => m[0]);
  return numbers.length ? (numbers[h % numbers.length] as string) : String(h % 100);
}

function promptOf(body: unknown): string {
  const messages = (body as { messages?: { content?: unknown }[] })?.messages;
  if (!Array.isArray(messages)) return '';
  return messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

function tokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

export function startModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const received: ReceivedRequest[] = [];
  const inFlight = new Map<string, number>();
  const peaks: Record<string, number> = {};
  let count = 0;
  const server = https.createServer(
    {
      cert: opts.certPem,
      key: opts.keyPem,
      ...(opts.clientCaPem ? { ca: opts.clientCaPem, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const n = ++count;
        const path = req.url ?? '/';
        if (req.method === 'GET' && /\/models(\?|$)/.test(path)) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ object: 'list', data: [{ id: DEMO_MODEL_ID, object: 'model', owned_by: 'ehrbench-demo' }] }));
          return;
        }
        if (req.method !== 'POST' || !/\/chat\/completions(\?|$)/.test(path)) {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'not found' } }));
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(raw);
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'invalid JSON' } }));
          return;
        }
        const prompt = promptOf(body);
        if (opts.record) received.push({ path, headers: req.headers, prompt, body: raw });
        const model = String((body as { model?: unknown })?.model ?? '');
        const now = (inFlight.get(model) ?? 0) + 1;
        inFlight.set(model, now);
        peaks[model] = Math.max(peaks[model] ?? 0, now);
        res.once('close', () => inFlight.set(model, (inFlight.get(model) ?? 1) - 1));
        const behaviour = opts.behaviour?.(n, prompt) ?? { kind: 'answer' };
        respond(behaviour, prompt, res, opts.latencyMs ?? 0, typeof (body as { reasoning_effort?: unknown })?.reasoning_effort === 'string', outputCap(body));
      });
    },
  );
  // Many concurrent keep-alive connections from one client are normal here.
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        port,
        url: `https://localhost:${port}/v1`,
        received,
        requestCount: () => count,
        peakInFlight: () => ({ ...peaks }),
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}

/** The request's output cap (max_tokens or max_completion_tokens), if it has one. */
function outputCap(body: unknown): number | undefined {
  const b = body as { max_tokens?: unknown; max_completion_tokens?: unknown };
  const cap = b?.max_completion_tokens ?? b?.max_tokens;
  return typeof cap === 'number' && cap > 0 ? cap : undefined;
}

function respond(b: Behaviour, prompt: string, res: import('node:http').ServerResponse, baseLatency: number, reasoning = false, cap?: number): void {
  switch (b.kind) {
    case 'status':
      res.writeHead(b.status, { 'content-type': 'application/json', ...(b.retryAfter ? { 'retry-after': b.retryAfter } : {}) });
      res.end(b.body ?? JSON.stringify({ error: { message: `stand-in status ${b.status}` } }));
      return;
    case 'redirect':
      res.writeHead(302, { location: b.location });
      res.end();
      return;
    case 'huge': {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < b.bytes) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
      return;
    }
    case 'hang':
      return; // never answers
    case 'answer': {
      const answer = b.text ?? standInAnswer(prompt);
      // Asked to reason (reasoning_effort), it answers as vLLM-served R1 does: its reasoning inline first.
      const thought = reasoning ? `<think>\nThe stand-in considers the question (${tokens(prompt)} prompt tokens) and settles on its usual answer.\n</think>\n\n` : '';
      const text = thought + answer;
      const reply = () => {
        res.writeHead(200, { 'content-type': 'application/json', ...(b.headers ?? {}) });
        res.end(
          JSON.stringify({
            id: `chatcmpl-${hashInt(prompt + text).toString(16)}`,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: b.model ?? DEMO_MODEL_ID,
            system_fingerprint: b.systemFingerprint ?? 'ehrbench-demo-standin',
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
            ...(b.usage === 'omit'
              ? {}
              : {
                  // Its answers are not cut at the request's cap, as a model's would be: the usage says what a model would bill.
                  usage: b.usage ?? {
                    prompt_tokens: tokens(prompt),
                    completion_tokens: Math.min(tokens(text), cap ?? Infinity),
                    total_tokens: tokens(prompt) + Math.min(tokens(text), cap ?? Infinity),
                    ...(thought ? { completion_tokens_details: { reasoning_tokens: tokens(thought) } } : {}),
                  },
                }),
          }),
        );
      };
      const latency = b.latencyMs ?? baseLatency;
      if (latency > 0) setTimeout(reply, latency);
      else reply();
      return;
    }
  }
}
