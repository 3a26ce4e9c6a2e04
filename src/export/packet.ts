/**
 * The evidence packet of a bundle (issue 32): what an AI committee asks about one model under one
 * approval, beside the bundle's results. The schema (schemas/evidence-packet.schema.json) closes every
 * field; this file checks what a schema cannot: every count is 0 or a range exactly as disclosure control
 * makes them (so an exact count, even one above k, is refused), every value is no finer than its count
 * range allows, suppressed counts carry no figure, every evidence pointer names a figure of the bundle and
 * an audit event the bundle's checkpoint covers.
 */
import { valueDenominator } from './disclosure';
import type { Bundle, Count, EvidencePacket } from './types';

/**
 * The CHAI Applied Model Card fields (v0.2, by element path) that ehrbench cannot know: who made the
 * model, its release and regulation, its training data, users, risks and the site's consent policy.
 * The model card writes CHAI's "N/A" with a note for the required ones and leaves the optional ones out;
 * the committee fills them in. Same list as the schema's committeeField enum (a test checks it).
 */
export const COMMITTEE_FIELDS = [
  'BasicInfo/ModelDeveloper',
  'BasicInfo/DeveloperContact',
  'ReleaseInfo/ReleaseStage',
  'ReleaseInfo/ReleaseDate',
  'ReleaseInfo/ReleaseVersion',
  'ReleaseInfo/GlobalAvailability',
  'ReleaseInfo/RegulatoryApproval',
  'ModelSummary/Summary',
  'UsesAndDirections/PrimaryIntendedUsers',
  'UsesAndDirections/HowToUse',
  'UsesAndDirections/TargetedPatientPopulation',
  'UsesAndDirections/CautionedOutOfScopeSettings',
  'Warnings/KnownRisksAndLimitations',
  'Warnings/KnownBiasesOrEthicalConsiderations',
  'Warnings/ClinicalRiskLevel',
  'TrustIngredients/AISystemFacts/ModelType',
  'TrustIngredients/AISystemFacts/FoundationModels',
  'TrustIngredients/AISystemFacts/DevelopmentDataCharacterization',
  'TrustIngredients/AISystemFacts/BiasMitigationApproaches',
  'TrustIngredients/AISystemFacts/Security',
  'TrustIngredients/TransparencyInformation/FundingSource',
  'TrustIngredients/TransparencyInformation/ThirdPartyInformation',
  'TrustIngredients/TransparencyInformation/StakeholdersConsulted',
  'Resources/ClinicalTrial',
  'Resources/PeerReviewedPublications',
  'Resources/ReimbursementStatus',
  'Resources/PatientConsentOrDisclosure',
  'Bibliography',
] as const;

export type CommitteeField = (typeof COMMITTEE_FIELDS)[number];

/** Decimals of a released p-value: finer ones could pin the discordant counts of a small canary. */
export const P_VALUE_DECIMALS = 3;

/** Longest intended use a packet holds (the schema's maxLength). */
export const INTENDED_USE_MAX = 1000;

/**
 * An approval's purpose as a packet may hold it: control characters other than tab and line breaks
 * (which XML 1.0 cannot hold, so the model card could not be written) become spaces, and it is cut at
 * INTENDED_USE_MAX characters. The words are compliance's, never data.
 */
export function intendedUseText(purpose: string): string {
  return purpose.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, ' ').slice(0, INTENDED_USE_MAX);
}

type Checked = Pick<Bundle, 'disclosure' | 'auditCheckpoint' | 'irbProtocol' | 'results'>;

