/**
 * The one place that builds endpoint transports and model clients: one official-SDK client per
 * endpoint, on that endpoint's egress-guarded transport, shared by the model under test, judges and
 * probes. The boundary test fails on a transport or client built anywhere else in src/.
 */
import type { Endpoint } from '../contracts';
import { createEndpointTransport, type EgressEvent, type EndpointTransport, type Resolver } from '../egress';
import { type CallHooks, type ChatRequest, type Completion, ModelClient } from '../models';

export interface ClientOptions {
  timeoutMs: number;
  maxRetries: number;
  maxBackoffMs: number;
  env?: NodeJS.ProcessEnv;
  resolver?: Resolver;
}

export class EndpointClients {
  private readonly clients = new Map<string, { client: ModelClient; transport: EndpointTransport }>();

  constructor(private readonly opts: ClientOptions) {}

  complete(endpoint: Endpoint, request: ChatRequest, hooks: CallHooks): Promise<Completion> {
    return this.clientOf(endpoint).complete(request, hooks);
  }

  private clientOf(endpoint: Endpoint): ModelClient {
    let entry = this.clients.get(endpoint.id);
    if (!entry) {
      const transport = createEndpointTransport(endpoint, { timeoutMs: this.opts.timeoutMs, ...(this.opts.resolver ? { resolver: this.opts.resolver } : {}) });
      entry = { client: new ModelClient(endpoint, transport, this.opts), transport };
      this.clients.set(endpoint.id, entry);
    }
    return entry.client;
  }

  /** sha256 of GET <url>/models, on the endpoint's client (its guarded transport), no retries beyond the client's. */
  modelsDigest(endpoint: Endpoint): Promise<string> {
    return this.clientOf(endpoint).modelsDigest();
  }

  /**
   * GET <url>/models on a transport of its own (no retries), reporting the guard's events (address,
   * TLS) to `onEvent`: what `endpoints probe` shows.
   */
  async listModels(endpoint: Endpoint, onEvent: (e: EgressEvent) => void): Promise<string[]> {
    const transport = createEndpointTransport(endpoint, { onEvent, timeoutMs: this.opts.timeoutMs, ...(this.opts.resolver ? { resolver: this.opts.resolver } : {}) });
    try {
      return await new ModelClient(endpoint, transport, { ...this.opts, maxRetries: 0, maxBackoffMs: 0 }).listModels();
    } finally {
      await transport.close();
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((e) => e.transport.close()));
    this.clients.clear();
  }
}
