export { ModelClient, ModelCallError, retryAfterMs, withoutReasoning } from './client';
export type { ChatRequest, Completion, CallHooks, ModelClientOptions } from './client';
export { resolveApiKey } from './credentials';
