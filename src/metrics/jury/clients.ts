/**
 * Judge calls: one official-SDK client per judge endpoint, each on that endpoint's egress-guarded
 * transport, exactly as the model under test is called (src/runs/model-stage.ts). Judges see the
 * clinical input, so they get no other way out.
 */
import { createEndpointTransport, type Endpoint, type EndpointTransport, type Resolver } from '../../egress';
import { type CallHooks, type ChatRequest, type Completion, ModelClient } from '../../models';

export interface JudgeCaller {
  complete(endpoint: Endpoint, request: ChatRequest, hooks: CallHooks): Promise<Completion>;
}

export interface JudgeClientsOptions {
  timeoutMs: number;
  maxRetries: number;
  maxBackoffMs: number;
  env?: NodeJS.ProcessEnv;
  resolver?: Resolver;
}

export class JudgeClients implements JudgeCaller {
  private readonly clients = new Map<string, { client: ModelClient; transport: EndpointTransport }>();

  constructor(private readonly opts: JudgeClientsOptions) {}

  complete(endpoint: Endpoint, request: ChatRequest, hooks: CallHooks): Promise<Completion> {
    let entry = this.clients.get(endpoint.id);
    if (!entry) {
      const transport = createEndpointTransport(endpoint, { timeoutMs: this.opts.timeoutMs, ...(this.opts.resolver ? { resolver: this.opts.resolver } : {}) });
      entry = { client: new ModelClient(endpoint, transport, this.opts), transport };
      this.clients.set(endpoint.id, entry);
    }
    return entry.client.complete(request, hooks);
  }

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((e) => e.transport.close()));
    this.clients.clear();
  }
}
