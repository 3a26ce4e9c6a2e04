/**
 * The PHI canary: synthetic private-tier records carry unique marker strings, made fresh for every run
 * of this test, in every Safe Harbor identifier kind (names, street, city, facility, ZIP, dates, age
 * over 89, phone, fax, e-mail, SSN, MRN, health plan, account, licence, vehicle VIN and plate, device
 * serial, URL, IP, biometric, other codes, and the record and patient ids), in free text and, where the
 * site data format has a place for them, as known identifiers from structured data (some records have
 * no structured names: their people are found by cues alone). Where a PostgreSQL server is at hand, a
 * few notes also come from an OMOP CDM source, whose structured identity is the person's MRN and birth
 * date and the CDM's location, care site and provider rows (no patient names: the CDM has none). The
 * private flow runs whole as people use it, over the mutual-TLS daemon: an IRB approval recorded by compliance, a run requested by a researcher and approved by another person, executed by
 * the daemon's worker on an allowlisted BAA endpoint (the loopback model server, which records every
 * request and fails some of them), one instance blocked by the residual scan, one run that fails on a
 * malformed site file, and the release of the export bundle. Afterwards no marker may be found in
 * anything that left the run store: what the model server received, the log file (debug level) and the
 * logger's raw input, error messages (thrown, logged, returned by the API, printed by the CLI, or by
 * anything on the console), every audit_events row, the audit exports (JSON lines, CSV, FHIR, API) and
 * witness files, the export preview, bundle, HELM files and the files on disk, Prometheus metrics, and
 * every table of the store but the work queue itself (run_items). Markers are searched in any case and,
 * for numbers, with any separators or none. Nor may the model server's error bodies (which quote the
 * prompt) reach any of these.
 *
 * Controls keep the test from passing vacuously: the same search finds every marker in the site's data
 * and in run_items, the model server received the prompts, the logs, audit trail, metrics and bundle
 * are there and hold what they should.
 */
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { csvHeader, csvRow, fhirAuditEvent, jsonlEvent, streamRecordPages } from '../../src/audit';
import { createDeidStage, settingsFrom } from '../../src/deid';
import { lexicons } from '../../src/deid/lexicons';
import { main } from '../../src/cli/main';
import { describeError } from '../../src/errors';
import { EXPORT_PUBLIC_KEY_FILE, loadExportPublicKey, verifyBundle } from '../../src/export';
import type { Logger } from '../../src/log';
import type { DeidStage } from '../../src/contracts';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

/** Records of the canary benchmark: enough that the export releases counts (minimum cell size 11). */
const RECORDS = 16;
/** The record whose prompt the model server always refuses (the call fails for good). */
const FAILING = 3;
/** The record de-identified by a stage missing its detectors, so the residual scan must block it. */
const BLOCKED = 5;
/** Records whose extract has no structured names (the name columns are empty). */
const NO_STRUCTURED_NAMES = [2, 6, 10, 14];
/** Written into the failing record's note (not PHI): the model server recognises the prompt by it. */
const FAIL_SENTINEL = 'stand-in-refuses-this-prompt';
/** The model server's error bodies quote the prompt after this; such bodies must go nowhere. */
const ECHO = 'CANARY-ECHO-BODY';

// ---------------------------------------------------------------------------------------------------
// Markers

type Kind = 'NAME' | 'LOCATION' | 'ZIP' | 'DATE' | 'AGE' | 'PHONE' | 'FAX' | 'EMAIL' | 'SSN' | 'MRN' | 'HEALTH_PLAN' | 'ACCOUNT' | 'LICENSE' | 'VEHICLE' | 'DEVICE' | 'URL' | 'IP' | 'BIOMETRIC' | 'ID';

interface Marker {
  kind: Kind;
  /** What it is, for messages: "record 3 fax". */
  label: string;
  value: string;
  patterns: RegExp[];
}

const lex = lexicons();
const taken = new Set<string>();

/** A made-up word no lexicon knows (so no surrogate or ordinary text can be it): "Tavatok". */
function word(): string {
  const cons = 'bdfgklmnprstvxzq';
  for (;;) {
    let w = '';
    for (let i = 0; i < 3; i++) w += (cons[randomInt(cons.length)] as string) + ('aeiou'[randomInt(5)] as string);
    w += 'xzqvk'[randomInt(5)] as string;
    if (!/[xzqv]/.test(w.slice(0, -1)) || taken.has(w)) continue;
    if (lex.firstNames.has(w) || lex.surnames.has(w) || lex.english.has(w) || lex.clinical.has(w) || lex.cities.has(w)) continue;
    taken.add(w);
    return (w[0] as string).toUpperCase() + w.slice(1);
  }
}
const digits = (n: number) => Array.from({ length: n }, () => String(randomInt(10))).join('');
const nz = () => String(1 + randomInt(9));
const letters = (n: number) => Array.from({ length: n }, () => 'ABCDEFGHJKLMNPRSTUVWXYZ'[randomInt(23)]).join('');
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const pad = (n: number) => String(n).padStart(2, '0');

interface Day {
  year: number;
  month: number;
  day: number;
}
const iso = (d: Day) => `${d.year}-${pad(d.month)}-${pad(d.day)}`;
const usDate = (d: Day) => `${d.month}/${d.day}/${d.year}`;
const longDate = (d: Day) => `${MONTHS[d.month - 1]} ${d.day}, ${d.year}`;
const phoneStyle = (p: string, style: number) =>
  style === 0 ? `(${p.slice(0, 3)}) ${p.slice(3, 6)}-${p.slice(6)}` : style === 1 ? `${p.slice(0, 3)}-${p.slice(3, 6)}-${p.slice(6)}` : `${p.slice(0, 3)}.${p.slice(3, 6)}.${p.slice(6)}`;
