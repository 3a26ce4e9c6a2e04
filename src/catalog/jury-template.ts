/**
 * Filling a judge prompt as HELM's LLMAsJuryAnnotator._interpolate_prompt does: `{QUESTION}`,
 * `{RESPONSE}` and `{GOLD_RESPONSE}` become `$QUESTION`, `$RESPONSE`, `$GOLD_RESPONSE`, and the text is
 * then filled by Python's string.Template.substitute. That second step gives the template's own `$`
 * a meaning: `$$` is one `$`, `$QUESTION` is a placeholder too (but `${QUESTION}` is first rewritten
 * to `$$QUESTION`, so it comes out as the text `$QUESTION`), and any other `$` (`$5`, `$name`,
 * `{QUESTION}s` read as `$QUESTIONs`) makes HELM fail (ValueError, KeyError), so such a template is
 * refused when the benchmark loads rather than at its first instance. Values are never re-read: a `$` or `{RESPONSE}`
 * inside the model's answer or the patient text stays as it is.
 *
 * `{{QUESTION}}` is ehrbench's placeholder form, which `benchmarks import-helm` writes for HELM's
 * `{QUESTION}`; it is read exactly as HELM reads the `{QUESTION}` it came from. (A HELM file holding a
 * literal `{{QUESTION}}` is imported as `{{{QUESTION}}}` and keeps HELM's surrounding braces.)
 * Kept in the catalog so that loading a benchmark checks its judge prompt without any annotator code.
 */

export const JURY_PLACEHOLDERS = ['QUESTION', 'RESPONSE', 'GOLD_RESPONSE'] as const;
export type JuryPlaceholder = (typeof JURY_PLACEHOLDERS)[number];
export type JuryValues = Record<JuryPlaceholder, string>;

/** string.Template's pattern (Python 3): escaped `$$`, named `$id`, braced `${id}`, else invalid; ASCII identifiers, any case. */
const DOLLAR = /\$(?:(\$)|([_a-z][_a-z0-9]*)|\{([_a-z][_a-z0-9]*)\}|())/gi;

/** The template as HELM hands it to string.Template (ehrbench's `{{X}}` read as HELM's `{X}`). */
function asPythonTemplate(template: string): string {
  let text = template;
  for (const name of JURY_PLACEHOLDERS) text = text.replaceAll(`{{${name}}}`, `$${name}`);
  for (const name of JURY_PLACEHOLDERS) text = text.replaceAll(`{${name}}`, `$${name}`);
  return text;
}

function isPlaceholder(name: string): name is JuryPlaceholder {
  return (JURY_PLACEHOLDERS as readonly string[]).includes(name);
}

/** The line of an offset, 1-based (the placeholders' rewriting moves columns, never lines). */
function position(text: string, offset: number): string {
  return `line ${text.slice(0, offset).split('\n').length}`;
}

/**
 * Why HELM could not fill this template (its ValueError or KeyError, in words), or undefined when it
 * can. The message quotes only the template (site configuration), never a value.
 */
export function juryTemplateProblem(template: string): string | undefined {
  const text = asPythonTemplate(template);
  for (const m of text.matchAll(DOLLAR)) {
    const name = m[2] ?? m[3];
    if (m[1] !== undefined) continue;
    if (name === undefined) return `"$" at ${position(text, m.index)} is not a placeholder (HELM's string.Template refuses it); write "$$" for a dollar sign`;
    if (!isPlaceholder(name)) return `"$${name}" at ${position(text, m.index)} names no value (HELM fills only QUESTION, RESPONSE and GOLD_RESPONSE); write "$$" for a dollar sign`;
  }
  return undefined;
}

/** The placeholders the template fills (after HELM's reading of it). */
export function juryTemplatePlaceholders(template: string): Set<JuryPlaceholder> {
  const found = new Set<JuryPlaceholder>();
  for (const m of asPythonTemplate(template).matchAll(DOLLAR)) {
    const name = m[2] ?? m[3];
    if (name !== undefined && isPlaceholder(name)) found.add(name);
  }
  return found;
}

/** The judge prompt, filled in one pass; throws on a template juryTemplateProblem refuses (checked at load). */
export function fillJuryTemplate(template: string, values: JuryValues): string {
  return asPythonTemplate(template).replace(DOLLAR, (whole, escaped: string | undefined, named: string | undefined, braced: string | undefined, _invalid: string | undefined, offset: number) => {
    if (escaped !== undefined) return '$';
    const name = named ?? braced;
    if (name !== undefined && isPlaceholder(name)) return values[name];
    throw new Error(`judge prompt template: "${whole}" at offset ${offset} is not a placeholder`);
  });
}
