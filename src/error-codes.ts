/**
 * Every error code ehrbench answers with, in one catalogue: code -> HTTP status (the daemon's
 * answer), exit code (the CLI's) and what it means. The status says whose problem it is: 4xx the
 * caller's request, 5xx the site's configuration, data, disk or a service it depends on. Nothing
 * guesses a status or an exit code from a code's spelling. tests/unit/error-catalogue.test.ts fails
 * on a code written in src/ that is not here.
 *
 * Exit codes: 1 any error, 2 a usage error, 3 a policy refusal, 4 the audit trail cannot record,
 * 70 an internal error (EX_SOFTWARE). `ehrbench deid --on-residual mark` exits 3 on its own (lines
 * marked), not through an error.
 */

export interface ErrorEntry {
  status: number;
  exit: number;
  meaning: string;
}

const e = (status: number, meaning: string, exit = 1): ErrorEntry => ({ status, exit, meaning });

export const ERRORS = {
  internal: e(500, 'an unexpected error; details are withheld because they may quote data (see --verbose)', 70),

  // Requests to the daemon.
  'request.invalid': e(400, 'the request does not match its schema, or is not valid JSON'),
  'request.too-large': e(413, 'the request body exceeds the size limit'),
  'request.media-type': e(415, 'the request body is not application/json'),
  'request.rate-limited': e(429, 'too many requests from this principal, or too many refused ones from this address or certificate; slow down'),
  'route.not-found': e(404, 'no such route'),
  'service.unavailable': e(503, "the daemon cannot serve requests right now (its configuration or a policy file is broken); the detail is in the daemon's log, for its operators"),
  'identity.denied': e(403, 'no client certificate, an unknown one, one ehrbench did not issue, or a revoked one'),
  'policy.denied': e(403, 'refused by a rule (the answer names it)', 3),
  'cli.usage': e(400, 'the command line is incomplete or contradictory; see --help', 2),
  'cli.interrupted': e(500, 'a local run was interrupted (Ctrl-C or SIGTERM); its leases were given back and it can be resumed', 130),
  'run.failed': e(502, 'the run ended failed: no instance finished, or it stopped on an error; see the causes printed', 5),
  'run.instances-failed': e(502, 'the run ended, but instances failed for good (the endpoint was unreachable or kept failing); see the causes printed', 5),

  // Things that do not exist (or that the caller may not see).
  'run.invalid': e(400, 'a run request field is out of range (e.g. --max-output-tokens)'),
  'run.preset-conflict': e(400, 'a run request asks for a setting its preset sets otherwise (e.g. --preset medhelm-leaderboard with --scoring corrected); the message names both'),
  'run.not-found': e(404, 'no such run, or not yours'),
  'run.unknown-metric': e(400, "the metric asked for is not one of the run's metrics (the message names them)"),
  'export.not-found': e(404, 'no such export, or not yours'),
  'approval.not-found': e(404, 'no such IRB approval, or it does not name you'),
  'principal.not-found': e(404, 'no such principal'),
  'benchmark.unknown': e(404, 'no benchmark with this id in the catalog'),
  'endpoint.unknown': e(404, 'no endpoint with this id in the allowlist'),

  // Requests that conflict with the state of what they name.
  'run.not-active': e(409, 'the run has already ended'),
  'run.not-completed': e(409, 'the run has not completed: what is asked is computed from a completed run'),
  'run.not-meta-eval': e(400, 'the run is not a HealthBench meta-evaluation (its instances carry no physician labels)'),
  'run.stopped': e(409, 'the run was cancelled or halted: no new call of it starts (calls already in flight finish)'),
  'run.not-runnable': e(409, 'only approved or interrupted runs can be executed'),
  'run.definition-changed': e(409, 'the benchmark changed since the run was requested; request a new run'),
  'run.awaiting-approval': e(409, "the run waits for a compliance officer's approval"),
  'approval.changed': e(409, 'the IRB approval changed while the change was being made; nothing was changed, look at it again'),
  'export.not-released': e(409, 'the export has not been released'),
  'export.changed': e(409, 'the export was released or withdrawn meanwhile'),
  'export.already-written': e(409, 'the files of a released export already exist; they are never overwritten'),
  'pki.already-written': e(409, 'a file of the certificate already exists; an issued certificate is never overwritten'),
  'leaderboard.run-not-completed': e(409, 'only completed runs go on a leaderboard'),
  'init.site-id-differs': e(409, 'init --site-id names another id than the existing config.json holds; edit site.id there, or pass --force to rewrite it'),

  // Rating studies (src/ratings).
  'rating.study-not-found': e(404, 'no such rating study'),
  'rating.item-not-found': e(404, 'the rating study has no such item'),
  'rating.study-closed': e(409, 'the rating study is closed: its ratings can no longer be given or changed'),
  'rating.item-covered': e(409, "enough clinicians already rated this item (the study's raters per item); ask for the next item"),
  'rating.runs-unsuitable': e(
    409,
    'the runs cannot form one rating study: each must exist and be completed, all of one benchmark with an LLM jury, one tier and one approval, its prompt template unchanged, with answered instances',
  ),
  'rating.prompt-unavailable': e(
    409,
    "an item's prompt cannot be rebuilt as the model received it: the benchmark's prompt template changed since its run, or the rebuilt prompt no longer passes de-identification; skip the item",
  ),
  'rating.invalid': e(400, 'a rating study or a rating does not match its schema, names an unknown criterion, misses one, or gives a score outside the scale'),

  // Input that is well-formed but wrong.
  'approval.invalid': e(400, 'the IRB approval is incomplete or inconsistent (it must cover a benchmark or a tier; expiresAt after startsAt)'),
  'export.no-runs': e(400, 'an export names at least one run'),
  'export.content-invalid': e(422, 'the export cannot be represented in a bundle (a model name or id it carries)'),
  'export.preview-invalid': e(422, 'the export preview the daemon sent is not valid'),
  'export.bundle-invalid': e(422, 'the bundle is not a valid export bundle'),
  'export.bundle-unreadable': e(400, 'the bundle file cannot be read'),
  'export.verify-failed': e(422, 'the bundle does not verify against the export public key'),
  'leaderboard.invalid': e(400, 'the leaderboard input does not match its schema or its rules'),
  'leaderboard.duplicate-run': e(400, 'a run is named twice'),
  'leaderboard.data-revisions-differ': e(
    409,
    'runs of one benchmark read different data (their data revisions differ); compare runs of one revision, or allow it explicitly (--allow-mixed-data) and the output says so',
  ),
  'leaderboard.benchmark-versions-differ': e(
    409,
    'runs of one benchmark ran different versions of it (other prompts or scoring); compare runs of one version, or allow it explicitly (--allow-mixed-data) and the output says so',
  ),
  'leaderboard.pins-differ': e(
    409,
    'runs of one benchmark differ in a pin (prompt template, scorer version, judge set or definition hash); compare runs with the same pins, or allow it explicitly (--allow-mixed-data) and the output says so',
  ),
  'run.not-repeated': e(400, 'the run was not requested with --repeat: it has no repeat group, so no output stability'),
  'leaderboard.no-overlap': e(400, 'a model shares no scored benchmark with any other model: a ranking compares models on the same benchmarks'),
  'report.exists': e(409, 'the report file already exists; pass --force to replace it'),
  'report.no-packet': e(400, 'the export has no evidence packet, so no model card can be written; request one with export request --packet'),
  'picture.range-invalid': e(400, 'the time range or bucket size of a picture is not valid, or gives too many buckets'),
  'ratings.file-invalid': e(400, 'the clinician ratings file is not a valid MedHELM ratings CSV (the message names the line and column)'),
  'ratings.file-unreadable': e(400, 'the clinician ratings file cannot be read'),
  'ratings.invalid': e(400, 'the ratings given to the agreement statistics contradict themselves (an item rated twice by one rater, or scored twice by the jury)'),
  'ratings.unknown-dataset': e(400, 'a dataset asked for has no rating (the message names the datasets there are)'),
  'deid.input-invalid': e(400, 'a line of the de-identification input does not match its schema'),
  'deid.input-unreadable': e(400, 'the de-identification input cannot be read'),
  'deid.gold-invalid': e(400, 'the gold standard file does not match its schema'),
  'deid.gold-unreadable': e(400, 'the gold standard file cannot be read'),
  'deid.input-changed': e(409, 'the de-identification input changed while it was read; nothing was written'),
  'deid.proposal-invalid': e(400, 'the lexicon proposal manifest cannot be read or does not match its schema'),
  'deid.holdout-empty': e(400, 'no subject of the gold file is left out of the proposal to measure on'),
  'deid.proposal-unwritable': e(500, 'the proposed lexicons cannot be written'),
  'deid.residual-identifier': e(422, 'an identifier remained after de-identification; nothing was written'),
  'audit.export-missing': e(400, 'the audit export file does not exist'),
  'audit.export-invalid': e(400, 'the audit export file is not a valid export'),
  'audit.import-invalid': e(400, 'the audit export to import does not verify, or ends before its own checkpoint'),
  'audit.import-nothing': e(400, 'the audit export holds no signed row after the chain head'),
  'audit.import-gap': e(400, 'the audit export starts after the chain head: rows between are missing'),
  'audit.import-conflict': e(409, 'the audit export is of another chain, or the chain moved while importing'),
  'audit.no-loss': e(400, 'there is no rollback to accept: the chain holds every witnessed checkpoint'),
  'audit.no-key': e(400, 'offline verification needs the audit public key (--key)'),
  'helm-import.invalid': e(400, 'the HELM configuration does not match its schema'),
  'helm-import.missing': e(400, 'a file or entry the HELM import needs is missing'),
  'helm-import.id': e(400, 'the imported benchmark id is not valid'),
  'helm-import.exists': e(409, 'a benchmark with this id already exists'),
  'helm-import.taxonomy': e(400, 'the category or subcategory is not in the MedHELM taxonomy'),
  'helm-import.template': e(400, 'the prompt template cannot be imported'),
  'helm-import.dataset': e(400, 'the dataset cannot be imported'),
  'helm-import.jury': e(400, 'the jury configuration cannot be imported'),
  'helm-import.metrics': e(400, 'the metrics cannot be imported'),
  'client.no-certificate': e(400, 'talking to the daemon needs a client certificate (--cert, --key)'),
  'client.bad-server': e(400, '--server is not an https URL'),
  'client.file-missing': e(400, 'a certificate, key or CA file of the client cannot be read'),
  'client.certificate-invalid': e(400, 'the client certificate or CA file holds no PEM certificate, or the key file no PEM private key'),
  'client.certificate-expired': e(400, "the client's certificate has expired or is not valid yet; the site's IT issues a new one"),
  'client.certificate-foreign-ca': e(400, "the daemon closed the connection, and the client's certificate is not issued by the CA given with --ca"),
  'client.daemon-untrusted': e(400, "the daemon's certificate is not trusted (no --ca, or not the site CA), has expired, or does not name the host of --server"),
  'pki.csr-invalid': e(400, 'the certificate signing request cannot be read, is not signed with its own key, or its key is not RSA of at least 2048 bits'),

  // The site's configuration, policies and data.
  'config.missing': e(500, 'no configuration file; run "ehrbench init"'),
  'config.invalid': e(500, 'the configuration file is not valid'),
  'config.database': e(500, 'the configuration names no store that can be opened: a postgres URL that cannot be found, or an environment that contradicts database.backend; no other store is used'),
  'policy.invalid': e(500, 'a policy file (endpoints, principals) is not valid'),
  'policy.principals-missing': e(500, 'no principals file'),
  'policy.unstable': e(500, 'a policy file kept changing while it was read; it was not applied'),
  'policy.file-unreadable': e(500, 'a file the endpoint policy names (CA, pins) cannot be read'),
  'schema.invalid': e(500, 'a file does not match its schema'),
  'file.invalid': e(500, 'a JSON file cannot be read or parsed'),
  'site-data.invalid': e(500, 'the site data file is not valid'),
  'catalog.missing': e(500, 'a catalog folder does not exist'),
  'benchmark.invalid': e(500, 'a benchmark definition is not valid'),
  'benchmark.duplicate': e(500, 'two benchmarks have the same id'),
  'template.missing-variable': e(500, 'the prompt template names a variable the instance does not have'),
  'template.no-choices': e(500, 'the prompt template shows choices but the instance has none'),
  'template.too-many-choices': e(500, 'the instance has more choices than the template can letter'),
  'dataset.not-configured': e(500, 'the site supplies the data of this benchmark and none is configured'),
  'dataset.unreadable': e(500, 'a dataset file cannot be read'),
  'dataset.malformed': e(500, 'a dataset file cannot be parsed'),
  'dataset.missing-column': e(500, 'a column the benchmark maps is missing from the dataset'),
  'dataset.bad-column': e(500, 'a dataset column holds a value of the wrong kind'),
  'dataset.duplicate-keys': e(500, 'two instances of the dataset have the same key'),
  'dataset.hash-mismatch': e(500, 'a dataset file differs from the sha256 pinned for it'),
  'dataset.changed': e(500, 'a dataset changed while a run sampled from it (its size differed between the two reads)'),
  'dataset.encoding': e(500, 'a dataset file is not valid UTF-8 and declares no other encoding (the error names the line)'),
  'dataset.record-too-large': e(500, 'a record is over catalog.maxRecordBytes, or its instance over catalog.maxInstanceBytes (the error names the record)'),
  'omop.no-connection': e(503, 'the OMOP database is not configured or cannot be reached'),
  'omop.query-failed': e(500, 'the OMOP note query failed'),
  'omop.missing-notes': e(500, 'notes listed in the labels are not in the OMOP note table'),
  'omop.notes-changed': e(500, 'the OMOP notes differ from the noteIdsSha256 pinned in the site data (renumbered or rewritten since)'),
  'omop.not-read-only': e(500, 'the OMOP session is not read-only by default (a pooler that drops startup options?)'),
  'ehrsql.no-database': e(500, 'an EHRSQL benchmark names no database, or it cannot be opened'),
  'ehrsql.executor-missing': e(500, 'the EHRSQL executor is not built'),
  'ehrsql.executor-closed': e(500, 'the EHRSQL executor has stopped'),
  'jury.no-judges': e(500, 'a jury metric names no judge endpoints'),
  'endpoint.credential-missing': e(500, "the endpoint's credential is not in the environment"),
  'endpoint.auth-unsupported': e(500, "the endpoint's authentication method is not supported for its provider"),
  'endpoint.auth-conflict': e(500, 'the endpoint is configured with two authentication methods'),
  'egress.unsafe-environment': e(500, 'an environment variable or node flag could weaken the egress guard'),
  'egress.token-request-body': e(500, 'a token request carried a body that is not a string'),
  'deid.secret-unreadable': e(500, 'the de-identification secret cannot be read'),
  'deid.secret-invalid': e(500, 'the de-identification secret is not valid'),
  'deid.secret-permissions': e(500, 'the de-identification secret is readable by others'),
  'deid.secret-unwritable': e(500, 'the de-identification secret cannot be written'),
  'deid.site-lexicon-unreadable': e(500, 'a site lexicon cannot be read'),
  'deid.site-lexicon-invalid': e(500, 'a site lexicon is not valid'),
  'deid.failed': e(500, 'de-identification failed; nothing was written (fail closed)'),
  'deid.output-unwritable': e(500, 'the de-identified output cannot be written'),
  'audit.key-missing': e(500, 'an audit key is missing from the keys folder'),
  'audit.key-invalid': e(500, 'an audit key is not valid'),
  'audit.witness-unreadable': e(500, 'an audit witness file cannot be read'),
  'audit.witness-invalid': e(500, 'an audit witness file is not valid'),
  'audit.invalid-event': e(500, 'an audit event does not match its schema (a bug; the action was not performed)'),
  'export.key-missing': e(500, 'the export signing key is missing'),
  'export.key-invalid': e(500, 'the export signing key is not valid'),
  'pki.no-ca': e(500, 'the site CA does not exist; run "ehrbench pki init"'),
  'pki.ledger-unwritable': e(500, 'a revocation cannot be written to the ledger outside the store; nothing was revoked'),
  'pki.ledger-invalid': e(500, 'the revocation ledger outside the store is not valid'),
  'approval.ledger-unwritable': e(500, 'an approval change cannot be written to the ledger outside the store; nothing was changed'),
  'approval.ledger-invalid': e(500, 'the approval ledger outside the store is not valid'),
  'pki.signing-unavailable': e(
    503,
    "the daemon cannot sign a certificate request: it cannot read the site CA's key or sign with it, or may not write principals.json; sign on the host with ehrbench pki sign",
  ),
  'server.tls-file-missing': e(500, "a TLS file of the daemon's configuration cannot be read"),
  'server.health-port-unavailable': e(500, 'the health port cannot be opened'),
  'server.console-assets-missing': e(500, "the web console's built pages are missing from dist/console-pages (npm run build), or it is turned off with server.console false"),
  'worker.health-port-unavailable': e(500, "the worker's health port cannot be opened (in use: the daemon or another worker on the host holds it)"),
  'demo.port-in-use': e(500, "the demo model server's port is in use"),
  'demo.keys-missing': e(500, "the demo model server's certificate or key is missing from the keys folder; run ehrbench init"),
  'db.embedded-permissions': e(500, "the embedded store's folder cannot be made private to its owner (mode 0700)"),
  'db.url-invalid': e(500, 'the database URL is not valid'),
  'db.migration-changed': e(500, 'an applied database migration has changed'),
  'db.migration-not-permitted': e(500, 'the database role may not apply migrations'),
  'db.migrations-pending': e(503, 'the store has migrations pending and this command only reads: the owner runs "ehrbench db migrate" first'),
  'leaderboard.svg': e(500, 'the heat map cannot be written'),
  'report.write-failed': e(500, 'the report file cannot be written; no partial file was left'),
  'report.model-card-invalid': e(500, "the model card ehrbench made does not validate against CHAI's schema (the message names the element); nothing was written"),

  // Failures while acting: the disk, the store, the audit trail, upstream services.
  'export.write-failed': e(500, 'the released files could not be written; nothing partial was left, the export is kept'),
  'export.audit-not-sealed': e(500, 'no signed checkpoint covers the release; nothing was written'),
  'pki.write-failed': e(500, 'the files of an issued certificate could not be written; none was left'),
  'audit.unavailable': e(503, 'the audit trail cannot record events; the action was not performed', 4),
  'db.unavailable': e(503, 'the database connection was lost or refused; retrying later is safe'),
  'db.unreachable': e(503, 'the database cannot be reached'),
  'db.embedded-in-use': e(503, 'the embedded store is in use by another ehrbench process'),
  'db.embedded-unavailable': e(503, 'the embedded store cannot be opened'),
  'model.http-error': e(502, 'the model endpoint answered with an HTTP error'),
  'model.connection': e(502, 'the connection to the model endpoint failed'),
  'model.response-too-large': e(502, "the model endpoint's response exceeded the size cap"),
  'model.error': e(502, 'the model call failed'),
  'model.timeout': e(504, 'the model call timed out'),
  'model.aborted': e(503, 'the model call was aborted (the run stopped or the process is shutting down)'),
  'endpoint.auth-failed': e(502, 'the token request for the endpoint failed'),
  'egress.response-too-large': e(502, 'the guard cut a call short: the response is larger than the cap'),
  'egress.deadline': e(504, "the guard cut a call short: the call's total deadline passed"),

  // The CLI talking to a daemon.
  'client.unreachable': e(503, 'the daemon cannot be reached'),
  'client.bad-answer': e(502, 'the daemon answered with something that is not JSON'),
  'client.http-error': e(502, 'the daemon answered with an error code this client does not know'),
} as const satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * Faults of the site's own configuration, policy files and keys. Raised while the daemon serves a
 * request (a principals file broken after start), they are the operators' to fix and their messages
 * name server files and fields: the client is answered `service.unavailable` (503, a generic message)
 * and the detail goes to the daemon's log. The CLI on the host still prints them in full.
 */
