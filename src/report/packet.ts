/**
 * The evidence packet's sections of an export's report (issue 32): the approval and its intended use,
 * stability, de-identification, model fingerprints, drift checks, where each figure came from, and the
 * model card fields left for the committee. Only the verified bundle is read; every string is escaped
 * (the intended use is compliance's free text, and is treated as hostile like everything else).
 */
import type { Bundle, Count, EvidencePacket } from '../export';
import { esc, facts, score, table } from './html';

const count = (c: Count): string => ('suppressed' in c ? `suppressed (${c.suppressed})` : c.high === 0 ? '0' : `${c.low}-${c.high}`);

const withCi = (v: { value: number; ci95: { low: number; high: number } }): string => `${score(v.value)} (${score(v.ci95.low)} to ${score(v.ci95.high)})`;

function stability(p: EvidencePacket): string[] {
  if (p.stability.length === 0) return ['<h3>Output stability</h3>', '<p>No repeated runs in the packet.</p>'];
  return [
    '<h3>Output stability</h3>',
    table(
      ['benchmark', 'metric', 'repeats', 'instances', 'exact agreement (95% interval)', 'SD of run means', 'run means from-to'],
      p.stability.map((s) => [
        esc(s.benchmarkId),
        esc(s.metric),
        s.repeats,
        esc(count(s.instances)),
        'value' in s.exactAgreement ? esc(withCi(s.exactAgreement)) : `suppressed (${esc(s.exactAgreement.suppressed)})`,
        'sd' in s.scoreSpread ? score(s.scoreSpread.sd) : `suppressed (${esc(s.scoreSpread.suppressed)})`,
        'sd' in s.scoreSpread ? `${score(s.scoreSpread.min)} to ${score(s.scoreSpread.max)}` : '-',
      ]),
    ),
  ];
}

function deid(p: EvidencePacket): string[] {
  if (!p.deid) return ['<h3>De-identification</h3>', '<p>No de-identification figures in the packet.</p>'];
  const g = p.deid.gold;
  return [
    '<h3>De-identification</h3>',
    facts([
      ['Gold file evaluation', g ? `on ${esc(g.evaluatedOn)}: recall ${esc(score(g.recall))}, precision ${esc(score(g.precision))} over ${esc(count(g.phiInstances))} PHI instances` : 'none recorded'],
      ['Blocked by the residual scan', esc(count(p.deid.residualBlocked))],
    ]),
  ];
}

function fingerprints(p: EvidencePacket): string[] {
  if (p.fingerprints.length === 0) return ['<h3>Model fingerprints</h3>', '<p>None recorded.</p>'];
  return [
    '<h3>Model fingerprints</h3>',
    table(
      ['endpoint', 'model served', 'system fingerprint', 'first seen', 'last seen'],
      p.fingerprints.map((f) => [esc(f.endpointId), esc(f.model ?? '-'), f.systemFingerprint ? `<code>${esc(f.systemFingerprint)}</code>` : '-', esc(f.firstSeenOn), esc(f.lastSeenOn)]),
    ),
  ];
}

function drift(p: EvidencePacket): string[] {
  if (p.drift.length === 0) return ['<h3>Drift under the approval</h3>', '<p>No canary check recorded.</p>'];
  return [
    '<h3>Drift under the approval</h3>',
    table(
      ['on', 'benchmark', 'metric', 'test', 'instances', 'baseline', 'canary', 'p', 'threshold', 'outcome', 'reviewed'],
      p.drift.map((d) => [
        esc(d.on),
        esc(d.benchmarkId),
        esc(d.metric),
        esc(d.test),
        esc(count(d.instances)),
        score(d.baseline),
        score(d.canary),
        score(d.pValue),
        `p &lt; ${esc(String(d.threshold))}${d.minDifference !== null ? `, difference at least ${esc(String(d.minDifference))}` : ''}`,
        d.outcome === 'changed' ? '<strong>changed</strong>' : 'no change',
        d.reviewedOn ? esc(d.reviewedOn) : d.outcome === 'changed' ? '<strong>not yet</strong>' : '-',
      ]),
    ),
  ];
}

export function packetSections(b: Bundle): string[] {
  const p = b.packet;
  if (!p) return [];
  const a = p.approval;
  return [
    '<h2>Evidence packet</h2>',
    `<p class="lead">For the AI committee: one model under one approval. Scores, subgroups, jury validation and cost are the results above; this section adds what they do not say.</p>`,
    facts([
      [
        'Model',
        `${esc(p.model.model ?? p.model.deployment ?? '-')} at endpoint ${esc(p.model.endpointId)} (${esc(p.model.provider)}${p.model.deployment ? `, deployment ${esc(p.model.deployment)}` : ''})`,
      ],
      ['Approval', `<code>${esc(a.approvalId)}</code> under protocol ${esc(a.protocol)}, from ${esc(a.startsOn)}${a.expiresOn ? ` to ${esc(a.expiresOn)}` : ', no end date'}`],
      ['Tiers', esc(a.tiers.join(', '))],
      ['Benchmarks approved', a.benchmarks.length ? esc(a.benchmarks.join(', ')) : 'none named (every benchmark of its tiers)'],
    ]),
    '<h3>Intended use</h3>',
    `<blockquote>${esc(a.intendedUse)}</blockquote>`,
    '<p class="note">The approval\'s purpose, as compliance wrote it.</p>',
    ...stability(p),
    ...deid(p),
    ...fingerprints(p),
    ...drift(p),
    '<h3>Where each figure came from</h3>',
    p.evidence.length
      ? table(
          ['figure (in the bundle)', 'audit event seq'],
          p.evidence.map((e) => [`<code>${esc(e.figure)}</code>`, e.auditSeq]),
        )
      : '<p>No figure references in the packet.</p>',
    '<h3>Left for the committee</h3>',
    "<p>Fields of CHAI's Applied Model Card that ehrbench cannot know; the model card (<code>ehrbench report --model-card</code>) leaves them for the committee:</p>",
    `<ul>${p.committeeFields.map((f) => `<li><code>${esc(f)}</code></li>`).join('')}</ul>`,
  ];
}
