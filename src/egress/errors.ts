import { PolicyDenied, UserError } from '../errors';
import type { RuleId } from '../policy';

/**
 * A refusal by the egress guard. Carries the rule, the endpoint id and (when known) the address that
 * was checked: what an auditor needs, never a request or response body.
 */
export class EgressDenied extends PolicyDenied {
  /** The reason and the address, without the rule and the endpoint: for output that names those itself. */
  readonly detail: string;

  constructor(
    rule: RuleId,
    /** The reason alone, for output that names the rule, the endpoint and the address itself. */
    readonly reason: string,
    readonly endpointId: string | undefined,
    readonly address?: string,
  ) {
    const detail = `${reason}${address ? ` (address ${address})` : ''}`;
    super(rule, `${endpointId ? `endpoint ${endpointId}: ` : ''}${detail}`);
    this.detail = detail;
  }
}

/**
 * A call the guard cut short after it had started: the response was larger than the cap or the
 * total deadline passed. Only the code is recorded; the partial body is dropped.
 */
export class EgressAborted extends UserError {
  constructor(
    readonly rule: 'egress.response-too-large' | 'egress.deadline',
    reason: string,
    readonly endpointId: string,
    readonly address?: string,
  ) {
    super(rule, `endpoint ${endpointId}: ${reason}${address ? ` (address ${address})` : ''}`);
  }
}
