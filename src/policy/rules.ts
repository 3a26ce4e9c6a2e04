/**
 * Every rule ehrbench decides by, in one registry: id -> what it means, in one line. A decision, a
 * refusal (PolicyDenied), an audit event's `rule` and a metric's `rule` label name one of these.
 * The compliance officer's table in audit/README.md is generated from it (`npm run docs:rules`), and
 * tests/unit/policy-registry.test.ts fails on a rule written in src/ that is not here, or an entry
 * here that nothing uses. A new rule is added here first, with its meaning.
 */

/** The access rules' refusals, as the run's own endpoint or a judge's endpoint may meet them. */
const ACCESS_DENIALS = {
  'endpoint.development-not-private': 'a development endpoint never receives private-tier data',
  'endpoint.tier-ceiling': "the endpoint accepts data of a lower tier than the benchmark's",
  'endpoint.not-in-vpc': 'approval-required and private data go only to endpoints inside the hospital network',
  'endpoint.no-baa': 'private data go only to endpoints with a business associate agreement',
  'principal.unknown-or-disabled': 'the requester is not an active principal',
  'principal.revoked': "the requester's certificates were revoked (break-glass or pki revoke) after the run was requested: the run stops, as the API refuses them",
  'rbac.researcher-required': 'runs are requested by researchers',
  'approval.none': 'the researcher is named on no IRB approval; approval-required and private benchmarks need one',
  'approval.unknown': 'the IRB approval the run is bound to does not exist',
  'approval.suspended': 'the IRB approval is suspended',
  'approval.closed': 'the IRB approval is closed',
  'approval.not-started': 'the IRB approval is not valid yet',
  'approval.expired': 'the IRB approval has expired',
  'approval.not-on-personnel': 'the researcher is neither on the personnel nor the PI of the IRB approval',
  'approval.benchmark-not-covered': 'the IRB approval covers neither the benchmark nor its tier',
  'approval.endpoint-not-covered': 'the IRB approval lists endpoints, and not this one',
  'approval.test-endpoint-not-named':
    'a test endpoint (the loopback stand-in) receives approval-required or private data only under an IRB approval that names it in its endpoints, so a real study never reaches it by default',
  'sod.approval-recorder-is-personnel':
    'the officer who records or reinstates an IRB approval may not be its PI or on its personnel: refused when recording or reinstating, and an approval so recorded covers no run',
  'tier.private.run-not-approved': "a private run has no compliance officer's approval yet; nothing is sent",
} as const;

/** A judge's endpoint refused for the run's data (the gateway names it `jury.<access rule>`). */
type JuryDenials = { readonly [K in keyof typeof ACCESS_DENIALS as `jury.${K}`]: string };
const JURY_DENIALS = Object.fromEntries(Object.entries(ACCESS_DENIALS).map(([id, meaning]) => [`jury.${id}`, `judge endpoint: ${meaning}`])) as JuryDenials;

