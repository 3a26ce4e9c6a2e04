/**
 * Model calls on the official OpenAI SDK (OpenAI for OpenAI-compatible servers such as vLLM or TGI,
 * AzureOpenAI for Azure OpenAI). The SDK's only way out is the `fetch` it is given: the endpoint's
 * egress-guarded transport. Retries are ours, not the SDK's, so that each attempt passes the
 * `beforeAttempt` hook (the audit write that must precede every call) and refusals are never retried.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import OpenAI, { AzureOpenAI } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { Endpoint, ReasoningEffort } from '../contracts';
import type { EndpointTransport } from '../egress';
import { EgressAborted, EgressDenied } from '../egress';
import { type ErrorCode, UserError } from '../errors';
import { resolveApiKey } from './credentials';
import { modelsSha256, servedBy, type ServedBy } from './served';

export interface ChatRequest {
  /** One text, sent as one user message; or, with `messages`, the conversation's payload (not sent itself). */
  prompt: string;
  /** A conversation's turns, sent as they are instead of `prompt`. */
  messages?: readonly { role: 'system' | 'user' | 'assistant'; content: string }[];
  maxTokens: number;
  temperature: number;
  /** reasoning_effort, for reasoning models whose API takes it. */
  reasoningEffort?: ReasoningEffort;
}

export interface Completion {
  /** The answer, without the model's reasoning (`<think>...</think>`, `reasoning_content`): that is never kept. */
  text: string;
  promptTokens: number | null;
  /** Every output token, reasoning included (what the provider bills). */
  completionTokens: number | null;
  /** Of those, the reasoning tokens, where the API reports them. */
  reasoningTokens: number | null;
  latencyMs: number;
  attempts: number;
  finishReason: string | null;
  /**
   * Set by the gateway when the endpoint's usage was missing, negative, beyond the request or
   * implausibly low: the token figures above are then the call's worst case, not the endpoint's word.
   */
  usageUnderReported?: boolean;
  /** What the endpoint said it served (ids only, never content): the call's fingerprint (served.ts). */
  served?: ServedBy;
}

export interface CallHooks {
  /** Runs before every attempt; if it throws, the attempt is not made (fail closed). */
  beforeAttempt?: (attempt: number) => Promise<void>;
  /** Waits for a free call slot of the endpoint; held for one attempt, not across backoff. */
  acquire?: () => Promise<() => void>;
  signal?: AbortSignal;
}

export interface ModelClientOptions {
  timeoutMs: number;
  maxRetries: number;
  maxBackoffMs: number;
  env?: NodeJS.ProcessEnv;
  /** For tests: replaces setTimeout-based waiting between retries. */
  sleep?: (ms: number) => Promise<void>;
}

/** A failed model call; the message names the endpoint and the HTTP status or error class only. */
export class ModelCallError extends UserError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly retryable: boolean,
    readonly httpStatus?: number,
  ) {
    super(code, message);
  }
}

const RETRYABLE_STATUS = new Set([408, 409, 429, 500, 502, 503, 504]);

/** Where the guard's own error of one attempt is kept (see `guardErrors` below). */
interface AttemptSlot {
  /** The guard's refusal or abort, or a token provider's one-line error. */
  guardError?: UserError;
}