const phoneNumber = () => `${2 + randomInt(8)}${digits(2)}${2 + randomInt(8)}${digits(6)}`;

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
/** The value as itself, any case, not inside a longer word or number. */
function bounded(value: string): RegExp {
  return new RegExp(`(?<![A-Za-z0-9.])${escape(value)}(?![A-Za-z0-9]|\\.\\d)`, 'i');
}
/** The digits of a value with nothing, or any separators, between them (SSN 123456789, 123 45 6789). */
function digitsAnyhow(value: string): RegExp {
  const d = value.replace(/\D/g, '');
  return new RegExp(`(?<![A-Za-z0-9.])${d.split('').join('[\\s().\\/-]{0,2}')}(?![A-Za-z0-9]|\\.\\d)`, 'i');
}
/** Letters and digits of a code with any separators or none (FP-AB123456-CD as FPAB123456CD). */
function codeAnyhow(value: string): RegExp {
  const c = value.replace(/[^A-Za-z0-9]/g, '');
  return new RegExp(`(?<![A-Za-z0-9])${c.split('').map(escape).join('[\\s./-]?')}(?![A-Za-z0-9])`, 'i');
}
function dateForms(d: Day): RegExp[] {
  const mon = MONTHS[d.month - 1] as string;
  return [
    bounded(iso(d)),
    bounded(`${d.year}/${pad(d.month)}/${pad(d.day)}`),
    bounded(usDate(d)),
    bounded(`${pad(d.month)}/${pad(d.day)}/${d.year}`),
    bounded(`${d.month}-${d.day}-${d.year}`),
    new RegExp(`\\b(?:${mon}|${mon.slice(0, 3)}\\.?)\\s+0?${d.day}(?:st|nd|rd|th)?,?\\s+${d.year}\\b`, 'i'),
    new RegExp(`\\b0?${d.day}\\s+(?:${mon}|${mon.slice(0, 3)}\\.?),?\\s+${d.year}\\b`, 'i'),
    bounded(`${d.year}${pad(d.month)}${pad(d.day)}`),
    bounded(`${pad(d.month)}${pad(d.day)}${d.year}`),
  ];
}

interface CanaryRecord {
  id: string;
  patientId: string;
  patientName: string;
  relativeName: string;
  attending: string;
  mrn: string;
  dob: string;
  /** Admission date (ISO), the note date of an OMOP source. */
  admit: string;
  address: string;
  facility: string;
  phone: string;
  email: string;
  ssn: string;
  member: string;
  ward: string;
  note: string;
  label: string;
  markers: Marker[];
  /** The pieces an OMOP source keeps in its own tables: location, care site, provider. */
  parts: { houseNo: string; street: string; city: string; zip: string; attFirst: string; attLast: string };
}

/**
 * One synthetic patient. Every date of every record lies in a year of its own, three years from any
 * other (birth 1850+6i, admission 1853+6i): a date shifted by de-identification (at most a year) can
 * never be another marker date, and none is near the timestamps of the run.
 */
