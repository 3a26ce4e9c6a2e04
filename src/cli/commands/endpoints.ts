import { existsSync } from 'node:fs';
import type { CommandModule } from 'yargs';
import { type Config, configPath, loadConfig } from '../../config';
import { assertSafeEgressEnvironment, decideUrl, type EgressEvent, EgressDenied, type EndpointPolicy, loadEndpointPolicy, type PolicyLoadOptions } from '../../egress';
import { describeError, UserError } from '../../errors';
import { hostOperator } from '../../identity';
import { type GlobalArgs, withApp } from '../context';
import { formatTable, type Io, printJson } from '../output';

interface PolicyArgs extends GlobalArgs {
  policy?: string;
}

interface CheckArgs extends PolicyArgs {
  url: string;
}

interface ProbeArgs extends PolicyArgs {
  id: string;
}

/** What the site's configuration holds an endpoint policy to: where secrets may lie, how wide an allowlist may be. */
function policyOptions(config: Config): PolicyLoadOptions {
  return { secrets: config.secrets, allowlistWidth: config.egress.allowlistWidth };
}

/**
 * The policy a command reads (--policy, or the configuration's), held to the configuration when there
 * is one. A --policy read without any configuration gets the default allowlist width and accepts no
 * auth.file (there is no secrets directory to hold it to).
 */
export function loadPolicy(args: PolicyArgs, io: Io): EndpointPolicy {
  const configured = Boolean(args.config) || existsSync(configPath({ env: io.env }));
  if (args.policy && !configured) return loadEndpointPolicy(args.policy);
  const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
  return loadEndpointPolicy(args.policy ?? config.policies.endpoints, policyOptions(config));
}

const policyOption = { type: 'string', describe: 'Endpoint policy file (default: from the config)' } as const;

function list(io: Io): CommandModule<GlobalArgs, PolicyArgs> {
  return {
    command: 'list',
    describe: 'List allowlisted endpoints with their classification',
    builder: (b) => b.option('policy', policyOption),
    handler: async (args) => {
      assertSafeEgressEnvironment(io.env);
      const policy = loadPolicy(args, io);
      if (args.json)
        return printJson(
          io,
          policy.endpoints.map(({ policyFile: _p, secretPlaces: _s, ...e }) => e),
        );
      io.stdout(
        formatTable(
          ['id', 'provider', 'url', 'deployment/model', 'in VPC', 'BAA', 'max tier', 'development', 'test'],
          policy.endpoints.map((e) => [
            e.id,
            e.provider,
            e.url,
            e.deployment ?? e.model ?? '-',
            e.classification.inVpc ? 'yes' : 'no',
            e.classification.baa ? 'yes' : 'no',
            e.classification.maxTier,
            e.classification.development ? 'yes' : 'no',
            // A test endpoint (init --test-endpoints) is the loopback stand-in: never real data.
            e.test ? 'TEST' : 'no',
          ]),
        ),
      );
    },
  };
}

function check(io: Io): CommandModule<GlobalArgs, CheckArgs> {
  return {
    command: 'check <url>',
    describe: 'Decide whether the egress guard would let a request to URL leave, without sending anything (canonical form, allowlist, resolution, CIDR); exit 0 allowed, 1 refused',
    builder: (b) => b.positional('url', { type: 'string', demandOption: true, describe: 'The full https URL a request would go to' }).option('policy', policyOption),
    handler: async (args) => {
      assertSafeEgressEnvironment(io.env);
      const policy = loadPolicy(args, io);
      const decision = await decideUrl(policy, String(args.url));
      if (args.json) {
        // Exactly the documented shape; the checked addresses are named in the reason.
        printJson(io, { allowed: decision.allowed, endpoint: decision.endpoint, rule: decision.rule, reason: decision.reason });
      } else {
        io.stdout(`${decision.allowed ? 'allowed' : 'refused'} by rule ${decision.rule}${decision.endpoint ? ` (endpoint ${decision.endpoint})` : ''}: ${decision.reason}\n`);
      }
      if (!decision.allowed) process.exitCode = 1;
    },
  };
}

