/**
 * De-identification of one text: detect (known identifiers first, then the detectors), replace, and
 * scan what is left. Used by the run pipeline's stage and by `ehrbench deid`.
 */
import type { KnownIdentifiers } from '../catalog/types';
import { defaultDetectors, detect, type Detector, textInfo } from './detect';
import { KnownMatcher } from './known';
import { replaceAll, SubjectSurrogates } from './replace';
import { type Finding, residualScan } from './residual';
import type { DeidSettings } from './settings';
import type { Span } from './types';

export interface DeidInput {
  text: string;
  known?: KnownIdentifiers;
  /** Whose identifiers these are: one surrogate map and date shift per subject. */
  subject: string;
}

export interface DeidOutput {
  text: string;
  /** Identifiers found, as end-exclusive offsets into the input text. */
  spans: Span[];
  /** What the residual scan still found in the output (empty when the output may be sent). */
  residual: Finding[];
}

export class Deidentifier {
  private readonly detectors: Detector[];

  constructor(
    readonly settings: DeidSettings,
    private readonly secret: () => Buffer,
    /** Tests replace the detectors to show that the residual scan catches what they miss. */
    detectors?: Detector[],
  ) {
    this.detectors = detectors ?? defaultDetectors();
  }

  /** The identifiers in a text, without replacing them. */
  find(text: string, known?: KnownIdentifiers): Span[] {
    const matcher = new KnownMatcher(known);
    const info = textInfo(text);
    return detect(text, this.detectors, info, matcher.find(text, info.tokens)).map(({ start, end, type }) => ({ start, end, type }));
  }

  run(input: DeidInput): DeidOutput {
    const matcher = new KnownMatcher(input.known);
    const info = textInfo(input.text);
    const detections = detect(input.text, this.detectors, info, matcher.find(input.text, info.tokens));
    let surrogates: SubjectSurrogates | undefined;
    const subject = () => (surrogates ??= new SubjectSurrogates(this.secret(), input.subject, this.settings, knownWords(input.known)));
    const replaced = replaceAll(input.text, detections, this.settings, subject);
    return {
      text: replaced.text,
      spans: detections.map(({ start, end, type }) => ({ start, end, type })),
      residual: residualScan(replaced.text, replaced.regions, matcher),
    };
  }
}

/** Every word of a known identifier: no surrogate may be one of them. */
function knownWords(known: KnownIdentifiers | undefined): string[] {
  if (!known) return [];
  return Object.values(known)
    .flat()
    .filter((v): v is string => typeof v === 'string')
    .flatMap((v) => v.split(/[\s,.]+/))
    .filter((w) => w.length >= 2);
}