export class ModelClient {
  private readonly sdk: OpenAI;
  /**
   * The SDK keeps a transport error as the `cause` of its connection error, except that it folds any
   * error whose text matches /timed? ?out/ into a cause-less timeout and rewraps a failed Entra ID
   * token without its cause. The guard's own messages never say "timed out", so for key-based
   * endpoints the cause chain is enough. For Entra ID endpoints each attempt runs in an async-local
   * slot where the token provider records its error. The slot is only created for those endpoints:
   * in Node 20 an AsyncLocalStorage slows every promise in the process.
   */
  private readonly guardErrors: AsyncLocalStorage<AttemptSlot> | undefined;
  private readonly model: string;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    readonly endpoint: Endpoint,
    transport: EndpointTransport,
    private readonly opts: ModelClientOptions,
  ) {
    this.guardErrors = endpoint.auth.type === 'entra-id' ? new AsyncLocalStorage<AttemptSlot>() : undefined;
    const apiKey = resolveApiKey(endpoint, opts.env);
    const headers: Record<string, string> = {};
    if (endpoint.auth.type === 'apim-key' && apiKey) headers['Ocp-Apim-Subscription-Key'] = apiKey;
    const recordingFetch = async (input: unknown, init?: unknown): Promise<Response> => {
      try {
        return await transport.fetch(input as string, init as RequestInit);
      } catch (err) {
        const slot = this.guardErrors?.getStore();
        if (slot && (err instanceof EgressDenied || err instanceof EgressAborted)) slot.guardError = err;
        throw err;
      }
    };
    // logLevel 'off': the SDK's own debug logging (OPENAI_LOG=debug) would print request bodies.
    const common = {
      fetch: recordingFetch as typeof globalThis.fetch,
      maxRetries: 0,
      // The guard's total deadline (which also covers the body) decides; the SDK's timer is a backstop.
      timeout: (endpoint.limits?.timeoutMs ?? opts.timeoutMs) + 1000,
      defaultHeaders: headers,
      logLevel: 'off' as const,
    };
    if (endpoint.provider === 'azure-openai') {
      const azure = { ...common, baseURL: endpoint.url, deployment: endpoint.deployment, apiVersion: endpoint.apiVersion };
      if (endpoint.auth.type === 'entra-id') {
        // The token comes through the guarded transport of the endpoint's allowlisted authority.
        if (!transport.tokenProvider) throw new UserError('endpoint.auth-unsupported', `endpoint ${endpoint.id}: entra-id auth needs a transport built by createEndpointTransport`);
        const provider = transport.tokenProvider(opts.env);
        // The SDK rewraps a token failure without its cause, so it is recorded like a refusal.
        const tokenProvider = async () => {
          try {
            return await provider();
          } catch (err) {
            const slot = this.guardErrors?.getStore();
            if (slot && err instanceof UserError) slot.guardError = err;
            throw err;
          }
        };
        try {
          this.sdk = new AzureOpenAI({ ...azure, azureADTokenProvider: tokenProvider });
        } catch {
          throw new UserError('endpoint.auth-conflict', `endpoint ${endpoint.id}: entra-id auth cannot start (is AZURE_OPENAI_API_KEY set? unset it: a key and a token are mutually exclusive)`);
        }
      } else {
        this.sdk = new AzureOpenAI({ ...azure, apiKey: apiKey ?? 'unused' });
      }
      this.model = endpoint.deployment ?? '';
    } else {
      if (endpoint.auth.type === 'entra-id') throw new UserError('endpoint.auth-unsupported', `endpoint ${endpoint.id}: entra-id auth is for azure-openai endpoints`);
      this.sdk = new OpenAI({ ...common, baseURL: endpoint.url, apiKey: endpoint.auth.type === 'api-key' ? (apiKey ?? 'unused') : 'unused' });
      this.model = endpoint.model ?? endpoint.deployment ?? 'default';
    }
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  async complete(request: ChatRequest, hooks: CallHooks = {}): Promise<Completion> {
    for (let attempt = 1; ; attempt++) {
      await hooks.beforeAttempt?.(attempt);
      const release = hooks.acquire ? await hooks.acquire() : undefined;
      const started = performance.now();
      const slot: AttemptSlot = {};
      const link = linkSignal(hooks.signal);
      try {
        // withResponse: the headers too, for what the endpoint says it served (never its content).
        const { data: res, response } = await this.inSlot(slot, () => this.sdk.chat.completions.create(this.params(request), link ? { signal: link.signal } : undefined).withResponse());
        const choice = res.choices[0];
        return {
          text: withoutReasoning(choice?.message?.content ?? ''),
          promptTokens: res.usage?.prompt_tokens ?? null,
          completionTokens: res.usage?.completion_tokens ?? null,
          reasoningTokens: res.usage?.completion_tokens_details?.reasoning_tokens ?? null,
          latencyMs: Math.round(performance.now() - started),
          attempts: attempt,
          finishReason: choice?.finish_reason ?? null,
          served: servedBy(this.endpoint, { model: res.model, systemFingerprint: res.system_fingerprint, headers: response.headers }),
        };
      } catch (err) {
        release?.(); // not held while backing off
        const failure = this.classify(slot.guardError ?? err);
        if (!(failure instanceof ModelCallError) || !failure.retryable || attempt > this.opts.maxRetries) throw failure;
        const wait = this.backoff(attempt, err);
        if (wait === undefined) throw failure;
        // A caller that stops (cancel, shutdown) does not wait out a long Retry-After.
        await untilAborted(this.sleep(wait), hooks.signal, () => new ModelCallError('model.aborted', `endpoint ${this.endpoint.id}: call aborted`, false));
      } finally {
        link?.unlink();
        release?.();
      }
    }
  }

  /**
   * The request as the endpoint's API wants it: o-series models on OpenAI and Azure take
   * max_completion_tokens and no temperature; reasoning_effort only where configured.
   */
  private params(request: ChatRequest): ChatCompletionCreateParamsNonStreaming {
    const completionTokens = this.endpoint.reasoning?.tokenParameter === 'max_completion_tokens';
    return {
      model: this.model,
      messages: request.messages ? request.messages.map((m) => ({ role: m.role, content: m.content })) : [{ role: 'user', content: request.prompt }],
      ...(completionTokens ? { max_completion_tokens: request.maxTokens } : { max_tokens: request.maxTokens, temperature: request.temperature }),
      ...(request.reasoningEffort ? { reasoning_effort: request.reasoningEffort } : {}),
    };
  }

  /** GET <url>/models (Azure: <url>/models?api-version=...), the call `endpoints probe` makes. */
  async listModels(): Promise<string[]> {
    const slot: AttemptSlot = {};
    try {
      const page = await this.inSlot(slot, () => this.sdk.models.list());
      return page.data.map((m) => String(m.id).slice(0, 200));
    } catch (err) {
      throw this.classify(slot.guardError ?? err);
    }
  }

  /**
   * sha256 of what GET <url>/models answers (the ids, owners and weights it lists, sorted):
   * what a self-hosted server (vLLM) says it serves, which its chat answers often do not say.
   */
  async modelsDigest(): Promise<string> {
    const slot: AttemptSlot = {};
    try {
      const page = await this.inSlot(slot, () => this.sdk.models.list());
      return modelsSha256(page.data as unknown as Record<string, unknown>[]);
    } catch (err) {
      throw this.classify(slot.guardError ?? err);
    }
  }

  private inSlot<T>(slot: AttemptSlot, fn: () => Promise<T>): Promise<T> {
    return this.guardErrors ? this.guardErrors.run(slot, fn) : fn();
  }

  /** Turns any SDK or transport error into a ModelCallError or the guard's own refusal. */
  private classify(err: unknown): UserError {
    const denied = findCause(err, (e): e is EgressDenied => e instanceof EgressDenied);
    if (denied) return denied;
    const id = this.endpoint.id;
    const aborted = findCause(err, (e): e is EgressAborted => e instanceof EgressAborted);
    if (aborted?.rule === 'egress.response-too-large') return new ModelCallError('model.response-too-large', `endpoint ${id}: response exceeded the size cap`, false);
    if (aborted?.rule === 'egress.deadline') return new ModelCallError('model.timeout', `endpoint ${id}: call timed out`, true);
    // Our own one-line errors (a token provider's) stay as they are: they name what to fix.
    if (err instanceof UserError) return err;
    // undici's own raw-byte cap (the guard's backstop) can fire while the SDK reads the body.
    if (findCause(err, (e): e is { code: string } => (e as { code?: unknown })?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE')) {
      return new ModelCallError('model.response-too-large', `endpoint ${id}: response exceeded the size cap`, false);
    }
    if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
      return new ModelCallError('model.http-error', `endpoint ${id}: HTTP ${err.status}`, RETRYABLE_STATUS.has(err.status), err.status);
    }
    if (err instanceof OpenAI.APIConnectionTimeoutError) return new ModelCallError('model.timeout', `endpoint ${id}: call timed out`, true);
    if (err instanceof OpenAI.APIUserAbortError) return new ModelCallError('model.aborted', `endpoint ${id}: call aborted`, false);
    if (err instanceof OpenAI.APIConnectionError) {
      const cause = findCause(err, (e): e is { code: string } => typeof (e as { code?: unknown }).code === 'string');
      const code = cause?.code ?? 'connection';
      // A response over the size cap is refused, not retried.
      const tooLarge = code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
      return new ModelCallError(
        tooLarge ? 'model.response-too-large' : 'model.connection',
        `endpoint ${id}: ${tooLarge ? 'response exceeded the size cap' : `connection failed (${code})`}`,
        !tooLarge,
      );
    }
    return new ModelCallError('model.error', `endpoint ${id}: ${(err as Error)?.name ?? 'error'}`, false);
  }

  /** Exponential backoff with jitter, or the server's Retry-After; undefined when that is too long. */
  private backoff(attempt: number, err: unknown): number | undefined {
    const retryAfter = retryAfterMs(err);
    if (retryAfter !== undefined) return retryAfter <= this.opts.maxBackoffMs ? retryAfter : undefined;
    const base = Math.min(this.opts.maxBackoffMs, 250 * 2 ** (attempt - 1));
    return Math.round(base / 2 + Math.random() * (base / 2));
  }
}

