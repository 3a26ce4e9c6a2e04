import { createEndpointTransport, type Endpoint, type EndpointTransport, type Resolver } from '../egress';
import { ModelClient, type CallHooks, type Completion } from '../models';
import type { ModelStage, RunContext } from './stages';

export interface EndpointModelsOptions {
  timeoutMs: number;
  maxRetries: number;
  maxBackoffMs: number;
  env?: NodeJS.ProcessEnv;
  resolver?: Resolver;
}

/** The guarded model call: one SDK client per endpoint, each on that endpoint's egress transport. */
export class EndpointModels implements ModelStage {
  private readonly clients = new Map<string, { client: ModelClient; transport: EndpointTransport }>();

  constructor(private readonly opts: EndpointModelsOptions) {}

  private clientFor(endpoint: Endpoint): ModelClient {
    let entry = this.clients.get(endpoint.id);
    if (!entry) {
      const transport = createEndpointTransport(endpoint, {
        timeoutMs: this.opts.timeoutMs,
        ...(this.opts.resolver ? { resolver: this.opts.resolver } : {}),
      });
      const client = new ModelClient(endpoint, transport, this.opts);
      entry = { client, transport };
      this.clients.set(endpoint.id, entry);
    }
    return entry.client;
  }

  complete(ctx: RunContext, prompt: string, hooks: CallHooks): Promise<Completion> {
    return this.clientFor(ctx.endpoint).complete(
      { prompt, maxTokens: ctx.benchmark.definition.prompt.maxTokens, temperature: ctx.benchmark.definition.prompt.temperature ?? 0 },
      hooks,
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((e) => e.transport.close()));
    this.clients.clear();
  }
}
