/**
 * The words around an identifier that say what it is: the context half of the safe-vocabulary
 * backstop. A word the vocabularies cannot explain becomes a name after "Dr", "wife", "per", "RN" or
 * before "RN", "(husband)", "aware"; a place after "transferred from", "lives in", "works at". Lists
 * only: the detectors in names.ts and locations.ts decide.
 */

const words = (s: string): Set<string> => new Set(s.trim().split(/\s+/));

/** Titles before a name ("Dr. Kowal", "dr kowal", "Mrs. Hunt", "dra Lozano"). */
export const TITLES = words(`dr doctor dra mr mrs ms miss mx mme mlle sra srta herr frau prof professor rev reverend nurse sister father pastor
  rabbi imam chaplain judge officer det detective capt captain sgt sergeant lt col fr`);

/** Titles that introduce a name even in lowercase shorthand or ALL CAPS. */
export const STRONG_TITLES = words('dr dra mr mrs ms mme prof rev capt det mx');

/** Credentials after a name ("Sandoval, RN", "J. Ortiz MD"). */
export const CREDENTIALS = words(`rn md np pa pa-c pac cnm crna lpn lvn phd pharmd rph msw licsw lcsw lmhc rrt crt dpt dds dmd facp facs facc mph
  aprn fnp anp acnp agacnp cns cna rd ldn slp ccc-slp od dpm bsn msn do mbbs frcp frcs mrcp dnp lcpc lmft atc emt paramedic cma ma faafp facr
  faad faan facep faap fasn fccp faha fhrs facog frcpc fapa fasco facg fsir fscai fahs agsf mrcpi mbbch bch ccds cdces cde ibclc ccrn cen
  cpnp cpn rnc lmt cscs ocs cht`);

/** Credentials that are also ordinary abbreviations: a credential only after a comma ("Lee, PT", not "PT IS"). */
export const COMMA_CREDENTIALS = words('pt ot do ma pa rd od emt atc cma');

/** Relatives, household and other people close to the patient. */
export const RELATIONS = words(`wife husband son daughter mother mom mum father dad brother sister sibling aunt uncle niece nephew cousin grandson
  granddaughter grandmother grandfather grandma grandpa granny nana grandchild grandkid partner fiance fiancee boyfriend girlfriend spouse friend
  neighbor neighbour roommate caregiver caretaker hcp hcproxy proxy poa guardian stepson stepdaughter stepmother stepfather dil sil son-in-law
  daughter-in-law sister-in-law brother-in-law mother-in-law father-in-law companion housemate landlord landlady employer boss coworker co-worker
  sponsor godmother godfather stepbrother stepsister ex-wife ex-husband widow widower twin child kids children sons daughters gf bf hubby
  bro sis stepdad stepmom nok next-of-kin dtr dau dgtr grandniece grandnephew great-grandson great-granddaughter grandkids grandchildren grandsons
  granddaughters nieces nephews cousins brothers sisters parents siblings stepchildren stepkids`);

/** Care-team and other roles before a name ("HO Kwame", "covering NP kowal", "RN Dana", "registrar TPK"). */
export const ROLES = words(`attending resident intern fellow pcp ho np pa rn nurse md physician surgeon doctor provider covering hospitalist
  intensivist cardiologist nephrologist oncologist neurologist consultant therapist pharmacist sw cm chaplain midwife interpreter translator
  anesthesiologist radiologist pathologist psychiatrist psychologist dentist podiatrist optometrist counselor coordinator manager aide pca cna
  tech technician dietitian nutritionist vna rep representative scribe preceptor student clinician oncall moonlighter charge rrt lpn crna
  casemanager socialworker supervisor registrar clerk agent adjuster officer sitter volunteer liaison navigator educator specialist
  implanting interrogating programmer operator dispatcher caseworker advocate worker intake homemaker rt`);

