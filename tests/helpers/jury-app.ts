/**
 * An app whose LLM jury has three judges on the loopback stand-in (the model answers with `answer`,
 * the judges with JSON scores that cycle 1-5), for the tests of rating studies. The principals file
 * can be changed before the app opens (clinicians, roles).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { type ModelServer, startModelServer } from '../../src/demo/model-server';
import type { Backend } from './db';
import { makeHome, type TestHome } from './home';

export const JUDGES = ['judge-gpt', 'judge-llama', 'judge-claude'];
export const isJudgePrompt = (prompt: string) => prompt.includes('<gold_response>');

export interface JuryApp {
  app: App;
  server: ModelServer;
  home: TestHome;
  close(): Promise<void>;
}

/** The judges' endpoints and the site's jury, written into a home (also a test daemon's, from its prepare hook). */
export function addJudges(home: string): void {
  const policyFile = join(home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(policyFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
  const { family: _family, ...demo } = policy.endpoints[0] as Record<string, unknown>;
  for (const id of JUDGES) policy.endpoints.push({ ...demo, id, description: `judge ${id}`, model: id, classification: { inVpc: true, baa: true, maxTier: 'private' } });
  writeFileSync(policyFile, JSON.stringify(policy, null, 2));
  const siteFile = join(home, 'site-data.json');
  let site: Record<string, unknown> = { benchmarks: {} };
  try {
    site = JSON.parse(readFileSync(siteFile, 'utf8')) as Record<string, unknown>;
  } catch {
    // no site data file yet: the jury is its only content
  }
  writeFileSync(siteFile, JSON.stringify({ ...site, jury: { judges: JUDGES } }, null, 2));
}

/** Judges' answers: accuracy and completeness cycle 1-5 with each judge call, clarity follows. */
export function juryBehaviour(answer: (n: number) => string): (n: number, prompt: string) => { kind: 'answer'; text: string } {
  let answers = 0;
  let judged = 0;
  return (_n, prompt) => {
    if (!isJudgePrompt(prompt)) return { kind: 'answer', text: answer(++answers) };
    const s = (judged++ % 5) + 1;
    return { kind: 'answer', text: `{"accuracy": {"score": ${s}, "explanation": "x"}, "completeness": {"score": ${6 - s}, "explanation": "x"}, "clarity": {"score": 3, "explanation": "x"}}` };
  };
}

export async function startJuryApp(backend: Backend, answer: (n: number) => string, principals?: (list: Record<string, unknown>[]) => void): Promise<JuryApp> {
  const home = await makeHome(backend);
  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    behaviour: juryBehaviour(answer),
  });
  addJudges(home.home);
  if (principals) {
    const file = join(home.home, 'access-policies', 'principals.json');
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { principals: Record<string, unknown>[] };
    principals(parsed.principals);
    writeFileSync(file, JSON.stringify(parsed, null, 2));
  }
  const app = await openApp({ file: home.configFile, env: home.env });
  return {
    app,
    server,
    home,
    async close() {
      await app.close();
      await server.close();
      await home.cleanup();
    },
  };
}