export const SITE_FAULTS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'config.missing',
  'config.invalid',
  'config.database',
  'policy.invalid',
  'policy.principals-missing',
  'policy.unstable',
  'policy.file-unreadable',
  'schema.invalid',
  'file.invalid',
  'site-data.invalid',
  'catalog.missing',
  'benchmark.invalid',
  'benchmark.duplicate',
  'server.tls-file-missing',
  'pki.no-ca',
  'pki.ledger-unwritable',
  'pki.ledger-invalid',
  'approval.ledger-unwritable',
  'approval.ledger-invalid',
  'audit.key-missing',
  'audit.key-invalid',
  'audit.witness-unreadable',
  'audit.witness-invalid',
  'export.key-missing',
  'export.key-invalid',
  'deid.secret-unreadable',
  'deid.secret-invalid',
  'deid.secret-permissions',
  'deid.secret-unwritable',
  'deid.site-lexicon-unreadable',
  'deid.site-lexicon-invalid',
  'endpoint.credential-missing',
  'endpoint.auth-unsupported',
  'endpoint.auth-conflict',
  'db.url-invalid',
  // A site's data binding (a run request checks it first): the requester learns it cannot run now;
  // which file, column or pin is wrong is the operators' (benchmarks check ID, the daemon log).
  'dataset.not-configured',
  'dataset.unreadable',
  'dataset.malformed',
  'dataset.missing-column',
  'dataset.bad-column',
  'dataset.duplicate-keys',
  'dataset.hash-mismatch',
  'dataset.changed',
  'dataset.encoding',
  'dataset.record-too-large',
  'omop.no-connection',
  'omop.query-failed',
  'omop.missing-notes',
  'omop.notes-changed',
  'omop.not-read-only',
]);

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, code);
}

/** The catalogue entry of a code; a code that is not in the catalogue is an internal error. */
export function errorEntry(code: string): ErrorEntry {
  return isErrorCode(code) ? ERRORS[code] : ERRORS.internal;
}
