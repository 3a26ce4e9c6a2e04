/**
 * Identifiers with a recognisable shape or label: phone and fax numbers, e-mail, URLs, IP addresses,
 * SSNs, ZIP codes, ages over 89, and the numbered identifiers (MRN, health plan, account, licence,
 * vehicle, device, biometric, other codes) that notes introduce with a label ("MRN:", "Acct #",
 * "DEA", "VIN", "serial"). A number without a label is an ID only when it is long or mixes letters
 * and digits, which lab values and doses do not.
 */
import { type Detection, PRIORITY, type SpanType } from '../types';
import { cards, coordinates, hosts, wordAges } from './shapes';

/** Every detection names its rule: `pattern.<type>` unless the caller says which shape found it. */
function push(out: Detection[], type: SpanType, start: number, end: number, rule = `pattern.${type.toLowerCase()}`): void {
  if (end > start) out.push({ start, end, type, priority: PRIORITY[type], source: 'detector', rule });
}

const SUFFIX = String.raw`(?:\s*(?:id|number|num|no\.?|nbr|#)){0,2}`;
// A value: a code with a digit, optionally after a short letter prefix ("GSI 55-0098124-02", "AMG 38817702 11", "IMP-CP 571309"),
// and further groups that carry digits ("7719 4420 01").
const VALUE = String.raw`\s*(?:[:#=]|is)?\s*#?\s*((?:[A-Z]{2,5}(?:-[A-Z]{1,5})?[ -](?=[A-Z0-9./-]*\d))?(?=[A-Z0-9./-]*\d)[A-Z0-9](?:[A-Z0-9./-]*[A-Z0-9])?(?:[ -](?=[A-Z0-9]*\d)[A-Z0-9]{2,})*)`;

/** Labels that introduce an identifier, by type; a label followed by a value with a digit is an identifier. */
const LABELS: [SpanType, string][] = [
  [
    'MRN',
    String.raw`mrn|mr\s*#|mr\s*no\.?|med(?:ical)?\s*rec(?:ord)?s?(?:\s*(?:number|no\.?|#))?|unit\s*(?:number|no\.?|#)|hospital\s*(?:number|no\.?|#)|chart\s*(?:number|no\.?|#)|patient\s*id|pt\s*id|emr\s*(?:number|#|id)`,
  ],
  ['SSN', String.raw`ssn|ss\s*#|soc(?:ial)?\s*sec(?:urity)?(?:\s*(?:number|no\.?|#))?`],
  [
    'HEALTH_PLAN',
    String.raw`medicare|medicaid|medigap|masshealth|mbi|hicn|insurance|insurer|health\s*plan|plan\s*(?:id|#|number)|member\s*(?:id|#|number|no\.?)|subscriber(?:\s*id)?|policy\s*(?:id|#|number|no\.?)|group\s*(?:#|number|no\.?)|grp|beneficiary|bcbs|blue\s*cross|aetna|cigna|humana|tricare|united\s*health(?:care)?|ppo\s*id|hmo\s*id`,
  ],
  ['ACCOUNT', String.raw`account|acct|acc\s*#|billing|fin|har|csn|encounter\s*(?:id|#|number|no\.?)|visit\s*(?:id|#|number|no\.?)|invoice|claim`],
  ['LICENSE', String.raw`licen[cs]e|lic\.?\s*#|dea|npi|certificate|cert\.?\s*#|registration|driver'?s?\s*lic(?:ense)?|dl\s*#|board\s*cert(?:ification)?`],
  ['VEHICLE', String.raw`vin|vehicle(?:\s*identification)?|licen[cs]e\s*plate|(?:motorcycle\s+)?plates?(?:\s*(?:#|number|no\.?))?|tag\s*#|(?:[A-Z]{2}\s+)?reg(?:istration)?\s*(?:plate|#|no\.?)?`],
  // A model, a catalogue ("REF") or a lot number names a kind or a batch of devices, not the patient's: only a serial does
  ['DEVICE', String.raw`serial|s\/n|sn|device(?:\s*id)?|udi|implant\s*id|imei|iccid|pacemaker|icd|asset(?:\s*tag)?|tx|transmitter|receiver\s*id`],
  ['BIOMETRIC', String.raw`(?:finger\s*print|retina(?:l)?\s*scan|iris\s*scan|voice\s*print|palm\s*print|biometric|face\s*(?:print|id)|dna\s*profile)(?:\s+(?:template|hash|scan|record|sample))?`],
  [
    'ID',
    String.raw`job|accession|specimen|order|case|ref(?:erence)?\s*(?:#|no\.?|number)|reference|requisition|study|sample|ticket|confirmation|report|dictation|document|policy|badge|alias|export(?:_|\s)?id|id`,
  ],
];

