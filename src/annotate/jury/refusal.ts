/**
 * Telling a refusal from a hedged answer. A model often opens with a disclaimer ("I can't provide
 * personalized medical advice, but in general ...") and then answers: that is an answer, and the
 * judges must read it. Only an answer that declines and says nothing else (an apology, a referral to
 * a clinician, a closing courtesy) is a refusal. HELM has no such rule: it asks the judges for every
 * non-empty answer, and so does `helm` mode; `corrected` mode scores a pure refusal at the floor.
 */

export type Decline = 'none' | 'refusal' | 'hedged';

/** What a decline refuses to do: "I cannot stress enough ..." is no decline. */
const DECLINED_ACT =
  '(?:help|assist|provide|give|offer|answer|respond|comply|do (?:that|this)|fulfil+|complete|write|generate|create|draft|produce|summari[sz]e|diagnose|prescribe|recommend|make|determine|interpret|access|examine|evaluate|review|share|replace|continue|engage|support)';

/**
 * One sentence that declines: an opener (apology, "as an AI", "unfortunately", "I") and, within the
 * same sentence, a refusal of an act or a disclaimer of competence.
 */
const DECLINE = new RegExp(
  String.raw`^(?:(?:i['’]m|i am)\s+(?:really\s+|very\s+|so\s+)?sorry|i\s+apologi[sz]e|sorry|unfortunately|as an ai(?:\s+language model|\s+assistant)?|i)\b[^.;:!?\n]{0,80}?\b(?:(?:can(?:not|['’]t|\s+not)|(?:am|['’]m)\s+(?:unable|not able)\s+to|won['’]t|will not|must decline to|have to decline to)\s+(?:\w+\s+){0,2}?${DECLINED_ACT}\b|(?:am|['’]m)\s+not\s+(?:a|an|your)\s+(?:\w+\s+)?(?:doctor|physician|clinician|medical professional|healthcare provider|substitute)\b|do(?:n['’]t| not)\s+have\s+(?:access|the ability)\b)`,
  'i',
);

/** After the decline, in the same sentence: the answer starts ("..., but in general ..."). */
const GOES_ON = /\b(?:but|however|although|though|that said|nevertheless|nonetheless|in general|generally|typically|usually|here(?: is|['’]s| are)|below)\b/i;

/** A bare apology ("I'm sorry.", "I apologize for the inconvenience."): neither a decline nor an answer. */
const APOLOGY = /^(?:(?:i['’]m|i am)\s+(?:really\s+|very\s+|so\s+)?sorry|i\s+apologi[sz]e|sorry)\b[^0-9]{0,80}$/i;

/** Sentences a pure refusal may hold besides its decline. */
const COURTESY = [
  APOLOGY,
  // A referral without advice: no dose, number or further clause (911 is the one number allowed).
  /^[^0-9]{0,60}\b(?:consult|speak (?:with|to)|talk (?:with|to)|contact|see|reach out to|seek|call)\b[^0-9]{0,100}\b(?:doctor|physician|clinician|health ?care|medical|professional|provider|pharmacist|nurse|specialist|emergency|911|care team)\b[^0-9]{0,60}$/i,
  /^(?:if you have (?:any\s+)?(?:other\s+|further\s+|more\s+)?questions|is there anything else|let me know|feel free|i(?:['’]d| would) be (?:happy|glad) to help|i hope (?:this|that) helps|thank you)\b[^0-9]{0,100}$/i,
];

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;:])\s+|\n+/)
    .map((s) => s.trim().replace(/^[-*•]\s*/, ''))
    .filter((s) => s !== '');
}

/** The sentence declines and stops there (nothing after the decline starts an answer). */
function declinesOnly(sentence: string): boolean {
  const m = DECLINE.exec(sentence);
  return m !== null && !GOES_ON.test(sentence.slice(m[0].length));
}

/**
 * `refusal`: the answer opens with a decline and holds nothing but declines, apologies, referrals and
 * courtesies. `hedged`: it opens with a decline and then answers. `none`: it does not open with one.
 */
export function declineOf(prediction: string): Decline {
  const parts = sentences(prediction);
  // "I'm sorry. I can't ..." opens with a decline too; "I'm sorry to hear that. Rest ..." does not.
  const first = parts.find((s) => !APOLOGY.test(s) || DECLINE.test(s));
  if (first === undefined || !DECLINE.test(first)) return 'none';
  const pure = parts.every((s) => declinesOnly(s) || COURTESY.some((re) => re.test(s)));
  return pure ? 'refusal' : 'hedged';
}