function canaryRecord(i: number): CanaryRecord {
  if (i > 25) throw new Error('the date years of record 26 on would come near the present');
  const first = word();
  const last = word();
  const relFirst = word();
  const attFirst = word();
  const attLast = word();
  const intFirst = word();
  const intLast = word();
  const street = word();
  const city = word();
  const facility = word();
  const emailUser = word().toLowerCase();
  const emailDomain = word().toLowerCase();
  const urlHost = word().toLowerCase();
  const zip = `0${1000 + randomInt(8999)}`;
  const houseNo = String(100 + randomInt(8900));
  const dob: Day = { year: 1850 + 6 * i, month: 1 + randomInt(12), day: 1 + randomInt(28) };
  const admit: Day = { year: 1853 + 6 * i, month: 1 + randomInt(12), day: 1 + randomInt(28) };
  const age = 91 + randomInt(28);
  const phone = phoneNumber();
  const fax = phoneNumber();
  const ssn = `${1 + randomInt(8)}${digits(2)}-${nz()}${digits(1)}-${nz()}${digits(3)}`;
  const mrn = `${nz()}${digits(8)}`;
  const member = `${letters(3)}${digits(9)}`;
  const account = `${nz()}${digits(9)}`;
  const licence = `S${digits(8)}`;
  const vin = `${nz()}${letters(4)}${digits(2)}${letters(2)}${digits(8)}`;
  const plate = `${nz()}${letters(3)}${digits(3)}`;
  const serial = `${letters(3)}${digits(7)}`;
  const biometric = `FP-${letters(2)}${digits(6)}-${letters(2)}`;
  const urlPath = `${letters(3).toLowerCase()}${digits(6)}`;
  const ip = `${11 + randomInt(80)}.${randomInt(256)}.${randomInt(256)}.${1 + randomInt(254)}`;
  const accession = `${letters(2)}${digits(8)}`;
  const id = `ENC${digits(10)}`;
  const patientId = `PT${digits(9)}`;
  const email = `${emailUser}@${emailDomain}.net`;
  const url = `https://www.${urlHost}.org/chart/${urlPath}`;
  const address = `${houseNo} ${street} Lane, ${city}, MA ${zip}`;
  const plan = ['Medicare', 'BCBS', 'Aetna'][i % 3] as string;
  // One record's ward is itself an identifier (a named unit): exports must count it as "(other)".
  const ward = i === 7 ? `${word()} Pavilion` : i % 2 ? 'medicine' : 'surgery';

  // Some extracts carry no names in structured data (an OMOP CDM source has none): in those records
  // de-identification must find the people of the note by the cues around them alone.
  const namesKnown = !NO_STRUCTURED_NAMES.includes(i);
  const people = namesKnown
    ? [
        `${age}-year-old patient ${first} ${last} (MRN ${mrn}, DOB ${i % 2 ? usDate(dob) : longDate(dob)}) admitted ${i % 2 ? longDate(admit) : iso(admit)} from home at ${address}.`,
        `Transferred from ${facility} Memorial Hospital. Daughter ${relFirst} ${last} (cell ${phoneStyle(phone, i % 3)}) updated; fax records to ${phoneStyle(fax, (i + 1) % 3)}.`,
      ]
    : [
        `Patient: ${first} ${last}, ${age}-year-old (MRN ${mrn}, DOB ${i % 2 ? usDate(dob) : longDate(dob)}), admitted ${i % 2 ? longDate(admit) : iso(admit)} from home at ${address}.`,
        `Transferred from ${facility} Memorial Hospital. Mrs. ${last} updated. Daughter: ${relFirst} ${last}, cell ${phoneStyle(phone, i % 3)}; fax records to ${phoneStyle(fax, (i + 1) % 3)}.`,
      ];
  const note = [
    ...people,
    `Email ${email}. SSN ${ssn}. ${plan} member ID ${member}. Acct # ${account}. Driver's license ${licence}.`,
    `Vehicle VIN ${vin}, plate # ${plate}. Pacemaker serial ${serial}. Fingerprint template ${biometric}.`,
    `Patient portal ${url}; last login from IP ${ip}. Accession number ${accession}. Zip code ${zip}.`,
    namesKnown
      ? `Interpreter: ${intFirst} ${intLast}. Seen by Dr. ${attLast}. ${last.toUpperCase()}, ${first.toUpperCase()} asked about discharge; she is aged ${age}.`
      : `Interpreter: ${intFirst} ${intLast}. Attending: ${attFirst} ${attLast}, MD. ${last.toUpperCase()}, ${first.toUpperCase()} asked Dr. ${attLast} about discharge; she is aged ${age}.`,
    i === FAILING ? `Wound healing (${FAIL_SENTINEL}).` : 'Wound healing, stable vital signs, follow up in clinic.',
  ].join(' ');

  const m = (kind: Kind, what: string, value: string, patterns: RegExp[]): Marker => ({ kind, label: `record ${i} ${what}`, value, patterns });
  const name = (what: string, v: string) => m('NAME', what, v, [bounded(v)]);
  const markers: Marker[] = [
    name('first name', first),
    name('surname', last),
    name('relative', relFirst),
    name('attending first name', attFirst),
    name('attending surname', attLast),
    name('interpreter first name', intFirst),
    name('interpreter surname', intLast),
    m('LOCATION', 'street', street, [bounded(street), bounded(`${houseNo} ${street}`)]),
    m('LOCATION', 'city', city, [bounded(city)]),
    m('LOCATION', 'facility', facility, [bounded(facility)]),
    m('ZIP', 'ZIP', zip, [bounded(zip)]),
    m('DATE', 'birth date', iso(dob), dateForms(dob)),
    m('DATE', 'admission date', iso(admit), dateForms(admit)),
    m('AGE', 'age', String(age), [new RegExp(`(?<![0-9])${age}(?:-|\\s)?(?:year|yr|y/?o\\b|yo\\b)`, 'i'), new RegExp(`\\bage[ds]?:?\\s*${age}(?![0-9])`, 'i')]),
    m('PHONE', 'phone', phone, [digitsAnyhow(phone)]),
    m('FAX', 'fax', fax, [digitsAnyhow(fax)]),
    m('EMAIL', 'e-mail', email, [bounded(email), bounded(emailUser), bounded(emailDomain)]),
    m('SSN', 'SSN', ssn, [bounded(ssn), digitsAnyhow(ssn)]),
    m('MRN', 'MRN', mrn, [digitsAnyhow(mrn)]),
    m('HEALTH_PLAN', 'member id', member, [codeAnyhow(member)]),
    m('ACCOUNT', 'account', account, [digitsAnyhow(account)]),
    m('LICENSE', 'licence', licence, [codeAnyhow(licence)]),
    m('VEHICLE', 'VIN', vin, [codeAnyhow(vin)]),
    m('VEHICLE', 'plate', plate, [codeAnyhow(plate)]),
    m('DEVICE', 'serial', serial, [codeAnyhow(serial)]),
    m('BIOMETRIC', 'fingerprint', biometric, [codeAnyhow(biometric)]),
    m('URL', 'URL', url, [bounded(url), bounded(urlHost), codeAnyhow(urlPath)]),
    m('IP', 'IP', ip, [new RegExp(`(?<![0-9.])${escape(ip)}(?![0-9]|\\.\\d)`)]),
    m('ID', 'accession', accession, [codeAnyhow(accession)]),
    m('ID', 'record id', id, [codeAnyhow(id)]),
    m('ID', 'patient id', patientId, [codeAnyhow(patientId)]),
  ];
  if (i === 7) markers.push(m('LOCATION', 'ward', ward, [bounded(ward.split(' ')[0] as string)]));

  return {
    id,
    patientId,
    patientName: namesKnown ? `${first} ${last}` : '',
    relativeName: namesKnown ? `${relFirst} ${last}` : '',
    attending: namesKnown ? `${attFirst} ${attLast}` : '',
    mrn,
    dob: iso(dob),
    admit: iso(admit),
    address,
    facility: `${facility} Memorial Hospital`,
    phone: phoneStyle(phone, 1),
    email,
    ssn,
    member,
    ward,
    note,
    label: i % 2 ? 'yes' : 'no',
    markers,
    parts: { houseNo, street, city, zip, attFirst, attLast },
  };
}

/** Every marker found in `text`, as "record 3 fax (FAX)". */
function markersIn(text: string, markers: Marker[]): string[] {
  return markers.filter((mk) => mk.patterns.some((p) => p.test(text))).map((mk) => `${mk.label} (${mk.kind})`);
}

// ---------------------------------------------------------------------------------------------------
// The site's benchmark and data, in the documented format: a benchmark folder (catalog.dirs) whose data
// the site supplies, bound in site-data.json to a CSV with the site's own column name for the note.

const COLUMNS = [
  'encounter_id',
  'patient_id',
  'patient_name',
  'relative_name',
  'attending',
  'mrn',
  'dob',
  'address',
  'facility',
  'phone',
  'email',
  'ssn',
  'member_id',
  'ward',
  'NOTE_TEXT',
  'label',
] as const;

function csvOf(records: CanaryRecord[]): string {
  const quote = (v: string) => `"${v.replace(/"/g, '""')}"`;
  const row = (r: CanaryRecord) =>
    [r.id, r.patientId, r.patientName, r.relativeName, r.attending, r.mrn, r.dob, r.address, r.facility, r.phone, r.email, r.ssn, r.member, r.ward, r.note, r.label].map(quote).join(',');
  return [COLUMNS.join(','), ...records.map(row)].join('\n') + '\n';
}

