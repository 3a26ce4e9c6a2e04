/**
 * Structured extracts pasted into a note: CSV rows under a header, XML elements and attributes, JSON
 * members. A field is an identifier because of its name ("dob", "patient_name", <mrn>, user="...",
 * "age": 92), whatever its value looks like: "OYAMA, KENJI" in a CSV name column is a name even with no
 * cue around it. Each found value is typed by its field (rule extract.field).
 */
import { type Detection, PRIORITY, type SpanType } from '../types';

/** Field names (lowercase, without separators) and the identifier kind their values are. */
const FIELDS: [SpanType, string][] = [
  [
    'NAME',
    'name patient patientname ptname fullname first firstname given givenname last lastname surname family familyname middle middlename referrer referringprovider provider physician doctor attending pcp nurse author user username technician tech guarantor subscriber insured contact emergencycontact caregiver parent mother father spouse nok nextofkin signedby reviewer performedby orderedby driver owner witness',
  ],
  [
    'DATE',
    'date dob birthdate dateofbirth birthday bday admitdate admissiondate admitted dischargedate discharged dod deathdate dateofdeath visitdate dos servicedate dateofservice implantdate implantdt surgerydate proceduredate',
  ],
  ['MRN', 'mrn mrnumber medicalrecordnumber medicalrecord recordnumber patientid ptid chart chartnumber unitnumber'],
  ['SSN', 'ssn social socialsecurity socialsecuritynumber'],
  ['PHONE', 'phone tel telephone mobile cell cellphone homephone workphone phonenumber contactnumber pager'],
  ['FAX', 'fax faxnumber'],
  ['EMAIL', 'email emailaddress mail'],
  ['LOCATION', 'address addr street streetaddress address1 address2 line1 line2 city town facility hospital clinic practice employer residence county'],
  ['ZIP', 'zip zipcode postal postalcode postcode'],
  ['AGE', 'age ageyears'],
  ['ACCOUNT', 'account accountnumber acct acctnumber fin encounter encounterid visitid csn claim claimnumber invoice'],
  ['HEALTH_PLAN', 'memberid member policy policynumber planid insuranceid subscriberid medicare medicaid mbi payerid'],
  ['DEVICE', 'serial serialnumber sn devicesn deviceid udi imei iccid'],
  ['IP', 'ip ipaddress uploadedfrom sourceip clientip'],
  ['URL', 'url website link'],
  ['LICENSE', 'npi dea license licensenumber'],
  ['VEHICLE', 'vin plate licenseplate'],
  ['ID', 'exportid caseid reportid accession accessionnumber specimenid orderid'],
];

const FIELD_TYPE = new Map<string, SpanType>();
for (const [type, names] of FIELDS) for (const n of names.split(' ')) FIELD_TYPE.set(n, type);

/** "patient_name", "Patient Name", "dob:", "mrn#" -> patientname, dob, mrn; and the kind of value it holds. */
function fieldType(raw: string): SpanType | undefined {
  const key = raw.toLowerCase().replace(/[^a-z0-9]/g, '');
  return FIELD_TYPE.get(key) ?? FIELD_TYPE.get(key.replace(/^(?:pt|patient|pat)(?=.)/, '')) ?? FIELD_TYPE.get(key.replace(/(?:value|text|str)$/, ''));
}

function push(out: Detection[], type: SpanType, start: number, end: number): void {
  // the value without surrounding quotes and spaces
  const priority = PRIORITY[type] + 5;
  if (end > start) out.push({ start, end, type, priority, source: 'detector', rule: 'extract.field' });
}

/** Whether a value may be of its field's kind: an age only over 89, a date or a number only with a digit. */
function plausible(type: SpanType, value: string): boolean {
  const v = value.trim();
  if (v === '' || /^(?:null|none|n\/a|na|unknown|-+)$/i.test(v)) return false;
  if (type === 'AGE') return /^\d{2,3}$/.test(v) && Number(v) >= 90;
  if (['DATE', 'MRN', 'SSN', 'PHONE', 'FAX', 'ZIP', 'ACCOUNT', 'HEALTH_PLAN', 'DEVICE', 'IP', 'LICENSE', 'ID'].includes(type)) return /\d/.test(v);
  return /[A-Za-z0-9]/.test(v);
}

