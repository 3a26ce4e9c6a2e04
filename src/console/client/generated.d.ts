/** Generated at build time by src/console/build.ts from schemas/api (ajv standalone code). */
declare module 'ehrbench:validators' {
  export const runRequest: (data: unknown) => boolean;
  export const approvalCreate: (data: unknown) => boolean;
  export const certificateRequest: (data: unknown) => boolean;
}
