/**
 * The console: one page per route (a hash router, so the daemon serves one document), the menu of the
 * viewer's roles. What a page shows is what the API answers the viewer; hiding a menu entry is a
 * convenience, never the control (the API refuses what the role may not do).
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { loadSession, type Session } from './api';
import { AuditPage, RunTimelinePage } from './pages/audit';
import { ApprovalDetailPage, ApprovalsPage } from './pages/approvals';
import { EndpointsPage, HealthPage, PrincipalsPage } from './pages/admin';
import { ExportPage, ReleaseQueuePage } from './pages/exports';
import { HomePage } from './pages/home';
import { RequestRunPage, RunApprovalQueuePage, RunPage, RunsPage } from './pages/runs';
import { holds, Problem, visible } from './ui';

interface MenuEntry {
  href: string;
  label: string;
  roles?: string[];
}

const MENU: MenuEntry[] = [
  { href: '#/', label: 'Home' },
  { href: '#/runs', label: 'My runs', roles: ['researcher'] },
  { href: '#/runs/new', label: 'Request a run', roles: ['researcher'] },
  { href: '#/approvals', label: 'IRB approvals', roles: ['compliance'] },
  { href: '#/queue/runs', label: 'Run approvals', roles: ['compliance'] },
  { href: '#/queue/releases', label: 'Release queue', roles: ['compliance'] },
  { href: '#/audit', label: 'Audit review', roles: ['compliance', 'auditor'] },
  { href: '#/endpoints', label: 'Endpoints', roles: ['admin'] },
  { href: '#/principals', label: 'Principals and certificates', roles: ['admin'] },
  { href: '#/health', label: 'Health' },
];

function useRoute(): string {
  const [route, setRoute] = useState(location.hash.replace(/^#/, '') || '/');
  useEffect(() => {
    const on = () => setRoute(location.hash.replace(/^#/, '') || '/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function NotYours({ roles }: { roles: string[] }) {
  return (
    <div class="error" role="alert">
      This page is for the {roles.join(' or ')} role; you do not hold it.
    </div>
  );
}

function routeTo(path: string, s: Session) {
  const parts = path.split('?')[0]!.split('/').filter(Boolean);
  const guard = (roles: string[], page: preact.JSX.Element) => (holds(s, roles) ? page : <NotYours roles={roles} />);
  switch (parts[0]) {
    case undefined:
      return <HomePage session={s} />;
    case 'runs':
      if (parts[1] === 'new') return guard(['researcher'], <RequestRunPage />);
      if (parts[1]) return <RunPage runId={parts[1]} session={s} />;
      return <RunsPage session={s} />;
    case 'approvals':
      return guard(['compliance', 'auditor', 'researcher'], parts[1] ? <ApprovalDetailPage id={parts[1]} session={s} /> : <ApprovalsPage session={s} />);
    case 'queue':
      if (parts[1] === 'runs') return guard(['compliance'], <RunApprovalQueuePage session={s} />);
      if (parts[1] === 'releases') return guard(['compliance'], <ReleaseQueuePage session={s} />);
      break;
    case 'exports':
      if (parts[1]) return <ExportPage id={parts[1]} session={s} />;
      break;
    case 'audit':
      if (parts[1] === 'run' && parts[2]) return guard(['compliance', 'auditor'], <RunTimelinePage runId={parts[2]} />);
      return guard(['compliance', 'auditor'], <AuditPage />);
    case 'endpoints':
      return guard(['admin'], <EndpointsPage />);
    case 'principals':
      return guard(['admin'], <PrincipalsPage />);
    case 'health':
      return <HealthPage session={s} />;
  }
  return (
    <div class="error" role="alert">
      No such page.
    </div>
  );
}

function Console({ session }: { session: Session }) {
  const route = useRoute();
  const current = `#${route.split('?')[0]}`;
  return (
    <>
      <header class="top">
        <span class="brand">ehrbench</span>
        <span class="who" data-testid="who">
          {session.displayName ? `${visible(session.displayName)} (${session.principal})` : session.principal}
          {session.roles.map((r) => (
            <span class="role" key={r}>
              {r}
            </span>
          ))}
        </span>
      </header>
      <nav class="menu" aria-label="Pages">
        {MENU.filter((m) => holds(session, m.roles)).map((m) => (
          <a key={m.href} href={m.href} aria-current={current === m.href ? 'page' : undefined}>
            {m.label}
          </a>
        ))}
      </nav>
      <main id="main">{routeTo(route, session)}</main>
    </>
  );
}

function Boot() {
  const [session, setSession] = useState<Session | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    loadSession().then(setSession, setError);
  }, []);
  if (error) {
    return (
      <main>
        <h1>ehrbench console</h1>
        <Problem error={error} />
      </main>
    );
  }
  if (!session) return <p class="muted">Loading the console…</p>;
  return <Console session={session} />;
}

render(<Boot />, document.getElementById('app')!);
