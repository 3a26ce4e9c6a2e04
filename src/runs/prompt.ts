import { renderTemplate } from '../catalog';
import type { PromptStage } from './stages';

/** Prompt build: the benchmark's template filled from the instance. */
export const templatePrompt: PromptStage = {
  build: (ctx, instance) => renderTemplate(ctx.benchmark.template, instance, `benchmark ${ctx.benchmark.definition.id}`),
};