interface ProbeResult {
  ok: boolean;
  endpoint: string;
  url: string;
  address: string | null;
  cidr: string | null;
  resolution: string | null;
  tls: { protocol: string | null; trust: string; hostnameVerified: boolean; serverSpkiSha256: string | null; pinChecked: boolean } | null;
  models: string[] | null;
  rule?: string;
  reason?: string;
}

function probe(io: Io): CommandModule<GlobalArgs, ProbeArgs> {
  return {
    command: 'probe <id>',
    describe:
      'Connect to an allowlisted endpoint through the egress guard (resolution, CIDR, CA, host name, pins, client certificate) and list its models (GET <url>/models); audited before the request leaves; exit 0 only if all succeeded',
    builder: (b) => b.positional('id', { type: 'string', demandOption: true, describe: 'Endpoint id from the policy' }).option('policy', policyOption),
    handler: (args) =>
      withApp(
        args,
        io,
        async (app) => {
          const policy = args.policy ? loadEndpointPolicy(args.policy, policyOptions(app.config)) : app.endpoints();
          const endpoint = policy.get(String(args.id));
          const events: EgressEvent[] = [];
          const result: ProbeResult = { ok: false, endpoint: endpoint.id, url: endpoint.url, address: null, cidr: null, resolution: null, tls: null, models: null };
          // Through the gateway: the probe's audit event is recorded before the request leaves, and a
          // trail that cannot record it stops the probe (that error is the command's, not the endpoint's).
          try {
            result.models = await app.engine.calls.probe(endpoint, hostOperator(), (e) => events.push(e));
            result.ok = true;
          } catch (err) {
            if (err instanceof UserError && err.code === 'audit.unavailable') throw err;
            const denied = err instanceof EgressDenied ? err : undefined;
            result.rule = denied?.rule ?? (err instanceof UserError ? err.code : 'probe.failed');
            // The line names the rule, the endpoint and the address: the reason says the rest, once.
            result.reason = denied ? (denied.address ? denied.reason : denied.detail) : describeError(err).message;
            if (denied?.address) result.address = denied.address;
          }
          report(io, args, result, events);
          // A probe is an act (audited before the request leaves): it may bring the store up to date.
        },
        { writes: true },
      ),
  };
}

/** What the probe found, from the guard's events: printed as lines or as JSON; exit 1 unless it succeeded. */
function report(io: Io, args: ProbeArgs, result: ProbeResult, events: EgressEvent[]): void {
  const connected = events.find((e): e is Extract<EgressEvent, { type: 'egress.connected' }> => e.type === 'egress.connected');
  if (connected) {
    result.address = connected.address;
    result.cidr = connected.cidr;
    result.resolution = connected.resolution;
    result.tls = { protocol: connected.tlsProtocol, trust: connected.trust, hostnameVerified: true, serverSpkiSha256: connected.serverSpkiSha256, pinChecked: connected.pinChecked };
  } else {
    const denied = events.find((e): e is Extract<EgressEvent, { type: 'egress.denied' }> => e.type === 'egress.denied');
    if (denied?.address) result.address = denied.address;
  }
  if (args.json) printJson(io, result);
  else if (result.ok) {
    io.stdout(
      `endpoint ${result.endpoint}: ok\n` +
        `  address     ${result.address} in ${result.cidr} (by ${result.resolution})\n` +
        `  tls         ${result.tls?.protocol}, ${result.tls?.trust === 'endpoint-ca' ? "endpoint's CA" : "Node's bundled roots"}, host name verified, ${result.tls?.pinChecked ? 'SPKI pin matched' : 'no SPKI pin configured'}\n` +
        `  server key  sha256/${result.tls?.serverSpkiSha256}\n` +
        `  models      ${result.models?.length ?? 0}${result.models?.length ? ` (${result.models.slice(0, 5).join(', ')}${result.models.length > 5 ? ', ...' : ''})` : ''}\n`,
    );
  } else {
    io.stdout(`endpoint ${result.endpoint}: failed (${result.rule})${result.address ? ` at ${result.address}` : ''}: ${result.reason}\n`);
  }
  if (!result.ok) process.exitCode = 1;
}

export function endpointsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'endpoints <command>',
    describe: 'The model endpoint allowlist and its egress guard',
    builder: (y) => y.command(list(io)).command(check(io)).command(probe(io)).demandCommand(1, 'name a subcommand: list, check, probe'),
    handler: () => undefined,
  };
}
