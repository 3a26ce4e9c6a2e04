/** Admin: the endpoint allowlist, principals and their certificates, and the daemon's health. */
import { useState } from 'preact/hooks';
import { type Session, get, post } from '../api';
import type { Endpoint, PrincipalView, SignedCertificate } from '../types';
import { ConfirmAct, Done, download, Field, holds, Loading, Page, Problem, SchemaProblems, Status, useAction, useLoad, visible, when } from '../ui';
import { validateCertificateRequest } from '../validators';

/** An absent flag (classification.development is optional) reads as no. */
const yes = (b: boolean | undefined) => (b ? 'yes' : 'no');

export function EndpointsPage() {
  const endpoints = useLoad(() => get<Endpoint[]>('/v1/endpoints'), []);
  const [shown, setShown] = useState<string | undefined>(undefined);
  return (
    <Page title="Endpoints">
      <p class="muted">
        The allowlist (access-policies/endpoints.json) as the daemon loaded it. Probe an endpoint on the host with <code>ehrbench endpoints probe ID</code>.
      </p>
      <Problem error={endpoints.error} />
      {!endpoints.data ? (
        <Loading what="endpoints" />
      ) : (
        <table>
          <caption class="sr-only">Allowlisted model endpoints and their classification</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">Provider</th>
              <th scope="col">Model</th>
              <th scope="col">Highest tier</th>
              <th scope="col">In the hospital network</th>
              <th scope="col">BAA</th>
              <th scope="col">Development</th>
              <th scope="col">Last probed</th>
              <th scope="col">Calls</th>
            </tr>
          </thead>
          <tbody>
            {endpoints.data.map((e) => (
              <tr key={e.id}>
                <td>{e.id}</td>
                <td>{e.provider}</td>
                <td>{visible(e.model ?? e.deployment ?? '—')}</td>
                <td>{e.classification.maxTier}</td>
                <td>{yes(e.classification.inVpc)}</td>
                <td>{yes(e.classification.baa)}</td>
                <td>{yes(e.classification.development)}</td>
                <td>{when(e.lastProbeAt)}</td>
                <td>
                  <button type="button" class="secondary" onClick={() => setShown(e.id)} aria-label={`show calls over time for ${e.id}`}>
                    Calls over time
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {shown ? (
        <section aria-labelledby="calls">
          <h2 id="calls">Calls to {shown} over time</h2>
          <img class="picture" src={`/v1/pictures/endpoints/${encodeURIComponent(shown)}/calls.svg`} alt={`Calls to endpoint ${shown} over time, by outcome`} />
        </section>
      ) : null}
    </Page>
  );
}

/** The roles the daemon signs for (src/certificates API_SIGNABLE_ROLES); compliance officers and admins are signed on the host. */
const ROLES = ['researcher', 'auditor', 'clinician'] as const;
const SIGN_EMPTY = { principal: '', role: '', days: '365', csr: '' };

/**
 * A certificate for a certification request the holder made on their own machine (their key never
 * leaves it): the daemon signs only the request's public key, records and maps it as `pki sign` does,
 * and returns the certificate, which is shown here to be sent back to the holder.
 */
function SignRequest({ onSigned }: { onSigned: () => void }) {
  const [form, setForm] = useState<Record<string, string>>(SIGN_EMPTY);
  const [problems, setProblems] = useState<string[]>([]);
  const [refusal, setRefusal] = useState<unknown>(undefined);
  const [signed, setSigned] = useState<SignedCertificate | undefined>(undefined);
  const set = (k: string) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const submit = async (e: Event) => {
    e.preventDefault();
    setRefusal(undefined);
    setSigned(undefined);
    const body: Record<string, unknown> = { principal: form.principal?.trim(), days: Number(form.days), csr: form.csr };
    if (form.role) body.role = form.role;
    const found = validateCertificateRequest(body);
    setProblems(found);
    if (found.length) return;
    try {
      const c = await post<SignedCertificate>('/v1/certificates', body);
      setSigned(c);
      setForm(SIGN_EMPTY);
      onSigned();
    } catch (err) {
      setRefusal(err);
    }
  };
  return (
    <section aria-labelledby="sign">
      <h2 id="sign">Sign a certificate request</h2>
      <p class="muted">
        The holder makes their key and a request on their own machine (<code>openssl req -new -newkey rsa:3072 -nodes -keyout me.key.pem -out me.csr -subj /CN=me</code>) and sends the request. Only
        its public key is used: the certificate's name is the principal id below, whatever the request asks for.
      </p>
      <Problem error={refusal} />
      <SchemaProblems what="request" problems={problems} />
      <form class="stack" onSubmit={submit} noValidate>
        <Field id="sign-principal" label="Principal" hint="principal id: the certificate's common name">
          <input id="sign-principal" aria-describedby="sign-principal-hint" name="principal" value={form.principal} onInput={set('principal')} autocomplete="off" />
        </Field>
        <Field id="sign-role" label="Role" hint="required for a new principal; added to an existing one. Compliance officers and admins: ehrbench pki sign on the host">
          <select id="sign-role" aria-describedby="sign-role-hint" name="role" value={form.role} onChange={set('role')}>
            <option value="">none (existing principal)</option>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </Field>
        <Field id="sign-days" label="Validity (days)" hint="a whole number, 1 to 825">
          <input id="sign-days" aria-describedby="sign-days-hint" name="days" type="number" min={1} max={825} step={1} value={form.days} onInput={set('days')} />
        </Field>
        <Field id="sign-csr" label="Certificate request (PEM)" hint="-----BEGIN CERTIFICATE REQUEST----- … (never a private key)">
          <textarea id="sign-csr" aria-describedby="sign-csr-hint" name="csr" rows={8} cols={66} spellcheck={false} value={form.csr} onInput={set('csr')} />
        </Field>
        <div>
          <button type="submit">Sign the request</button>
        </div>
      </form>
      {signed ? (
        <section aria-labelledby="signed">
          <h3 id="signed">Certificate for {signed.principal}</h3>
          <p role="status">
            Issued, recorded and mapped: serial <code>{signed.serial}</code>, key sha256 <code>{signed.publicKeySha256.slice(0, 16)}…</code>. Send it to its holder; their key stays where the request
            was made.
          </p>
          <pre id="signed-pem" class="preview" tabIndex={0}>
            {signed.certificatePem}
          </pre>
          <div class="actions">
            <button type="button" class="secondary" onClick={() => download(`${signed.principal}.pem`, signed.certificatePem, 'application/x-pem-file')}>
              Download the certificate
            </button>
          </div>
        </section>
      ) : null}
    </section>
  );
}

export function PrincipalsPage() {
  const principals = useLoad(() => get<PrincipalView[]>('/v1/principals'), []);
  const { problem, done, act } = useAction();
  const revoke = (id: string, reason: string) =>
    act(async () => {
      const r = await post<{ principal: string; revoked: number; stoppedRuns?: string[] }>(`/v1/principals/${id}/revoke`, { reason });
      principals.reload();
      const runs = r.stoppedRuns ?? [];
      return `every certificate of ${r.principal} issued until now is revoked (${r.revoked} issuer${r.revoked === 1 ? '' : 's'})${runs.length ? `; ${runs.length} of their runs halted` : '; they had no run in progress'}`;
    });
  return (
    <Page title="Principals and certificates">
      <p class="muted">
        Sign a certificate request below (the key never leaves the user's machine), or on the daemon host: <code>ehrbench pki sign --csr FILE</code>, or <code>ehrbench pki issue</code> (a PKCS#12 to
        import into a browser). Revoking here stops every certificate of the principal at once, and the runs they requested.
      </p>
      <Problem error={principals.error ?? problem} />
      <Done message={done} />
      {!principals.data ? (
        <Loading what="principals" />
      ) : (
        <table>
          <caption class="sr-only">Principals, their roles and their certificates</caption>
          <thead>
            <tr>
              <th scope="col">Principal</th>
              <th scope="col">Roles</th>
              <th scope="col">Status</th>
              <th scope="col">Certificates issued by ehrbench</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {principals.data.map((p) => (
              <tr key={p.id}>
                <td>
                  {visible(p.displayName ?? p.id)} <span class="muted">({p.id})</span>
                </td>
                <td>{p.roles.join(', ')}</td>
                <td>
                  <Status value={p.active ? 'active' : 'disabled'} />
                </td>
                <td>
                  {p.certificates.length === 0
                    ? 'none'
                    : p.certificates.map((c) => (
                        <div key={c.fingerprint}>
                          serial {c.serial.slice(0, 12)}… issued {when(c.issuedAt)}, valid until {when(c.notAfter)} {c.revoked ? <span class="status-bad">revoked</span> : null}
                        </div>
                      ))}
                </td>
                <td>
                  <ConfirmAct
                    label="Revoke"
                    secondary
                    ariaLabel={`revoke every certificate of ${p.id}`}
                    title={`Revoke every certificate of ${p.id}?`}
                    consequence={
                      <p>
                        {visible(p.displayName ?? p.id)} ({p.id}, {p.roles.join(', ')}) loses access at once: every certificate issued to them until now stops working, and the runs they requested that
                        are still going are halted. Only a new certificate restores access.
                      </p>
                    }
                    confirmLabel={`Revoke ${p.id}`}
                    reason
                    onConfirm={(reason) => revoke(p.id, reason)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <SignRequest onSigned={principals.reload} />
    </Page>
  );
}

export function HealthPage({ session }: { session: Session }) {
  const health = useLoad(() => get<{ status: string; rule?: string }>('/health'), [], { ms: 5000, while: () => true });
  const ready = useLoad(() => get<{ status: string }>('/ready'), []);
  return (
    <Page title="Health">
      <table>
        <caption class="sr-only">The daemon's health and readiness</caption>
        <tbody>
          <tr>
            <th scope="row">Health</th>
            <td>{health.data ? <Status value={health.data.status} /> : <Problem error={health.error} />}</td>
          </tr>
          <tr>
            <th scope="row">Ready</th>
            <td>{ready.data ? <Status value={ready.data.status} /> : ready.error ? <Problem error={ready.error} /> : '…'}</td>
          </tr>
        </tbody>
      </table>
      {holds(session, ['admin', 'auditor']) ? (
        <p>
          Prometheus metrics: <a href="/metrics">/metrics</a> (no patient data in any label).
        </p>
      ) : null}
    </Page>
  );
}
