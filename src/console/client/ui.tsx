/** Small pieces every page uses: loading a resource, showing an API refusal, tables, times. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Session } from './api';

/** Bidirectional formatting characters: embeddings, overrides, isolates, their pops, and the marks. */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/**
 * A name an insider wrote (a principal's display name, a benchmark's, an approval's title, an
 * endpoint's model), as the console shows it: every bidirectional control written out as [U+202E].
 * Left in, a right-to-left override makes "rita\u202Elive" read "ritaevil", and in a <select> nothing
 * shows where the name ends and the option's own words begin: an officer could choose by a name that
 * is not the one stored. Shown, not removed, so the oddity is seen and can be asked about.
 */
export function visible(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
}

/** The policy gate lets the viewer attempt `action` (the session's `may`). Offering it is a convenience; the API decides. */
export const may = (s: Session, action?: string) => !action || s.may.includes(action);

/** The viewer holds one of `roles` (no roles: everyone). Hiding a page is a convenience; the API decides. */
export const holds = (s: Session, roles?: string[]) => !roles || roles.some((r) => s.roles.includes(r));

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  reload: () => void;
}

/** Loads `fn` once (and again on reload, or every `pollMs` while `poll` says so). */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[], poll?: { ms: number; while: (data: T | undefined) => boolean }): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    fn().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(undefined);
      },
      (e: unknown) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  useEffect(() => {
    if (!poll || !poll.while(data)) return undefined;
    const t = setTimeout(reload, poll.ms);
    return () => clearTimeout(t);
  }, [data, tick]);
  return { data, error, reload };
}