function trimmed(text: string, start: number, end: number): [number, number] {
  while (start < end && /[\s"']/.test(text.charAt(start))) start++;
  while (end > start && /[\s"']/.test(text.charAt(end - 1))) end--;
  return [start, end];
}

/** <mrn>PVM-0018840</mrn>, <name>ELLERY, RUTH A</name>, user="SLC", age="91". */
function xml(text: string, out: Detection[]): void {
  if (!text.includes('<')) return;
  for (const m of text.matchAll(/<([A-Za-z][\w:.-]{0,40})(?:\s[^<>]{0,300})?>([^<>]{1,200})<\/\1\s*>/g)) {
    const type = fieldType((m[1] as string).replace(/^.*:/, ''));
    const value = m[2] as string;
    if (!type || !plausible(type, value)) continue;
    const start = m.index + m[0].indexOf('>') + 1;
    const [s, e] = trimmed(text, start, start + value.length);
    push(out, type, s, e);
  }
  for (const m of text.matchAll(/<[A-Za-z][\w:.-]{0,40}((?:\s+[\w:.-]{1,40}\s*=\s*(?:"[^"<>]{0,200}"|'[^'<>]{0,200}'))+)\s*\/?>/g)) {
    const attrs = m[1] as string;
    const base = m.index + m[0].indexOf(attrs);
    for (const a of attrs.matchAll(/([\w:.-]{1,40})\s*=\s*("([^"]*)"|'([^']*)')/g)) {
      const type = fieldType(a[1] as string);
      const value = a[3] ?? a[4] ?? '';
      if (!type || !plausible(type, value)) continue;
      const start = base + a.index + (a[0].length - (a[2] as string).length) + 1;
      push(out, type, start, start + value.length);
    }
  }
}

/** "dob": "1930-06-04", "age": 92, "patient": "NGUYEN, THANH". */
function json(text: string, out: Detection[]): void {
  if (!text.includes('"')) return;
  for (const m of text.matchAll(/"([\w .-]{1,40})"\s*:\s*(?:"((?:[^"\\\n]|\\.){0,200})"|(-?\d[\d.]{0,20}))/g)) {
    const type = fieldType(m[1] as string);
    const value = m[2] ?? m[3] ?? '';
    if (!type || !plausible(type, value)) continue;
    const start = m.index + m[0].length - value.length - (m[2] !== undefined ? 1 : 0);
    push(out, type, start, start + value.length);
  }
}

/** The cells of one delimited line (RFC 4180 quoting for commas), with their offsets. */
function cells(line: string, offset: number, sep: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  // a table written with pipes may open and close its rows with one: "| Age | 94 |"
  let from = 0;
  let to = line.length;
  if (sep === '|') {
    while (from < to && /\s/.test(line.charAt(from))) from++;
    while (to > from && /\s/.test(line.charAt(to - 1))) to--;
    if (line.charAt(from) === '|') from++;
    if (line.charAt(to - 1) === '|') to--;
  }
  let i = from;
  while (i <= to) {
    const start = i;
    if (sep === ',' && line.charAt(i) === '"') {
      i++;
      while (i < to && !(line.charAt(i) === '"' && line.charAt(i + 1) !== '"')) i += line.charAt(i) === '"' ? 2 : 1;
      i++;
    }
    while (i < to && line.charAt(i) !== sep) i++;
    out.push({ start: offset + start, end: offset + i });
    i++;
  }
  return out;
}

/**
 * Delimited rows under a header (CSV, pipes or tabs): a line of field names, at least two of them
 * identifier fields, and the lines after it with as many cells (until one has not). A pipe table may
 * have a rule line (|---|---|) after its header. A header of one identifier field with a value beside
 * it ("| Age | 94 |") is a two-cell row read the same way.
 */
function csv(text: string, out: Detection[]): void {
  for (const sep of [',', '|', '\t']) if (text.includes(sep)) delimited(text, out, sep);
}

function delimited(text: string, out: Detection[], sep: string): void {
  const lines: { text: string; start: number }[] = [];
  let pos = 0;
  for (const l of text.split('\n')) {
    lines.push({ text: l, start: pos });
    pos += l.length + 1;
  }
  const fieldName = /^\s*"?[A-Za-z][\w .#/-]{0,39}"?\s*$/;
  for (let h = 0; h < lines.length; h++) {
    const header = lines[h] as { text: string; start: number };
    if (!header.text.includes(sep)) continue;
    // a header is short field names; a line of prose with commas is not one (and most lines are prose)
    if (sep === ',' && !/^\s*"?[A-Za-z][\w .#/-]{0,39}"?\s*,\s*"?[A-Za-z][\w .#/-]{0,39}"?\s*(?:,|$)/.test(header.text)) continue;
    const names = cells(header.text, 0, sep).map((c) => header.text.slice(c.start, c.end));
    if (names.length < 2 || !names.every((n) => fieldName.test(n))) {
      // "| Age | 94 |", "DOB: | 03/02/1931": a field and its value on one line (in a table: a comma joins prose)
      if (sep !== ',') pairs(text, header, sep, out);
      continue;
    }
    const types = names.map((n) => fieldType(n.trim().replace(/^"|"$/g, '')));
    if (types.filter(Boolean).length < 2) continue;
    for (let r = h + 1; r < lines.length; r++) {
      const row = lines[r] as { text: string; start: number };
      if (sep === '|' && /^\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*:?-*:?\s*$/.test(row.text)) continue; // the rule under a header
      const cs = cells(row.text, row.start, sep);
      if (cs.length !== names.length || row.text.trim() === '') break;
      cs.forEach((c, k) => {
        const type = types[k];
        if (!type) return;
        const [s, e] = trimmed(text, c.start, c.end);
        if (plausible(type, text.slice(s, e))) push(out, type, s, e);
      });
      h = r;
    }
  }
}

/** Cells of one line in field/value pairs: "| Age | 94 | Sex | F |". */
function pairs(text: string, line: { text: string; start: number }, sep: string, out: Detection[]): void {
  const cs = cells(line.text, line.start, sep);
  for (let k = 0; k + 1 < cs.length; k++) {
    const c = cs[k] as { start: number; end: number };
    const type = fieldType(text.slice(c.start, c.end).replace(/[:"]/g, '').trim());
    if (!type) continue;
    const v = cs[k + 1] as { start: number; end: number };
    const [s, e] = trimmed(text, v.start, v.end);
    if (plausible(type, text.slice(s, e))) push(out, type, s, e);
  }
}

export function detectExtracts(text: string): Detection[] {
  const out: Detection[] = [];
  xml(text, out);
  json(text, out);
  csv(text, out);
  return out;
}