function writeBenchmark(dir: string, id: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'prompt.txt'), 'Read the clinical note.\n\n{{note}}\n\nIs a follow-up visit needed?\n{{choices}}\nAnswer:');
  const col = (name: string, description: string, optional = false) => ({ name, description, ...(optional ? { optional } : {}) });
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id,
      version: '1.0.0',
      displayName: `PHI canary (${id})`,
      category: 'Administration and Workflow',
      subcategory: 'Care Coordination and Planning',
      tier: 'private',
      dataset: {
        origin: 'site',
        adapter: 'columns',
        columns: {
          id: 'encounter_id',
          vars: { note: 'note' },
          reference: 'label',
          choices: ['yes', 'no'],
          extra: { ward: 'ward' },
          subject: 'patient_id',
          known: {
            names: ['patient_name', 'relative_name', 'attending'],
            mrns: ['mrn'],
            dates: ['dob'],
            addresses: ['address'],
            facilities: ['facility'],
            phones: ['phone'],
            emails: ['email'],
            other: ['ssn', 'member_id'],
          },
        },
      },
      dataRequirements: {
        summary: 'One row per encounter note, with the structured identifiers of the record.',
        formats: ['csv'],
        columns: [
          col('encounter_id', 'Encounter id'),
          col('note', 'Note text'),
          col('label', 'yes or no'),
          col('ward', 'Ward'),
          ...['patient_id', 'patient_name', 'relative_name', 'attending', 'mrn', 'dob', 'address', 'facility', 'phone', 'email', 'ssn', 'member_id'].map((c) => col(c, 'structured identifier', true)),
        ],
      },
      prompt: { templateFile: 'prompt.txt', maxTokens: 5 },
      references: 'label column',
      metrics: { main: 'exact_match' },
      subgroups: [{ field: 'ward', values: ['medicine', 'surgery'] }],
      split: 'test',
      lowerIsBetter: false,
    }),
  );
}

// ---------------------------------------------------------------------------------------------------
// An OMOP CDM source (when a PostgreSQL server is at hand): notes in `note`, the person's MRN
// (person_source_value) and birth date in `person`, which is all the structured identity OMOP has.

/** The variable the site data file names for the OMOP database URL. */
const OMOP_ENV = 'EHRBENCH_CANARY_OMOP_URL';
const OMOP_RECORDS = 3;

interface OmopSource {
  url: string;
  records: CanaryRecord[];
  noteIds: string[];
  personIds: string[];
  /** Every value written to the source, for the control that the search finds its markers. */
  text: string;
  drop(): Promise<void>;
}