/** One pass for every label: the group that matched names the type. */
const LABEL_RE = new RegExp(String.raw`\b(?:${LABELS.map(([, label]) => `(${label})`).join('|')})(?![a-z])${SUFFIX}${VALUE}`, 'gi');

function labelled(text: string, out: Detection[]): void {
  for (const m of text.matchAll(LABEL_RE)) {
    const groupIndex = LABELS.findIndex((_, g) => m[g + 1] !== undefined);
    const type = (LABELS[groupIndex] as [SpanType, string])[0];
    const value = m[LABELS.length + 1] as string;
    // a letter prefix belongs to the code only in capitals ("GSI 55-0098124-02"); "was 15" is prose
    const prefix = /^([A-Za-z]{2,5}(?:-[A-Za-z]{1,5})?)[ -]/.exec(value)?.[1];
    if (prefix && prefix !== prefix.toUpperCase()) continue;
    const digits = value.replace(/\D/g, '').length;
    if (value.length < 4 || digits < 2) continue;
    // "ID: TMAX 101.2" is a section and a temperature: an identifier has no decimal fraction
    if (/\d\.\d{1,2}(?!\d)/.test(value) && type !== 'DEVICE') continue;
    if (/^[\d.\s-]+$/.test(value) && value.includes('.')) continue; // 11.5-14.5 is a reference range
    if (/^\d+(?:\.\d+)?\s?-\s?\d+(?:\.\d+)?$/.test(value) && value.replace(/\D/g, '').length <= 6) continue; // 20-32 too
    if (/^\d{1,3}$/.test(value) || /^\d+\.\d+$/.test(value) || /^(?:19|20|21)\d\d$/.test(value)) continue;
    // "swallow study 0900", "order 1430": a clock time after a word that also labels codes
    if (type === 'ID' && /^(?:[01]\d|2[0-3])[0-5]\d$/.test(value)) continue;
    const start = m.index + m[0].length - value.length;
    push(out, type, start, start + value.length, `label.${type.toLowerCase()}`);
  }
}

const TLDS = 'com|net|org|edu|gov|mil|int|io|co|us|uk|ca|au|de|fr|nl|es|it|ch|at|be|se|no|dk|fi|ie|nz|za|in|jp|cn|kr|vn|br|mx|ar|info|biz|me|health|care|app|online|email|mail';
/** "jo dot kerr22 at fastpost dot co dot uk", "faith.adeyemi at gmail-ish dot com", "jo(at)mail.com": an address spelled out. */
const SPELLED_EMAIL = new RegExp(
  String.raw`(?<![\w.-])[a-z0-9][a-z0-9_-]{0,40}(?:\s*(?:\.|\bdot\b|\[dot\]|\(dot\))\s*[a-z0-9_-]{1,40}){0,5}\s*(?:\bat\b|\[at\]|\(at\)|\{at\})\s*[a-z0-9][a-z0-9-]{0,40}(?:\s*(?:\.|\bdot\b|\[dot\]|\(dot\))\s*[a-z0-9-]{1,40}){0,4}\s*(?:\.|\bdot\b|\[dot\]|\(dot\))\s*(?:${TLDS})\b`,
  'gi',
);