/** Retry-After as milliseconds: `retry-after-ms`, `retry-after` seconds, or an HTTP date. */
export function retryAfterMs(err: unknown): number | undefined {
  const headers = (err as { headers?: Headers }).headers;
  if (!headers || typeof headers.get !== 'function') return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * A per-attempt signal that follows the caller's. The SDK adds an abort listener to the signal it is
 * given and never removes it; given the worker's long-lived signal, every call would leave one behind
 * (MaxListenersExceededWarning, memory growing with the run). Our one listener is removed after the
 * attempt, and the SDK's goes away with the per-attempt signal.
 */
function linkSignal(parent: AbortSignal | undefined): { signal: AbortSignal; unlink(): void } | undefined {
  if (!parent) return undefined;
  const child = new AbortController();
  if (parent.aborted) {
    child.abort(parent.reason);
    return { signal: child.signal, unlink: () => undefined };
  }
  const forward = () => child.abort(parent.reason);
  parent.addEventListener('abort', forward, { once: true });
  return { signal: child.signal, unlink: () => parent.removeEventListener('abort', forward) };
}

/** Waits for `wait` unless `signal` aborts first, then rejects with `aborted()`; leaves no listener behind. */
async function untilAborted(wait: Promise<void>, signal: AbortSignal | undefined, aborted: () => Error): Promise<void> {
  if (!signal) return wait;
  if (signal.aborted) throw aborted();
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([wait, stopped]);
  } finally {
    signal.removeEventListener('abort', onAbort as () => void);
  }
}

function findCause<T>(err: unknown, test: (e: unknown) => e is T): T | undefined {
  let current: unknown = err;
  for (let depth = 0; current && depth < 6; depth++) {
    if (test(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The answer without the model's reasoning: every `<think>...</think>` block (vLLM-served R1 writes its
 * reasoning inline) is removed; an unclosed one (output cut at the token limit) means no answer yet.
 */
export function withoutReasoning(content: string): string {
  if (!/<\/?think>/i.test(content)) return content;
  let text = content.replace(/<think>[\s\S]*?<\/think>/gi, '');
  const open = text.search(/<think>/i);
  if (open >= 0) text = text.slice(0, open);
  // a closing tag without its opening one (some servers strip the opening tag)
  const close = text.search(/<\/think>/i);
  if (close >= 0) text = text.slice(close + '</think>'.length);
  return text.trim() === '' ? '' : text.replace(/^\s+/, '');
}
