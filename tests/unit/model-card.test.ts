/**
 * The evidence packet's renderings (issue 32): a bundle with a packet, signed by the real bundle builder,
 * becomes a CHAI Applied Model Card that libxml2 (xmllint-wasm) validates against CHAI's own XSD, and a
 * section of the HTML report; a card that does not validate is refused in one line; the verifier holds
 * the packet to the bundle's disclosure rules (an exact count is refused); the only free text, the
 * approval's intended use, is escaped in both renderings.
 */
import { sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../../src/canonical';
import { type Bundle, COMMITTEE_FIELDS, intendedUseText, type PacketDeidGold, type PacketStability, signBundle, type UnsignedBundle, verifyBundle } from '../../src/export';
import { goldOf, stabilityCell } from '../../src/export/packet-content';
import type { ExportSigningKey } from '../../src/export/keys';
import { SCHEMA_DIR } from '../../src/paths';
import { COMMITTEE_PLACEHOLDER, exportReportHtml, MODEL_CARD_SCHEMA, modelCard, modelCardXml, validateModelCard, verifiedBundle } from '../../src/report';
import { newSigningKey, PACKET_EXPORT_ID, packetBundle, packetUnsigned } from '../helpers/packet-bundle';

const HOSTILE = `<script>alert("x")</script> & ]]> <!-- 'co' --> <img src=x onerror=alert(1)>`;
const FIXTURES = join(__dirname, '..', 'fixtures', 'chai-model-card');

/** Signs whatever it is given, bypassing signBundle's refusal: what a forger holding the key could make. */
function forceSign(b: UnsignedBundle, key: ExportSigningKey): string {
  const value = sign(null, Buffer.from(canonicalJson(b)), key.privateKey).toString('hex');
  return canonicalJson({ ...b, signature: { algorithm: 'Ed25519', keyFingerprint: key.fingerprint, value } }) + '\n';
}

/** The text of every element named `name` in `xml`, unescaped (the builder escapes only these). */
function texts(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, 'g'))].map((m) =>
    (m[1] as string)
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&amp;/g, '&'),
  );
}

