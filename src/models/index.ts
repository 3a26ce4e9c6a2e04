export { ModelClient, ModelCallError, retryAfterMs, withoutReasoning } from './client';
export type { ChatRequest, Completion, CallHooks, ModelClientOptions } from './client';
export { resolveApiKey } from './credentials';
export { FINGERPRINT_HEADERS, fingerprintOf, idSafe, modelsSha256, servedBy, type ServedBy } from './served';
