/**
 * Prompt templates: plain text with {{variable}} placeholders filled from an instance, and {{choices}}
 * rendered as lettered options ("A. yes"). No logic, no escapes: what a reviewer reads is what is sent.
 */
import { UserError } from '../errors';
import type { Instance } from './types';

const PLACEHOLDER = /\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g;

export const CHOICE_LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

export function templateVariables(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
}

export function letterFor(index: number): string {
  const letter = CHOICE_LETTERS[index];
  if (!letter) throw new UserError('template.too-many-choices', `multiple choice supports at most ${CHOICE_LETTERS.length} options`);
  return letter;
}

export function renderChoices(choices: readonly string[]): string {
  return choices.map((c, i) => `${letterFor(i)}. ${c}`).join('\n');
}

/** Renders the template. `label` names the benchmark in errors; instance text never appears in them. */
export function renderTemplate(template: string, instance: Instance, label: string): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    if (name === 'choices') {
      if (!instance.choices?.length) throw new UserError('template.no-choices', `${label}: template uses {{choices}} but the instance has no options`);
      return renderChoices(instance.choices);
    }
    const value = instance.vars[name];
    if (value === undefined) throw new UserError('template.missing-variable', `${label}: template variable {{${name}}} has no value in the instance`);
    return value;
  });
}