/** An API refusal as the API said it: the code, the rule it names, its one line (a name it quotes, such as a certificate's, through `visible`). */
export function Problem({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  if (error instanceof ApiError) {
    // A refusal's message opens with "denied by rule R:"; the rule is shown once, after the reason.
    const message = error.rule ? error.message.replace(/^denied by rule [^:]+: /, '') : error.message;
    return (
      <div class="error" role="alert">
        <strong>{error.status === 403 ? 'Refused' : 'Error'}</strong>: {visible(message)}
        {error.rule ? (
          <>
            {' '}
            (rule <code>{error.rule}</code>)
          </>
        ) : null}{' '}
        <span class="muted">[{error.code}]</span>
      </div>
    );
  }
  return (
    <div class="error" role="alert">
      The daemon could not be reached; reload the page.
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · ehrbench console`;
  }, [title]);
  return (
    <>
      <h1>{title}</h1>
      {children}
    </>
  );
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? iso
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}

export function score(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined ? '—' : value.toFixed(digits);
}

export function usd(value: number | null | undefined): string {
  return value === null || value === undefined ? 'no price' : `$${value.toFixed(2)}`;
}

const STATUS_CLASS: Record<string, string> = {
  completed: 'status-ok',
  'completed with failures': 'status-warn',
  'awaiting approval': 'status-warn',
  'approved, waiting for a worker': 'status-warn',
  released: 'status-ok',
  active: 'status-ok',
  ok: 'status-ok',
  success: 'status-ok',
  requested: 'status-warn',
  approved: 'status-warn',
  running: 'status-warn',
  planning: 'status-warn',
  suspended: 'status-warn',
  failed: 'status-bad',
  cancelled: 'status-bad',
  denied: 'status-bad',
  closed: 'status-bad',
  expired: 'status-bad',
};

/** The head of a table of metrics: a run's scores, or an export's released figures. */
export function MetricsHead() {
  return (
    <thead>
      <tr>
        <th scope="col">Metric</th>
        <th scope="col" class="num">
          Value
        </th>
        <th scope="col" class="num">
          95% interval
        </th>
        <th scope="col" class="num">
          Instances
        </th>
      </tr>
    </thead>
  );
}

export function Status({ value }: { value: string }) {
  return <span class={STATUS_CLASS[value] ?? ''}>{value}</span>;
}

export function Done({ message }: { message: string | undefined }) {
  return message ? (
    <div class="notice" role="status">
      {message}
    </div>
  ) : null;
}

/** A labelled form control: the label names it alone; a hint describes it (aria-describedby). */
export function Field({ id, label, hint, children }: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint ? (
        <span id={`${id}-hint`} class="hint">
          {hint}
        </span>
      ) : null}
      {children}
    </div>
  );
}

/** Saves `text` as a file named `name` (made in the page: nothing more is fetched). */
export function download(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * One page's actions and what became of the last: the API's refusal (shown by Problem) or what was
 * done (shown by Done). An action returns the words for what it did, or nothing to say.
 */
export function useAction(): { problem: unknown; done: string | undefined; act: (what: () => Promise<string | undefined>) => Promise<void> } {
  const [problem, setProblem] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const act = async (what: () => Promise<string | undefined>) => {
    setProblem(undefined);
    setDone(undefined);
    try {
      setDone(await what());
    } catch (e) {
      setProblem(e);
    }
  };
  return { problem, done, act };
}

/** What the API's own schema (checked in the page) says of a form, before anything is sent. */
export function SchemaProblems({ what, problems }: { what: string; problems: string[] }) {
  if (!problems.length) return null;
  return (
    <div class="error" role="alert">
      <strong>The {what} does not match the API's schema:</strong>
      <ul>
        {problems.map((p) => (
          <li key={p}>{p}</li>
        ))}
      </ul>
    </div>
  );
}

export interface ConfirmProps {
  /** The button that opens the confirmation, and its accessible name when the text alone is ambiguous in a table. */
  label: string;
  ariaLabel?: string;
  secondary?: boolean;
  /** The question, naming the object: "Revoke every certificate of alice?". */
  title: string;
  /** What happens if confirmed, in words: who loses what, what leaves, whether it can be undone. */
  consequence: ComponentChildren;
  /** The confirming button's words ("Revoke alice"); cancel is always "Cancel" and does nothing. */
  confirmLabel: string;
  /** Asks for a reason, required, where the CLI requires --reason (it goes to the audit trail). */
  reason?: boolean;
  onConfirm: (reason: string) => void;
}

/**
 * An act that cannot be taken back is two steps: the button opens a <dialog> that names the object and
 * the consequence (and asks the reason where the CLI asks one); only its confirming button acts. One
 * click on the wrong row revoked a researcher before.
 */
export function ConfirmAct(p: ConfirmProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState('');
  const [missing, setMissing] = useState(false);
  const id = `confirm-${p.confirmLabel.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`;
  const open = () => {
    setReason('');
    setMissing(false);
    dialog.current?.showModal();
  };
  const close = () => dialog.current?.close();
  const confirm = (e: Event) => {
    e.preventDefault();
    if (p.reason && !reason.trim()) {
      setMissing(true);
      return;
    }
    close();
    p.onConfirm(reason.trim());
  };
  return (
    <>
      <button type="button" class={p.secondary ? 'secondary' : undefined} onClick={open} aria-label={p.ariaLabel}>
        {p.label}
      </button>
      <dialog ref={dialog} class="confirm" aria-labelledby={`${id}-title`} aria-describedby={`${id}-what`}>
        <form onSubmit={confirm} noValidate>
          <h2 id={`${id}-title`}>{p.title}</h2>
          <div id={`${id}-what`} class="consequence">
            {p.consequence}
          </div>
          {p.reason ? (
            <div class="field">
              <label for={`${id}-reason`}>Reason</label>
              <span id={`${id}-reason-hint`} class="hint">
                required; recorded in the audit trail (no patient information)
              </span>
              <input
                id={`${id}-reason`}
                name="reason"
                aria-describedby={`${id}-reason-hint`}
                aria-invalid={missing ? 'true' : undefined}
                maxLength={200}
                value={reason}
                onInput={(e) => setReason((e.target as HTMLInputElement).value)}
              />
              {missing ? (
                <span class="field-error" role="alert">
                  Give a reason: it is recorded with the act.
                </span>
              ) : null}
            </div>
          ) : null}
          <div class="actions">
            <button type="submit">{p.confirmLabel}</button>
            <button type="button" class="secondary" onClick={close}>
              Cancel
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