describe('CHAI Applied Model Card from an evidence packet', () => {
  const { bundle, text, key } = packetBundle();

  it('starts from a bundle that the verifier accepts, packet included', () => {
    expect(verifyBundle(text, key.publicKey)).toMatchObject({ ok: true, problems: [] });
  });

  it("validates against CHAI's v0.2 schema, with the packet's figures in CHAI's fields", async () => {
    const xml = await modelCard(bundle);
    await expect(validateModelCard(xml)).resolves.toBeUndefined();
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<AppliedModelCard xmlns="https://mc.chai.org/v0.2/schema.xsd">')).toBe(true);
    expect(texts(xml, 'ModelName')).toEqual(['site-llm-7b (endpoint vpc-private, openai-compatible)']);
    expect(texts(xml, 'IntendedUseAndWorkflow')[0]).toMatch(/^Summarise discharge notes for the ward team, reviewed by a clinician before use\.\n\n\(The purpose of approval 5a1e2d3c-/);
    const results = [...xml.matchAll(/<Label>([^<]*)<\/Label>\s*<ValueJson>([^<]*)<\/ValueJson>/g)].map((m) => [m[1], JSON.parse((m[2] as string).replace(/&quot;/g, '"'))]);
    expect(results).toContainEqual(['site_discharge v1.0.0: exact_match (main), n 40-49', { kind: 'estimate_ci', estimate: 0.6, lower: 0.44, upper: 0.74, level: 95 }]);
    expect(results).toContainEqual(['site_discharge: sex = female: exact_match, n 20-29', { kind: 'estimate_ci', estimate: 0.65, lower: 0.42, upper: 0.83, level: 95 }]);
    expect(results).toContainEqual(['site_discharge: sex: worst over best cell of exact_match', { kind: 'single', value: 0.69 }]);
    expect(results).toContainEqual(['site_discharge: exact agreement of 3 repeats, n 20-29', { kind: 'estimate_ci', estimate: 0.9, lower: 0.68, upper: 0.98, level: 95 }]);
    expect(results).toContainEqual(['site_discharge: exact-mcnemar p-value on 2026-11-15 (threshold 0.05)', { kind: 'single', value: 0.012 }]);
    expect(texts(xml, 'Interpretation').join('\n')).toContain('Below 0.8: site_discharge: sex (0.69).');
    expect(texts(xml, 'OngoingMaintenance')[0]).toContain('2026-11-15: site_discharge canary (exact-mcnemar, p < 0.05 and a difference of at least 0.05): changed, reviewed 2026-11-20');
    expect(texts(xml, 'EvaluationReferences')[0]).toContain('/packet/drift/0: 101');
  });

  it('leaves the fields ehrbench cannot know to the committee, and says which', async () => {
    const xml = await modelCard(bundle);
    for (const field of ['ModelDeveloper', 'DeveloperContact', 'ReleaseStage', 'ClinicalRiskLevel', 'KnownRisksAndLimitations', 'PatientConsentOrDisclosure']) {
      expect(texts(xml, field)).toEqual([COMMITTEE_PLACEHOLDER]);
    }
    // Optional ones are left out rather than filled with a placeholder.
    for (const field of ['RegulatoryApproval', 'FoundationModels', 'ClinicalTrial', 'ReimbursementStatus', 'Security']) expect(xml).not.toContain(`<${field}>`);
    const comment = /<!--([\s\S]*?)-->/.exec(xml)?.[1] ?? '';
    for (const f of COMMITTEE_FIELDS) expect(comment).toContain(f);
  });

  it("lists the same committee fields as the schema's enum", () => {
    const schema = JSON.parse(readFileSync(join(SCHEMA_DIR, 'evidence-packet.schema.json'), 'utf8'));
    expect(schema.$defs.committeeField.enum).toEqual([...COMMITTEE_FIELDS]);
  });

  it("accepts CHAI's own examples (the validator is real)", async () => {
    for (const file of ['Penguin-Ai_PA-SLM.xml', 'OrbDoc_Voice-to-SOAP.xml']) {
      await expect(validateModelCard(readFileSync(join(FIXTURES, file), 'utf8'))).resolves.toBeUndefined();
    }
  });

  it('refuses a card missing a required element, in one line naming the schema and the element', async () => {
    const xml = await modelCard(bundle);
    const broken = xml.replace(/\s*<ModelDeveloper>[^<]*<\/ModelDeveloper>/, '');
    expect(broken).not.toBe(xml);
    const err = await validateModelCard(broken).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).toBe('report.model-card-invalid');
    expect(err?.message).toMatch(
      new RegExp(
        `^the model card does not validate against ${MODEL_CARD_SCHEMA.replace(/\./g, '\\.')} at AppliedModelCard/BasicInfo/DeveloperContact \\(line \\d+\\): Element 'DeveloperContact': This element is not expected\\. Expected is \\( ModelDeveloper \\)\\.; no card was written`,
      ),
    );
    expect(err?.message).not.toContain('\n');
  });

  it('refuses a card that is not XML without quoting it', async () => {
    const err = await validateModelCard('<AppliedModelCard>secret text<').then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).toBe('report.model-card-invalid');
    expect(err?.message).not.toContain('secret');
  });

  it('escapes a hostile intended use, and the card still validates', async () => {
    const hostile = packetBundle(HOSTILE).bundle;
    const xml = await modelCard(hostile);
    expect(xml).not.toContain('<script>');
    expect(xml).not.toContain('<img');
    expect(texts(xml, 'IntendedUseAndWorkflow')[0]?.startsWith(HOSTILE)).toBe(true);
  });

  it("refuses characters XML cannot hold without quoting the field (a bundle that skipped the verifier's schema)", () => {
    const b = { ...bundle, packet: { ...bundle.packet!, approval: { ...bundle.packet!.approval, intendedUse: 'private\u0001note' } } } as Bundle;
    expect(() => modelCardXml(b)).toThrow(/^export 0b6f7c52-.*: the model card cannot be written as XML \(a field holds a character XML 1\.0 cannot hold\); no card was written$/);
    try {
      modelCardXml(b);
    } catch (e) {
      expect((e as Error).message).not.toContain('private');
    }
  });

  it('says how to get a packet when the export has none', () => {
    const { packet: _none, ...plain } = bundle;
    expect(() => modelCardXml(plain as Bundle)).toThrow(`export ${PACKET_EXPORT_ID} has no evidence packet; request one with "ehrbench export request --packet" to write a model card`);
  });
});