export const RULES = {
  // Who may run what (src/access): tiers, endpoints, approvals.
  'tier.public': 'public benchmark: any researcher, any allowlisted endpoint',
  'tier.approval-required.approval': 'approval-required benchmark: covered by an active IRB approval naming the researcher',
  'tier.private.approval': "private benchmark: covered by an active IRB approval; the run waits for a compliance officer's approval",
  'tier.private.run-approved': 'private run: approved by a compliance officer who is not the requester',
  ...ACCESS_DENIALS,
  ...JURY_DENIALS,

  // Roles (src/operations): an action needs a role the caller does not hold.
  // An action several roles may do is refused under the first role's rule; its reason names them all.
  'rbac.admin-required': 'the action needs the admin role (or another role the refusal names)',
  'rbac.compliance-required': 'the action needs the compliance role (or another role the refusal names)',
  'rbac.auditor-required': 'the action needs the auditor role (or another role the refusal names)',
  'rbac.cancel-not-allowed': 'only the requester, a compliance officer or an admin may stop a run',
  'rbac.clinician-required': 'the action needs the clinician role (or another role the refusal names)',
  'rbac.role-held': 'the caller holds a role the policy gate allows for the action (src/policy/gate.ts)',

  // Who sees what exists: runs, exports, approvals, rating studies (src/policy/gate.ts). Refused as not found.
  'visibility.run.staff': 'compliance officers, auditors and admins see every run (its metadata; figures as below)',
  'visibility.run.own-only': 'a researcher lists their own runs only',
  'visibility.run.requester': 'a researcher sees the runs they requested',
  'visibility.run.not-yours': "another person's run is not shown to a researcher or clinician: answered as not found",
  'visibility.export.reviewer': 'compliance officers and auditors see every export',
  'visibility.export.own-only': 'a researcher lists their own exports only',
  'visibility.export.requester': 'the requester of an export sees, withdraws and downloads it',
  'visibility.export.not-yours': "another person's export is not shown: answered as not found",
  'visibility.approval.reviewer': 'compliance officers and auditors see every IRB approval',
  'visibility.approval.named-only': 'researchers and clinicians list the IRB approvals that name them only',
  'visibility.approval.named': 'a person the IRB approval names (PI, personnel, clinician rater) sees it',
  'visibility.approval.not-named': 'an IRB approval that does not name the caller is not shown: answered as not found',
  'visibility.study.reviewer': "compliance officers and auditors see every rating study's progress and agreement (never one clinician's ratings)",
  'visibility.study.own-only': 'a researcher lists the rating studies they opened, a clinician those they may rate',
  'visibility.study.opener': 'the person who opened a rating study sees and closes it',
  'visibility.study.not-yours': 'a rating study the caller neither opened nor reviews is not shown: answered as not found',

  // Rating studies: clinicians rate a blinded sample of a jury benchmark's answers.
  'study.opened-on-own-runs': 'a researcher opens a rating study on runs they requested',
  'study.runs-not-owned': 'a researcher opens rating studies on their own runs only; a compliance officer may open one on any',
  'study.rater-approved': "a clinician rates a study's items: public data, or named among the clinician raters of the runs' IRB approval",
  'study.rater-not-on-approval': "the runs' data are approval-required or private and their IRB approval does not name the clinician among its raters",
  'study.recorded': 'a rating study opened, closed, or an item rated, skipped or flagged (ids and counts only, never text)',

  // Who sees a run's exact figures: counts, scores, aggregates, token usage (src/policy/visibility.ts).
  'visibility.run-figures.public-tier': "a public run's exact counts, scores and usage are shown to everyone who may see the run",
  'visibility.run-figures.requester': "the requester sees their own run's exact counts, scores and usage",
  'visibility.run-figures.compliance': 'compliance officers see the exact counts, scores and usage of every run (they approve runs and review exports)',
  'visibility.run-figures.withheld': "the exact counts, scores and usage of another person's approval-required or private run are withheld (null): admins and auditors see its metadata only",

  // What a run's instances show, one by one (src/policy/visibility.ts); exports never hold instances.
  'visibility.instances.public-tier': "a public run's instances (prompt, prediction, reference, scores) are shown to everyone who may see the run; reading them is audited (instance.read)",
  'visibility.instances.codes-only':
    "an approval-required or private run's instances: only the position, state and error code of failed and blocked ones, to the requester and compliance officers; never text (prompt, prediction, reference, even de-identified) nor scores",
  'visibility.instances.withheld': "the instances of another person's approval-required or private run are withheld: admins and auditors see none, not even codes",

  // Who is calling.
  'identity.no-certificate': 'the daemon needs a client certificate from a trusted CA',
  'identity.unknown-principal': 'the client certificate is mapped to no active principal',
  'identity.unknown-certificate': 'the client certificate is of a CA ehrbench issues from, and ehrbench has no record of issuing it (ehrbench pki issue records each one)',
  'identity.denials-rate-limited': 'more refused requests from one client address or certificate in a window than server.rateLimit.deniedMax: answered 429, counted in the denial events of the window',
  'identity.local-user-unknown': 'the operating-system account is mapped to no active principal (local mode)',
  'identity.connections-per-certificate':
    'a connection over server.maxConnectionsPerCertificate open with one client certificate: closed right after the TLS handshake, before any request is read; logged and counted, not audited',
  'pki.certificate-revoked': 'the client certificate is revoked, or its principal is and it was issued (recorded issue time; validity start for an external CA) before that',

  // The web console (src/console): a request a browser makes on its user's behalf.
  'console.cross-site': "a browser's request that another site started (Sec-Fetch-Site cross-site or same-site) is refused: the client certificate is sent automatically, so it is no proof of intent",
  'console.origin-mismatch': "a browser's request whose Origin is not one of the daemon's own (the names in its server certificate, on its port) is refused",
  'console.csrf-token': "a browser's state-changing request carries the console session's token, bound to the principal and certificate; one without it, or with another session's, is refused",

  // Separation of duties.
  'sod.compliance-approval': 'a private run approved by a compliance officer other than the requester',
  'sod.approver-is-requester': 'the requester of a run may not approve it',
  'sod.compliance-release': 'an export released by a compliance officer other than the requester',
  'sod.releaser-is-requester': 'the requester of an export may not release it',
  'sod.rater-holds-other-role': "a clinician rater may hold no other role on the runs' IRB approval (PI or personnel) nor have requested the runs: refused when recording the approval and when rating",
  'sod.reinstate-by-suspender': 'the officer who suspended an approval may not reinstate it; a second officer must',
  'sod.protocol-suspended-by-recorder':
    'the officer who suspended or closed an approval of a protocol (still suspended or closed) may not record a new approval for that protocol; a second officer must',

  // IRB approvals as records.
  'approval.recorded-by-compliance': 'an IRB approval recorded by a compliance officer',
  'approval.suspend': 'an IRB approval suspended',
  'approval.reinstate': 'a suspended IRB approval reinstated',
  'approval.close': 'an IRB approval closed for good',
  'approval.closed-is-final': 'a closed IRB approval cannot change',
  'approval.not-suspended': 'only a suspended IRB approval can be reinstated',
  'approval.already-suspended': 'the IRB approval is already suspended',

  // Drift under an approval (src/runs/canary.ts): the approval's canary against its baseline.
  'drift.canary-preapproved':
    "a canary run under an IRB approval, requested for its PI and approved by the compliance officer who named the canary: the normal engine path (access, de-identification, budget, audit) under the approval's own rules",
  'drift.baseline-recorded': "a canary's baseline completed: the instance keys it scored are pinned, and later canary runs are compared with it on those instances",
  'drift.stable': "the canary's scores did not move beyond the approval's threshold (the paired test's p is at or above it, or the mean moved less than its minimum)",
  'drift.detected':
    "the canary's scores moved: the paired test's p is below the approval's threshold and the mean moved by at least its minimum; the approval's results are stale until a compliance officer reviews the drift",
  'drift.inconclusive': 'fewer than k instances are paired between the canary and its baseline: nothing is concluded, no figure is shown',
  'drift.canary-failed': 'the canary run ended without results (failed, cancelled or halted): nothing is compared',
  'drift.reviewed': "a compliance officer reviewed the approval's detected drift: its results are no longer marked stale",
  'drift.nothing-to-review': 'the IRB approval has no unreviewed drift',

  // Runs.
  'run.not-awaiting-approval': 'the run is not waiting for an approval',
  'run.not-active': 'the run has already ended',
  'run.cancel.by-requester': 'the requester cancelled the run',
  'run.halt.by-officer': 'a compliance officer or an admin halted the run',
  'run.all-instances-finished': 'every instance of the run is done, blocked or failed',
  'run.no-instance-finished': 'every instance of the run failed or was blocked: the run has no results and ends failed, never completed',
  'run.binding-invalid':
    "the benchmark's site data binding fails the pre-flight of `ehrbench benchmarks check` (file, pin, encoding, sizes, columns, records, database, judges): the run is refused before it is created",
  'run.item.attempts-exhausted': 'an instance failed on every attempt it was allowed',

  // Datasets: records a benchmark leaves out where HELM's loader leaves them out (counted per run).
  'dataset.skip.empty-column':
    "a record left out: a column the benchmark requires is the empty string (HELM's shc_ent_med skips such labels; the MedHELM package's sct_bench, a case without its scenario, hypothesis or new finding)",
  'dataset.skip.blank-column': "a record left out: a column the benchmark requires is blank (HELM's CLEAR and MEDEC loaders skip such rows)",
  'dataset.skip.image-question': 'a HeadQA question with an image left out, as HELM evaluates text questions only (SKIP_VQA)',
  'dataset.skip.prompt-over-max-length': "an EHRSHOT prompt over HELM's max_length (100,000 cl100k_base tokens) left out, as HELM's loader leaves it out",
  'dataset.skip.ehr-over-token-budget':
    "a MedAlign instruction left out: its EHR exceeds HELM's token budget (100,000 less output, template and instruction), and HELM drops such EHRs rather than truncating them",

  // The approval's budget, before every model call.
  'budget.not-bound': 'the run is bound to no approval, so no budget applies',
  'budget.none': 'the approval has no budget',
  'budget.within': "the call's worst case fits within the approval's budget",
  'budget.exceeded': "the call's worst case would exceed the approval's budget; the call is not made and the run halts",
  'budget.no-price': 'an endpoint under a budget has no price in the config (export.prices), so the budget cannot be enforced',
  'budget.approval-unknown': 'the approval the run is bound to does not exist',

  // Annotators (src/annotate) between the model call and scoring.
  'annotate.deferred-no-calls': 'a deferred annotator (EHRSQL) runs after the run made all of its model calls and may call no endpoint',

  // De-identification of prompts.
  'deid.residual-identifier': 'an identifier remained after de-identification; the prompt was not sent',
  'deid.failed': 'de-identification failed; the prompt was not sent (fail closed)',
  'deid.not-applied': 'only a prompt from the de-identification stage may be sent, de-identified when the run de-identifies',

  // The egress guard: which endpoint, which address, which TLS.
  'egress.allowlisted-endpoint': 'the call goes to an allowlisted endpoint at a checked address',
  'egress.internal': 'the egress check itself failed; refused (fail closed)',
  'egress.endpoint.invalid-url': "the endpoint's own configured URL is not canonical https",
  'egress.url.not-allowlisted': 'no allowlisted endpoint has this host',
  'egress.url.host': "the URL's host is not the endpoint's host",
  'egress.url.port': "the URL's port is not the endpoint's port (or is port 0)",
  'egress.url.path': "the URL's path is outside the endpoint's path",
  'egress.url.ip-literal': 'an IP-address host is refused unless the endpoint is itself written with that address',
  'egress.url.unparseable': 'the URL is empty or cannot be parsed',
  'egress.url.too-long': 'the URL is longer than the limit',
  'egress.url.bad-characters': 'the URL contains whitespace, control characters or a backslash',
  'egress.url.fragment': 'the URL carries a fragment',
  'egress.url.scheme': 'only https URLs are allowed',
  'egress.url.not-canonical': 'the URL does not start with a lower-case "https://"',
  'egress.url.userinfo': 'the URL carries userinfo (user@host)',
  'egress.url.host-not-ascii': 'the host is not plain ASCII (look-alike names are refused)',
  'egress.url.host-zone-id': 'the IPv6 host carries a zone id',
  'egress.url.host-percent-encoded': 'the host is percent-encoded',
  'egress.url.host-trailing-dot': 'the host ends with a dot',
  'egress.url.host-not-canonical': 'the host is not in canonical (lower-case ASCII) form',
  'egress.url.ipv6-embedded-ipv4': 'the IPv6 host embeds an IPv4 address',
  'egress.url.ipv6-not-canonical': 'the IPv6 host is not in compressed canonical form',
  'egress.url.ipv4-non-canonical': 'the IPv4 host is not in four-part decimal form',
  'egress.url.unspecified-address': 'the host is the unspecified address',
  'egress.url.port-not-canonical': 'the port is not in canonical form (no default :443, no leading zeros)',
  'egress.url.path-not-canonical': 'the path changes under normalisation (dot segments, characters needing encoding)',
  'egress.url.path-encoded': 'the path carries an encoded dot, slash or backslash',
  'egress.url.query-not-canonical': 'the query string changes under normalisation',
  'egress.dns.failed': "resolving the endpoint's host failed or timed out",
  'egress.dns.empty': "resolving the endpoint's host gave no address",
  'egress.address.not-allowed': "an address of the endpoint's host is outside its allowedCidrs",
  'egress.address.remote-mismatch': 'the socket reached an address that was not checked',
  'egress.tls.name-mismatch': "the server certificate does not name the endpoint's host",
  'egress.tls.expired': 'the server certificate has expired',
  'egress.tls.not-yet-valid': 'the server certificate is not valid yet',
  'egress.tls.untrusted': 'the server certificate does not chain to a trusted CA',
  'egress.tls.handshake-failed': 'the TLS handshake failed',
  'egress.tls.pin-mismatch': "the server's key matches none of the endpoint's spkiSha256 pins",
  'egress.redirect.refused': 'the endpoint answered with a redirect; redirects are never followed',
  'egress.response-codings': 'the endpoint answered with more stacked content codings (Content-Encoding) than the guard decodes (2); refused before any is decoded',
  'egress.response-too-large': 'the guard cut a call short: the response is larger than the cap',
  'egress.deadline': "the guard cut a call short: the call's total deadline passed",
  'egress.env.foreign-module': 'a module outside the installation, or a preload flag, was loaded into node before ehrbench started; refused at start-up',

  // The endpoint policy at load: how wide an allowlist may be, where its secrets may be read from.
  'policy.allowlist-too-wide': "an endpoint's allowedCidrs together cover more addresses than config egress.allowlistWidth allows",
  'policy.test-endpoint-not-loopback': 'an endpoint marked test (the loopback stand-in) may list loopback allowedCidrs only, so the label can never cover a real endpoint',
  'policy.secret-outside-secrets-dir': "an endpoint's auth.file does not resolve (links followed) inside the secrets directory, config secrets.dir",
  'policy.secret-is-daemon-key':
    "an endpoint's secret reference names one of the daemon's own keys or credentials (keys.dir, the site PKI, the TLS key, the de-identification secret, the database credentials)",

  // The files a benchmark names (prompt template, dataset files, judge prompt, site-data bindings), at load and when opened.
  'benchmark.file-outside-folder':
    "a file a benchmark definition names does not resolve (links followed) inside the benchmark's own folder, the shipped datasets or a folder of config catalog.dataDirs",
  'benchmark.file-is-daemon-file':
    "a file a benchmark or its site-data binding names is one of the daemon's own (keys, PKI, secrets, de-identification secret, database credentials, configuration, policies, witnesses, database, log)",

  // Exports: the only door out.
  'export.request.own-completed-runs': 'an export requested of completed runs of the requester',
  'export.run-not-owned': 'only the requester of a run may ask to export it',
  'export.run-not-completed': 'only completed runs can be exported',
  'export.test-endpoint':
    'a run on a test endpoint (the loopback stand-in of init --test-endpoints) is never exported: its results mean nothing, and outside the perimeter they could pass for real ones',
  'export.run-missing': 'a run of the export no longer exists',
  'export.mixed-protocols': 'the runs were made under different IRB protocols; one export per protocol',
  'export.benchmark-versions-differ':
    'runs of one benchmark in the export ran different versions of it (other prompts or scoring); refused unless the requester allowed mixed runs, and each result in the bundle names its version',
  'export.data-revisions-differ': 'runs of one benchmark in the export read different data (their data revisions differ); refused unless the requester allowed it, and then the bundle lists them',
  'export.packet-scope': 'an evidence packet is about one model under one IRB approval: every run of the export must have gone to one endpoint and be bound to one approval',
  'export.pins-differ':
    'runs of one benchmark in the export differ in a pin (prompt template, scorer version, judge set or definition hash); refused unless the requester allowed mixed runs, and then the bundle says which pins differ',
  'export.approval-missing': 'an approval-required or private run is bound to no existing IRB approval',
  'export.approval-inactive': "a run's IRB approval is no longer active; its results cannot be released",
  'export.preview-stale': 'the aggregates differ from the preview that was reviewed; request a new export',
  'export.already-released': 'an export is released once',
  'export.withdrawn': 'an export request withdrawn by its requester or a compliance officer before release: final, never released',
  'export.not-waiting': 'only an export that waits for release can be withdrawn',
  'export.write-failed': 'the released files could not be written; nothing partial was left',
  'export.download': 'a released bundle fetched again by its requester or a compliance officer',
  'disclosure.differencing': 'a released cell (whole cohort or subgroup, any name) would differ from another released cell of the benchmark, in this export or an earlier one, by 1..k-1 instances',

  // The audit trail and the processes that write it.
  'audit.read.api': 'the audit trail read over the daemon API by compliance or an auditor',
  'audit.verify.api': 'the audit trail verified over the daemon API by compliance or an auditor',
  'audit.read.local-operator': 'the audit trail read or exported on the host by its operator',
  'audit.verify.local-operator': 'the audit trail verified on the host by its operator',
  'audit.verify.outcome': "what a verification of the audit trail found: success when the chain verified, failed when it is broken (the count of findings in the event's detail)",
  'audit.keys-missing': 'the keys folder lacks the audit signing or MAC key: nothing is recorded or sealed, so only what needs no record (reading, verifying) is done',
  'audit.rollback-detected': 'the chain no longer holds a witnessed checkpoint (tail cut or older backup restored): the trail stops, nothing is sealed or done',
  'audit.loss-accepted':
    'a rollback whose rows are lost for good accepted on the host (audit accept-loss) after the compliance office decided: the witness histories were archived, not deleted, and new ones start at the next checkpoint',
  'audit.rows-restored':
    'audit rows a restore lost put back on the host from an audit export (audit import): only rows that verify, continue the chain at its head and are covered by a checkpoint signed with a trusted key',
  'audit.unverified-row':
    'a row since the last checkpoint is not one ehrbench wrote (its MAC, hash or link fails: appended with the database grants alone): the trail stops, nothing is signed over it or chained onto it',
  'audit.witness-unchecked': 'a witness file cannot be read or does not verify, so the chain cannot be checked against it: the trail stops',
  'daemon.start': 'the daemon started',
  'daemon.stop': 'the daemon stopped',
  'daemon.connections-total': 'a connection over server.maxConnections open at once: closed before its TLS handshake; logged and counted, not audited',
  'worker.start': 'a worker process started',
  'worker.stop': 'a worker process stopped',

  // Certificates and principals, changed on the host (and, for a certification request, by the daemon for an admin).
  'pki.issue.host-operator': 'a client certificate issued on the host by its operator',
  'pki.sign.host-operator':
    "a client certificate issued on the host by its operator for a certification request: only the request's public key is taken, the private key never left its holder's machine",
  'pki.issue.recorded-existing': 'a client certificate issued before ehrbench kept an issuance record, recorded with the time of its own pki.issue event',
  'pki.write-failed': 'the files of an issued certificate could not be written; none was left',
  'pki.revoke.principal': 'every certificate of a principal revoked (break-glass)',
  'approval.stop-reapplied': 'an approval suspension or closure the store lost (a restored older backup) applied again from the ledger outside it before anything is served',
  'pki.revoke.reinstated': 'a revocation the store lost (a restored older backup) put back from the ledger outside it before anything is served',
  'policy.principals.host-operator': 'the principals file changed on the host by its operator',
  'pki.sign.api':
    "a client certificate issued by the daemon for an admin (POST /v1/certificates, the console) for a certification request: only the request's public key is taken, the certificate is returned, no file is written",
  'policy.principals.api': 'the principals file changed by the daemon for an admin: a principal mapped to a certificate signed through the API',
  'pki.sign.api.role-on-host':
    'through the daemon an admin signs certificates for researchers, auditors and clinicians only: one for a compliance officer or an admin (new, existing, or the role added) is signed on the host',
  'policy.file.loaded': 'a policy file (principals, endpoints) whose content the trail had not recorded was loaded; recorded with its sha256 and what changed before it took effect',

  // Fallbacks where a rule is reported but none was given.
  'probe.failed': 'endpoints probe: the call failed for a reason that is neither a refusal nor an ehrbench error',
  'access.unnamed-rule': 'metrics: a denied audit event that named no rule',
  'deid.unknown': 'metrics: a blocked prompt that named no rule',
  'egress.unknown': 'metrics: an egress refusal that named no rule',
} as const satisfies Record<string, string>;

export type RuleId = keyof typeof RULES;

export function isRule(id: unknown): id is RuleId {
  return typeof id === 'string' && Object.prototype.hasOwnProperty.call(RULES, id);
}
