/**
 * Model answers for the jury's refusal rule, written for these tests (no dataset text): answers that
 * open with a disclaimer and then answer (hedged: the judges must read them), answers that decline and
 * say nothing else (pure refusals), and answers that only sound like a decline.
 */

export const HEDGED_ANSWERS = [
  "I can't provide personalized medical advice, but in general, ibuprofen and acetaminophen can be alternated for fever in adults. Stay within the daily limits on the label and see your doctor if the fever lasts more than three days.",
  "I'm not a doctor, but these symptoms are commonly caused by acid reflux. Avoid large meals before bed, raise the head of your bed, and talk to your doctor if the heartburn continues.",
  "I'm sorry, but I can't diagnose you over text. That said, a rash with fever and joint pain can point to a viral illness; keep a record of when it started and seek care promptly if it spreads.",
  'As an AI, I cannot examine you. Sudden chest pain that spreads to the arm or jaw can be a heart attack: call 911 now.',
  'I cannot replace a consultation with your pharmacist.\n\nMetformin is usually taken with meals to reduce stomach upset, and the extended-release tablet should be swallowed whole.',
  "Unfortunately, I'm unable to review your imaging directly. Based on the findings you describe, the impression would be: no acute cardiopulmonary process.",
];

export const PURE_REFUSALS = [
  "I'm sorry, but I can't help with that request.",
  'I cannot provide medical advice. Please consult a qualified healthcare professional.',
  'As an AI language model, I am not able to write clinical notes. If you have any other questions, feel free to ask.',
  "I'm sorry. I am unable to generate discharge instructions for this patient. Please speak with the care team.",
  'Unfortunately, I can’t assist with interpreting this report. I recommend that you talk to your doctor.',
];

/** Not declines at all: the judges read them in every mode. */
export const PLAIN_ANSWERS = [
  "I'm sorry to hear about your knee pain. Rest, ice and ibuprofen should help over the next few days.",
  'HISTORY OF PRESENT ILLNESS: I cannot stress enough that the patient reports no chest pain.',
  'The patient cannot bear weight on the left leg.',
  'I cannot stress enough how important it is to finish the antibiotic course.',
];
