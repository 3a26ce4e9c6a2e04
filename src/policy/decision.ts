/**
 * A decision always names the rule that made it, and the rule is a key of the registry: a decision
 * by an unregistered rule does not compile.
 */
import type { RuleId } from './rules';

export interface Decision<R extends RuleId = RuleId> {
  allowed: boolean;
  rule: R;
  reason: string;
}

export const allow = <R extends RuleId>(rule: R, reason: string): Decision<R> => ({ allowed: true, rule, reason });
export const deny = <R extends RuleId>(rule: R, reason: string): Decision<R> => ({ allowed: false, rule, reason });
