import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, sanitizeFields } from '../../src/log';
import { tempDir } from '../helpers/db';

describe('logging allowlist', () => {
  it('drops fields that are not allowlisted and keeps ids and counts', () => {
    const out = sanitizeFields({ runId: 'r1', count: 3, prompt: 'Patient John Smith', note: 'x', completion: 'y', itemKey: 'MRN-0042', ordinal: 7 });
    // An instance key is the site's record id (an MRN, an encounter number): instances go by ordinal.
    expect(out).toEqual({ runId: 'r1', count: 3, ordinal: 7 });
  });

  it('logs an error by class and code, never by message', () => {
    const err = Object.assign(new Error('duplicate key (note)=(Patient John Smith, MRN 123)'), { code: '23505' });
    const out = sanitizeFields({ err });
    expect(JSON.stringify(out)).not.toContain('John');
    expect(out.errorClass).toBe('Error');
    expect(out.errorCode).toBe('internal');
  });

  it('writes no dataset text to the log file, even when a caller passes it', async () => {
    const file = join(tempDir('log'), 'ehrbench.log');
    const logger = createLogger({ file });
    logger.info('run.item.failed', { runId: 'r1', prompt: 'CANARY-7781 Mrs. Jones', err: new Error('CANARY-7781 in message') });
    logger.info('CANARY-7781 used as an event name');
    await logger.close();
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('run.item.failed');
    expect(text).toContain('log.event-name-rejected');
    expect(text).not.toContain('CANARY-7781');
  });
});
