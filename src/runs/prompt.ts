import { renderTemplate } from '../catalog';
import type { PromptStage } from '../contracts';

/**
 * Prompt build: the benchmark's template filled from the instance; an instance that is a conversation
 * (HealthBench) is sent as its turns, which no template rewrites (HELM and simple-evals send them as they are).
 */
export const templatePrompt: PromptStage = {
  build: (ctx, instance) => instance.messages ?? renderTemplate(ctx.benchmark.template, instance, `benchmark ${ctx.benchmark.definition.id}`),
};