/** One line per problem of `packet`, each starting "packet:" and naming the field by its path. */
export function packetProblems(packet: EvidencePacket, b: Checked): string[] {
  const problems: string[] = [];
  const { k, countRangeWidth: width } = b.disclosure;
  const decimals = b.disclosure.valueDecimals;
  const bad = (where: string, what: string) => problems.push(`packet: ${where} ${what}`);

  /** A count as releasedCount makes it, or suppressed; the low end of a range (for value resolution), or null. */
  const countLow = (c: Count, where: string): number | null => {
    if ('suppressed' in c) return null;
    if (c.low === 0 && c.high === 0) return 0;
    const policyRange = (c.high + 1) % width === 0 && c.low === Math.max(k, c.high + 1 - width);
    if (!policyRange) bad(where, `count ${c.low}-${c.high} is not a range disclosure control releases (0, or width ${width} with its low end at least k = ${k}): an exact count?`);
    return c.low;
  };
  const resolution = (value: number, low: number | null, where: string) => {
    if (low === null || low === 0) return bad(where, 'states a value over no released instances');
    const d = valueDenominator(low, decimals);
    if (Math.abs(value * d - Math.round(value * d)) > 1e-6) bad(where, `value ${value} is finer than 1/${d}, the resolution of its count range`);
  };

  packet.stability.forEach((s, i) => {
    const where = `stability[${i}]`;
    const low = countLow(s.instances, `${where}.instances`);
    const hidden = low === null || low === 0;
    if ('value' in s.exactAgreement) {
      if (hidden) bad(`${where}.exactAgreement`, 'is released over a suppressed or empty count');
      else {
        resolution(s.exactAgreement.value, low, `${where}.exactAgreement`);
        const ci = s.exactAgreement.ci95;
        if (!(ci.low <= s.exactAgreement.value && s.exactAgreement.value <= ci.high)) bad(`${where}.exactAgreement.ci95`, 'does not contain its value');
      }
    }
    if ('sd' in s.scoreSpread) {
      if (hidden) bad(`${where}.scoreSpread`, 'is released over a suppressed or empty count');
      else {
        for (const key of ['sd', 'min', 'max'] as const) resolution(s.scoreSpread[key], low, `${where}.scoreSpread.${key}`);
        if (s.scoreSpread.min > s.scoreSpread.max) bad(`${where}.scoreSpread`, 'has min above max');
      }
    }
  });

  if (packet.deid) {
    countLow(packet.deid.residualBlocked, 'deid.residualBlocked');
    const gold = packet.deid.gold;
    if (gold) {
      const low = countLow(gold.phiInstances, 'deid.gold.phiInstances');
      resolution(gold.recall, low, 'deid.gold.recall');
      resolution(gold.precision, low, 'deid.gold.precision');
    }
  }

  packet.fingerprints.forEach((f, i) => {
    if (f.firstSeenOn > f.lastSeenOn) bad(`fingerprints[${i}]`, 'was last seen before it was first seen');
  });

  packet.drift.forEach((d, i) => {
    const where = `drift[${i}]`;
    const low = countLow(d.instances, `${where}.instances`);
    const figures = [d.baseline, d.canary, d.pValue];
    if (low === null || low === 0) {
      if (figures.some((v) => v !== null)) bad(where, 'states figures over a suppressed or empty count');
      return;
    }
    if (figures.some((v) => v === null)) bad(where, 'has a released count but no baseline, canary or p-value');
    if (d.baseline !== null) resolution(d.baseline, low, `${where}.baseline`);
    if (d.canary !== null) resolution(d.canary, low, `${where}.canary`);
    if (d.pValue !== null && Math.abs(d.pValue * 10 ** P_VALUE_DECIMALS - Math.round(d.pValue * 10 ** P_VALUE_DECIMALS)) > 1e-6) {
      bad(`${where}.pValue`, `is finer than ${P_VALUE_DECIMALS} decimals`);
    }
    if (d.reviewedOn !== null && d.reviewedOn < d.on) bad(`${where}.reviewedOn`, 'is before the check');
  });

  packet.evidence.forEach((e, i) => {
    if (!pointsIntoBundle(b, e.figure)) bad(`evidence[${i}].figure`, `${e.figure} names nothing in the bundle`);
    if (e.auditSeq > b.auditCheckpoint.seq) bad(`evidence[${i}].auditSeq`, `${e.auditSeq} is after the bundle's audit checkpoint (seq ${b.auditCheckpoint.seq})`);
  });

  if (!b.results.some((r) => r.model.endpointId === packet.model.endpointId)) bad('model.endpointId', `${packet.model.endpointId} has no result in the bundle`);
  if (b.irbProtocol !== null && packet.approval.protocol !== b.irbProtocol) bad('approval.protocol', `${packet.approval.protocol} is not the bundle's IRB protocol ${b.irbProtocol}`);
  if (packet.approval.expiresOn !== null && packet.approval.expiresOn < packet.approval.startsOn) bad('approval.expiresOn', 'is before startsOn');
  return problems;
}

/** Whether the RFC 6901 pointer names a value of the bundle. */
function pointsIntoBundle(b: Checked, pointer: string): boolean {
  let at: unknown = b;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key) || Number(key) >= at.length) return false;
      at = at[Number(key)];
    } else if (at !== null && typeof at === 'object' && Object.prototype.hasOwnProperty.call(at, key)) {
      at = (at as Record<string, unknown>)[key];
    } else return false;
  }
  return true;
}
