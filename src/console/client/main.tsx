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
import { RatePage, StudiesPage, StudyPage } from './pages/studies';
import { RequestRunPage, RunApprovalQueuePage, RunPage, RunsPage } from './pages/runs';
import { may, Page, Problem, visible } from './ui';

/** A menu entry, offered when the policy gate lets the viewer attempt its action (whoami's `may`). */
interface MenuEntry {
  href: string;
  label: string;
  action?: string;
}

const MENU: MenuEntry[] = [
  { href: '#/', label: 'Home' },
  { href: '#/runs', label: 'My runs', action: 'run.request' },
  { href: '#/runs/new', label: 'Request a run', action: 'run.request' },
  { href: '#/approvals', label: 'IRB approvals', action: 'approval.record' },
  { href: '#/queue/runs', label: 'Run approvals', action: 'run.approve' },
  { href: '#/queue/releases', label: 'Release queue', action: 'export.release' },
  { href: '#/audit', label: 'Audit review', action: 'audit.read' },
  { href: '#/studies', label: 'Rating studies', action: 'study.list' },
  { href: '#/endpoints', label: 'Endpoints', action: 'endpoint.review' },
  { href: '#/principals', label: 'Principals and certificates', action: 'principal.list' },
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

function NotYours({ action }: { action: string }) {
  return (
    <Page title="Not for your roles">
      <div class="error" role="alert">
        This page is not for your roles: the policy lets none of them do {action}.
      </div>
    </Page>
  );
}

function routeTo(path: string, s: Session) {
  const parts = path.split('?')[0]!.split('/').filter(Boolean);
  const guard = (action: string, page: preact.JSX.Element) => (may(s, action) ? page : <NotYours action={action} />);
  switch (parts[0]) {
    case undefined:
      return <HomePage session={s} />;
    case 'runs':
      if (parts[1] === 'new') return guard('run.request', <RequestRunPage />);
      if (parts[1]) return <RunPage runId={parts[1]} session={s} />;
      return <RunsPage session={s} />;
    case 'approvals':
      return guard('approval.list', parts[1] ? <ApprovalDetailPage id={parts[1]} session={s} /> : <ApprovalsPage session={s} />);
    case 'queue':
      if (parts[1] === 'runs') return guard('run.approve', <RunApprovalQueuePage session={s} />);
      if (parts[1] === 'releases') return guard('export.release', <ReleaseQueuePage session={s} />);
      break;
    case 'exports':
      if (parts[1]) return <ExportPage id={parts[1]} session={s} />;
      break;
    case 'audit':
      if (parts[1] === 'run' && parts[2]) return guard('audit.read', <RunTimelinePage runId={parts[2]} />);
      return guard('audit.read', <AuditPage />);
    case 'studies':
      return guard('study.list', parts[1] ? <StudyPage id={parts[1]} session={s} /> : <StudiesPage session={s} />);
    case 'rate':
      if (parts[1]) return guard('study.rate', <RatePage id={parts[1]} />);
      break;
    case 'endpoints':
      return guard('endpoint.review', <EndpointsPage />);
    case 'principals':
      return guard('principal.list', <PrincipalsPage />);
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
        {MENU.filter((m) => may(session, m.action)).map((m) => (
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