describe('the export report with a packet', () => {
  it('shows the packet sections, and the hostile intended use only escaped', () => {
    const { text, key } = packetBundle(HOSTILE);
    const html = exportReportHtml(verifiedBundle(text, key.publicKey, PACKET_EXPORT_ID));
    for (const heading of [
      'Evidence packet',
      'Intended use',
      'Output stability',
      'De-identification',
      'Model fingerprints',
      'Drift under the approval',
      'Where each figure came from',
      'Left for the committee',
    ]) {
      expect(html).toMatch(new RegExp(`<h[23]>${heading}</h[23]>`));
    }
    expect(html).not.toMatch(/<script|<img/i);
    expect(html).toContain('<blockquote>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; ]]&gt; &lt;!-- &apos;co&apos; --&gt; &lt;img src=x onerror=alert(1)&gt;</blockquote>');
    expect(html).toContain('<td>0.900 (0.680 to 0.980)</td>');
    expect(html).toContain('<code>fp_0a1b2c</code>');
    expect(html).toContain('<strong>changed</strong>');
    expect(html).toContain('<code>/packet/drift/0</code>');
    expect(html).toContain('<li><code>BasicInfo/ModelDeveloper</code></li>');
  });

  it('has no packet section when the bundle has no packet', () => {
    const key = newSigningKey();
    const { packet: _none, ...plain } = packetUnsigned();
    const { text } = signBundle(plain, key);
    expect(exportReportHtml(verifiedBundle(text, key.publicKey, PACKET_EXPORT_ID))).not.toContain('Evidence packet');
  });
});

