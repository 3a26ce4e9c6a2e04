/**
 * The console's only way to the daemon: the same API routes as the CLI, same origin, the browser's
 * client certificate. A state-changing call carries the session's token; an error answer is shown as
 * the API gives it (code, rule, message), never re-worded into something the server did not say.
 */

export interface Session {
  principal: string;
  displayName: string | null;
  roles: string[];
  /** The gate's actions this person may attempt (src/policy/gate.ts): what the console offers. */
  may: string[];
  csrfToken: string;
  tokenHeader: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly rule?: string,
  ) {
    super(message);
  }
}

let session: Session | undefined;

async function parse(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) {
    let body: { error?: string; message?: string; rule?: string } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // not JSON: say what the status was
    }
    throw new ApiError(res.status, body.error ?? `http.${res.status}`, body.message ?? `the daemon answered ${res.status}`, body.rule);
  }
  return text ? JSON.parse(text) : null;
}

export async function loadSession(): Promise<Session> {
  session = (await parse(await fetch('/v1/console/session', { credentials: 'same-origin', headers: { accept: 'application/json' } }))) as Session;
  return session;
}

export async function get<T>(path: string): Promise<T> {
  return (await parse(await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' } }))) as T;
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  if (!session) throw new ApiError(0, 'console.no-session', 'the console has no session yet; reload the page');
  const res = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', accept: 'application/json', [session.tokenHeader]: session.csrfToken },
    body: JSON.stringify(body),
  });
  return (await parse(res)) as T;
}

/** A query string from the set fields only. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