async function createOmopSource(admin: string, records: CanaryRecord[]): Promise<OmopSource> {
  const name = `ehrbench_omop_${digits(12)}`;
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = u.toString();
  const noteIds = records.map(() => `${nz()}${digits(9)}`);
  const personIds = records.map(() => `${nz()}${digits(8)}`);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  // The CDM 5.4 tables that hold identity: the person's address (location), the care site, the note's and
  // the visit's provider. Their rows carry the record's street, town, facility and attending.
  await db.query(`
    CREATE SCHEMA cdm;
    CREATE TABLE cdm.location (location_id bigint PRIMARY KEY, address_1 varchar(50), address_2 varchar(50), city varchar(50), state varchar(2),
      zip varchar(9), county varchar(20), location_source_value varchar(50), country_concept_id integer, country_source_value varchar(80),
      latitude numeric, longitude numeric);
    CREATE TABLE cdm.care_site (care_site_id bigint PRIMARY KEY, care_site_name varchar(255), place_of_service_concept_id integer, location_id bigint,
      care_site_source_value varchar(50), place_of_service_source_value varchar(50));
    CREATE TABLE cdm.provider (provider_id bigint PRIMARY KEY, provider_name varchar(255), npi varchar(20), dea varchar(20), specialty_concept_id integer,
      care_site_id bigint, year_of_birth integer, gender_concept_id integer, provider_source_value varchar(50), specialty_source_value varchar(50),
      specialty_source_concept_id integer, gender_source_value varchar(50), gender_source_concept_id integer);
    CREATE TABLE cdm.person (person_id bigint PRIMARY KEY, gender_concept_id integer, year_of_birth integer, month_of_birth integer,
      day_of_birth integer, birth_datetime timestamp, race_concept_id integer, ethnicity_concept_id integer, location_id bigint, provider_id bigint,
      care_site_id bigint, person_source_value varchar(50), gender_source_value varchar(50), gender_source_concept_id integer,
      race_source_value varchar(50), race_source_concept_id integer, ethnicity_source_value varchar(50), ethnicity_source_concept_id integer);
    CREATE TABLE cdm.visit_occurrence (visit_occurrence_id bigint PRIMARY KEY, person_id bigint, visit_concept_id integer, visit_start_date date,
      visit_start_datetime timestamp, visit_end_date date, visit_end_datetime timestamp, visit_type_concept_id integer, provider_id bigint,
      care_site_id bigint, visit_source_value varchar(50), visit_source_concept_id integer, admitted_from_concept_id integer,
      admitted_from_source_value varchar(50), discharged_to_concept_id integer, discharged_to_source_value varchar(50),
      preceding_visit_occurrence_id bigint);
    CREATE TABLE cdm.note (note_id bigint PRIMARY KEY, person_id bigint, note_date date, note_datetime timestamp,
      note_type_concept_id integer, note_class_concept_id integer, note_title varchar(250), note_text text,
      encoding_concept_id integer, language_concept_id integer, provider_id bigint, visit_occurrence_id bigint, visit_detail_id bigint,
      note_source_value varchar(50), note_event_id bigint, note_event_field_concept_id integer)`);
  const values: string[] = [];
  for (const [k, r] of records.entries()) {
    const [year, month, day] = r.dob.split('-').map(Number);
    const id = k + 1;
    const p = r.parts;
    await db.query('INSERT INTO cdm.location (location_id, address_1, city, state, zip) VALUES ($1, $2, $3, $4, $5)', [id, `${p.houseNo} ${p.street} Lane`, p.city, 'MA', p.zip]);
    await db.query('INSERT INTO cdm.care_site (care_site_id, care_site_name, location_id) VALUES ($1, $2, $1)', [id, r.facility]);
    await db.query('INSERT INTO cdm.provider (provider_id, provider_name, care_site_id) VALUES ($1, $2, $1)', [id, `${p.attLast}, ${p.attFirst}`]);
    await db.query(
      'INSERT INTO cdm.person (person_id, gender_concept_id, year_of_birth, month_of_birth, day_of_birth, birth_datetime, location_id, provider_id, care_site_id, person_source_value) VALUES ($1, 8532, $2, $3, $4, $5, $6, $6, $6, $7)',
      [personIds[k], year, month, day, `${r.dob} 00:00`, id, r.mrn],
    );
    await db.query(
      'INSERT INTO cdm.visit_occurrence (visit_occurrence_id, person_id, visit_concept_id, visit_start_date, visit_end_date, visit_type_concept_id, provider_id, care_site_id) VALUES ($1, $2, 9201, $3, $3, 44818518, $1, $1)',
      [id, personIds[k], r.admit],
    );
    await db.query(
      "INSERT INTO cdm.note (note_id, person_id, note_date, note_type_concept_id, note_class_concept_id, note_title, note_text, encoding_concept_id, language_concept_id, provider_id, visit_occurrence_id) VALUES ($1, $2, $3, 44814645, 706, 'Progress note', $4, 0, 0, $5, $5)",
      [noteIds[k], personIds[k], r.admit, r.note, id],
    );
    values.push(personIds[k] as string, r.dob, r.mrn, noteIds[k] as string, r.admit, r.note, r.facility, `${p.attLast}, ${p.attFirst}`);
  }
  await db.end();
  return {
    url,
    records,
    noteIds,
    personIds,
    text: values.join('\n'),
    drop: async () => {
      const a = new pg.Client({ connectionString: admin });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

/**
 * The markers of an OMOP record: its own, with the note and person ids in place of the CSV's ids (the
 * attending's first name is in the CDM's provider table, as the CSV's structured columns hold it).
 */
function omopMarkers(r: CanaryRecord, noteId: string, personId: string): Marker[] {
  const label = (r.markers[0] as Marker).label.replace(/ first name$/, '');
  return [
    ...r.markers.filter((mk) => !/ (record id|patient id)$/.test(mk.label)),
    { kind: 'ID', label: `${label} note_id`, value: noteId, patterns: [digitsAnyhow(noteId)] },
    { kind: 'ID', label: `${label} person_id`, value: personId, patterns: [digitsAnyhow(personId)] },
  ];
}

function writeOmopBenchmark(dir: string): void {
  writeBenchmark(dir, 'site_canary_omop');
  const file = join(dir, 'benchmark.json');
  const b = JSON.parse(readFileSync(file, 'utf8'));
  b.dataset.columns = { id: '#row', vars: { note: 'note' }, reference: 'label', choices: ['yes', 'no'] };
  b.dataRequirements = {
    summary: 'Progress notes from the OMOP note table, labelled.',
    formats: ['omop-note'],
    columns: [
      { name: 'note', description: 'note_text' },
      { name: 'label', description: 'yes or no, from the labels file' },
    ],
  };
  delete b.subgroups;
  writeFileSync(file, JSON.stringify(b));
}

// ---------------------------------------------------------------------------------------------------
// Capturing what leaves

interface Captured {
  /** Every call the logger got, before its allowlist: event names and raw fields (errors as text). */
  loggerInput: string[];
  /** Messages of errors thrown by the model stage. */
  thrown: string[];
  /** Bodies of every API answer (errors included). */
  api: string[];
  /** Anything written to the console or the process's standard streams during the test. */
  console: string[];
  /** What the CLI printed (standard output and error) to people using it against the daemon. */
  cli: string[];
}

function errorText(err: unknown): string {
  const e = err as { name?: string; message?: string; stack?: string; code?: string; rule?: string };
  return [e?.name, e?.code, e?.rule, e?.message, e?.stack, describeError(err).message, String(err)].filter(Boolean).join(' | ');
}

function rawText(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Error ? errorText(v) : typeof v === 'bigint' ? String(v) : v)) ?? '';
}

/** The logger as the engine, the daemon and the export service see it, keeping a copy of every raw call. */
function recordingLogger(inner: Logger, into: string[]): Logger {
  const wrap =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (event: string, fields?: Record<string, unknown>): void => {
      into.push(`${level} ${event} ${rawText(fields ?? {})}`);
      inner[level](event, fields);
    };
  return { debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error'), close: () => inner.close() };
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

async function waitForRun(t: TestDaemon, runId: string, captured: Captured): Promise<any> {
  for (let i = 0; i < 1200; i++) {
    const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    if (['completed', 'failed', 'halted', 'cancelled'].includes(r.json.status)) {
      captured.api.push(JSON.stringify(r.json));
      return r.json;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`run ${runId} did not finish`);
}

describe.each(backends())('PHI canary through a full private run (%s)', (backend) => {
  it('no marker of the site data reaches the model, logs, errors, audit trail, metrics or the export bundle', async () => {
    const records = Array.from({ length: RECORDS }, (_, i) => canaryRecord(i));
    // The second benchmark's file breaks after its first record: the run fails while reading it.
    const broken = [canaryRecord(RECORDS), canaryRecord(RECORDS + 1)];
    // Notes of an OMOP source too, where a PostgreSQL server is at hand (for either run store).
    const omopRecords = process.env.TEST_DATABASE_URL ? Array.from({ length: OMOP_RECORDS }, (_, k) => canaryRecord(RECORDS + 2 + k)) : [];
    let omop: OmopSource | undefined;
    const markers = [...records, ...broken].flatMap((r) => r.markers);
    const kinds = new Set(markers.map((mk) => mk.kind));
    expect(kinds.size).toBe(19); // the 18 Safe Harbor kinds as ehrbench names them (VEHICLE, DEVICE... and ID)

    const captured: Captured = { loggerInput: [], thrown: [], api: [], console: [], cli: [] };
    // Console and standard streams of this process, for anything printed on the way.
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((level) =>
      jest.spyOn(console, level).mockImplementation((...args: unknown[]) => void captured.console.push(args.map((a) => (typeof a === 'string' ? a : rawText(a))).join(' '))),
    );
    const writes = [process.stdout, process.stderr].map((stream) => {
      const original = stream.write.bind(stream);
      stream.write = ((chunk: unknown, ...rest: unknown[]) => {
        captured.console.push(String(chunk));
        return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write;
      return () => (stream.write = original as typeof stream.write);
    });

    let siteCsv = '';
    let brokenCsv = '';
    let started: TestDaemon | undefined;
    try {
      if (omopRecords.length > 0) {
        omop = await createOmopSource(process.env.TEST_DATABASE_URL as string, omopRecords);
        process.env[OMOP_ENV] = omop.url;
        const { noteIds, personIds } = omop;
        markers.push(...omopRecords.flatMap((r, k) => omopMarkers(r, noteIds[k] as string, personIds[k] as string)));
      }
      const t = await startTestDaemon({
        backend,
        workers: 1,
        concurrency: 2,
        behaviour: (n, prompt) => {
          // Error bodies quote what they were sent, as some servers do.
          const body = JSON.stringify({ error: { message: `${ECHO}: ${prompt}`, type: 'server_error' } });
          if (prompt.includes(FAIL_SENTINEL)) return { kind: 'status', status: 503, body };
          if (n % 5 === 0) return { kind: 'status', status: 500, body };
          if (n % 7 === 3) return { kind: 'status', status: 429, retryAfter: '0', body };
          return { kind: 'answer' };
        },
        prepare: (home, config) => {
          const catalogDir = join(home.home, 'site-catalog');
          writeBenchmark(join(catalogDir, 'site_canary'), 'site_canary');
          writeBenchmark(join(catalogDir, 'site_canary_broken'), 'site_canary_broken');
          const dataDir = join(home.home, 'site-data');
          mkdirSync(dataDir, { recursive: true });
          siteCsv = csvOf(records);
          writeFileSync(join(dataDir, 'canary.csv'), siteCsv);
          // The last record's SSN unquoted and followed by a quote: not valid CSV, and the parser's own
          // error message quotes the field (the SSN) it was reading.
          const last = broken[1] as CanaryRecord;
          brokenCsv = csvOf(broken).replace(`"${last.ssn}"`, `${last.ssn} "unverified"`);
          // Valid when the run is requested (the request checks the binding); broken before it is planned.
          writeFileSync(join(dataDir, 'broken.csv'), csvOf(broken));
          const bindings: Record<string, unknown> = {
            site_canary: { source: { type: 'csv', path: 'site-data/canary.csv' }, columns: { note: 'NOTE_TEXT' } },
            site_canary_broken: { source: { type: 'csv', path: 'site-data/broken.csv' }, columns: { note: 'NOTE_TEXT' } },
          };
          if (omop) {
            writeOmopBenchmark(join(catalogDir, 'site_canary_omop'));
            writeFileSync(join(dataDir, 'omop-labels.csv'), ['note_id,label', ...omop.noteIds.map((id, k) => `${id},${k % 2 ? 'yes' : 'no'}`)].join('\n') + '\n');
            bindings.site_canary_omop = {
              source: { type: 'omop-note', connection: { env: OMOP_ENV }, schema: 'cdm', labels: { path: 'site-data/omop-labels.csv' } },
              columns: { note: 'note_text' },
            };
          }
          writeFileSync(join(home.home, 'site-data.json'), JSON.stringify({ benchmarks: bindings }));
          config.catalog = { ...config.catalog, dirs: [...(config.catalog?.dirs ?? []), catalogDir] };
          config.logging = { level: 'debug', file: join(home.home, 'logs', 'ehrbench.log') };
          config.models = { timeoutMs: 10_000, maxRetries: 1, maxBackoffMs: 200 };
          config.runs = { ...config.runs, maxAttempts: 2 };
        },
      });
      started = t;

      const { app } = t;
      // The raw input of the logger (what its allowlist then reduces), and the model stage's errors.
      const logger = recordingLogger(app.logger, captured.loggerInput);
      app.engine.logger = logger;
      app.logger = logger;
      const calls = app.engine.calls;
      const complete = calls.complete.bind(calls);
      calls.complete = (run, call) =>
        complete(run, call).catch((err: unknown) => {
          captured.thrown.push(errorText(err));
          throw err;
        });
      // One record goes through a de-identification stage whose detectors are missing (a regression
      // in a detector, say): only its known identifiers are replaced, the residual scan must block it.
      const full = app.engine.deid;
      const weak = createDeidStage(settingsFrom(app.config.deid), { detectors: [] });
      app.engine.deid = {
        version: full.version,
        apply: (ctx, instance, prompt) => (instance.key === records[BLOCKED]?.id ? weak.apply(ctx, instance, prompt) : full.apply(ctx, instance, prompt)),
      } satisfies DeidStage;

      const api = async (who: string, method: string, path: string, body?: unknown) => {
        const r = await t.call(who, method, path, body);
        captured.api.push(typeof r.json === 'string' ? r.json : JSON.stringify(r.json ?? null));
        return r;
      };

      // Compliance records the IRB approval; the researcher requests; another officer approves.
      const approval = await api('carol', 'POST', '/v1/approvals', {
        protocolNumber: 'IRB-CANARY-1',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        benchmarks: ['site_canary', 'site_canary_broken', ...(omop ? ['site_canary_omop'] : [])],
        purpose: 'PHI canary',
      });
      expect(approval.status).toBe(200);
      const approvalId = approval.json.approvalId as string;
      const requested = await api('alice', 'POST', '/v1/runs', { benchmarkId: 'site_canary', endpointId: 'vpc-private', approvalId });
      expect(requested.json.status).toBe('requested');
      const runId = requested.json.runId as string;
      expect((await api('alice', 'POST', `/v1/runs/${runId}/approve`, {})).status).toBe(403);
      expect((await api('dave', 'POST', `/v1/runs/${runId}/approve`, {})).status).toBe(200);
      const run = await waitForRun(t, runId, captured);
      expect(run.status).toBe('completed');
      expect(run.counts).toMatchObject({ blocked: 1, pending: 0, claimed: 0 });
      expect(run.counts.failed).toBeGreaterThanOrEqual(1);
      expect(run.counts.done).toBeGreaterThanOrEqual(11);

      // A run whose file changes (here: turns malformed) while it awaits approval fails: it is held to the
      // data revision it recorded when requested (dataset.hash-mismatch), and says why without quoting the file.
      const brokenReq = await api('alice', 'POST', '/v1/runs', { benchmarkId: 'site_canary_broken', endpointId: 'vpc-private', approvalId });
      expect(brokenReq.json.status).toBe('requested');
      writeFileSync(join(t.home.home, 'site-data', 'broken.csv'), brokenCsv);
      // A new request on the malformed file is refused before any run exists: the requester is told the
      // daemon cannot serve it, without the file, the record or the parser's words (the log has the code).
      const runsBefore = (await t.app.engine.store.listRuns(1000)).length;
      const refused = await api('alice', 'POST', '/v1/runs', { benchmarkId: 'site_canary_broken', endpointId: 'vpc-private', approvalId });
      expect(refused.status).toBe(503);
      expect(refused.json).toMatchObject({ error: 'service.unavailable' });
      expect((await t.app.engine.store.listRuns(1000)).length).toBe(runsBefore);
      expect(await t.app.db.query("SELECT 1 FROM audit_events WHERE event_type = 'run.request' AND rule = 'run.binding-invalid'")).toHaveLength(1);
      expect((await api('carol', 'POST', `/v1/runs/${brokenReq.json.runId}/approve`, {})).status).toBe(200);
      const brokenRun = await waitForRun(t, brokenReq.json.runId as string, captured);
      expect(brokenRun.status).toBe('failed');
      expect(brokenRun.errorCode).toBe('dataset.hash-mismatch');
      expect((await api('alice', 'POST', '/v1/exports', { runIds: [brokenReq.json.runId] })).json.rule).toBe('export.run-not-completed');

      // A run on the OMOP source: no structured names there, only the MRN and birth date of the person.
      let omopRunId: string | undefined;
      if (omop) {
        const req = await api('alice', 'POST', '/v1/runs', { benchmarkId: 'site_canary_omop', endpointId: 'vpc-private', approvalId });
        omopRunId = req.json.runId as string;
        expect((await api('carol', 'POST', `/v1/runs/${omopRunId}/approve`, {})).status).toBe(200);
        const omopRun = await waitForRun(t, omopRunId, captured);
        expect(omopRun).toMatchObject({ status: 'completed', counts: { blocked: 0 } });
        expect(omopRun.counts.done + omopRun.counts.failed).toBe(OMOP_RECORDS);
      }

      // The export: requested by the researcher, reviewed and released by compliance, downloaded.
      const exp = await api('alice', 'POST', '/v1/exports', { runIds: [runId] });
      expect(exp.status).toBe(200);
      const exportId = exp.json.exportId as string;
      const review = await api('carol', 'GET', `/v1/exports/${exportId}`);
      expect(review.status).toBe(200);
      const released = await api('dave', 'POST', `/v1/exports/${exportId}/release`, { format: 'helm' });
      expect(released.status).toBe(200);
      const download = await api('alice', 'GET', `/v1/exports/${exportId}/files`);
      const bundleText = download.json.bundle as string;
      expect(verifyBundle(bundleText, loadExportPublicKey(join(app.config.keysDir, EXPORT_PUBLIC_KEY_FILE)))).toMatchObject({ ok: true });
      const bundle = JSON.parse(bundleText);
      expect(bundle.results[0]).toMatchObject({ runId, deidVersion: full.version });
      expect(bundle.results[0].n.low).toBeGreaterThanOrEqual(10);

      // The CLI as people use it against the daemon: runs shown and listed, a refusal printed.
      const cli = async (who: string, args: string[]) => {
        let out = '';
        let err = '';
        const id = t.ids[who] as { certFile: string; keyFile: string };
        process.exitCode = undefined;
        const code = await main([...args, '--server', `https://localhost:${t.daemon.port}`, '--cert', id.certFile, '--key', id.keyFile, '--ca', t.caFile], {
          stdout: (s) => void (out += s),
          stderr: (s) => void (err += s),
          env: { PATH: process.env.PATH },
        });
        process.exitCode = undefined;
        captured.cli.push(out, err);
        return code;
      };
      expect(await cli('alice', ['runs', 'show', runId])).toBe(0);
      expect(await cli('alice', ['runs', 'show', brokenReq.json.runId as string, '--json'])).toBe(0);
      expect(await cli('alice', ['runs', 'list'])).toBe(0);
      expect(await cli('alice', ['runs', 'approve', runId])).not.toBe(0);
      expect(captured.cli.join('')).toContain('dataset.hash-mismatch');

      // The audit trail as auditors read it: API, verification, and the three export formats.
      const auditApi = await api('erin', 'GET', '/v1/audit/events?limit=10000');
      expect(auditApi.status).toBe(200);
      const verified = await api('erin', 'GET', '/v1/audit/verify');
      expect(verified.json.ok).toBe(true);
      let jsonl = '';
      let csv = csvHeader();
      const fhir: unknown[] = [];
      for await (const page of streamRecordPages(app.db)) {
        for (const r of page) {
          jsonl += jsonlEvent(r);
          csv += csvRow(r);
          fhir.push(fhirAuditEvent(r));
        }
      }
      const metrics = await api('erin', 'GET', '/metrics');
      expect(metrics.status).toBe(200);

      // Every table of the store but the work queue (which holds the instances by design).
      const tables = await app.db.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
      );
      expect(tables.map((x) => x.table_name)).toEqual(expect.arrayContaining(['audit_events', 'runs', 'exports', 'export_ledger', 'run_items']));
      const store: Record<string, string> = {};
      for (const { table_name } of tables) {
        if (table_name === 'run_items') continue;
        store[table_name] = rawText(await app.db.query(`SELECT * FROM ${table_name}`));
      }
      const auditRows = await app.db.query<{ event_type: string; outcome: string }>('SELECT * FROM audit_events ORDER BY seq');
      const omopItems = omopRunId ? await app.db.query('SELECT * FROM run_items WHERE run_id = $1', [omopRunId]) : [];
      const items = await app.db.query<{ item_key: string; payload: unknown; prediction: string | null; outcome_rule: string | null; state: string }>('SELECT * FROM run_items WHERE run_id = $1', [
        runId,
      ]);

      // Stop the daemon and app (seals the trail, flushes the log), then read the files left behind.
      const home = t.home.home;
      await t.stop();
      for (const restore of writes) restore();
      for (const spy of spies) spy.mockRestore();
      const logFiles = filesUnder(join(home, 'logs'));
      const logText = logFiles.map((f) => readFileSync(f, 'utf8')).join('\n');
      const exportFiles = filesUnder(join(home, 'exports')).map((f) => readFileSync(f, 'utf8'));
      const witnessFiles = filesUnder(join(home, 'audit')).map((f) => readFileSync(f, 'utf8'));

      const sinks: Record<string, string> = {
        'model server: prompts': t.server.received.map((r) => r.prompt).join('\n'),
        'model server: requests': t.server.received.map((r) => `${r.path}\n${JSON.stringify(r.headers)}\n${r.body}`).join('\n'),
        'log file': logText,
        'logger input': captured.loggerInput.join('\n'),
        console: captured.console.join('\n'),
        'errors thrown by the model stage': captured.thrown.join('\n'),
        'API answers': captured.api.join('\n'),
        'CLI output': captured.cli.join('\n'),
        'audit_events rows': rawText(auditRows),
        'audit API': JSON.stringify(auditApi.json),
        'audit export jsonl': jsonl,
        'audit export csv': csv,
        'audit export fhir': JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry: fhir.map((resource) => ({ resource })) }),
        'audit witness': witnessFiles.join('\n'),
        'export bundle': bundleText,
        'export preview': review.json.preview as string,
        'export files': exportFiles.join('\n'),
        'helm files': JSON.stringify(released.json.files.helm ?? []),
        metrics: typeof metrics.json === 'string' ? metrics.json : JSON.stringify(metrics.json),
        ...Object.fromEntries(Object.entries(store).map(([name, text]) => [`table ${name}`, text])),
      };

      // Controls: the search finds every marker where the data is (the site's files, the work queue).
      const csvMarkers = [...records, ...broken].flatMap((r) => r.markers);
      expect(markersIn(siteCsv + brokenCsv, csvMarkers)).toHaveLength(csvMarkers.length);
      const goodMarkers = records.flatMap((r) => r.markers);
      expect(items).toHaveLength(RECORDS);
      expect(markersIn(rawText(items), goodMarkers)).toHaveLength(goodMarkers.length);
      if (omop) {
        const omopMarkerList = omopRecords.flatMap((r, k) => omopMarkers(r, omop?.noteIds[k] as string, omop?.personIds[k] as string));
        expect(markersIn(omop.text, omopMarkerList)).toHaveLength(omopMarkerList.length);
        expect(markersIn(rawText(omopItems), omopMarkerList)).toHaveLength(omopMarkerList.length);
      }
      // The canary: no marker in anything that left the run store, nor the error bodies of the server.
      // One line per sink that has any: how many markers, of which kinds, the first few by name.
      const found: string[] = [];
      for (const [name, text] of Object.entries(sinks)) {
        const hits = markersIn(text, markers);
        if (hits.length > 0) {
          const kindsHit = [...new Set(hits.map((h) => /\((\w+)\)$/.exec(h)?.[1]))].join(' ');
          found.push(`${name}: ${hits.length} markers (${kindsHit}): ${hits.slice(0, 4).join('; ')}${hits.length > 4 ? '; ...' : ''}`);
        }
        if (!name.startsWith('model server') && text.includes(ECHO)) found.push(`${name}: the model server's error body`);
      }
      expect(found).toEqual([]);

      // Controls: every sink was there to be searched, and the flow took the paths it was meant to.
      // run_deid_evidence holds keyed hashes only when the run's data taught something (deid-run.test.ts reads one that did)
      // The rating tables fill only when clinicians rate a jury benchmark's run (rating-studies.test.ts searches them on a private run),
      const mayBeEmpty = new Set([
        'console',
        'table budget_holds',
        'table judge_spend',
        'table revoked_certificates',
        'table endpoint_slots',
        'table endpoint_workers',
        'table run_deid_evidence',
        'table rating_studies',
        'table rating_items',
        'table ratings',
        // ... and the canary tables only when an approval names a canary (drift-canary.test.ts).
        'table canary_baselines',
        'table canary_claims',
        'table drift_checks',
      ]);
      const emptySinks = Object.entries(sinks).filter(([name, text]) => !mayBeEmpty.has(name) && (text.trim() === '' || text.trim() === '[]'));
      expect(emptySinks.map(([name]) => name)).toEqual([]);
      const prompts = t.server.received.map((r) => r.prompt);
      // Every instance but the blocked one reached the model; failures were retried.
      expect(new Set(prompts).size).toBeGreaterThanOrEqual(RECORDS - 1);
      expect(prompts.length).toBeGreaterThan(new Set(prompts).size);
      expect(prompts.filter((p) => p.includes(FAIL_SENTINEL)).length).toBeGreaterThanOrEqual(2);
      // De-identification did its work on them (surrogates in place of the identifiers).
      const allPrompts = prompts.join('\n');
      expect(allPrompts).toContain('90+');
      expect(allPrompts).toMatch(/MA 0\d\dXX/);
      expect(allPrompts).toContain('@example.org');
      expect(allPrompts).toMatch(/192\.0\.2\.\d+/);
      expect(captured.thrown.join('\n')).toMatch(/HTTP 50[03]/);
      expect(logText).toMatch(/run\.item\.call-failed/);
      expect(logText).toMatch(/run\.completed/);
      expect(logText).toMatch(/run\.stopped/);
      expect(auditRows.filter((r) => r.event_type === 'endpoint.call').length).toBeGreaterThanOrEqual(prompts.length);
      expect(auditRows.filter((r) => r.event_type === 'instance.blocked')).toHaveLength(1);
      expect(auditRows.filter((r) => r.event_type === 'run.fail')).toHaveLength(1);
      expect(sinks.metrics).toMatch(/ehrbench_/);
      // The record whose ward is a named unit counts in "(other)" (when it was scored at all).
      if (items.some((x) => x.item_key === records[7]?.id && x.state === 'done')) {
        expect(bundle.results[0].subgroups[0].cells.map((c: { label: string }) => c.label)).toContain('(other)');
      }
    } finally {
      for (const restore of writes) restore();
      for (const spy of spies) spy.mockRestore();
      await started?.close();
      delete process.env[OMOP_ENV];
      await omop?.drop();
    }
  });
});
