/**
 * JSON Schema validation of every file and message ehrbench reads (schemas/, ajv): one room under
 * every room that reads a file, so that reading one does not mean importing the configuration's loader.
 */
export { formatSchemaErrors, loadSchema, newAjv, readJsonFile, requestValidator, schemaFiles, validateOrThrow, validatorFor } from './validate';
