/**
 * The environment check: ehrbench refuses to start when a variable or a Node flag could route its
 * traffic elsewhere, lower its TLS checks, leak its TLS keys, or run foreign code inside it before
 * the guard. One line naming the variable (or flag) and what to do.
 *
 * Decisions (SECURITY.md repeats them):
 *   refused   HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NODE_USE_ENV_PROXY, NODE_TLS_REJECT_UNAUTHORIZED,
 *             OPENSSL_CONF (any letter case, even when empty: the operator meant something by it);
 *             Node flags in NODE_OPTIONS or on the command line:
 *               --use-env-proxy                       routes fetch through the proxy variables
 *               --tls-* (keylog, cipher list, min/max) weakens TLS or writes session keys to a file
 *               --openssl-*                           loads another OpenSSL configuration or legacy ciphers
 *               --use-openssl-ca, --use-system-ca     widen the process-wide trust store
 *               --insecure-http-parser                accepts malformed (smuggling) responses
 *               --require/-r, --import, --loader, --experimental-loader
 *                                                     run code inside the daemon before the guard
 *               --inspect*, --debug-port              open a debugger port that controls the process
 *               --experimental-network-imports        loads code over the network
 *               --env-file, --env-file-if-exists      sets NODE_OPTIONS (and preloads) from a file
 *   accepted  NO_PROXY (it only exempts hosts from a proxy, and no proxy is allowed),
 *             NODE_EXTRA_CA_CERTS and SSL_CERT_FILE/SSL_CERT_DIR (the guard never uses the process-wide
 *             store: every connection carries its own trust set), --use-bundled-ca (the default
 *             store), --dns-result-order (every answer is checked whatever its order), and every
 *             flag that touches neither network nor TLS nor loading code (--max-old-space-size,
 *             --enable-source-maps, --experimental-vm-modules, --disable-warning, ...).
 */
import { UserError } from '../errors';

/** Variables refused whatever their value (compared without regard to letter case). */
const REFUSED_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NODE_USE_ENV_PROXY', 'NODE_TLS_REJECT_UNAUTHORIZED', 'OPENSSL_CONF'];

/** Node flags refused, as exact names or name prefixes (after `_` is read as `-`, as Node does). */
const REFUSED_FLAGS: { match: (name: string) => boolean; why: string }[] = [
  { match: (n) => n === '--use-env-proxy', why: 'routes requests through proxy variables' },
  { match: (n) => n.startsWith('--tls-'), why: 'changes TLS versions, ciphers or writes TLS keys to a file' },
  { match: (n) => n.startsWith('--openssl-'), why: 'changes the OpenSSL configuration' },
  { match: (n) => n === '--use-openssl-ca' || n === '--use-system-ca', why: 'widens the process-wide trust store' },
  { match: (n) => n === '--insecure-http-parser', why: 'accepts malformed HTTP responses' },
  { match: (n) => ['--require', '-r', '--import', '--loader', '--experimental-loader'].includes(n), why: 'runs other code inside ehrbench before the egress guard' },
  { match: (n) => n.startsWith('--inspect') || n === '--debug-port', why: 'opens a debugger port that controls the process' },
  { match: (n) => n === '--experimental-network-imports', why: 'loads code over the network' },
  // NODE_OPTIONS read from such a file is in no environment a check can see (not even /proc).
  { match: (n) => n === '--env-file' || n === '--env-file-if-exists', why: 'sets variables from a file, NODE_OPTIONS and its preloads among them' },
];

/**
 * Splits NODE_OPTIONS the way Node does: on white space, with double quotes grouping and a
 * backslash escaping inside quotes.
 */
export function splitNodeOptions(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let inQuotes = false;
  let started = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (inQuotes && ch === '\\' && i + 1 < text.length) {
      current += text[++i];
    } else if (ch === '"') {
      inQuotes = !inQuotes;
      started = true;
    } else if (!inQuotes && /\s/.test(ch)) {
      if (started) out.push(current);
      current = '';
      started = false;
    } else {
      current += ch;
      started = true;
    }
  }
  if (started) out.push(current);
  return out;
}

/** The refused flag in a list of Node arguments, with why; undefined when all are acceptable. */
export function refusedNodeFlag(args: readonly string[]): { flag: string; why: string } | undefined {
  for (const arg of args) {
    if (!arg.startsWith('-')) continue;
    const name = arg.split('=')[0] as string;
    // Node reads `--tls_keylog` as `--tls-keylog`; single-dash short flags stay as they are.
    const normalised = name.startsWith('--') ? `--${name.slice(2).replace(/_/g, '-').toLowerCase()}` : name;
    const hit = REFUSED_FLAGS.find((f) => f.match(normalised));
    if (hit) return { flag: normalised, why: hit.why };
  }
  return undefined;
}

/**
 * Throws a UserError (code `egress.unsafe-environment`) naming the first variable or flag that could
 * weaken the egress guard. `execArgv` is the Node command line of this process.
 */
export function assertSafeEgressEnvironment(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): void {
  for (const key of Object.keys(env).sort()) {
    if (env[key] === undefined) continue;
    if (REFUSED_VARIABLES.includes(key.toUpperCase())) {
      throw new UserError('egress.unsafe-environment', `environment variable ${key} is set and could weaken the egress guard; unset it before starting ehrbench (no proxy or TLS override is allowed)`);
    }
  }
  const fromOptions = refusedNodeFlag(splitNodeOptions(env.NODE_OPTIONS ?? ''));
  if (fromOptions) {
    throw new UserError('egress.unsafe-environment', `environment variable NODE_OPTIONS holds ${fromOptions.flag}, which ${fromOptions.why}; remove it before starting ehrbench`);
  }
  const fromArgv = refusedNodeFlag(execArgv);
  if (fromArgv) {
    throw new UserError('egress.unsafe-environment', `node was started with ${fromArgv.flag}, which ${fromArgv.why}; start ehrbench without it`);
  }
}