function spelledEmails(text: string, out: Detection[]): void {
  if (!/\bdot\b|\[dot\]|\(dot\)|\[at\]|\(at\)/i.test(text)) return;
  for (const m of text.matchAll(SPELLED_EMAIL)) {
    // an address spells out at least its "at" or its dots
    if (!/\bdot\b|\[dot\]|\(dot\)|\[at\]|\(at\)|\{at\}/i.test(m[0])) continue;
    push(out, 'EMAIL', m.index, m.index + m[0].length);
  }
}

/** GS1 unique device identifiers: "(01)00763000412298(17)270831(21)VTR604418K". */
function deviceIdentifiers(text: string, out: Detection[]): void {
  for (const m of text.matchAll(/\(\d{2,4}\)[A-Za-z0-9-]{2,30}(?:\(\d{2,4}\)[A-Za-z0-9-]{1,30}){1,6}/g)) push(out, 'DEVICE', m.index, m.index + m[0].length);
}

/** E-mail addresses, found from their "@" (a regex scanning every word for one is slow). */
function emails(text: string, out: Detection[]): void {
  const local = /[A-Za-z0-9._%+-]/;
  const domain = /^[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
    let start = at;
    while (start > 0 && local.test(text.charAt(start - 1))) start--;
    const d = domain.exec(text.slice(at + 1, at + 256));
    if (start < at && d) push(out, 'EMAIL', start, at + 1 + d[0].length);
  }
}

