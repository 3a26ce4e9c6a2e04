/**
 * What a call is charged (issue 27, class 3): the endpoint's usage when it is believable, the call's
 * worst case otherwise. A figure missing, negative, fractional, beyond the request or implausibly low
 * for the text never lowers the spend.
 */
import { chargedUsage } from '../../src/calls';

const bounds = { promptTokens: 1016, completionTokens: 50, promptBytes: 1000, answerBytes: 120 };
const reported = (p: number | null, c: number | null, r: number | null = null) => ({ promptTokens: p, completionTokens: c, reasoningTokens: r });

describe('chargedUsage', () => {
  it('takes believable figures as reported', () => {
    expect(chargedUsage(reported(260, 31, 10), bounds)).toEqual({ promptTokens: 260, completionTokens: 31, reasoningTokens: 10 });
    // The bounds themselves are believable.
    expect(chargedUsage(reported(1016, 50), bounds)).toEqual({ promptTokens: 1016, completionTokens: 50, reasoningTokens: null });
  });

  it('charges the worst case for a missing figure (usage left out), and names the problem', () => {
    expect(chargedUsage(reported(null, null), bounds)).toEqual({ promptTokens: 1016, completionTokens: 50, reasoningTokens: null, problem: 'missing' });
    // One figure untrue, neither is believed.
    expect(chargedUsage(reported(260, null), bounds)).toEqual({ promptTokens: 1016, completionTokens: 50, reasoningTokens: null, problem: 'missing' });
  });

  it('never lets a negative or fractional figure lower the spend', () => {
    expect(chargedUsage(reported(-100_000, -5), bounds)).toMatchObject({ promptTokens: 1016, completionTokens: 50, problem: 'invalid' });
    expect(chargedUsage(reported(260.5, 31), bounds)).toMatchObject({ promptTokens: 1016, completionTokens: 50, problem: 'invalid' });
    expect(chargedUsage(reported(Number.NaN, 31), bounds)).toMatchObject({ promptTokens: 1016, problem: 'invalid' });
  });

  it('charges no more than the request allows for a figure beyond it', () => {
    expect(chargedUsage(reported(260, 1_000_000_000), bounds)).toMatchObject({ promptTokens: 1016, completionTokens: 50, problem: 'over-request' });
  });

  it('charges the worst case for figures too low for the text (zero tokens for a 1000-byte prompt)', () => {
    expect(chargedUsage(reported(0, 0), bounds)).toMatchObject({ promptTokens: 1016, completionTokens: 50, problem: 'implausibly-low' });
    expect(chargedUsage(reported(15, 31), bounds)).toMatchObject({ promptTokens: 1016, problem: 'implausibly-low' });
    expect(chargedUsage(reported(16, 2), bounds)).toEqual({ promptTokens: 16, completionTokens: 2, reasoningTokens: null });
  });

  it('keeps reasoning tokens only inside the completion tokens charged as reported', () => {
    expect(chargedUsage(reported(260, 31, 40), bounds)).toEqual({ promptTokens: 260, completionTokens: 31, reasoningTokens: null });
    expect(chargedUsage(reported(260, null, 10), bounds).reasoningTokens).toBeNull();
    expect(chargedUsage(reported(260, 31, -1), bounds).reasoningTokens).toBeNull();
  });
});
