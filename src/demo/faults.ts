/**
 * Transient endpoint faults for the reliability suite: a share of prompts fail on their first request
 * (429 with Retry-After, 500, or a hang the client times out on) and are answered normally after that.
 * Chosen per prompt hash, so a run hits the same faults wherever it is retried, and always transient,
 * so once retries succeed a run's results equal an undisturbed run's. Only hashes are kept, no text.
 */
import { createHash } from 'node:crypto';
import type { Behaviour } from './model-server';

export interface FaultCounts {
  tooMany: number;
  serverError: number;
  hang: number;
}

export function transientFaults(): { behaviour: (n: number, prompt: string) => Behaviour; counts: FaultCounts } {
  const requests = new Map<string, number>();
  const counts: FaultCounts = { tooMany: 0, serverError: 0, hang: 0 };
  const behaviour = (_n: number, prompt: string): Behaviour => {
    const digest = createHash('sha256').update(prompt).digest();
    const key = digest.toString('base64');
    const seen = (requests.get(key) ?? 0) + 1;
    requests.set(key, seen);
    if (seen > 1) return { kind: 'answer' };
    // About 6% of prompts get 429, 6% get 500, 2% hang, on their first request only.
    const bucket = digest.readUInt32BE(0) % 50;
    if (bucket < 3) return (counts.tooMany++, { kind: 'status', status: 429, retryAfter: '1' });
    if (bucket < 6) return (counts.serverError++, { kind: 'status', status: 500 });
    if (bucket < 7) return (counts.hang++, { kind: 'hang' });
    return { kind: 'answer' };
  };
  return { behaviour, counts };
}