describe('the bundle verifier on a packet', () => {
  const key = newSigningKey();

  /** The packet bundle changed by `change`, signed by the site key, and what the verifier says. */
  function problems(change: (b: UnsignedBundle) => void): string[] {
    const b = packetUnsigned();
    change(b);
    return verifyBundle(forceSign(b, key), key.publicKey).problems;
  }

  it('rejects an exact count, even one above k, and signBundle will not sign it', () => {
    const exact = (b: UnsignedBundle) => {
      b.packet!.stability[0]!.instances = { low: 23, high: 23 };
    };
    expect(problems(exact)).toEqual(['packet: stability[0].instances count 23-23 is not a range disclosure control releases (0, or width 10 with its low end at least k = 11): an exact count?']);
    const b = packetUnsigned();
    exact(b);
    expect(() => signBundle(b, key)).toThrow(/breaks disclosure control \(packet: stability\[0\]\.instances count 23-23/);
    expect(problems((b) => (b.packet!.deid!.residualBlocked = { low: 3, high: 3 }))).toEqual([
      'packet: deid.residualBlocked count 3-3 is not a range disclosure control releases (0, or width 10 with its low end at least k = 11): an exact count?',
    ]);
  });

  it('rejects figures finer than their count range or stated over a suppressed count', () => {
    expect(problems((b) => (b.packet!.drift[0]!.canary = 0.43))).toEqual(['packet: drift[0].canary value 0.43 is finer than 1/20, the resolution of its count range']);
    expect(problems((b) => (b.packet!.drift[0]!.pValue = 0.0123))).toEqual(['packet: drift[0].pValue is finer than 3 decimals']);
    expect(problems((b) => (b.packet!.stability[0]!.instances = { suppressed: '<k' }))).toEqual([
      'packet: stability[0].exactAgreement is released over a suppressed or empty count',
      'packet: stability[0].scoreSpread is released over a suppressed or empty count',
    ]);
  });

  it('rejects evidence that points at nothing or at an event the checkpoint does not cover', () => {
    expect(problems((b) => b.packet!.evidence.push({ figure: '/results/3/metrics', auditSeq: 12 }))).toEqual(['packet: evidence[3].figure /results/3/metrics names nothing in the bundle']);
    expect(problems((b) => b.packet!.evidence.push({ figure: '/totals', auditSeq: 121 }))).toEqual(["packet: evidence[3].auditSeq 121 is after the bundle's audit checkpoint (seq 120)"]);
  });

  it('rejects a packet about another model or protocol than the bundle', () => {
    expect(problems((b) => (b.packet!.model.endpointId = 'other-endpoint'))).toEqual(['packet: model.endpointId other-endpoint has no result in the bundle']);
    expect(problems((b) => (b.packet!.approval.protocol = 'IRB-OTHER'))).toEqual(["packet: approval.protocol IRB-OTHER is not the bundle's IRB protocol IRB-2026-0042"]);
  });

  it('is closed: an unknown field, a long or control-character intended use, a free-text committee field', () => {
    const schemaProblems = (change: (b: UnsignedBundle) => void) => problems(change).filter((p) => p.startsWith('schema: '));
    expect(schemaProblems((b) => ((b.packet as unknown as Record<string, unknown>).note = 'free text'))).not.toEqual([]);
    expect(schemaProblems((b) => ((b.packet!.stability[0] as unknown as Record<string, unknown>).perInstance = [1, 0]))).not.toEqual([]);
    expect(schemaProblems((b) => (b.packet!.approval.intendedUse = 'x'.repeat(1001)))).not.toEqual([]);
    expect(schemaProblems((b) => (b.packet!.approval.intendedUse = 'line\u0007bell'))).not.toEqual([]);
    expect(schemaProblems((b) => (b.packet!.committeeFields = ['the patient in bed 4' as never]))).not.toEqual([]);
    expect(schemaProblems((b) => (b.packet!.approval.intendedUse = 'x'.repeat(1000)))).toEqual([]);
  });
});

describe("the packet assembly's figures pass the verifier", () => {
  const settings = { k: 11, width: 10, decimals: 3 };
  const key = newSigningKey();

  /** The fixture bundle with one stability entry and the gold sign-off replaced, and what the verifier says of its packet. */
  function packetProblemsOf(stability: PacketStability, gold: PacketDeidGold | null): string[] {
    const b = packetUnsigned();
    b.packet!.stability = [stability];
    b.packet!.deid = { gold, residualBlocked: { low: 0, high: 0 } };
    return verifyBundle(forceSign(b, key), key.publicKey).problems;
  }

  it('for every cohort size and agreement, and every sign-off size (stabilityCell, goldOf)', () => {
    const problems: string[] = [];
    for (let n = 0; n <= 260; n++) {
      for (const same of [0, Math.floor(n / 3), n]) {
        const means = [0.5 + (n % 7) / 100, 0.61237, 0.55 + (same % 5) / 1000];
        const s = stabilityCell('site_discharge', 'exact_match', 3, { common: n, sameAnswer: same, runMeans: means }, settings);
        const gold = goldOf({ goldSpans: n, recall: 0.98765, precision: same / Math.max(n, 1) }, '2026-09-20T10:00:00.000Z', settings);
        problems.push(...packetProblemsOf(s, gold).map((p) => `n ${n}, same ${same}: ${p}`));
      }
    }
    expect(problems).toEqual([]);
  });

  it("keeps an approval's purpose writable as XML", async () => {
    expect(intendedUseText('triage\u0007 notes\r\n\tfor the ward')).toBe('triage  notes\r\n\tfor the ward');
    expect(intendedUseText('x'.repeat(1500))).toHaveLength(1000);
    const { bundle } = packetBundle(intendedUseText('bell\u0007 and \u001b escape'));
    await expect(modelCard(bundle)).resolves.toContain('bell  and   escape');
  });
});
