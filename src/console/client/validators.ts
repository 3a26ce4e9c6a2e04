/**
 * The API's request schemas, precompiled by ajv at build time (src/console/build.ts), so a form says
 * what the daemon would refuse before it is sent. The daemon still validates every request: this is
 * for the person filling the form, not a control.
 */
import { approvalCreate, certificateRequest, runRequest } from 'ehrbench:validators';

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}
type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null };

function problems(validate: Validate, data: unknown): string[] {
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e) => {
    const where = e.instancePath ? e.instancePath.replace(/^\//, '').replace(/\//g, '.') : 'request';
    if (e.keyword === 'additionalProperties') return `${where}: unknown field ${String(e.params.additionalProperty)}`;
    if (e.keyword === 'required') return `${String(e.params.missingProperty)}: required`;
    return `${where}: ${e.message ?? e.keyword}`;
  });
}

export const validateRunRequest = (body: unknown) => problems(runRequest as Validate, body);
export const validateApproval = (body: unknown) => problems(approvalCreate as Validate, body);
export const validateCertificateRequest = (body: unknown) => problems(certificateRequest as Validate, body);
