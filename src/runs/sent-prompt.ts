/**
 * The prompt an instance of a finished run sent to the model, rebuilt: the run store keeps the
 * instance as planned (its original text) and the answer, never the prompt as sent. The prompt stage
 * builds it again and, for a run that de-identified, the de-identification stage runs again under the
 * same subject, known identifiers, evidence and site key, so the text is the one the model received.
 * Used where a person must read what the model read (rating studies); never logged.
 */
import type { Instance } from '../catalog';
import type { Engine } from './engine';
import { contextOf } from './engine';
import type { RunRow } from './store';

/** The prompt as sent (a conversation's turns as `role: content`), or undefined when it no longer passes de-identification. */
export async function sentPrompt(engine: Engine, run: RunRow, instance: Instance): Promise<string | undefined> {
  const ctx = contextOf(engine, run, { principal: run.requested_by, role: 'researcher', authMethod: 'service' });
  const out = await engine.deid.apply(ctx, instance, engine.prompt.build(ctx, instance));
  if (!out.ok) return undefined;
  return out.prompt.messages ? out.prompt.messages.map((m) => `${m.role}: ${m.content}`).join('\n\n') : out.prompt.text;
}
