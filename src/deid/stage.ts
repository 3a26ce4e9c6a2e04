/**
 * The de-identification stage of the run pipeline. Prompts of runs that must be de-identified
 * (approval-required and private tiers, or a benchmark that asks for it) are de-identified after the
 * prompt is built; the result is scanned once more and refused if anything identifying remains. A
 * refusal names its rule; the engine records the instance as blocked and goes on with the run.
 *
 * A run's data is one dataset: while the run is planned, every record's prompt is surveyed (`plan`),
 * each subject's name words are attached to its records, and what strong rules took anywhere is kept
 * for the run, sealed as keyed hashes (evidence.ts), its version appended to the run's
 * de-identification version. Each prompt is then de-identified knowing both; the sealed evidence is
 * read once per run from the run store (`loadEvidence`).
 */
import type { Instance } from '../catalog';
import { type ChatMessage, deidentifiedPrompt, isConversation, plainPrompt, type PromptContent } from '../prompt';
import type { RuleId } from '../policy';
import type { DeidPlanning, DeidStage, RunContext } from '../contracts';
import { Deidentifier } from './deidentifier';
import { EvidenceCollector, HashedEvidence, type SealedEvidence } from './evidence';
import { type DeidSettings, loadSecret, settingsVersion } from './settings';
import type { Detector } from './detect';

export const RESIDUAL_RULE = 'deid.residual-identifier' satisfies RuleId;
export const ERROR_RULE = 'deid.failed' satisfies RuleId;

/** Name words kept per subject: one subject cannot exhaust memory. */
const MAX_SUBJECT_WORDS = 200;
/** Runs whose evidence is held read at once (a worker serves few runs at a time). */
const CACHED_RUNS = 16;

export interface DeidStageOptions {
  detectors?: Detector[];
  secret?: () => Buffer;
  /** The run store's sealed evidence of a run (none for a run planned before it was kept). */
  loadEvidence?: (runId: string) => Promise<SealedEvidence | undefined>;
}

export function createDeidStage(settings: DeidSettings, opts: DeidStageOptions = {}): DeidStage {
  let secret: Buffer | undefined;
  const key = opts.secret ?? (() => (secret ??= loadSecret(settings.secretFile)));
  const deid = new Deidentifier(settings, key, opts.detectors);
  const evidence = new Map<string, Promise<HashedEvidence | undefined>>();
  const datasetOf = (runId: string): Promise<HashedEvidence | undefined> => {
    let e = evidence.get(runId);
    if (!e) {
      if (evidence.size >= CACHED_RUNS) evidence.delete(evidence.keys().next().value as string);
      e = (opts.loadEvidence?.(runId) ?? Promise.resolve(undefined)).then((sealed) => (sealed && sealed.hashes.length > 0 ? new HashedEvidence(sealed, key()) : undefined));
      // a failed read is not remembered: the next instance asks again
      e.catch(() => evidence.delete(runId));
      evidence.set(runId, e);
    }
    return e;
  };
  return {
    version: settingsVersion(settings),
    plan(): DeidPlanning {
      const collector = new EvidenceCollector();
      const records = new Map<string, number>();
      return {
        add(instance: Instance, prompt: PromptContent) {
          const subject = instance.subjectId;
          if (subject) records.set(subject, (records.get(subject) ?? 0) + 1);
          // A conversation is one record: its turns are surveyed together.
          collector.add(subject, deid.survey(wholeText(prompt), instance.known));
        },
        finish() {
          // a subject's only record has no other to learn from
          const subjects = collector
            .subjectEntries()
            .filter((s) => (records.get(s.subject) ?? 0) > 1)
            .map((s) => ({ subject: s.subject, words: s.words.slice(0, MAX_SUBJECT_WORDS) }));
          const dataset = collector.dataset();
          return { subjects, ...(dataset.size > 0 ? { evidence: dataset.seal(key()) } : {}) };
        },
      };
    },
    async apply(ctx: RunContext, instance: Instance, prompt: PromptContent) {
      if (!ctx.deidentify) return { ok: true, prompt: plainPrompt(ctx.benchmark.dataTier, prompt), spans: 0 };
      try {
        const dataset = await datasetOf(ctx.runId);
        const input = {
          ...(instance.known ? { known: instance.known } : {}),
          ...(dataset ? { dataset } : {}),
          subject: instance.subjectId ?? `instance\u0000${ctx.benchmark.definition.id}\u0000${instance.key}`,
        };
        if (!isConversation(prompt)) {
          const out = deid.run({ ...input, text: prompt, ...(instance.evidence?.length ? { evidence: new Set(instance.evidence) } : {}) });
          if (out.residual.length > 0) return { ok: false, rule: RESIDUAL_RULE };
          return { ok: true, prompt: deidentifiedPrompt(out.text), spans: out.spans.length };
        }
        // Each turn under the instance's subject (one surrogate map, one date shift), knowing the name
        // words of every other turn: a name the patient gave in the first turn is looked for in the last.
        const evidence = new Set([...(instance.evidence ?? []), ...deid.harvest(wholeText(prompt), instance.known)]);
        const turns: ChatMessage[] = [];
        let spans = 0;
        for (const message of prompt) {
          const out = deid.run({ ...input, text: message.content, ...(evidence.size ? { evidence } : {}) });
          if (out.residual.length > 0) return { ok: false, rule: RESIDUAL_RULE };
          turns.push({ role: message.role, content: out.text });
          spans += out.spans.length;
        }
        return { ok: true, prompt: deidentifiedPrompt(turns), spans };
      } catch {
        // Fail closed, and say nothing about the text: the error could quote it.
        return { ok: false, rule: ERROR_RULE };
      }
    },
  };
}

/** A prompt's whole text: a conversation's turns one after the other (for surveying, never sent). */
function wholeText(prompt: PromptContent): string {
  return isConversation(prompt) ? prompt.map((m) => m.content).join('\n\n') : prompt;
}
