/**
 * Certificate serials as DER reads them. forge writes the serial's hex into the INTEGER as given, so a
 * draw that is not already minimal and positive makes a certificate OpenSSL refuses to parse ("illegal
 * padding"): CI once failed a whole suite on such a draw, because one certificate in 256 had it.
 */
import { X509Certificate } from 'node:crypto';
import { createCa, issueCertificate, randomSerial } from '../../src/identity/pki';

describe('certificate serials', () => {
  it('draws a minimal positive 16-byte DER integer every time (20,000 draws)', () => {
    const refused: string[] = [];
    for (let i = 0; i < 20_000; i += 1) {
      const hex = randomSerial();
      const first = Number.parseInt(hex.slice(0, 2), 16);
      // Minimal and positive: the first byte neither has the sign bit nor is a removable 0x00.
      if (hex.length !== 32 || first >= 0x80 || first === 0x00) refused.push(hex);
    }
    expect(refused).toEqual([]);
  });

  it('keeps serials random: 1,000 draws are all different', () => {
    const drawn = new Set(Array.from({ length: 1_000 }, () => randomSerial()));
    expect(drawn.size).toBe(1_000);
  });

  it('issues certificates that OpenSSL parses, with the serial forge was given', () => {
    const ca = createCa('serial test CA', 1);
    const issued = issueCertificate(ca, { commonName: 'alice', usage: 'client', days: 1 });
    const serial = new X509Certificate(issued.certPem).serialNumber.toLowerCase();
    expect(serial).toMatch(/^[4-7][0-9a-f]{31}$/);
  });
});