/** Services and teams: a name follows them only in parentheses or after "per" ("per psych (AMSELEM)", "renal (Dr. Ng)"). */
export const SERVICES = words(`cardiology cards neurology neuro renal nephrology surgery ortho orthopedics gi pulm pulmonary id psych psychiatry onc
  oncology heme ent uro urology gyn ob derm ep ir team service micu sicu ccu icu nsgy neurosurgery vascular trauma acs palliative geri geriatrics
  endo endocrine rheum hepatology liver transplant anesthesia gen medicine hospitalist pt ot slp sw cm rt nutrition pharmacy radiology`);

/** Words that may be a person label before a colon ("Attending: X", "RN: Dana", "From: Lien Nguyen"). */
export const PERSON_LABELS = words(`name patient pt attending pcp author signed dictated cosigned ordering referring surgeon cc signature cosigner
  provider physician resident fellow nurse rn md np pa ho intern contact guardian interpreter consultant client member insured subscriber
  guarantor policyholder beneficiary from to sender recipient parent mother father caregiver emergency nok technician tech witness by
  verified performed interpreter translator chaplain sw cm manager supervisor registrar agent adjuster owner driver passenger employee
  spouse wife husband son daughter`);

/** Verbs and words of contact after which a word no vocabulary knows is a person, in any case ("per kowal", "d/w Okafor", "paged Ng"). */
export const CONTACT_CUES = words(`called paged spoke discussed notified informed updated per seen evaluated examined signed dictated transcribed
  cosigned reviewed contacted met accompanied visited attn author referring ordering referred
  requested reported surgeon assistant anesthesia signature cosigner talked consulted phoned texted emailed messaged dw spk telephoned page
  pg paging beeped asked told tell call calling`);

/** Short words after which only a capitalised unexplained word is a person ("seen by Okafor", "with Ng", "and Dana"). */
export const WEAK_PERSON_CUES = words('by with w and to from cc via love');