function contact(text: string, out: Detection[]): void {
  emails(text, out);
  spelledEmails(text, out);
  deviceIdentifiers(text, out);
  for (const m of text.matchAll(/\b(?:https?|ftp|sftp):\/\/[^\s<>"')\]]+|\bwww\.[^\s<>"')\]]+/gi)) push(out, 'URL', m.index, m.index + m[0].length - (/[.,;:]$/.test(m[0]) ? 1 : 0));
  // hosts without a scheme, on any top-level domain ("portal.lakeside.ai/x", "pacs.trust.nhs.uk")
  for (const [start, end] of hosts(text)) push(out, 'URL', start, end, 'pattern.host');
  for (const [start, end] of cards(text)) push(out, 'ACCOUNT', start, end, 'pattern.card');
  for (const [start, end] of coordinates(text)) push(out, 'LOCATION', start, end, 'place.coordinates');
  // IPv4, and IPv6 with a "::" or full eight groups (times like 10:30:00 have neither)
  for (const m of text.matchAll(/(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\d|\.\d)/g)) push(out, 'IP', m.index, m.index + m[0].length);
  const ipv6 = text.includes('::') || /[0-9a-f]:[0-9a-f]{1,4}:[0-9a-f]/i.test(text) ? text.matchAll(/\b[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:])/gi) : [];
  for (const m of ipv6) {
    const groups = m[0].split(':');
    const full = groups.length === 8 && groups.every((g) => g.length > 0);
    if ((full || m[0].includes('::')) && (/[a-f]/i.test(m[0]) || m[0].includes('::'))) push(out, 'IP', m.index, m.index + m[0].length);
  }
  phones(text, out);
  // SSN: 123-45-6789, 123 45 6789, 123.45.6789, 123/45/6789, split by a line wrap: one separator repeated
  for (const m of text.matchAll(/(?<![\w./-])\d{3}([ ./-])[ \t]?(?:\n[ \t]*)?\d{2}\1[ \t]?(?:\n[ \t]*)?\d{4}(?![\w-]|[./]\d)/g)) push(out, 'SSN', m.index, m.index + m[0].length);
  for (const m of text.matchAll(/(?<![\w./-])\d{3}-\s{0,2}\d{2}-\s{0,2}\d{4}(?![\w-])/g)) push(out, 'SSN', m.index, m.index + m[0].length);
  for (const m of text.matchAll(/\b(?:ssn|ss#|social security(?: number| no\.?| #)?)(?:\s+on\s+file)?\s*[:#]?\s*(\d{3}[\s./-]{0,3}\d{2}[\s./-]{0,3}\d{4})\b/gi)) {
    const value = m[1] as string;
    push(out, 'SSN', m.index + m[0].length - value.length, m.index + m[0].length);
  }
}

/** Words before a number that say it is a telephone: any run of digit groups after them is one. */
const PHONE_CUE =
  /(?:\b(?:phone|ph|tel|telephone|cell|cellphone|mobile|mob|home|work|wk|number|num|contact|reach|call|callback|call\s+back|pager|pgr|page|paged|beeper|bpr|fax|whatsapp|text|line|hotline|direct|office|landline|ext|extension|x|t|f|m|h|w|c|p)\b\.?|#)\s*[:#.]?\s*(?:(?:is|at|to|on|of|was|changed|now)\s+){0,2}(?:\([a-z\s]+\)\s*)?[:#]?\s*$/i;

/** A word of calling somewhere before a number: "page the fellow at", "reachable at", "call back at". */
const CALL_NEAR = /\b(?:page[sd]?|paging|pager|pgr|beeper|call(?:ed|ing)?|call\s*back|reach(?:ed|able)?|contact(?:ed)?|text(?:ed)?|phone|cell|number|#|ext|extension)\b[^.\n]{0,40}$/i;

/** Telephone and fax numbers in the shapes notes write them (North American, international, with a cue). */
function phones(text: string, out: Detection[]): void {
  const seen = new Set<number>();
  const add = (start: number, end: number) => {
    if (seen.has(start)) return;
    seen.add(start);
    push(out, phoneType(text, start), start, end);
  };
  // Seven digits with an extension: 555-3370 x214 (before the shapes that would take the seven digits alone)
  for (const m of text.matchAll(/(?<![\w-])\d{3}-\d{4}\s*(?:x|ext\.?|extension)\s*\d{1,5}\b/gi)) add(m.index, m.index + m[0].length);
  // North American: (508) 555-0187, 508-555-0187, 508.555.0187, 508/555-0187, (404)5550183, +1 508 555 0187,
  // a separator possibly followed by a line wrap, an extension after it
  const nanp = /(?<![\w-])(?:\+?1[\s.-]?)?(?:\(\d{3}\)[ \t]?|\d{3}[ \t]?[\s./-][ \t]?(?:\n[ \t]*)?)\d{3}[ \t]?[\s.-]?[ \t]?(?:\n[ \t]*)?\d{4}(?:\s*(?:x|ext\.?|extension)\s*\d{1,5})?(?![\w-]|\.\d)/gi;
  for (const m of text.matchAll(nanp)) {
    const digits = m[0].replace(/\D/g, '').replace(/^1(?=\d{10})/, '');
    if (digits.length < 10) continue;
    // "3 555 0187 mg" and a bare run of ten digits without a cue are something else
    if (!/[\s()./-]/.test(m[0].replace(/^\+1/, '')) && !PHONE_CUE.test(text.slice(Math.max(0, m.index - 24), m.index))) continue;
    add(m.index, m.index + m[0].length);
  }
  // International: +44 7700 900482, +49 (0)30 5550 8821, 0049 151 5550 4418, +27 11 555 0192
  for (const m of text.matchAll(/(?<![\w+])(?:\+|00)[1-9]\d{0,2}[ \t.-]?(?:\(0\)[ \t]?)?\(?\d{1,5}\)?(?:[ \t.-]?\d{2,6}){1,4}(?![\w-]|\.\d)/g)) {
    const digits = m[0].replace(/\D/g, '').length;
    // "00384157" after "MRN:" is a record number: an international number is written in groups
    if (digits >= 8 && digits <= 15 && /[\s.()-]/.test(m[0])) add(m.index, m.index + m[0].length);
  }
  // After a word of telephone: 555-0187, 714 5550 188, 626 555 01 88, page 4-7731, x4321, beeper 12345
  for (const m of text.matchAll(/(?<![\w.,/-])\d(?:[\d]|[ .\/-](?=\d)){2,16}\d(?![\w-]|[.,]\d)/g)) {
    const digits = m[0].replace(/\D/g, '').length;
    if (digits < 4 || digits > 15) continue;
    // "T 98.4-99.4" is a temperature: a decimal fraction is never part of a telephone number
    if (/\.\d{1,2}(?!\d)/.test(m[0])) continue;
    // "110-120/60-70" is a blood pressure: a slash stands in a number only between an area code and the rest
    if (m[0].includes('/') && !/^\d{3}\/\d{3}[ .-]?\d{4}$/.test(m[0])) continue;
    const before = text.slice(Math.max(0, m.index - 30), m.index);
    // "cat #4312-58", "REF #71331203", "model # 5076-52": a product's number after "#" is no telephone
    if (/\b(?:cat(?:alog(?:ue)?)?|ref|model|lot|size|part|item|sku|code|reorder)\.?\s*#?\s*$/i.test(before)) continue;
    // "page fellow at 4-7712", "reachable at 555-3370": an internal extension's shape after a word of calling
    const internal = /^\d-\d{4}$|^\d{3}-\d{4}$/.test(m[0]) && CALL_NEAR.test(text.slice(Math.max(0, m.index - 40), m.index));
    if (!PHONE_CUE.test(before) && !internal) continue;
    // a time, a dose, a date or a count after the cue word is not a number to call
    if (
      /^\d{1,2}\/\d{1,2}(?:\/\d{2,4})?$/.test(m[0]) ||
      /^\s*(?:am|pm|mg|mcg|ml|cc|units?|min|mins|minutes|hrs?|hours|days?|times|x\b|%)/i.test(text.slice(m.index + m[0].length, m.index + m[0].length + 8))
    )
      continue;
    // "pager 4452", "p 4417", "(Dr. Ruiz, p 6620)": four or five digits are a pager only after a word of paging
    const paging = /(?:pager|pgr|page|paged|beeper|bpr|ext|extension|\bx|\bp)\s*[:#.]?\s*$/i.test(before);
    if (digits === 4 && !paging) continue;
    if (/\b(?:call|called|calling|home|work|line|text|office|direct|number|m|h|w|c|t|f|p)\s*[:#.]?\s*$/i.test(before) && digits < 7 && !/-/.test(m[0]) && !(paging && digits <= 5)) continue;
    add(m.index, m.index + m[0].length);
  }
  // Extensions: x4321, ext.55, "ext 214", "extension 5": the whole of it (a lone "x" would show where a number was)
  // ("x40 yrs", "x10 min" count times: a glued "x" takes three digits or more)
  for (const m of text.matchAll(
    /\b(?:x(?=\d{3})|ext\.?\s?|extension\s)(\d{2,5})\b(?![.,]\d|\s*(?:mg|mcg|ml|cc|units?|days?|hrs?|yrs?|years?|min|mins|minutes|secs?|wks?|weeks?|months?|times|beats|doses|episodes|ft|feet|steps|%))/gi,
  ))
    add(m.index, m.index + m[0].length);
}

function phoneType(text: string, start: number): SpanType {
  return /\b(?:fax|facsimile|f)\b\s*(?:no\.?|number|#)?\s*[:#.]?\s*(?:at|is|to)?\s*$/i.test(text.slice(Math.max(0, start - 20), start)) ? 'FAX' : 'PHONE';
}

const STATES = 'AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR|VI|GU';
const STATE_NAMES =
  'Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|Wisconsin|Wyoming|Puerto Rico';
export const STATE_RE_SOURCE = `(?:${STATES}|${STATE_NAMES})`;
const ZIP_AFTER_STATE = new RegExp(String.raw`\b(?:${STATES}|${STATE_NAMES})\.?,?\s+(\d{5}(?:-\d{4})?)(?![\d-])`, 'g');

function zips(text: string, out: Detection[]): void {
  for (const m of text.matchAll(ZIP_AFTER_STATE)) {
    const value = m[1] as string;
    push(out, 'ZIP', m.index + m[0].length - value.length, m.index + m[0].length);
  }
  for (const m of text.matchAll(/\b(?:zip|zip\s*code|postal\s*code|zipcode|postcode)\s*[:#]?\s*(\d{4,5}(?:-\d{4})?)(?![\d-])/gi)) {
    const value = m[1] as string;
    push(out, 'ZIP', m.index + m[0].length - value.length, m.index + m[0].length);
  }
}

const OLD = (n: number) => n >= 90 && n <= 130;
/** Words before "mid 90s" that make it an age: "aged", "is", "woman", "man", "patient". */
const AGE_BEFORE = /\b(?:aged?|is|was|now|woman|man|lady|gentleman|female|male|patient|pt|widow|widower|she|he)\s*$/i;

/** Ages over 89 (ages up to 89 are not identifiers under Safe Harbor and stay). */
function ages(text: string, out: Detection[]): void {
  // Only 90 to 130 can be an identifier: the forms match those numbers alone, and the two that open with a
  // look-behind look ahead at the digits first, so that most positions of a text fail at once.
  const forms = [
    /\b(9\d|1[0-2]\d)(?!\d)(?:\s*|-)(?:y\/?o\b|yo\b|y\.o\.?|yrs?\.?[- ]old\b|years?[- ]old\b|-?year-old\b|yo[mf]\b|y\/o[mf]?\b|years? of age\b|yr\b)/dgi,
    /\b(?:age|aged|ages)(?:\s*\/\s*sex)?["'\s:=>]{0,5}(9\d|1[0-2]\d)(?!\d)\b/dgi,
    // "92M 7 Crescent Ave", "97F Obs": glued to a sex in a header line, whatever follows
    /(?=9\d|1[0-2]\d)(?<![\w.])(?<!\b(?:temp|t|tm|tmax|tcurrent|febrile|fever|temperature|to|of|spiked|spike|°)\s{0,3}:?\s{0,3})(9\d|1[0-2]\d)(?!\d)[MF]\b(?!\s*°|\s*(?:deg|degrees)\b)/dg,
    // "97F", "(93F)", "92M with": glued to a sex, not a temperature ("Tmax 101F", "spiked to 102F")
    /(?=9\d|1[0-2]\d)(?<![\w.])(?<!\b(?:temp|t|tm|tmax|tcurrent|febrile|fever|temperature|to|of|spiked|spike|°)\s{0,3}:?\s{0,3})(?<!\d\s?°?\s?C\s?\(\s?)(9\d|1[0-2]\d)(?!\d)\s?(?:M|F)\b(?!\s*°)(?=\s*(?:\)|\(|,|;|:|\.(?!\d)|\bDOB\b|\bMRN\b|$|w\/|\b(?:with|who|admitted|adm|presents|presenting|pmh|hx|h\/o|s\/p|here|in|on|from|pt|c\/o|w|s\/p|transferred|brought|found|lives|resident|nh|snf)\b))/dgm,
    /\b(?:[MF]|male|female|man|woman)\s*[,/]\s*(9\d|1[0-2]\d)(?!\d)\b(?!\s*(?:%|mg|kg|lbs?|cm|\.\d))/dgi,
    /\b(9\d|1[0-2]\d)(?!\d)\s+(?:\w+\s+)?(?:years|yrs)\b(?!\s+(?:ago|later|earlier|prior|before))(?=[^.\n]{0,30}(?:life|lived|old|plenty|enough|good|long|of\s+age|young))/dgi,
    /\b(?:had|lived|live|living|is|am|turn(?:ed|s|ing)?)\s+(9\d|1[0-2]\d)(?!\d)\s+(?:\w+\s+)?years\b(?!\s+ago)/dgi,
    /\b(?:she|he|pt|patient|mom|mother|dad|father|husband|wife|grandmother|grandfather|who|they)\s+(?:is|was|turned|turns|will be)\s+(9\d|1[0-2]\d)(?!\d)\b(?!\s*(?:%|mg|kg|lbs?|mmhg|bpm|\/|\.\d|cm|ml|units|beats|breaths|degrees|minutes|min|hours|days|seconds|years ago|pounds|points))/dgi,
    /\b(9\d|1[0-2]\d)(?!\d)\s*(?:M|F)\b(?=\s*(?:w\/|with|who|admitted|presents|presenting|pmh|hx|s\/p|,))/dg,
  ];
  for (const re of forms) {
    for (const m of text.matchAll(re)) {
      const at = m.indices?.[1];
      if (!at || !OLD(Number(m[1]))) continue;
      push(out, 'AGE', at[0], at[1]);
    }
  }
  for (const [start, end] of wordAges(text)) push(out, 'AGE', start, end, 'pattern.age-words');
  // "in her 90s", "in his late nineties", "a woman in her mid-90s", "a centenarian"; "sats mid 90s" and "HR low
  // 100s" are values: early, mid or late alone makes an age only after a word for a person or an age
  for (const m of text.matchAll(/\b(?:in (?:his|her|their) (?:(?:early|mid|late)[\s-])?|(early|mid|late)[\s-])(9\d|1[0-2]\d)['’]?s\b|\b(?:nonagenarian|centenarian|nineties)\b/gi)) {
    if (m[1] && !AGE_BEFORE.test(text.slice(Math.max(0, m.index - 24), m.index))) continue;
    push(out, 'AGE', m.index, m.index + m[0].length);
  }
}

/** "REF 71331203", "LOT 22K0941", "cat #4312-58": a product's catalogue, model or lot number is the kind of device, not the patient's. */
const PRODUCT_NUMBER_BEFORE = /\b(?:ref|lot|cat(?:alog(?:ue)?)?|model|part|item|sku|reorder)\.?\s*(?:#|no\.?|number)?\s*:?\s*$/i;

/** Codes without a label: long digit runs and letter-digit mixes that no lab value or dose looks like. */
function codes(text: string, out: Detection[]): void {
  const product = (at: number) => PRODUCT_NUMBER_BEFORE.test(text.slice(Math.max(0, at - 16), at));
  // a round number (platelets 300000) is a count, not a code
  for (const m of text.matchAll(/(?<![\w.,/-])\d{6,}(?![\w,/]|\.\d)/g)) if (!/000$/.test(m[0]) && !product(m.index)) push(out, 'ID', m.index, m.index + m[0].length);
  // A hyphenated word with a digit somewhere (most words have none). A match starts only where a chain of
  // hyphenated parts starts, and the look-ahead scans that chain once: linear even on "A-A-A-..."
  for (const m of text.matchAll(/(?<![A-Za-z0-9-])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*/g)) {
    const w = m[0];
    if (w.length < 6 || !/[A-Za-z]/.test(w) || !/\d/.test(w)) continue;
    if (text.charAt(m.index - 1) === '_' || product(m.index)) continue;
    const digits = w.replace(/\D/g, '').length;
    // VIN: 17 characters without I, O or Q
    if (w.length === 17 && /^[A-HJ-NPR-Z0-9]{17}$/.test(w)) push(out, 'VEHICLE', m.index, m.index + w.length);
    // G3P1011 is obstetric history, 38x20x18 a size, 100s-120s a range of vital signs, 50-100cc a range
    // of volumes, 500x14 a ventilator's setting: none is a code
    else if (
      digits >= 5 &&
      !/^G\d{1,2}P\d{1,5}$/i.test(w) &&
      !/^\d+(?:x\d+)+$/i.test(w) &&
      !/^\d{1,3}['’]?s?(?:-\d{1,3}['’]?s?)+$/i.test(w) &&
      !/^\d{1,5}(?:-\d{1,5})+(?:cc|ml|mls|l|mg|mcg|g|gm|kg|meq|mmol|u|units|mmhg|cm|mm|hr|hrs|h|min|mins|bpm|s)$/i.test(w)
    )
      push(out, 'ID', m.index, m.index + w.length);
  }
  for (const m of text.matchAll(/(?<![\w-])\d{2,}(?:-\d{2,}){2,}(?![\w-])/g)) {
    if (m[0].replace(/\D/g, '').length >= 7) push(out, 'ID', m.index, m.index + m[0].length);
  }
}

export function detectPatterns(text: string): Detection[] {
  const out: Detection[] = [];
  contact(text, out);
  labelled(text, out);
  zips(text, out);
  ages(text, out);
  codes(text, out);
  return out;
}