/** A writer naming themselves or someone: "it's rose", "this is guy's wife", "my name is", "goes by". Takes a lowercase word. */
export const SELF_INTRODUCTION = /(?:\bit'?s|\bthis\s+is|\bmy\s+name\s+is|\bname\s+is|\bnames|\bgoes\s+by|\bknown\s+as|\bcalled\s+me|\bcall\s+me)\s+$/i;
/** "i'm X", "I am X": a writer naming themselves, but as often "i'm tired": only a name word. */
export const FIRST_PERSON = /(?:\bi\s+am|\bi'?m)\s+$/i;

/** A closing before a signature: "thanks so much jo", "thank you, June M", "Best,\nDana". Takes a lowercase word, across a line. */
export const CLOSING =
  /(?:\bthanks?|\bthank\s+you|\bthx|\bty|\bcheers|\bregards|\bbest(?:\s+wishes)?|\bsincerely|\blove|\bxoxo|\byours(?:\s+truly|\s+sincerely)?|\bwarmly|\bblessings|\bgratefully|\batentamente|\bsaludos|\bgracias)(?:\s+(?:so|very)\s+much|\s+again|\s+a\s+lot|\s+for\s+(?:everything|your\s+(?:help|time)|all\s+(?:you\s+do|your\s+help)|not\s+giving\s+up\s+on\s+me))?\s*[,!.:;-]*\s*$/i;

/** Words near a quoted word that say it is someone's name: 'name is "Will"', 'calling out for "JUNE"', 'goes by "Pat"'. */
export const QUOTED_NAME_CUE =
  /\b(?:name|names|named|goes\s+by|calls?\s+(?:him|her)self|prefers?(?:\s+to\s+be\s+called)?|known\s+as|nickname|asking\s+for|asks\s+for|calling\s+(?:out\s+)?for|calls\s+for|introduced\s+(?:him|her)self\s+as|signs?\s+as)\b[^"\n]{0,24}$/i;

/** Greetings and labels without a colon after which a capitalised word is a name ("Dear Hope", "Pt Anna Kerr"). */
export const LABEL_CUES = words(`patient pt dear hi hello hey attn greetings`);

/** Words after a name that say a person was meant: "Kowal aware", "okafor updated", "Dana at bedside". */
export const RIGHT_CUES = words(`aware notified updated paged called informed agrees agreed requests requested states stated says said wants wanted
  asked reports reported visited visiting present here arrived left phoned texted emailed consented signed witnessed declined refused prefers
  understands verbalized verbalizes confirmed concerned worried explained spoke`);

/** Function and common words that follow a cue and are never the name ("dr aware", "wife at bedside"). */
export const FUNCTION_WORDS = words(`a an the to at in on and or is was has had will would can may be by for from of with who that this aware notified
  called paged here office note ordered said says wants recs re regarding team service saw seen came did does gave placed ok okd agrees agreed
  not no also then please pls order orders visit out up as if so but all any his her their our my your its it he she they we you me him them us
  am pm hospital clinic patient could should must shall were are have went left there visited visiting brought bring brings states stated
  reports reported present updated spoke feels felt asked asks given took both each every some many more most much very well just only now
  today tonight tomorrow yesterday again still yet per via into onto over under after before since until while when where why how what which
  about above below near off than too plan home bedside phone call number i i'm im pt pts patients family dtr wife husband son daughter mom dad
  in-house inhouse night day evening morning am/pm overnight x number is being been having get got gets made make makes
  saw see sees said tell told self same none unknown pending declined refused needs need needed going want wants found speaks spoke works
  worked smiling sleeping resting crying asking requesting unable able yes thank thanks hi hello dear sir madam team staff everyone all
  mom's dad's n/a na tbd`);

/** Heads after which a capitalised word names a disease, sign, device or method, not a person ("Murphy's sign", "Swan catheter"). */
export const EPONYM_HEADS = words(`syndrome syndromes disease sign signs test tests score scale criteria fracture malformation reflex maneuver
  manoeuvre position catheter drain tube classification procedure operation repair node nodes lesion lesions cell cells body bodies phenomenon
  palsy ulcer triad law equation formula index stain staining hernia cyst tumor tumour sarcoma lymphoma anomaly deformity contracture neuroma
  neuralgia aneurysm effect rule method technique approach incision shunt valve canal duct space pouch membrane gland glands nodule nodules
  spots ring rings grade grading stage staging type variant block encephalopathy psychosis dementia ataxia dystrophy thyroiditis anemia
  granulomatosis arteritis tenosynovitis purpura coma collar filter mask boots stockings device pump clamp forceps retractor needle solution
  agar medium media sphincter ligament muscle nerve artery vein fissure fossa foramen loop tract pathway zone phase cycle disorder deficiency
  plexus crisis angina esophagus diverticulum class rod plate visual field system lens cannula scan view projection fixation frame splint cast
  traction dressing bandage bag bed mattress boot brace line lines port wrap gel cream ointment spray patch tape dressings protocol bundle
  pathway kit set monitor machine wave waves grid chart positive negative sign maneuvre assessment inventory questionnaire survey battery
  trial study classification`);

/** Lowercase medical words after a capitalised one make it an eponym: "Bruton agammaglobulinemia", "Mohs surgery". */
export const MEDICAL_SUFFIX = /(?:emia|aemia|itis|osis|oma|pathy|ectomy|plasty|otomy|ostomy|scopy|graphy|gram|plasia|trophy|algia|ism|reflexes|exercises|surgery|smear|curve|stain|procedure)$/;

/** Name particles ("van", "de la") inside a name. */
export const PARTICLES = words('van von de der den la le da di du del della dos das ter ten bin ibn al el y zu vander st');

/** Languages, nationalities and faiths: "speaks Cantonese, some English", "Pt Catholic". Never a name. */
export const NATIONALITIES = words(`english spanish french german italian portuguese polish russian ukrainian chinese cantonese mandarin japanese
  korean vietnamese thai khmer lao hmong tagalog filipino hindi urdu punjabi bengali gujarati tamil telugu arabic farsi persian dari pashto
  turkish greek hebrew yiddish amharic somali swahili haitian creole kreyol cape verdean albanian armenian bosnian serbian croatian
  american african asian hispanic latino latina caucasian catholic protestant christian jewish muslim hindu buddhist sikh mormon baptist
  methodist lutheran orthodox episcopalian jehovah's jehovah`);

export const MONTHS_DAYS = words(`january february march april may june july august september october november december jan feb mar apr jun jul aug
  sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun`);

/**
 * Where patients go inside a hospital and the care settings a note names without naming a place: after
 * "from", "to" or "at" these are never an identifier ("to MICU", "from OSH", "at HS", "to PS 10/5").
 */
export const CLINICAL_DESTINATIONS = words(`icu micu sicu ccu cvicu csru nicu picu tsicu nsicu nicu sdu stepdown step-down tele telemetry ed er ew eu or pacu
  pacu floor floors unit units ward wards bay bed beds room rooms bedside chair commode bathroom br toilet home house nh snf ltac ltach alf osh
  hospice rehab ir ct cta mri mra us ultrasound xray x-ray cxr kub echo tte tee ekg ecg eeg emg ep egd ercp eus cath cathlab lab labs hd cvvh
  cvvhd cvvhdf crrt dialysis pt ot slp sw cm iv po pr sl sq sc im ng ngt og ogt peg picc nc ra nrb fm bipap cpap ac ps simv prvc cmv trach
  vent ventilator ns lr d5 d5w d10 hs mn am pm qd bid tid qid prn qhs q4 q6 q8 q12 md rn np pa ho pcp team service services clinic clinics
  office offices morgue pharmacy radiology pathology surgery medicine gi endoscopy ob l&d ld nursery mother-baby outpatient inpatient opd
  opc er/ed a&o baseline goal target normal zero 0 bedrest oob nicotine tob etoh `);

/**
 * Cues before a place: "transferred from", "lives in", "works at". Strong cues take any capitalised word
 * (or an acronym) that is not a clinical destination; weak ones ("in", "at", "to") only a word the
 * vocabularies cannot explain, or a known town.
 */
export const STRONG_PLACE_CUE =
  /(?:\b(?:i['’]?m|i\s+am|we['’]?re|we\s+are|they['’]?re|she['’]?s|he['’]?s)\s+(?:now\s+|still\s+|currently\s+|back\s+|home\s+)*(?:in|at|near)\s+(?:the\s+)?$)|\b(?:lives?|living|resides?|residing|moved|relocated|born|raised|grew\s+up|visiting|visit|vacation(?:ing)?|staying|stays|transferred|xferred|xfer(?:red)?|trans(?:ferred)?|transfer|tx(?:'d|d)?|admitted|adm|taken|presented|presenting|went|arrived|flown|airlifted|med\s?flighted|readmitted|called\s+out|call\s+out|initially|originally|came|coming|returned|returning|discharged|d\/c(?:'d|d)?|dc(?:'d|d)?|sent|brought|drove|flew|travel(?:l?ed|ing)?|trip|works?|worked|working|employed|employee|retired|job|shelter|placement|accepted|referred|seen|followed)\s+(?:back\s+)?(?:in|from|to|at|near)\s+(?:the\s+)?$/i;
export const FROM_CUE = /\b(?:from|osh)\s+(?:the\s+)?$/i;
export const WEAK_PLACE_CUE = /\b(?:in|at|near|to|outside)\s+(?:the\s+)?$/i;

/**
 * Cues that introduce an employer ("works at", "employed by", "job at", "retired from", "is a cashier at").
 * "is a 67F admitted with COPD" is no job: after "is a" only a word without digits, and only "at" or "for".
 */
export const EMPLOYER_CUE =
  /\b(?:works?|worked|working|employed|employee|job|retired|emp(?:loyer)?\s*:|employer\s+is|occupation\s*:|works\s+as\s+an?\s+\w+(?:\s+\w+)?)(?:\s+(?:part[\s-]time|full[\s-]time|per[\s-]diem|nights?|days?|weekends?|there|now|still|currently))?\s+(?:at|for|by|from|with)\s+(?:the\s+)?$|\b(?:is|was|as)\s+an?\s+(?!\w*\d)[a-z]+(?:\s+[a-z]+)?\s+(?:at|for)\s+(?:the\s+)?$/i;
